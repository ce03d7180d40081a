// What the CUDA runtime can see: the first thing every CUDA test and the
// server ask, so that they can skip or fall back to the CPU cleanly.
#pragma once

#include <string>

namespace astrai::cuda {

struct DeviceInfo {
  int device_count = 0;     // 0 when there is no GPU or no driver
  std::string name;         // of device 0
  int compute_capability = 0;  // major * 10 + minor
  size_t memory_bytes = 0;
  std::string error;        // why device_count is 0, when the runtime said
};

DeviceInfo query_devices();

}  // namespace astrai::cuda
