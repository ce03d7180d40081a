// The two places where a kernel file's CUDA syntax differs between nvcc and
// the emulated build (-Dcuda=emulated, docs/cuda.md): a launch and the block's
// dynamic shared memory. Everything else in a .cu file is plain CUDA.
//
//   ASTRAI_LAUNCH(kernel<Elem>, grid, block, smem_bytes, stream)(args...);
//   ASTRAI_DYNAMIC_SHARED(float, smem);     // extern __shared__ float smem[];
#pragma once

#ifdef ASTRAI_CUDA_EMULATED
#include "cuda/emulation/kernel_runtime.h"
#define ASTRAI_LAUNCH(kernel, grid, block, smem, stream) \
  ::astrai::emu::launch(kernel, #kernel, dim3(grid), dim3(block), (smem), (stream))
#define ASTRAI_DYNAMIC_SHARED(type, name) type* const name = static_cast<type*>(::astrai::emu::dynamic_shared_memory())
#else
#define ASTRAI_LAUNCH(kernel, grid, block, smem, stream) kernel<<<(grid), (block), (smem), (stream)>>>
#define ASTRAI_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
