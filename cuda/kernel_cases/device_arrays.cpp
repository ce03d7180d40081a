// Device arrays and comparisons for kernel checks.
#include "cuda/kernel_cases/device_arrays.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <cmath>
#include <random>
#include <sstream>
#include <thread>

#include "cuda/bf16_host.h"
#include "cuda/cuda_check.h"

namespace astrai::test {

std::string compare(const std::vector<float>& actual, const std::vector<float>& expected, double rtol) {
  if (actual.size() != expected.size())
    return "sizes differ: " + std::to_string(actual.size()) + " vs " + std::to_string(expected.size());
  // The floor is the mean over finite elements: an infinity would make every bound infinite.
  double mean_abs = 0.0;
  size_t finite = 0;
  for (float e : expected)
    if (std::isfinite(e)) {
      mean_abs += std::fabs(double(e));
      ++finite;
    }
  mean_abs /= double(std::max<size_t>(finite, 1));
  for (size_t i = 0; i < actual.size(); ++i) {
    const double bound = rtol * (std::fabs(double(expected[i])) + mean_abs);
    const double err = std::fabs(double(actual[i]) - double(expected[i]));
    const bool infinite = std::isinf(actual[i]) || std::isinf(expected[i]);
    if (infinite ? actual[i] != expected[i] : !(err <= bound)) {  // NaN fails both ways
      std::ostringstream out;
      out << "element " << i << ": actual " << actual[i] << ", expected " << expected[i] << " (allowed error "
          << bound << ")";
      return out.str();
    }
  }
  return "";
}

namespace {

void fill_uniform(float* first, size_t n, uint64_t seed, cuda::DType dtype, float scale) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (size_t i = 0; i < n; ++i) first[i] = dtype == cuda::DType::BFloat16 ? cuda::round_to_bf16(dist(gen)) : dist(gen);
}

}  // namespace

std::vector<float> random_values(size_t n, uint64_t seed, cuda::DType dtype, float scale) {
  std::vector<float> v(n);
  // Arrays of a benchmark's size (a 14336 x 4096 weight, a 64-sequence KV
  // cache: 10^8 values and more) are filled in chunks of their own seeds on
  // every core, or making them takes longer than timing the kernels; the
  // small arrays of the tests keep one generator (the same values as before).
  constexpr size_t kChunk = size_t(1) << 22;
  if (n <= kChunk) {
    fill_uniform(v.data(), n, seed, dtype, scale);
    return v;
  }
  const size_t chunks = (n + kChunk - 1) / kChunk;
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, chunks);
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (size_t c = w; c < chunks; c += workers) {
        const size_t begin = c * kChunk;
        fill_uniform(v.data() + begin, std::min(kChunk, n - begin), seed + 0x9e3779b97f4a7c15ull * (c + 1), dtype,
                     scale);
      }
    });
  for (std::thread& t : pool) t.join();
  return v;
}

void upload_to(void* device, const std::vector<float>& values, cuda::DType dtype) {
  if (values.empty()) return;
  if (dtype == cuda::DType::Float32) {
    ASTRAI_CUDA_CHECK(cudaMemcpy(device, values.data(), values.size() * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = cuda::float_to_bf16_bits(values[i]);
    ASTRAI_CUDA_CHECK(cudaMemcpy(device, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
  }
}

cuda::DeviceBuffer upload(const std::vector<float>& values, cuda::DType dtype) {
  cuda::DeviceBuffer buffer(std::max<size_t>(values.size(), 1) * cuda::dtype_size(dtype), "test data");
  upload_to(buffer.get(), values, dtype);
  return buffer;
}

cuda::DeviceBuffer upload_ints(const std::vector<int>& values) {
  cuda::DeviceBuffer buffer(std::max<size_t>(values.size(), 1) * 4, "test indices");
  if (!values.empty())
    ASTRAI_CUDA_CHECK(cudaMemcpy(buffer.get(), values.data(), values.size() * 4, cudaMemcpyHostToDevice));
  return buffer;
}

cuda::DeviceBuffer upload_bytes(const void* data, size_t bytes, size_t at_least, const char* what) {
  cuda::DeviceBuffer buffer(std::max(bytes, at_least), what);
  if (bytes != 0) ASTRAI_CUDA_CHECK(cudaMemcpy(buffer.get(), data, bytes, cudaMemcpyHostToDevice));
  return buffer;
}

std::vector<float> download(const cuda::DeviceBuffer& buffer, size_t n, cuda::DType dtype) {
  return download(buffer.get(), n, dtype);
}

std::vector<float> download(const void* device, size_t n, cuda::DType dtype) {
  ASTRAI_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> values(n);
  if (n == 0) return values;
  if (dtype == cuda::DType::Float32) {
    ASTRAI_CUDA_CHECK(cudaMemcpy(values.data(), device, n * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<uint16_t> bits(n);
    ASTRAI_CUDA_CHECK(cudaMemcpy(bits.data(), device, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) values[i] = cuda::bf16_bits_to_float(bits[i]);
  }
  return values;
}

cuda::DeviceBuffer nan_filled(size_t n, cuda::DType dtype) {
  cuda::DeviceBuffer buffer(std::max<size_t>(n, 1) * cuda::dtype_size(dtype), "test output");
  // All bits set is a NaN in float32 and in bfloat16 alike.
  ASTRAI_CUDA_CHECK(cudaMemset(buffer.get(), 0xff, buffer.bytes()));
  return buffer;
}

}  // namespace astrai::test
