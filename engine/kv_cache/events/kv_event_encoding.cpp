#include "engine/kv_cache/events/kv_event_encoding.h"

#include <string_view>
#include <variant>

#include <msgpack.hpp>

namespace astrai {

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void key(Packer& pk, std::string_view name) {
  pk.pack_str(uint32_t(name.size())).pack_str_body(name.data(), uint32_t(name.size()));
}

void text(Packer& pk, std::string_view value) { key(pk, value); }

void hashes(Packer& pk, const std::vector<uint64_t>& block_hashes) {
  pk.pack_array(uint32_t(block_hashes.size()));
  for (const uint64_t h : block_hashes) pk.pack_uint64(h);
}

void pack(Packer& pk, const KVBlockStored& e, const KVEventStamp& stamp) {
  pk.pack_map(11);
  key(pk, "type"), text(pk, "BlockStored");
  key(pk, "block_hashes"), hashes(pk, e.block_hashes);
  key(pk, "parent_block_hash");
  if (e.parent_block_hash)
    pk.pack_uint64(*e.parent_block_hash);
  else
    pk.pack_nil();
  key(pk, "token_ids");
  pk.pack_array(uint32_t(e.token_ids.size()));
  for (const int t : e.token_ids) pk.pack_int(t);
  key(pk, "block_size"), pk.pack_int(stamp.block_size);
  key(pk, "lora_id"), pk.pack_nil();  // no LoRA adapters
  key(pk, "medium"), text(pk, stamp.medium);
  key(pk, "lora_name"), pk.pack_nil();
  key(pk, "extra_keys");  // nothing but the tokens goes into a block's hash
  pk.pack_array(uint32_t(e.block_hashes.size()));
  for (size_t i = 0; i < e.block_hashes.size(); ++i) pk.pack_nil();
  key(pk, "group_idx"), pk.pack_int(0);  // one KV cache group: every layer is full attention
  key(pk, "kv_cache_spec_kind"), text(pk, "full_attention");
}

void pack(Packer& pk, const KVBlockRemoved& e, const KVEventStamp& stamp) {
  pk.pack_map(4);
  key(pk, "type"), text(pk, "BlockRemoved");
  key(pk, "block_hashes"), hashes(pk, e.block_hashes);
  key(pk, "medium"), text(pk, stamp.medium);
  key(pk, "group_idx"), pk.pack_int(0);
}

void pack(Packer& pk, const KVAllBlocksCleared&, const KVEventStamp&) {
  pk.pack_map(1);
  key(pk, "type"), text(pk, "AllBlocksCleared");
}

}  // namespace

std::string encode_kv_event_batch(double ts, const std::vector<KVCacheEvent>& events, const KVEventStamp& stamp) {
  msgpack::sbuffer buffer;
  Packer pk(&buffer);
  pk.pack_array(3);
  pk.pack_double(ts);
  pk.pack_array(uint32_t(events.size()));
  for (const KVCacheEvent& event : events) std::visit([&](const auto& e) { pack(pk, e, stamp); }, event);
  pk.pack_int(stamp.data_parallel_rank);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace astrai
