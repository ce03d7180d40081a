#include "cli/backend.h"

#include <stdexcept>

#ifdef ASTRAI_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace astrai::cli {
namespace {

#ifdef ASTRAI_HAVE_CUDA
std::shared_ptr<InferenceEngine> make_cuda_engine(const LoadedModel& model, const EngineConfig& config,
                                                  std::string* description) {
  auto weights = std::make_shared<const ModelWeights>(model.weights);
  auto executor = make_cuda_executor(weights);
  // The device cache takes what the weights left (90% of free memory), at
  // least one whole context.
  const int page_size = config.page_size;
  const int pages = cuda_kv_pages_that_fit(*executor, page_size);
  auto cache = make_cuda_kv_cache(*executor, pages, page_size);
  *description = executor->name() + " on " + cuda_device_description();
  return std::make_shared<InferenceEngine>(std::move(executor), std::move(cache),
                                           std::make_shared<const Tokenizer>(model.tokenizer), config);
}
#endif

bool cuda_usable(std::string* why) {
#ifdef ASTRAI_HAVE_CUDA
  return cuda_available(why);
#else
  *why = "this build has no CUDA backend (nvcc was not found when it was configured)";
  return false;
#endif
}

}  // namespace

std::shared_ptr<InferenceEngine> make_engine(const LoadedModel& model, const EngineConfig& config,
                                             const std::string& requested, std::string* description) {
  if (requested != "auto" && requested != "reference" && requested != "cuda")
    throw std::invalid_argument("unknown backend '" + requested + "' (auto, reference, cuda)");
  std::string why;
  const bool use_cuda = requested != "reference" && cuda_usable(&why);
  if (requested == "cuda" && !use_cuda) throw std::invalid_argument("the CUDA backend is not usable: " + why);
#ifdef ASTRAI_HAVE_CUDA
  if (use_cuda) return make_cuda_engine(model, config, description);
#endif
  *description = "cpu-reference" + (requested == "auto" && !why.empty() ? " (no CUDA: " + why + ")" : std::string());
  return std::make_shared<InferenceEngine>(std::make_shared<const ModelWeights>(model.weights),
                                           std::make_shared<const Tokenizer>(model.tokenizer), config);
}

}  // namespace astrai::cli
