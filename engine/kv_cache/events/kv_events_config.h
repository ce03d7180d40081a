// What `astrai serve --kv-events-config JSON` (and its shorthands
// --kv-events-endpoint, --kv-events-topic) set: vLLM's KVEventsConfig, field
// for field and with vLLM's defaults, so that a deployment written for
// `vllm serve --kv-events-config` works unchanged (docs/server.md, "KV cache
// events").
#pragma once

#include <string>

namespace astrai {

struct KVEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher;                  // "zmq" or "null"; "" = zmq when enabled, else null (as vLLM)
  std::string endpoint = "tcp://*:5557";  // the PUB socket: bound or connected (endpoint_binds)
  std::string replay_endpoint;            // the ROUTER replay socket (always bound); "" = none
  int buffer_steps = 10'000;              // batches kept for replay
  int hwm = 100'000;                      // ZMQ_SNDHWM of the PUB socket, in batches
  int max_queue_size = 100'000;           // batches waiting for the publisher thread; more are dropped
  std::string topic;                      // the first frame of every message
  // AstrAI's own field (not vLLM's): the PUB socket's kernel send buffer
  // (ZMQ_SNDBUF), in bytes; 0 = the system's, which Linux grows to
  // net.ipv4.tcp_wmem's maximum (4 MB) for a subscriber that stops reading.
  int sndbuf = 0;

  // Events are published: enabled, and the publisher is (or defaults to) zmq.
  bool publishing() const { return enable_kv_cache_events && publisher != "null"; }
};

// Reads a JSON object of KVEventsConfig's fields (any subset). Throws
// std::invalid_argument naming the field for an unknown field, a wrong type,
// a count below 1, an unknown publisher, or an endpoint without a scheme.
KVEventsConfig parse_kv_events_config(const std::string& json_text);

// vLLM's rule for the PUB socket: bind when the endpoint has a wildcard
// ('*', or '::') or is ipc:// or inproc://, else connect (a fixed address is
// a subscriber's: llm-d's endpoint picker binds, the engines connect to it).
bool endpoint_binds(const std::string& endpoint);

}  // namespace astrai
