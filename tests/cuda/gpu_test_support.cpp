// Whether this machine must run the CUDA tests (see gpu_test_support.h).
#include "tests/cuda/gpu_test_support.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "reference/synthetic_model.h"

namespace astrai::test {

bool gpu_expected(std::string* listed) {
  static const std::pair<bool, std::string> answer = []() -> std::pair<bool, std::string> {
#ifdef ASTRAI_CUDA_EMULATED
    return {true, "the emulated build always has its emulated device"};
#endif
    if (const char* forced = std::getenv("ASTRAI_EXPECT_GPU"); forced && *forced)
      return {std::string(forced) != "0", std::string("ASTRAI_EXPECT_GPU=") + forced};
    // The driver's own tool, independent of the CUDA runtime that failed.
    FILE* pipe = popen("nvidia-smi -L 2>/dev/null", "r");
    if (pipe == nullptr) return {false, ""};
    std::string out;
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    pclose(pipe);
    const size_t at = out.find("GPU ");
    if (at == std::string::npos) return {false, ""};
    return {true, "nvidia-smi -L: " + out.substr(at, out.find('\n', at) - at)};
  }();
  if (listed) *listed = answer.second;
  return answer.first;
}

std::shared_ptr<ModelWeights> tiny_model_weights(uint64_t seed) {
  return std::make_shared<ModelWeights>(make_synthetic_weights(preset_config("tiny"), seed));
}

}  // namespace astrai::test
