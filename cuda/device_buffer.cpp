// DeviceBuffer: cudaMalloc with an out-of-memory message that says how much.
#include "cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>

#include "cuda/cuda_check.h"

namespace astrai::cuda {

std::string format_mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return text;
}

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t status = cudaMalloc(&ptr_, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    ptr_ = nullptr;
    throw std::runtime_error("out of GPU memory: " + what + " needs " + format_mib(bytes) + " but only " +
                             format_mib(free_bytes) + " of " + format_mib(total_bytes) + " are free");
  }
  if (status != cudaSuccess) {
    ptr_ = nullptr;
    throw_cuda_error(status, ("cudaMalloc for " + what).c_str(), __FILE__, __LINE__);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = other.bytes_;
  }
  return *this;
}

}  // namespace astrai::cuda
