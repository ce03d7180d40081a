#include "cli/backend.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "engine/executor/reference_executor.h"
#include "engine/kv_cache/kv_cache_description.h"
#include "engine/speculative/speculation_config.h"

#ifdef ASTRAI_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace astrai::cli {
namespace {

// The draft's cache holds every running task's whole context (the draft
// model's), as the target's does by default.
int draft_pages(const ModelConfig& draft, const EngineConfig& config) {
  const int per_context = (draft.max_seq_len + config.page_size - 1) / config.page_size;
  return std::max(1, config.scheduler.max_running_tasks) * per_context;
}

std::shared_ptr<DraftModelProposer> make_reference_draft(const ModelSource& source, const EngineConfig& config) {
  auto weights = std::make_shared<const ModelWeights>(read_model_weights(source));
  const ModelConfig model = weights->config;
  EngineConfig paged = config;
  paged.cache = KVCacheKind::Paged;  // forks of one prompt share its pages in the draft's cache too
  paged.cache_pages = draft_pages(model, config);
  return std::make_shared<DraftModelProposer>(std::make_unique<ReferenceExecutor>(std::move(weights)),
                                              make_kv_cache(model, paged), config.scheduler.max_running_tasks);
}

#ifdef ASTRAI_HAVE_CUDA
std::shared_ptr<DraftModelProposer> make_cuda_draft(const ModelSource& source, const EngineConfig& config,
                                                    const CudaOptions& options, std::string* description) {
  auto executor = make_cuda_executor(source, options);
  const int running = config.scheduler.max_running_tasks;
  // At most a quarter of the free memory: the target's cache takes 90% of what is left.
  const int pages = std::min(draft_pages(executor->config(), config),
                             cuda_kv_pages_that_fit(*executor, config.page_size, 0.25, running));
  auto cache = make_cuda_kv_cache(*executor, pages, config.page_size, running);
  *description = "; draft model " + executor->name() + ", " + cuda_memory_description(*executor, *cache);
  return std::make_shared<DraftModelProposer>(std::move(executor), std::move(cache), running);
}

std::shared_ptr<InferenceEngine> make_cuda_engine(const ModelSource& weights, std::shared_ptr<const Tokenizer> tokenizer,
                                                  const EngineConfig& config, const std::string& cuda_dtype,
                                                  const TensorParallelOptions& tp, std::string* description,
                                                  const DraftModel& draft) {
  CudaOptions options;
  options.dtype = cuda_dtype == "f32" ? cuda::DType::Float32 : cuda::DType::BFloat16;
  std::string draft_description;
  EngineConfig config_with_draft = config;
  if (draft.weights)
    config_with_draft.scheduler.speculation =
        draft_model_speculation(make_cuda_draft(*draft.weights, config, options, &draft_description), draft.tokens);
  auto executor = tp.launch.world > 1 ? make_tensor_parallel_executor(weights, options, tp)
                                      : make_cuda_executor(weights, options);
  // The device cache takes what the weights left (90% of free memory; on the
  // emulated device at most 256 MiB of host memory), at least one whole
  // context; or the pages asked for (--kv-cache-pages).
  const int page_size = config.page_size;
  const int running = config.scheduler.max_running_tasks;
  const int pages =
      config.cache_pages > 0 ? config.cache_pages : cuda_kv_pages_that_fit(*executor, page_size, 0.9, running);
  auto cache = make_cuda_kv_cache(*executor, pages, page_size, running);
  *description = executor->name() + " on " + cuda_device_description() + "; " +
                 cuda_memory_description(*executor, *cache) + draft_description;
  return std::make_shared<InferenceEngine>(std::move(executor), std::move(cache),
                                           std::move(tokenizer), config_with_draft);
}
#endif

// *why: the reason when it is not usable; for `auto`, the reason to pass it
// over (an emulated device is usable, but only when asked for by name).
bool cuda_usable(const std::string& requested, std::string* why) {
#ifdef ASTRAI_HAVE_CUDA
  if (!cuda_available(why)) return false;
  if (cuda_is_emulated() && requested == "auto") {
    *why += "; --backend cuda to use it";  // cuda_available says it is emulated
    return false;
  }
  why->clear();
  return true;
#else
  (void)requested;
  *why = "this build has no CUDA backend (nvcc was not found when it was configured)";
  return false;
#endif
}

}  // namespace

std::shared_ptr<InferenceEngine> make_engine(const ModelSource& weights, std::shared_ptr<const Tokenizer> tokenizer,
                                             const EngineConfig& config,
                                             const std::string& requested, std::string* description,
                                             const std::string& cuda_dtype, const TensorParallelOptions& tp,
                                             const DraftModel& draft) {
  if (requested != "auto" && requested != "reference" && requested != "cuda")
    throw std::invalid_argument("unknown backend '" + requested + "' (auto, reference, cuda)");
  if (cuda_dtype != "bf16" && cuda_dtype != "f32")
    throw std::invalid_argument("unknown CUDA dtype '" + cuda_dtype + "' (bf16, f32)");
  const bool parallel = tp.launch.world > 1;
  if (parallel && draft.weights)
    throw std::invalid_argument("--draft-model does not run with --tensor-parallel (the draft would need its own group)");
  if (parallel && requested == "reference")
    throw std::invalid_argument("--tensor-parallel needs the CUDA backend, not the reference");
  // Tensor parallelism is the CUDA backend's: asking for it asks for CUDA.
  const std::string backend = parallel ? "cuda" : requested;
  std::string why;
  const bool use_cuda = backend != "reference" && cuda_usable(backend, &why);
  if (backend == "cuda" && !use_cuda)
    throw std::invalid_argument(std::string(parallel ? "--tensor-parallel needs the CUDA backend, which" : "the CUDA backend") +
                                " is not usable: " + why);
#ifdef ASTRAI_HAVE_CUDA
  if (use_cuda && cuda_is_emulated())
    std::cerr << "astrai: --backend cuda: this build (-Dcuda=emulated) runs the CUDA kernels on the CPU emulation of "
                 "a device, for tests only; it is slow (far slower than the reference backend)"
              << std::endl;
  if (use_cuda) return make_cuda_engine(weights, std::move(tokenizer), config, cuda_dtype, tp, description, draft);
#endif
  EngineConfig config_with_draft = config;
  if (draft.weights)
    config_with_draft.scheduler.speculation =
        draft_model_speculation(make_reference_draft(*draft.weights, config), draft.tokens);
  auto engine = std::make_shared<InferenceEngine>(
      std::make_shared<const ModelWeights>(read_model_weights(weights)), std::move(tokenizer), config_with_draft);
  *description = "cpu-reference" + (requested == "auto" && !why.empty() ? " (no CUDA: " + why + ")" : std::string()) +
                 "; " + describe_kv_cache(engine->get_stats().cache, engine->kv_cache_bytes(),
                                          engine->kv_cache_sliding_bytes(), "blocks") +
                 (draft.weights ? "; draft model on the reference too" : "");
  return engine;
}

}  // namespace astrai::cli
