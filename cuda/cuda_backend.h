// The CUDA backend as the rest of the program sees it: plain C++
// declarations, so this header compiles without nvcc and without the CUDA
// toolkit. The definitions exist only when meson built cuda/ (the lead's
// ASTRAI_HAVE_CUDA define says so); code calling them is guarded by it.
//
//   std::string why;
//   if (astrai::cuda_available(&why)) {
//     auto executor = astrai::make_cuda_executor(source, {});       // bf16 weights and cache
//     auto cache = astrai::make_cuda_kv_cache(*executor, n_pages, page_size);
//     ... InferenceScheduler(std::move(executor), std::move(cache), config)
//   }
#pragma once

#include <memory>
#include <string>

#include "cuda/cuda_available.h"
#include "cuda/cuda_options.h"
#include "cuda/tensor_parallel/tensor_parallel_options.h"
#include "engine/executor/executor.h"
#include "engine/kv_cache/kv_cache.h"
#include "engine/model_files/model_source.h"
#include "reference/model_weights.h"

namespace astrai {

// "NVIDIA H200 (sm_90, 139.8 GiB)" for device `device`; "" when there is none.
// Emulated: "AstrAI emulated device (CPU) (sm_90, 16.0 GiB of host memory at
// most; the CUDA kernels emulated on the CPU, slowly)".
std::string cuda_device_description(int device = 0);

// The CUDA executor (name() "cuda-bf16" or "cuda-f32"). Throws
// std::invalid_argument for a model the kernels do not support (head_dim >
// 256, more than 16 query heads per KV head) and std::runtime_error when no
// GPU is usable or the weights do not fit (saying how much they need).
// The weights are uploaded from `source` tensor by tensor (quantized blocks
// as the file holds them; cuda/device_weights.h), and nothing of it is kept:
// a served GGUF model needs no float32 copy in host memory.
std::unique_ptr<Executor> make_cuda_executor(const ModelSource& source, CudaOptions options = {});
// The same from weights in memory (tests, synthetic models); they may be
// dropped once this returns.
std::unique_ptr<Executor> make_cuda_executor(const ModelWeights& weights, CudaOptions options = {});

// Tensor parallelism over tp.launch.world GPUs (docs/tensor-parallel.md):
// this process is rank 0 and serves; it starts this node's other ranks (or
// waits for those a launcher started), and returns an executor whose steps
// run on every rank. make_cuda_kv_cache, cuda_kv_pages_that_fit and
// cuda_memory_description take it as they take a one-GPU executor. Throws
// std::invalid_argument when the model does not divide by the ranks and
// std::runtime_error when a rank fails to start (naming it).
std::unique_ptr<Executor> make_tensor_parallel_executor(const ModelSource& source, CudaOptions options,
                                                        TensorParallelOptions tp);
// A rank other than 0 (tp.launch.rank > 0): joins rank 0, uploads its shard
// of `source` and runs rank 0's steps until rank 0 stops it. Returns the
// process's exit status: 0 after rank 0's shutdown, 1 after a failure
// (reported to rank 0 and on stderr).
int run_tensor_parallel_rank(const ModelSource& source, const TensorParallelOptions& tp);

// The KV cache a CUDA executor reads and writes: paged, on the device, in the
// executor's dtype, with PageManager's bookkeeping (prefix sharing included).
// Throws std::invalid_argument when `executor` is not a CUDA executor, and
// std::runtime_error (saying how much was needed) when it does not fit.
// With `running_tasks` > 0 a model's sliding-window layers get a pool of
// their own beside the n_pages of the full layers, sized by
// sliding_pages_for() (engine/kv_cache/page_cache.h; one GPU only: a
// tensor-parallel executor keeps one pool).
std::unique_ptr<KVCache> make_cuda_kv_cache(const Executor& executor, int n_pages, int page_size,
                                            int running_tasks = 0);

// Pages a cache may take so that `fraction` of the device memory free now
// holds it (for sizing the cache after the weights are loaded). On the
// emulated device, whose memory is the host's, at most 256 MiB of pages (or
// one whole context, if more).
// With `running_tasks` > 0, the full layers' pages beside the sliding pool
// make_cuda_kv_cache gives the same running_tasks.
int cuda_kv_pages_that_fit(const Executor& executor, int page_size, double fraction = 0.9, int running_tasks = 0);

// What the device holds, for the startup line: "weights 4211.0 MiB: 224
// matrices quantized (Q4_K 193, Q6_K 31), the rest bf16; KV cache 1,024 pages
// of 16 tokens, 8192.0 MiB".
std::string cuda_memory_description(const Executor& executor, const KVCache& cache);

}  // namespace astrai
