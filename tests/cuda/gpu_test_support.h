// What every CUDA test needs: skipping cleanly without a GPU, device arrays
// in either storage type, NaN-filled outputs (so an element a kernel forgot
// to write fails), and the stated tolerance check.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"
#include "cuda/dtype.h"

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

namespace astrai::test {

// Whether this machine has a GPU that the CUDA tests must run on: true when
// ASTRAI_EXPECT_GPU=1, false when ASTRAI_EXPECT_GPU=0, otherwise true when
// `nvidia-smi -L` lists a GPU. `listed` receives the evidence.
bool gpu_expected(std::string* listed = nullptr);

// Tolerances, per storage type, for |actual - expected| <= rtol * (|expected| + mean|expected|):
// relative to each element, with the tensor's mean magnitude as a floor so
// that elements near zero (cancellation in a sum) are judged on the scale of
// their neighbours. NaN anywhere fails.
//  - float32: 1e-5, the reordering of float sums (cuBLAS vs BLAS, online vs two-pass softmax).
//  - bf16: 1e-2, about two roundings to bfloat16 (8 significant bits, 2^-9 relative each).
inline double tolerance_for(cuda::DType t) { return t == cuda::DType::Float32 ? 1e-5 : 1e-2; }

// "" when every element is within tolerance, else a description of the first one that is not.
std::string compare(const std::vector<float>& actual, const std::vector<float>& expected, double rtol);

// Uniform values in [-scale, scale] from `seed`, rounded to bf16 when dtype is BFloat16
// (so that the oracle sees exactly what the device stores).
std::vector<float> random_values(size_t n, uint64_t seed, cuda::DType dtype, float scale = 1.0f);

// Device array of `values` in `dtype` (bf16 rounds to nearest even).
cuda::DeviceBuffer upload(const std::vector<float>& values, cuda::DType dtype);
cuda::DeviceBuffer upload_ints(const std::vector<int>& values);
// n elements of `dtype` back as float.
std::vector<float> download(const cuda::DeviceBuffer& buffer, size_t n, cuda::DType dtype);
// A device array of n elements of `dtype`, every one NaN.
cuda::DeviceBuffer nan_filled(size_t n, cuda::DType dtype);

}  // namespace astrai::test
