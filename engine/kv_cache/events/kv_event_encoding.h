// One KV event batch as vLLM puts it on the wire (msgpack, as msgspec
// encodes vllm/distributed/kv_events.py's structs in vLLM v0.26.0):
//
//   KVEventBatch  [ts, [event, ...], data_parallel_rank]       positional (array_like)
//   BlockStored   {"type": "BlockStored", "block_hashes": [u64...], "parent_block_hash": u64 | nil,
//                  "token_ids": [int...], "block_size": int, "lora_id": nil, "medium": str,
//                  "lora_name": nil, "extra_keys": [nil per block], "group_idx": 0,
//                  "kv_cache_spec_kind": "full_attention"}
//   BlockRemoved  {"type": "BlockRemoved", "block_hashes": [u64...], "medium": str, "group_idx": 0}
//   AllBlocksCleared {"type": "AllBlocksCleared"}
//
// Events are tagged maps, keys in the structs' declaration order (vLLM's
// order; consumers select by name). Fields vLLM omits at their default
// (kv_cache_spec_sliding_window, and the newer optional ones) are left out.
// docs/server.md, "KV cache events", has the version and the sources.
#pragma once

#include <string>
#include <vector>

#include "engine/kv_cache/kv_events.h"

namespace astrai {

// What every event of one publisher says about where its blocks live.
struct KVEventStamp {
  int block_size = 16;       // tokens per block: the cache's page size
  std::string medium = "GPU";  // vLLM's MEDIUM_GPU; "CPU" for the reference backend's host cache
  int data_parallel_rank = 0;
};

// The msgpack bytes of KVEventBatch(ts, events, data_parallel_rank).
std::string encode_kv_event_batch(double ts, const std::vector<KVCacheEvent>& events, const KVEventStamp& stamp);

}  // namespace astrai
