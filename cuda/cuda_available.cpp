#include "cuda/cuda_available.h"

#include "cuda/device_info.h"

namespace astrai {

bool cuda_available(std::string* why) {
  const cuda::DeviceInfo info = cuda::query_devices();
  std::string reason;
  if (info.device_count == 0)
    reason = "no GPU was found (" + (info.error.empty() ? std::string("no CUDA device") : info.error) + ")";
  else if (info.compute_capability < 80)
    reason = "device 0 (" + info.name + ") is sm_" + std::to_string(info.compute_capability) +
             "; the CUDA backend needs sm_80 or newer";
  const bool usable = reason.empty();
  // Usable and emulated: *why still says what the device is.
  if (usable && cuda_is_emulated())
    reason = "the device is emulated: the CUDA kernels run on the CPU (-Dcuda=emulated), for tests, slowly";
  if (why) *why = reason;
  return usable;
}

bool cuda_is_emulated() {
#ifdef ASTRAI_CUDA_EMULATED
  return true;
#else
  return false;
#endif
}

}  // namespace astrai
