// Whether the CUDA backend can run here: the first thing the CLI, the
// server, the executor and every CUDA test ask. Plain C++ declarations (no
// CUDA include), defined only when meson built cuda/ (ASTRAI_HAVE_CUDA).
#pragma once

#include <string>

namespace astrai {

// True when a CUDA device of compute capability 8.0 or newer is visible;
// otherwise false with the reason in *why ("no CUDA-capable device is
// detected", "device 0 is sm_75; the CUDA backend needs sm_80 or newer").
// In a -Dcuda=emulated build the device is the emulated one (cuda/emulation/:
// the kernels run on the CPU, for tests): true, with *why saying it is
// emulated; callers choosing a backend by themselves should not pick it
// (cuda_is_emulated()).
bool cuda_available(std::string* why = nullptr);

// True in a -Dcuda=emulated build: every "device" is the CPU emulation.
bool cuda_is_emulated();

}  // namespace astrai
