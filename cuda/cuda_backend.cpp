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

namespace astrai {

#ifdef ASTRAI_CUDA_EMULATED
namespace {
constexpr size_t kEmulatedCacheBytes = size_t(256) << 20;  // cuda_kv_pages_that_fit's cap on the emulated device
}  // namespace
#endif

bool cuda_available(std::string* why) {
  const cuda::DeviceInfo info = cuda::query_devices();
  std::string reason;
  if (info.device_count == 0)
    reason = "no GPU was found (" + (info.error.empty() ? std::string("no CUDA device") : info.error) + ")";
  else if (info.compute_capability < 80)
    reason = "device 0 (" + info.name + ") is sm_" + std::to_string(info.compute_capability) +
             "; the CUDA backend needs sm_80 or newer";
  const bool usable = reason.empty();
  // Usable and emulated: *why still says what the device is.
  if (usable && cuda_is_emulated())
    reason = "the device is emulated: the CUDA kernels run on the CPU (-Dcuda=emulated), for tests, slowly";
  if (why) *why = reason;
  return usable;
}

bool cuda_is_emulated() {
#ifdef ASTRAI_CUDA_EMULATED
  return true;
#else
  return false;
#endif
}

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

namespace {

const cuda::CudaExecutor& as_cuda(const Executor& executor) {
  const auto* cuda_executor = dynamic_cast<const cuda::CudaExecutor*>(&executor);
  if (!cuda_executor)
    throw std::invalid_argument("a CUDA KV cache needs a CUDA executor, not \"" + executor.name() + "\"");
  return *cuda_executor;
}

}  // namespace

std::unique_ptr<KVCache> make_cuda_kv_cache(const Executor& executor, int n_pages, int page_size) {
  const cuda::CudaExecutor& e = as_cuda(executor);
  return std::make_unique<cuda::DevicePageCache>(e.config(), n_pages, page_size, e.dtype());
}

int cuda_kv_pages_that_fit(const Executor& executor, int page_size, double fraction) {
  const cuda::CudaExecutor& e = as_cuda(executor);
  size_t free_bytes = 0, total_bytes = 0;
  ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t per_page = cuda::DevicePageCache::bytes_needed(e.config(), 1, page_size, e.dtype());
  double pages = double(free_bytes) * fraction / double(per_page);
#ifdef ASTRAI_CUDA_EMULATED
  // The emulated device reports 16 GiB, but its memory is host memory that
  // cudaMalloc fills with NaN bytes at once: 90% of it would take 14 GiB of
  // the machine's RAM. Its cache takes at most 256 MiB (ample for the small
  // models it serves in tests), or one whole context if that is more.
  const int one_context = (e.config().max_seq_len + page_size - 1) / page_size;
  pages = std::min(pages, std::max(double(kEmulatedCacheBytes / per_page), double(one_context)));
#endif
  return pages > 2e9 ? 2000000000 : int(pages);
}

std::string cuda_memory_description(const Executor& executor, int n_pages, int page_size) {
  const cuda::CudaExecutor& e = as_cuda(executor);
  const size_t cache = cuda::DevicePageCache::bytes_needed(e.config(), n_pages, page_size, e.dtype());
  return "weights " + e.weights_description() + "; KV cache " + std::to_string(n_pages) + " pages of " +
         std::to_string(page_size) + " tokens, " + cuda::format_mib(cache);
}

}  // namespace astrai
