// Rank 0 of a tensor-parallel group (see tensor_parallel_executor.h).
#include "cuda/tensor_parallel/tensor_parallel_executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "cuda/batch_plan.h"
#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/device_page_cache.h"
#include "cuda/tensor_parallel/communicator.h"
#include "cuda/tensor_parallel/rank_messages.h"
#include "engine/distributed/rank_group.h"
#include "engine/distributed/tensor_parallel_shard.h"

namespace astrai::cuda {

// What the executor and its caches share: the other ranks, which cache is
// which, and the page copies each cache made since its last step. A cache
// may outlive the executor (it then tells nobody).
struct TensorParallelExecutor::Group {
  std::unique_ptr<RankGroup> ranks;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<CudaExecutor> local;
  ModelConfig full;
  CudaOptions options;
  std::vector<tp::Ready> ready;  // [rank]: what each rank reported once loaded (rank 0's too)

  std::mutex mutex;
  bool closed = false;
  int next_cache = 1;
  std::map<const DevicePageCache*, int> cache_ids;
  std::map<int, std::vector<int>> pending_copies;  // by cache id: (from, to) pairs

  void send_all(const std::string& frame) {
    if (!closed) ranks->send_all(frame);
  }
};

namespace {

// What rank 0 checks a rank loaded: the same shape, the same tying.
std::string model_fingerprint(const ModelSource& s) {
  return s.config.describe() + (s.tied ? ", classifier tied" : "");
}

[[noreturn]] void default_failure(const std::string& message) {
  std::cerr << "astrai: " << message << "; stopping (a tensor-parallel step needs every rank)" << std::endl;
  std::_Exit(70);
}

}  // namespace

TensorParallelExecutor::TensorParallelExecutor(const ModelSource& full, CudaOptions options, TensorParallelOptions tp)
    : group_(std::make_shared<Group>()) {
  const int world = tp.launch.world;
  check_tensor_parallel(full.config, {0, world});  // before any rank starts
  if (tp.launch.rank != 0) throw std::logic_error("TensorParallelExecutor runs rank 0, not " + std::to_string(tp.launch.rank));
  Group& g = *group_;
  g.full = full.config;
  options.device = tp.launch.local_rank;
  g.options = options;
  const std::string fingerprint = model_fingerprint(full);
  g.ranks = std::make_unique<RankGroup>(tp.launch, tp.rank_command, tp.startup_timeout_s, [&](const std::string& frame) {
    const tp::Hello hello = tp::decode_hello(frame);
    if (hello.world != world)
      throw std::runtime_error("tensor parallel: rank " + std::to_string(hello.rank) + " was started for " +
                               std::to_string(hello.world) + " ranks, rank 0 for " + std::to_string(world));
    if (hello.model != fingerprint)
      throw std::runtime_error("tensor parallel: rank " + std::to_string(hello.rank) + " loaded another model (" +
                               hello.model + ") than rank 0 (" + fingerprint + ")");
    return RankIdentity{hello.rank, hello.pid, hello.host};
  });
  const std::string id = Communicator::make_id();
  g.ranks->send_all(tp::encode(tp::Setup{id, int(options.dtype), options.cuda_graphs, options.batch_invariant,
                                         options.poison_scratch}));
  ASTRAI_CUDA_CHECK(cudaSetDevice(options.device));
  g.comm = std::make_unique<Communicator>(id, 0, world);  // returns once every rank has joined
  std::weak_ptr<Group> weak = group_;
  RankRole role;
  role.comm = g.comm.get();
  role.plan_ready = [weak](const BatchPlan& plan, bool padded, const DevicePageCache& cache) {
    const std::shared_ptr<Group> group = weak.lock();
    if (!group) return;
    std::lock_guard lock(group->mutex);
    const auto it = group->cache_ids.find(&cache);
    if (it == group->cache_ids.end())
      throw std::invalid_argument("tensor parallel: a KV cache this executor did not make (make_cuda_kv_cache)");
    tp::Step step{it->second, padded, std::move(group->pending_copies[it->second]), plan};
    group->pending_copies[it->second].clear();
    group->send_all(tp::encode(step));
  };
  g.local = std::make_unique<CudaExecutor>(shard_model_source(full, {0, world}), options, std::move(role));
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  g.ready.push_back(tp::Ready{g.local->weights_bytes(), free_bytes});
  for (int r = 1; r < world; ++r) {
    const std::string frame = g.ranks->receive(r, tp.startup_timeout_s);
    if (tp::kind_of(frame) == tp::Kind::Failed)
      throw std::runtime_error("tensor parallel: " + g.ranks->describe(r) + " failed: " + tp::decode_failed(frame).message);
    g.ready.push_back(tp::decode_ready(frame));
  }
  auto on_failure = tp.on_rank_failure ? tp.on_rank_failure : std::function<void(const std::string&)>(default_failure);
  g.ranks->watch([on_failure](int, const std::optional<std::string>& frame, const std::string& what) {
    std::string message = "tensor parallel: " + what;
    if (frame) {
      try {
        message += ": " + tp::decode_failed(*frame).message;
      } catch (const std::exception&) {
        message += " (an unexpected message)";
      }
    }
    on_failure(message);
  });
}

TensorParallelExecutor::~TensorParallelExecutor() {
  Group& g = *group_;
  {
    std::lock_guard lock(g.mutex);
    if (g.closed) return;
    g.closed = true;
  }
  for (const auto& [rank, status] : g.ranks->close(tp::encode(tp::Shutdown{}), 30.0))
    if (status != 0)
      std::cerr << "astrai: tensor parallel: rank " << rank << " ended with " << describe_exit_status(status)
                << " at shutdown" << std::endl;
  g.local.reset();
  g.comm.reset();
}

const ModelConfig& TensorParallelExecutor::config() const { return group_->full; }

xt::xtensor<float, 2> TensorParallelExecutor::forward(std::span<const BatchToken> batch, KVCacheView& cache) {
  return group_->local->forward(batch, cache);
}

std::vector<SampledToken> TensorParallelExecutor::forward_and_sample(std::span<const BatchToken> batch,
                                                                     KVCacheView& cache,
                                                                     std::span<const RowSampling> rows) {
  return group_->local->forward_and_sample(batch, cache, rows);
}

std::string TensorParallelExecutor::name() const {
  return group_->local->name() + "-tp" + std::to_string(world());
}

size_t TensorParallelExecutor::weights_bytes() const {
  size_t n = 0;
  for (const tp::Ready& r : group_->ready) n += size_t(r.weights_bytes);
  return n;
}

int TensorParallelExecutor::world() const { return int(group_->ready.size()); }

const CudaExecutor& TensorParallelExecutor::rank0() const { return *group_->local; }

std::unique_ptr<KVCache> TensorParallelExecutor::make_cache(int n_pages, int page_size) const {
  Group& g = *group_;
  auto cache = std::make_unique<DevicePageCache>(g.local->config(), n_pages, page_size, g.local->dtype());
  cache->set_mirrors(world() - 1);  // each other rank holds the same pages of its heads
  std::lock_guard lock(g.mutex);
  const int id = g.next_cache++;
  g.cache_ids[cache.get()] = id;
  g.send_all(tp::encode(tp::CreateCache{id, n_pages, page_size}));
  std::weak_ptr<Group> weak = group_;
  cache->on_page_copy([weak, id](int from, int to) {
    if (const auto group = weak.lock()) {
      std::lock_guard lock(group->mutex);
      group->pending_copies[id].insert(group->pending_copies[id].end(), {from, to});
    }
  });
  const DevicePageCache* key = cache.get();
  cache->on_destroy([weak, id, key] {
    if (const auto group = weak.lock()) {
      std::lock_guard lock(group->mutex);
      group->cache_ids.erase(key);
      group->pending_copies.erase(id);
      try {
        group->send_all(tp::encode(tp::DropCache{id}));
      } catch (const std::exception&) {
        // A rank that is gone needs no message; the watch reports it.
      }
    }
  });
  return cache;
}

int TensorParallelExecutor::pages_that_fit(int page_size, double fraction) const {
  const Group& g = *group_;
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  for (size_t r = 1; r < g.ready.size(); ++r) free_bytes = std::min(free_bytes, size_t(g.ready[r].free_bytes));
  return DevicePageCache::pages_that_fit(g.local->config(), page_size, g.local->dtype(), free_bytes, fraction);
}

std::string TensorParallelExecutor::memory_description(int n_pages, int page_size) const {
  const Group& g = *group_;
  const size_t per_rank = DevicePageCache::bytes_needed(g.local->config(), n_pages, page_size, g.local->dtype());
  return "weights on " + std::to_string(world()) + " ranks, " + format_mib(weights_bytes()) + " in all (rank 0: " +
         g.local->weights_description() + "); KV cache " + std::to_string(n_pages) + " pages of " +
         std::to_string(page_size) + " tokens, " + std::to_string(world()) + " x " + format_mib(per_rank) +
         " (each rank its heads)";
}

}  // namespace astrai::cuda
