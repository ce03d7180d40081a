// The JSON of the KV cache event routes and fields: /stats' "kv_events",
// GET /debug/kv_blocks, POST /reset_prefix_cache (docs/server.md).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/kv_cache/events/kv_events_publisher.h"
#include "server/served_model.h"

namespace astrai {

// The publisher's counters, as /stats shows them.
nlohmann::ordered_json kv_events_json(const KVEventsPublisher::Counts& counts);

// {"block_size", "medium", "blocks": [{"block_hash", "parent_block_hash", "token_ids"}]}: every
// block the prefix cache holds now, each after its parent, with the hashes the events name.
nlohmann::ordered_json kv_blocks_json(const ServedModel& model);

}  // namespace astrai
