// Responses kept for the Responses API's previous_response_id (and GET and
// DELETE /v1/responses/{id}), in memory, bounded in bytes: least recently
// used out first, a response larger than the whole bound never kept
// (`astrai serve --responses-store-mb`, docs/server.md). What a later request
// continues from is the conversation so far: the input items the response
// answered (its own previous responses' included) and its output items, which
// are input items as they are. Thread-safe (handlers run on the server's threads).
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace astrai {

class ResponseStore {
 public:
  struct Stored {
    nlohmann::ordered_json response;      // the response object, as sent
    nlohmann::ordered_json conversation;  // input items then output items: what previous_response_id continues
  };

  explicit ResponseStore(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Keeps `stored` under `id` (replacing one of that id), evicting the least
  // recently used until the bound holds; false when it alone exceeds the bound.
  bool put(const std::string& id, Stored stored);
  // The response, now the most recently used; nullopt when unknown or evicted.
  std::optional<Stored> get(const std::string& id);
  bool erase(const std::string& id);

  size_t size() const;
  size_t bytes() const;
  size_t max_bytes() const { return max_bytes_; }

 private:
  struct Entry {
    std::string id;
    Stored stored;
    size_t bytes;
  };
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace astrai
