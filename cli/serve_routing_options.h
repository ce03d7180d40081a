// The `astrai serve` options a router in front of replicas uses (docs/deployment.md):
// KV cache events for prefix-aware routing (--kv-events-config, vLLM's JSON, and its
// shorthands --kv-events-endpoint and --kv-events-topic), the paged cache's size
// (--kv-cache-pages) and the debug routes (--debug-routes). Kept apart from
// command_serve.cpp's own table.
#pragma once

#include <memory>

#include "cli/arguments.h"
#include "engine/inference_engine.h"
#include "engine/kv_cache/events/kv_events_config.h"
#include "engine/kv_cache/events/kv_events_publisher.h"
#include "server/server_options.h"

namespace astrai::cli {

void add_routing_options(Arguments& args);
// Reads them into the engine's and the server's configurations; throws
// std::invalid_argument naming the option.
KVEventsConfig read_routing_options(const Arguments& args, EngineConfig& engine, ServerOptions& server);
// Once the engine is built: its publisher, already the engine's event sink;
// null when events are off. Throws when the engine's cache has no events (a
// contiguous cache) or ZeroMQ refuses the endpoint.
std::shared_ptr<KVEventsPublisher> start_kv_events(const KVEventsConfig& config, InferenceEngine& engine);

}  // namespace astrai::cli
