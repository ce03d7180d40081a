#include "cuda/device_info.h"

#include <cuda_runtime.h>

namespace astrai::cuda {

DeviceInfo query_devices() {
  DeviceInfo info;
  const cudaError_t status = cudaGetDeviceCount(&info.device_count);
  if (status != cudaSuccess) {
    // No driver or no device: a normal situation on CI and CPU-only machines.
    info.device_count = 0;
    info.error = cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error
    return info;
  }
  if (info.device_count == 0) return info;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    info.name = prop.name;
    info.compute_capability = prop.major * 10 + prop.minor;
    info.memory_bytes = prop.totalGlobalMem;
  }
  return info;
}

}  // namespace astrai::cuda
