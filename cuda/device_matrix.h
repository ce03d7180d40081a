// A weight matrix on the device, [rows, cols] row-major as the reference's,
// in the storage type (bf16, or float32 for exact comparisons) or kept in
// the quantized format of its GGUF file (cuda/quant_format.h, issue 29).
// A stacked projection (q/k/v into one output, gate/up into another) is
// several parts whose rows follow each other in the output's columns; each
// part keeps its own format, since a Q4_K_M file stores some layers' v (and
// down) projections in Q6_K beside Q4_K q and k. GemmRunner::run multiplies
// part by part, each writing its slice of y.
#pragma once

#include <optional>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/quant_format.h"

namespace astrai::cuda {

struct WeightPart {
  DeviceBuffer data;
  std::optional<QuantFormat> quant;  // nullopt: the storage type
  int rows = 0;                      // output features of this part
};

// The parts of a weight (each in the storage type or its own quantized
// format), with what the device's users ask of them.
struct WeightParts {
  std::vector<WeightPart> parts;

  int rows() const {
    int n = 0;
    for (const WeightPart& p : parts) n += p.rows;
    return n;
  }
  size_t bytes() const {
    size_t n = 0;
    for (const WeightPart& p : parts) n += p.data.bytes();
    return n;
  }
  bool quantized() const {
    for (const WeightPart& p : parts)
      if (p.quant) return true;
    return false;
  }
};

struct DeviceMatrix : WeightParts {
  int cols = 0;  // input features (a multiple of each quantized part's block)
};

// A sparse layer's experts: `experts` matrices of [rows(), cols], each
// part a stack of its own rows of every expert ([experts, part.rows, cols]:
// expert e's rows of the part at e * part.rows * cols elements, or in its
// format's blocks). The gate and up stacks are one part, each expert's gate
// rows then its up rows, when both are in the storage type (one grouped
// product gives an expert's [2 hidden]), else a part each, kept in their
// file's blocks where the device has kernels for them (cuda/moe_ffn.h).
// Quantized expert stacks on two or more tensor-parallel ranks are decoded
// at load (tensor_parallel_shard.cpp).
struct DeviceExperts : WeightParts {
  int experts = 0, cols = 0;
};

}  // namespace astrai::cuda
