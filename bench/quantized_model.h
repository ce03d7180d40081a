// A model of a given shape whose matrices are random blocks in the formats a
// llama.cpp preset gives each tensor (cuda/perf_model/weight_formats.h:
// Q4_K_M's Q4_K with Q6_K for some v/down and the classifier; Q8_0), as a
// GGUF file's ModelSource serves them, for the quantized decode steps of
// bench_cuda (reference_decode_step.cpp). The blocks are random bytes with
// each block's float16 scales set so that every weight lies in
// +-sqrt(3 / fan-in) (make_synthetic_weights' range), so activations stay
// finite; norms are near 1. Made on every core: gigabytes of blocks.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "cuda/perf_model/weight_formats.h"
#include "engine/model_files/model_source.h"

namespace astrai::bench {

struct QuantizedMatrix {
  cuda::QuantFormat format;
  std::vector<std::byte> bytes;
  size_t cols = 0;         // a row's length (the fan-in its scales are set for)
  bool embedding = false;  // a step reads `batch` rows of it, not all
};

struct QuantizedModel {
  ModelConfig config;
  std::map<std::string, QuantizedMatrix> blocks;  // by GGUF tensor name (the weight table's)
  std::map<std::string, std::vector<float>> vectors;                                   // the norms

  // Serves the blocks and norms; `*this` must outlive it.
  ModelSource source() const;
  // Bytes a decode step of `batch` rows reads of the weights: every matrix's
  // blocks, `batch` rows of the embedding's, the norms in bf16.
  double step_weight_bytes(int batch) const;
};

// Throws std::invalid_argument when a matrix's rows are not whole blocks of
// its format, or for Weights::BF16.
QuantizedModel random_quantized_model(const ModelConfig& config, cuda::perf::Weights preset);

}  // namespace astrai::bench
