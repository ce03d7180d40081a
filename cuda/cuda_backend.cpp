// The CUDA backend's entry points (cuda/cuda_backend.h).
#include "cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_info.h"
#include "cuda/device_page_cache.h"
#include "cuda/kernels/kernels.h"
#include "cuda/tensor_parallel/rank_worker.h"
#include "cuda/tensor_parallel/tensor_parallel_executor.h"
#include "engine/kv_cache/kv_cache_description.h"

namespace astrai {

std::string cuda_device_description(int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count) {
    cudaGetLastError();
    return "";
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
  char text[400];
  std::snprintf(text, sizeof text, "%s (sm_%d%d, %.1f GiB%s)", prop.name, prop.major, prop.minor,
                double(prop.totalGlobalMem) / double(1u << 30),
                cuda_is_emulated() ? " of host memory at most; the CUDA kernels emulated on the CPU, slowly" : "");
  return text;
}

std::unique_ptr<Executor> make_cuda_executor(const ModelSource& source, CudaOptions options) {
  return std::make_unique<cuda::CudaExecutor>(source, options);
}

std::unique_ptr<Executor> make_cuda_executor(const ModelWeights& weights, CudaOptions options) {
  return std::make_unique<cuda::CudaExecutor>(weights, options);
}

std::unique_ptr<Executor> make_tensor_parallel_executor(const ModelSource& source, CudaOptions options,
                                                        TensorParallelOptions tp) {
  return std::make_unique<cuda::TensorParallelExecutor>(source, options, std::move(tp));
}

int run_tensor_parallel_rank(const ModelSource& source, const TensorParallelOptions& tp) {
  return cuda::run_rank(source, tp);
}

namespace {

const cuda::CudaExecutor& as_cuda(const Executor& executor) {
  const auto* cuda_executor = dynamic_cast<const cuda::CudaExecutor*>(&executor);
  if (!cuda_executor)
    throw std::invalid_argument("a CUDA KV cache needs a CUDA executor, not \"" + executor.name() + "\"");
  return *cuda_executor;
}

}  // namespace

std::unique_ptr<KVCache> make_cuda_kv_cache(const Executor& executor, int n_pages, int page_size, int running_tasks) {
  if (const auto* tp = dynamic_cast<const cuda::TensorParallelExecutor*>(&executor))
    return tp->make_cache(n_pages, page_size);
  const cuda::CudaExecutor& e = as_cuda(executor);
  const int sliding_pages =
      running_tasks > 0 ? sliding_pages_for(e.config(), n_pages, page_size, running_tasks, cuda::kAttentionTile) : 0;
  return std::make_unique<cuda::DevicePageCache>(e.config(), n_pages, page_size, e.dtype(), sliding_pages);
}

int cuda_kv_pages_that_fit(const Executor& executor, int page_size, double fraction, int running_tasks) {
  if (const auto* tp = dynamic_cast<const cuda::TensorParallelExecutor*>(&executor))
    return tp->pages_that_fit(page_size, fraction);
  const cuda::CudaExecutor& e = as_cuda(executor);
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return cuda::DevicePageCache::pages_that_fit(e.config(), page_size, e.dtype(), free_bytes, fraction, running_tasks);
}

std::string cuda_memory_description(const Executor& executor, const KVCache& cache) {
  const KVCacheStats s = cache.stats();
  if (const auto* tp = dynamic_cast<const cuda::TensorParallelExecutor*>(&executor))
    return tp->memory_description(s.blocks_total, s.block_tokens);
  return "weights " + as_cuda(executor).weights_description() + "; " + describe_kv_cache(cache, "pages");
}

}  // namespace astrai
