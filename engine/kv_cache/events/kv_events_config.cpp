#include "engine/kv_cache/events/kv_events_config.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace astrai {

namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
  throw std::invalid_argument("--kv-events-config: " + field + " " + why);
}

std::string text_field(const nlohmann::json& value, const std::string& field) {
  if (!value.is_string()) refuse(field, "must be a string");
  return value.get<std::string>();
}

int count_field(const nlohmann::json& value, const std::string& field) {
  if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > (1 << 30))
    refuse(field, "must be an integer from 1 to 2^30");
  return value.get<int>();
}

void check_endpoint(const std::string& endpoint, const std::string& field) {
  for (const char* scheme : {"tcp://", "ipc://", "inproc://"})
    if (endpoint.rfind(scheme, 0) == 0 && endpoint.size() > std::string(scheme).size()) return;
  refuse(field, "must be a tcp://, ipc:// or inproc:// address, got '" + endpoint + "'");
}

}  // namespace

KVEventsConfig parse_kv_events_config(const std::string& json_text) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("--kv-events-config must be a JSON object");
  KVEventsConfig config;
  for (const auto& [key, value] : j.items()) {
    if (key == "enable_kv_cache_events") {
      if (!value.is_boolean()) refuse(key, "must be true or false");
      config.enable_kv_cache_events = value.get<bool>();
    } else if (key == "publisher") {
      config.publisher = value.is_null() ? "" : text_field(value, key);
      if (!config.publisher.empty() && config.publisher != "zmq" && config.publisher != "null")
        refuse(key, "must be \"zmq\" or \"null\", got \"" + config.publisher + "\"");
    } else if (key == "endpoint") {
      config.endpoint = text_field(value, key);
    } else if (key == "replay_endpoint") {
      config.replay_endpoint = value.is_null() ? "" : text_field(value, key);
    } else if (key == "buffer_steps") {
      config.buffer_steps = count_field(value, key);
    } else if (key == "hwm") {
      config.hwm = count_field(value, key);
    } else if (key == "max_queue_size") {
      config.max_queue_size = count_field(value, key);
    } else if (key == "topic") {
      config.topic = text_field(value, key);
    } else if (key == "sndbuf") {
      config.sndbuf = count_field(value, key);
    } else {
      refuse("'" + key + "'", "is not a field (enable_kv_cache_events, publisher, endpoint, replay_endpoint, "
                              "buffer_steps, hwm, max_queue_size, topic; and AstrAI's sndbuf)");
    }
  }
  check_endpoint(config.endpoint, "endpoint");
  if (!config.replay_endpoint.empty()) check_endpoint(config.replay_endpoint, "replay_endpoint");
  return config;
}

bool endpoint_binds(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0;
}

}  // namespace astrai
