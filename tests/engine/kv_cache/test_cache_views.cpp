// ContiguousCacheView and PageCacheView against the reference DenseKVCache
// (RapidCheck): random shapes, page sizes and lengths; page tables grown a
// little at a time, interleaved between tasks; random writes (overwrites
// included) fed to both; every written row must read back bit for bit as the
// dense cache has it.
#include <map>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/kv_cache/contiguous_cache.h"
#include "engine/kv_cache/page_cache.h"
#include "reference/dense_kv_cache.h"

namespace {

using astrai::KVCache;
using Tokens = std::vector<int>;

astrai::ModelConfig random_config() {
  astrai::ModelConfig c;
  c.n_layers = *rc::gen::inRange(1, 4);
  c.n_kv_heads = *rc::gen::inRange(1, 3);
  c.n_heads = c.n_kv_heads * *rc::gen::inRange(1, 3);
  c.dim = c.n_heads * 2 * *rc::gen::inRange(1, 3);  // head_dim 2 or 4
  c.hidden_dim = 8;
  c.vocab_size = 16;
  c.max_seq_len = *rc::gen::inRange(1, 25);
  return c;
}

struct Task {
  int id;
  int length;  // positions written: [0, length)
};

rc::Gen<std::vector<float>> random_row(size_t kv_dim) {
  return rc::gen::container<std::vector<float>>(
      kv_dim, rc::gen::map(rc::gen::inRange(-4096, 4096), [](int x) { return float(x) / 64.0f; }));
}

// Admits every task with a short prompt, then grows them in turns of a few
// tokens, so page tables interleave; RC_ASSERTs that the cache has room.
void admit_and_grow(KVCache& cache, const std::vector<Task>& tasks) {
  std::vector<int> reserved;
  for (const Task& t : tasks) {
    reserved.push_back(*rc::gen::inRange(1, t.length + 1));
    RC_ASSERT(cache.admit(t.id, Tokens(size_t(reserved.back()), t.id % 16)) == std::optional<int>(0));
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (reserved[i] == tasks[i].length) continue;
      reserved[i] = std::min(tasks[i].length, reserved[i] + *rc::gen::inRange(1, 4));
      RC_ASSERT(cache.reserve(tasks[i].id, reserved[i]));
      grew = true;
    }
  }
}

// Random writes to `cache` (seq = task id) and `dense` (seq = task index),
// then a comparison of every written row.
void check_round_trip(KVCache& cache, const astrai::ModelConfig& config, const std::vector<Task>& tasks) {
  astrai::DenseKVCache dense(config, int(tasks.size()));
  const size_t kv_dim = size_t(config.kv_dim());
  std::map<std::tuple<int, size_t, int>, bool> written;  // (layer, task index, pos)
  const int n_writes = *rc::gen::inRange(0, 150);
  for (int w = 0; w < n_writes; ++w) {
    const int layer = *rc::gen::inRange(0, config.n_layers);
    const size_t t = *rc::gen::inRange<size_t>(0, tasks.size());
    const int pos = *rc::gen::inRange(0, tasks[t].length);
    const std::vector<float> key = *random_row(kv_dim);
    const std::vector<float> value = *random_row(kv_dim);
    cache.view().write(layer, tasks[t].id, pos, key.data(), value.data());
    dense.write(layer, int(t), pos, key.data(), value.data());
    written[{layer, t, pos}] = true;
  }
  for (const auto& [where, unused] : written) {
    const auto [layer, t, pos] = where;
    const float* k = cache.view().key(layer, tasks[t].id, pos);
    const float* v = cache.view().value(layer, tasks[t].id, pos);
    const float* dk = dense.key(layer, int(t), pos);
    const float* dv = dense.value(layer, int(t), pos);
    RC_ASSERT(std::vector<float>(k, k + kv_dim) == std::vector<float>(dk, dk + kv_dim));
    RC_ASSERT(std::vector<float>(v, v + kv_dim) == std::vector<float>(dv, dv + kv_dim));
  }
  for (const Task& t : tasks) cache.release(t.id);
  RC_ASSERT(cache.all_free());
}

std::vector<Task> random_tasks(const astrai::ModelConfig& config) {
  std::vector<Task> tasks;
  const int n_tasks = *rc::gen::inRange(1, 5);
  const int ids[] = {1000, 7, -3, 1037};  // task ids are any ints, not slot numbers
  for (int i = 0; i < n_tasks; ++i) tasks.push_back({ids[i], *rc::gen::inRange(1, config.max_seq_len + 1)});
  return tasks;
}

}  // namespace

TEST_CASE("PageCacheView reads back what DenseKVCache holds for the same writes", "[kv_cache][view]") {
  rc::prop("random page sizes and lengths", [] {
    const astrai::ModelConfig config = random_config();
    const std::vector<Task> tasks = random_tasks(config);
    const int page_size = *rc::gen::inRange(1, 10);
    int n_pages = *rc::gen::inRange(0, 3);
    for (const Task& t : tasks) n_pages += (t.length + page_size - 1) / page_size;
    astrai::PageCache cache(config, n_pages, page_size);
    admit_and_grow(cache, tasks);
    cache.pages().check_invariants();
    check_round_trip(cache, config, tasks);
  });
}

TEST_CASE("ContiguousCacheView reads back what DenseKVCache holds for the same writes", "[kv_cache][view]") {
  rc::prop("random shapes and lengths", [] {
    const astrai::ModelConfig config = random_config();
    const std::vector<Task> tasks = random_tasks(config);
    astrai::ContiguousCache cache(config, int(tasks.size()) + *rc::gen::inRange(0, 3));
    admit_and_grow(cache, tasks);
    check_round_trip(cache, config, tasks);
  });
}
