// Four consecutive elements at once, for the row kernels: one 16-byte load
// or store of float32, one 8-byte one of bf16. A warp then moves 512 (or 256)
// contiguous bytes per instruction instead of 128, every 32-byte sector used.
// The caller guarantees the alignment (16 bytes for float, 8 for bf16): in
// practice a row length that is a multiple of 4 and pointers from
// cudaMalloc; vector_aligned() checks both.
#pragma once

#include <vector_functions.h>

#include <cstdint>

#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/vector_pointer.cuh"

namespace astrai::cuda {

inline constexpr int kVec4 = 4;

// Whether rows of `row_length` elements of T at `p` all start on 4 T.
template <typename T>
inline bool vector_aligned(const void* p, int row_length) {
  return row_length % kVec4 == 0 && reinterpret_cast<uintptr_t>(p) % (kVec4 * sizeof(T)) == 0;
}

__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 q = *ASTRAI_VECTOR_PTR(const float4, p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load4(const __nv_bfloat16* p, float (&v)[4]) {
  // Little-endian: the low half of each 32-bit word is the lower index; a
  // bf16 is the top 16 bits of its float.
  const uint2 q = *ASTRAI_VECTOR_PTR(const uint2, p);
  v[0] = __int_as_float(int(q.x << 16)), v[1] = __int_as_float(int(q.x & 0xffff0000u));
  v[2] = __int_as_float(int(q.y << 16)), v[3] = __int_as_float(int(q.y & 0xffff0000u));
}

__device__ __forceinline__ void store4(float* p, const float (&v)[4]) {
  *ASTRAI_VECTOR_PTR(float4, p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(__nv_bfloat16* p, const float (&v)[4]) {
  unsigned bits[4];
  for (int e = 0; e < 4; ++e) bits[e] = __bfloat16_as_ushort(from_float<__nv_bfloat16>(v[e]));
  *ASTRAI_VECTOR_PTR(uint2, p) = make_uint2(bits[0] | (bits[1] << 16), bits[2] | (bits[3] << 16));
}

// Two consecutive elements (a RoPE pair of the adjacent layout): 8 bytes of
// float, 4 of bf16; p aligned to two elements.
__device__ __forceinline__ void store2(float* p, float a, float b) {
  *ASTRAI_VECTOR_PTR(float2, p) = make_float2(a, b);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b) {
  const unsigned lo = __bfloat16_as_ushort(from_float<__nv_bfloat16>(a));
  const unsigned hi = __bfloat16_as_ushort(from_float<__nv_bfloat16>(b));
  *reinterpret_cast<unsigned*>(p) = lo | (hi << 16);
}

}  // namespace astrai::cuda
