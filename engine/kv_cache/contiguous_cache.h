// The default KV cache: every task gets one slot of max_seq_len positions,
// keys and values stored as [n_layers, n_slots, max_seq_len, n_kv_heads,
// head_dim]. Admission succeeds while a slot is free; nothing is shared.
#pragma once

#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/kv_cache/kv_cache.h"
#include "reference/model_config.h"

namespace astrai {

class ContiguousCache;

// The forward pass's window on a ContiguousCache: maps `seq` (a task id) to
// its slot and addresses row [layer, slot, pos].
class ContiguousCacheView final : public KVCacheView {
 public:
  explicit ContiguousCacheView(ContiguousCache& cache) : cache_(cache) {}

  // Throws std::invalid_argument for a task without a slot, std::out_of_range
  // for a layer or position outside the cache.
  void write(int layer, int seq, int pos, const float* key, const float* value) override;
  const float* key(int layer, int seq, int pos) const override;
  const float* value(int layer, int seq, int pos) const override;

 private:
  size_t row_offset(int layer, int seq, int pos) const;
  ContiguousCache& cache_;
};

class ContiguousCache final : public KVCache {
 public:
  // Throws std::invalid_argument for an invalid config or n_slots < 1.
  ContiguousCache(const ModelConfig& config, int n_slots);
  ContiguousCache(const ContiguousCache&) = delete;
  ContiguousCache& operator=(const ContiguousCache&) = delete;

  std::optional<int> admit(int task_id, std::span<const int> prompt) override;
  bool reserve(int task_id, int n_tokens) override;
  void commit(int task_id, std::span<const int> tokens_so_far) override;
  // Copies the parent's rows [0, n_tokens) into a free slot: nothing is
  // shared, so n choices hold the prompt n times, but compute it once.
  bool fork(int parent_id, int child_id, int n_tokens) override;
  void release(int task_id) override;
  bool has_task(int task_id) const override { return slot_of_task_.count(task_id) != 0; }
  KVCacheView& view() override { return view_; }
  KVCacheStats stats() const override;
  size_t storage_bytes() const override { return (keys_.size() + values_.size()) * sizeof(float); }

  // The slot holding the task; throws std::invalid_argument for an unknown task.
  int slot_of(int task_id) const;
  int n_slots() const { return int(slot_used_.size()); }
  int max_seq_len() const { return max_seq_len_; }
  const xt::xtensor<float, 5>& keys() const { return keys_; }
  const xt::xtensor<float, 5>& values() const { return values_; }

 private:
  friend class ContiguousCacheView;
  void check_length(int n_tokens, const char* what) const;

  int n_layers_;
  int max_seq_len_;
  int kv_dim_;
  xt::xtensor<float, 5> keys_;    // [layer, slot, position, kv_head, head_dim]
  xt::xtensor<float, 5> values_;  // same shape as keys_
  std::vector<bool> slot_used_;
  std::unordered_map<int, int> slot_of_task_;
  ContiguousCacheView view_;
};

}  // namespace astrai
