// Device-side loads and stores of the storage types, and the dispatch from
// the runtime DType to a kernel template instantiation.
#pragma once

#include <cuda_bf16.h>

#include "cuda/dtype.h"
#include "cuda/kernels/launch.cuh"  // last: in the emulated build it defines CUDA's built-ins

namespace astrai::cuda {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

}  // namespace astrai::cuda

// Calls BODY with `Elem` bound to the storage type of `dtype`.
#define ASTRAI_DISPATCH_DTYPE(dtype, ...)                 \
  do {                                                   \
    if ((dtype) == ::astrai::cuda::DType::Float32) {     \
      using Elem = float;                                \
      __VA_ARGS__;                                       \
    } else {                                             \
      using Elem = __nv_bfloat16;                        \
      __VA_ARGS__;                                       \
    }                                                    \
  } while (0)
