// Rank 0 of a tensor-parallel group, behind the Executor interface
// (docs/tensor-parallel.md): the scheduler, the KV cache's bookkeeping and
// sampling stay in this process, which runs rank 0's shard of the model
// (engine/distributed/tensor_parallel_shard.h) on its GPU; each step's plan
// goes to the other ranks (cuda/tensor_parallel/rank_worker.h), which run
// the same step on their shards and caches, and the two all-reduces of each
// layer join the ranks' products inside the step's graph. The logits are
// rank 0's: every rank holds the whole classifier.
#pragma once

#include <memory>
#include <string>

#include "cuda/cuda_executor.h"
#include "cuda/cuda_options.h"
#include "cuda/tensor_parallel/tensor_parallel_options.h"
#include "engine/executor/executor.h"
#include "engine/kv_cache/kv_cache.h"
#include "engine/model_files/model_source.h"

namespace astrai::cuda {

class TensorParallelExecutor final : public Executor {
 public:
  // Starts or waits for the other ranks (as tp.launch says), checks that
  // they loaded the same model, joins them in one NCCL communicator,
  // uploads rank 0's shard and waits for every rank's. Throws
  // std::invalid_argument when the model does not divide (the ranks are not
  // started) and std::runtime_error naming the rank that failed to start.
  TensorParallelExecutor(const ModelSource& full, CudaOptions options, TensorParallelOptions tp);
  // Tells the other ranks to stop and waits for the ones it started.
  ~TensorParallelExecutor() override;

  const ModelConfig& config() const override;  // the whole model's
  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) override;
  std::vector<SampledToken> forward_and_sample(std::span<const BatchToken> batch, KVCacheView& cache,
                                               std::span<const RowSampling> rows) override;
  std::string name() const override;  // "cuda-bf16-tp2"
  size_t weights_bytes() const override;  // every rank's, together

  int world() const;
  const CudaExecutor& rank0() const;
  // The paged cache of this group: rank 0's DevicePageCache (its heads'
  // rows; the pages' bookkeeping for all), with a cache of the same pages on
  // every other rank, whose page copies follow rank 0's.
  std::unique_ptr<KVCache> make_cache(int n_pages, int page_size) const;
  // Pages every rank can hold in `fraction` of its free device memory.
  int pages_that_fit(int page_size, double fraction) const;
  // "weights 2 ranks, 12.3 MiB in all (rank 0: 6.2 MiB in bf16); KV cache
  // ..., 2 x 4.0 MiB": for the startup line.
  std::string memory_description(int n_pages, int page_size) const;

 private:
  struct Group;
  std::shared_ptr<Group> group_;
};

}  // namespace astrai::cuda
