// Turning CUDA runtime and cuBLASLt status codes into exceptions that say
// which call failed and why, so that no error passes silently.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace astrai::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so that later calls are not blamed for it
  throw std::runtime_error(std::string("CUDA error in ") + call + " (" + file + ":" + std::to_string(line) +
                           "): " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace astrai::cuda

#define ASTRAI_CUDA_CHECK(call)                                                              \
  do {                                                                                       \
    const cudaError_t astrai_status_ = (call);                                               \
    if (astrai_status_ != cudaSuccess)                                                       \
      ::astrai::cuda::throw_cuda_error(astrai_status_, #call, __FILE__, __LINE__);           \
  } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define ASTRAI_CUDA_CHECK_LAUNCH() ASTRAI_CUDA_CHECK(cudaGetLastError())
