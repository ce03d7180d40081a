// Device arrays for kernel checks and benchmarks: random inputs (already
// rounded to the storage type, so the oracle sees exactly what the device
// stores), uploads and downloads in either storage type, NaN-filled outputs
// (so an element a kernel forgot to write fails), and the stated tolerance
// check. Used by cuda/kernel_cases/, tests/cuda and bench/bench_cuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/dtype.h"

namespace astrai::test {

// Tolerances, per storage type, for |actual - expected| <= rtol * (|expected| + mean|expected|):
// relative to each element, with the tensor's mean magnitude as a floor so
// that elements near zero (cancellation in a sum) are judged on the scale of
// their neighbours (the mean over the finite elements). NaN anywhere fails;
// an infinity passes only against the same infinity (a banned logit is -inf).
//  - float32: 1e-5, the reordering of float sums (cuBLAS vs BLAS, online vs two-pass softmax).
//  - bf16: 1e-2, about two roundings to bfloat16 (8 significant bits, 2^-9 relative each).
inline double tolerance_for(cuda::DType t) { return t == cuda::DType::Float32 ? 1e-5 : 1e-2; }

// "" when every element is within tolerance (rtol 0: equal), else a description of the first one that is not.
std::string compare(const std::vector<float>& actual, const std::vector<float>& expected, double rtol);

// Uniform values in [-scale, scale] from `seed`, rounded to bf16 when dtype is BFloat16.
std::vector<float> random_values(size_t n, uint64_t seed, cuda::DType dtype, float scale = 1.0f);

// Device array of `values` in `dtype` (bf16 rounds to nearest even).
cuda::DeviceBuffer upload(const std::vector<float>& values, cuda::DType dtype);
cuda::DeviceBuffer upload_ints(const std::vector<int>& values);
// `bytes` from `data` in a new device array of at least `at_least` bytes;
// `what` names it in errors.
cuda::DeviceBuffer upload_bytes(const void* data, size_t bytes, size_t at_least, const char* what);
// Device array of a vector of plain structs (sampling rows, adjustment lists),
// with room for one element when it is empty.
template <typename T>
cuda::DeviceBuffer upload_structs(const std::vector<T>& values, const char* what) {
  return upload_bytes(values.data(), values.size() * sizeof(T), sizeof(T), what);
}
// Copies `values` in `dtype` into existing device memory at `device`.
void upload_to(void* device, const std::vector<float>& values, cuda::DType dtype);
// n elements of `dtype` back as float (after the device finishes its work).
std::vector<float> download(const cuda::DeviceBuffer& buffer, size_t n, cuda::DType dtype);
std::vector<float> download(const void* device, size_t n, cuda::DType dtype);
// A device array of n elements of `dtype`, every one NaN.
cuda::DeviceBuffer nan_filled(size_t n, cuda::DType dtype);

}  // namespace astrai::test
