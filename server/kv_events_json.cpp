#include "server/kv_events_json.h"

namespace astrai {

nlohmann::ordered_json kv_events_json(const KVEventsPublisher::Counts& c) {
  return {{"batches", c.batches},
          {"published", c.published},
          {"dropped_queue_full", c.dropped_queue_full},
          {"dropped_subscriber_full", c.dropped_subscriber_full},
          {"resyncs", c.resyncs},
          {"queued", c.queued},
          {"resync_pending", c.resync_pending}};
}

nlohmann::ordered_json kv_blocks_json(const ServedModel& model) {
  nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
  for (const KVCachedBlock& b : model.engine->cached_blocks()) {  // read on the scheduler's thread
    blocks.push_back({{"block_hash", b.block_hash},
                      {"parent_block_hash", b.parent_block_hash ? nlohmann::ordered_json(*b.parent_block_hash)
                                                                : nlohmann::ordered_json(nullptr)},
                      {"token_ids", b.token_ids}});
  }
  const SchedulerStats stats = model.engine->get_stats();
  return {{"block_size", stats.cache.block_tokens},
          {"medium", model.kv_events ? nlohmann::ordered_json(model.kv_events->stamp().medium) : nullptr},
          {"blocks", std::move(blocks)}};
}

}  // namespace astrai
