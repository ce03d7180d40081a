#include "cli/serve_routing_options.h"

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace astrai::cli {

void add_routing_options(Arguments& args) {
  args.option("--kv-events-config",
              "KV cache events as vLLM's --kv-events-config JSON: enable_kv_cache_events, publisher, endpoint, "
              "replay_endpoint, buffer_steps, hwm, max_queue_size, topic, and AstrAI's sndbuf (needs the paged cache)")
      .option("--kv-events-endpoint",
              "shorthand: publish KV cache events on this ZeroMQ endpoint (tcp://*:5557 binds; a host connects)")
      .option("--kv-events-topic", "the topic of every KV event message (llm-d reads kv@<pod>@<model>)")
      .option("--kv-cache-pages",
              "pages of the paged KV cache (default: --max-running whole contexts; on CUDA, 90% of free memory)")
      .flag("--debug-routes", "serve GET /debug/kv_blocks and POST /reset_prefix_cache");
}

KVEventsConfig read_routing_options(const Arguments& args, EngineConfig& engine, ServerOptions& server) {
  // The shorthands are fields of the same JSON object, which checks them all alike.
  nlohmann::json fields = nlohmann::json::object();
  if (args.has("--kv-events-config")) {
    fields = nlohmann::json::parse(args.get("--kv-events-config"), nullptr, false);
    if (fields.is_discarded() || !fields.is_object())
      throw std::invalid_argument("--kv-events-config must be a JSON object");
  }
  if (args.has("--kv-events-endpoint")) {
    fields["enable_kv_cache_events"] = true;
    fields["endpoint"] = args.get("--kv-events-endpoint");
  }
  if (args.has("--kv-events-topic")) fields["topic"] = args.get("--kv-events-topic");
  const KVEventsConfig config = parse_kv_events_config(fields.dump());
  if (args.has("--kv-cache-pages")) {
    const long long pages = args.get_int("--kv-cache-pages");
    if (pages < 1 || pages > (1 << 30)) throw std::invalid_argument("--kv-cache-pages must be from 1 to 2^30");
    engine.cache_pages = int(pages);
  }
  server.debug_routes = args.has("--debug-routes");
  return config;
}

std::shared_ptr<KVEventsPublisher> start_kv_events(const KVEventsConfig& config, InferenceEngine& engine) {
  if (!config.publishing()) return nullptr;
  KVEventStamp stamp;
  stamp.block_size = engine.get_stats().cache.block_tokens;
  // vLLM's medium names where the blocks live: device memory on CUDA, host memory on the reference.
  stamp.medium = engine.executor_name().rfind("cuda", 0) == 0 ? "GPU" : "CPU";
  auto publisher = std::make_shared<KVEventsPublisher>(config, stamp);
  try {
    engine.set_kv_event_sink(publisher);
  } catch (const std::invalid_argument& e) {  // a cache without prefixes
    throw std::invalid_argument(std::string("KV cache events need --cache paged: ") + e.what());
  }
  return publisher;
}

}  // namespace astrai::cli
