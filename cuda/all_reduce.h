// The one collective a tensor-parallel step needs of its executor's view: a
// sum over the ranks, queued on a stream like a kernel. An interface here so
// that the executor (cuda_executor.h) knows nothing of how the ranks talk:
// tensor_parallel/communicator.h implements it over NCCL.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace astrai::cuda {

class AllReduce {
 public:
  virtual ~AllReduce() = default;
  // data[0, count) := the sum over the ranks of their data[0, count), on
  // every rank, queued on `stream` (and captured into a graph like a kernel).
  virtual void all_reduce_sum(float* data, size_t count, cudaStream_t stream) = 0;
};

}  // namespace astrai::cuda
