// gpt-oss's expert tensors in a Hugging Face folder (HfLayout in
// weight_table.h): each layer's experts in one tensor with the output axis
// last, [experts, in, out] (transformers' GptOssExperts computes x @ W), and
// gate and up sharing one tensor, gate_up_proj, whose outputs interleave:
// output j of gate at position 2j, of up at 2j + 1. The biases ([experts,
// out]) interleave the same way. These convert between that layout and the
// table's ([experts, out, in] stacks, [experts, out] biases), element for
// element: no arithmetic, so a folder round trip is exact.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "engine/model_files/weight_table.h"

namespace astrai {

// Tensor t's values in the table's layout, from the folder's tensor
// t.hf_name() (t.hf_shape() elements, row-major).
std::vector<float> from_out_last(std::span<const float> file, const ModelTensor& t);

// The same from the published checkpoints' MXFP4 form of an expert stack
// (quant/mxfp4.h): t.hf_name() + "_blocks", [experts, out, in / 32, 16]
// bytes, and + "_scales", [experts, out, in / 32] bytes. These keep the
// output axis first (transformers transposes after decoding), gate and up
// still interleaved along it. The shapes are checked by the caller
// (mxfp4_shapes).
std::vector<float> from_out_last_mxfp4(std::span<const std::byte> blocks, std::span<const std::byte> scales,
                                       const ModelTensor& t);
// The shapes those two tensors must have for t: {blocks, scales}.
std::pair<std::vector<size_t>, std::vector<size_t>> mxfp4_shapes(const ModelTensor& t);

// The folder's tensor t.hf_name() from t's values in the table's layout, and
// for a shared tensor (HfLayout::OutLastEven) its partner's (the OutLastOdd
// row's, of the same shape); `odd` is empty otherwise.
std::vector<float> to_out_last(std::span<const float> values, std::span<const float> odd, const ModelTensor& t);

}  // namespace astrai
