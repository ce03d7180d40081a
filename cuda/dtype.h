// The element types the CUDA backend stores weights, activations fed to GEMMs
// and the KV cache in. Plain C++: included by host code compiled without nvcc.
#pragma once

#include <cstddef>
#include <string>

namespace astrai::cuda {

// BFloat16 is the serving default (half the memory traffic of float32);
// Float32 exists for exact comparisons with the CPU reference.
enum class DType { Float32, BFloat16 };

inline size_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 2; }
inline const char* dtype_name(DType t) { return t == DType::Float32 ? "f32" : "bf16"; }

}  // namespace astrai::cuda
