// What every CUDA test needs: skipping cleanly without a GPU (and failing
// where one is present but unusable), plus the device arrays and tolerance
// check of cuda/kernel_cases/device_arrays.h, and the tiny model the
// executor tests run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "cuda/cuda_backend.h"
#include "cuda/kernel_cases/device_arrays.h"

// Skips the rest of the test case, saying why, when no GPU is present
// (Catch2 v2 has no SKIP: a WARN and a return, so the case passes). When the
// machine does have one (see gpu_expected) but the runtime cannot use it (a
// driver too old for the CUDA runtime, a device in use), the case FAILS: a
// GPU machine must never report a pass for tests that did not run.
#define ASTRAI_REQUIRE_GPU()                                                                     \
  do {                                                                                           \
    std::string astrai_why_;                                                                     \
    if (!::astrai::cuda_available(&astrai_why_)) {                                               \
      std::string astrai_listed_;                                                                \
      if (::astrai::test::gpu_expected(&astrai_listed_))                                         \
        FAIL("a GPU is present (" << astrai_listed_ << ") but CUDA cannot use it: " << astrai_why_); \
      WARN("SKIPPED: " << astrai_why_);                                                          \
      return;                                                                                    \
    }                                                                                            \
  } while (0)

namespace astrai {
struct ModelWeights;
}

namespace astrai::test {

// Whether this machine has a GPU that the CUDA tests must run on: true when
// ASTRAI_EXPECT_GPU=1, false when ASTRAI_EXPECT_GPU=0, otherwise true when
// `nvidia-smi -L` lists a GPU. `listed` receives the evidence.
bool gpu_expected(std::string* listed = nullptr);

// The synthetic "tiny" preset's weights from `seed` (reference/synthetic_model.h).
std::shared_ptr<ModelWeights> tiny_model_weights(uint64_t seed);

}  // namespace astrai::test
