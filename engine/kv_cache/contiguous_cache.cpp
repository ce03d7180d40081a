// ContiguousCache: slot bookkeeping and row addressing.
#include "engine/kv_cache/contiguous_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace astrai {

namespace {

ModelConfig validated(const ModelConfig& config, int n_slots) {
  config.validate();
  if (n_slots < 1)
    throw std::invalid_argument("ContiguousCache: n_slots must be at least 1, got " + std::to_string(n_slots));
  return config;
}

}  // namespace

ContiguousCache::ContiguousCache(const ModelConfig& config, int n_slots)
    : n_layers_(validated(config, n_slots).n_layers),
      max_seq_len_(config.max_seq_len),
      kv_dim_(config.kv_dim()),
      keys_({size_t(config.n_layers), size_t(n_slots), size_t(config.max_seq_len), size_t(config.n_kv_heads),
             size_t(config.head_dim())}),
      values_(keys_.shape()),
      slot_used_(size_t(n_slots), false),
      view_(*this) {}

void ContiguousCache::check_length(int n_tokens, const char* what) const {
  if (n_tokens < 1 || n_tokens > max_seq_len_)
    throw std::invalid_argument(std::string("ContiguousCache: ") + what + " of " + std::to_string(n_tokens) +
                                " tokens is outside [1, max_seq_len=" + std::to_string(max_seq_len_) + "]");
}

std::optional<int> ContiguousCache::admit(int task_id, std::span<const int> prompt) {
  if (has_task(task_id))
    throw std::invalid_argument("ContiguousCache: task " + std::to_string(task_id) + " is already admitted");
  check_length(int(prompt.size()), "a prompt");
  const auto free_slot = std::find(slot_used_.begin(), slot_used_.end(), false);
  if (free_slot == slot_used_.end()) return std::nullopt;
  *free_slot = true;
  slot_of_task_.emplace(task_id, int(free_slot - slot_used_.begin()));
  return 0;
}

bool ContiguousCache::reserve(int task_id, int n_tokens) {
  slot_of(task_id);
  check_length(n_tokens, "a reservation");
  return true;  // the slot already spans max_seq_len positions
}

void ContiguousCache::commit(int task_id, std::span<const int> tokens_so_far) {
  slot_of(task_id);
  check_length(int(tokens_so_far.size()), "a commit");
}

bool ContiguousCache::fork(int parent_id, int child_id, int n_tokens) {
  if (has_task(child_id))
    throw std::invalid_argument("ContiguousCache: task " + std::to_string(child_id) + " is already admitted");
  const int parent_slot = slot_of(parent_id);
  check_length(n_tokens, "a fork");
  const auto free_slot = std::find(slot_used_.begin(), slot_used_.end(), false);
  if (free_slot == slot_used_.end()) return false;
  const int slot = int(free_slot - slot_used_.begin());
  const size_t slot_floats = size_t(max_seq_len_) * size_t(kv_dim_);
  for (int layer = 0; layer < n_layers_; ++layer) {
    const size_t layer_start = size_t(layer) * slot_used_.size() * slot_floats;
    for (xt::xtensor<float, 5>* rows : {&keys_, &values_}) {
      const float* src = rows->data() + layer_start + size_t(parent_slot) * slot_floats;
      std::copy(src, src + size_t(n_tokens) * size_t(kv_dim_), rows->data() + layer_start + size_t(slot) * slot_floats);
    }
  }
  *free_slot = true;
  slot_of_task_.emplace(child_id, slot);
  return true;
}

void ContiguousCache::release(int task_id) {
  slot_used_[size_t(slot_of(task_id))] = false;
  slot_of_task_.erase(task_id);
}

KVCacheStats ContiguousCache::stats() const {
  KVCacheStats s;
  s.block_tokens = max_seq_len_;
  s.blocks_total = n_slots();
  s.blocks_held = int(slot_of_task_.size());
  s.blocks_free = s.blocks_total - s.blocks_held;
  s.tasks = int(slot_of_task_.size());
  return s;
}

int ContiguousCache::slot_of(int task_id) const {
  const auto it = slot_of_task_.find(task_id);
  if (it == slot_of_task_.end())
    throw std::invalid_argument("ContiguousCache: task " + std::to_string(task_id) + " has no slot");
  return it->second;
}

// Row-major offset of row [layer, slot, pos, :, :] in keys_ / values_.
size_t ContiguousCacheView::row_offset(int layer, int seq, int pos) const {
  const int slot = cache_.slot_of(seq);
  if (layer < 0 || layer >= cache_.n_layers_ || pos < 0 || pos >= cache_.max_seq_len_)
    throw std::out_of_range("ContiguousCache: layer " + std::to_string(layer) + ", position " +
                            std::to_string(pos) + " of task " + std::to_string(seq) + " is outside the cache");
  return ((size_t(layer) * size_t(cache_.n_slots()) + size_t(slot)) * size_t(cache_.max_seq_len_) + size_t(pos)) *
         size_t(cache_.kv_dim_);
}

void ContiguousCacheView::write(int layer, int seq, int pos, const float* key, const float* value) {
  const size_t offset = row_offset(layer, seq, pos);
  std::copy(key, key + cache_.kv_dim_, cache_.keys_.data() + offset);
  std::copy(value, value + cache_.kv_dim_, cache_.values_.data() + offset);
}

const float* ContiguousCacheView::key(int layer, int seq, int pos) const {
  return cache_.keys_.data() + row_offset(layer, seq, pos);
}

const float* ContiguousCacheView::value(int layer, int seq, int pos) const {
  return cache_.values_.data() + row_offset(layer, seq, pos);
}

}  // namespace astrai
