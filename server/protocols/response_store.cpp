#include "server/protocols/response_store.h"

namespace astrai {

namespace {

// What an entry is counted as: its JSON text (what the process holds is of
// that order: nlohmann's nodes cost a small multiple of it). Invalid UTF-8
// in a string (a model's bytes) is counted as written, replaced, never thrown
// about (fuzz_responses found the throw).
size_t text_size(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).size();
}
size_t size_of(const ResponseStore::Stored& s) { return text_size(s.response) + text_size(s.conversation); }

}  // namespace

bool ResponseStore::put(const std::string& id, Stored stored) {
  const size_t bytes = size_of(stored) + id.size();
  std::lock_guard lock(mutex_);
  if (const auto it = index_.find(id); it != index_.end()) {
    bytes_ -= it->second->bytes;
    entries_.erase(it->second);
    index_.erase(it);
  }
  if (bytes > max_bytes_) return false;
  while (!entries_.empty() && bytes_ + bytes > max_bytes_) {
    bytes_ -= entries_.back().bytes;
    index_.erase(entries_.back().id);
    entries_.pop_back();
  }
  entries_.push_front({id, std::move(stored), bytes});
  index_[id] = entries_.begin();
  bytes_ += bytes;
  return true;
}

std::optional<ResponseStore::Stored> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, it->second);
  return it->second->stored;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = index_.find(id);
  if (it == index_.end()) return false;
  bytes_ -= it->second->bytes;
  entries_.erase(it->second);
  index_.erase(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace astrai
