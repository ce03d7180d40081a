#include "engine/kv_cache/kv_cache_description.h"

#include <cstdio>

namespace astrai {
namespace {

std::string in_mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

std::string describe_kv_cache(const KVCacheStats& s, size_t bytes, size_t sliding_bytes, std::string_view unit) {
  const std::string blocks =
      std::to_string(s.blocks_total) + " " + std::string(unit) + " of " + std::to_string(s.block_tokens) + " tokens";
  if (s.sliding_blocks_total == 0) return "KV cache " + blocks + ", " + in_mib(bytes);
  return "KV cache: full-attention layers " + blocks + ", " + in_mib(bytes - sliding_bytes) + "; sliding-window layers " +
         std::to_string(s.sliding_blocks_total) + " " + std::string(unit) + ", " + in_mib(sliding_bytes);
}

}  // namespace astrai
