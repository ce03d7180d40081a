// ASTRAI_VECTOR_PTR(V, p): `p` (a pointer to elements) as a pointer to the
// vector type V (float4, uint4, uint2, float2, const or not) for one wide
// load or store. A GPU requires such an access to be aligned to V's size and
// faults otherwise ("misaligned address"); a CPU loads it anyway, so the
// emulated build checks the alignment here and faults the kernel, naming the
// file and line (kernel_runtime.h's misaligned_vector_access). nvcc builds: a
// plain reinterpret_cast. Every vector access of the kernels goes through it.
#pragma once

#ifdef ASTRAI_CUDA_EMULATED
#include <cstdint>

#include "cuda/emulation/kernel_runtime.h"

namespace astrai::cuda {
template <typename V, typename T>
inline V* checked_vector_ptr(T* p, const char* file, int line) {
  // The test inline (every vector access of the emulated kernels passes here),
  // the fault out of line.
  if (reinterpret_cast<uintptr_t>(p) % alignof(V) != 0) [[unlikely]]
    ::astrai::emu::misaligned_vector_access(p, alignof(V), file, line);
  return reinterpret_cast<V*>(p);
}
}  // namespace astrai::cuda
#define ASTRAI_VECTOR_PTR(V, p) ::astrai::cuda::checked_vector_ptr<V>((p), __FILE__, __LINE__)
#else
#define ASTRAI_VECTOR_PTR(V, p) reinterpret_cast<V*>(p)
#endif
