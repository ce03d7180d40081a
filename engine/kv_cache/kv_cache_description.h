// The KV cache on the server's startup line, the same words on every backend:
// "KV cache 64 blocks of 16 tokens, 0.1 MiB", or per layer type when the
// sliding-window layers have a pool of their own ("KV cache: full-attention
// layers ...; sliding-window layers 34 blocks, 0.3 MiB").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "engine/kv_cache/kv_cache.h"

namespace astrai {

// `unit` names a block ("blocks" on the host, "pages" on the device); bytes
// are all the cache's, sliding_bytes the sliding pool's share of them.
std::string describe_kv_cache(const KVCacheStats& stats, size_t bytes, size_t sliding_bytes, std::string_view unit);
inline std::string describe_kv_cache(const KVCache& cache, std::string_view unit) {
  return describe_kv_cache(cache.stats(), cache.storage_bytes(), cache.sliding_storage_bytes(), unit);
}

}  // namespace astrai
