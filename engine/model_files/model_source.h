// A model's weights one tensor at a time, left in their file until asked
// for. What reads a model without holding all of it in float32: the
// streaming writers (write_gguf_model, so `astrai convert` and `make-model`:
// one tensor in float32 at a time) and the CUDA backend's loader, which
// uploads each tensor as it is read and takes quantized blocks straight from
// the file mapping (docs/model-files.md, "Converting in bounded memory";
// docs/cuda.md, "Quantized weights"). The CPU reference reads it whole
// (read_model_weights below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/model_files/weight_table.h"
#include "reference/model_weights.h"

namespace astrai {

// A quantized tensor's blocks as its GGUF file stores them: ggml's block
// layout for `type` ("Q4_K", ...), rows back to back. The bytes are the
// file's (memory-mapped), valid while the ModelSource that gave them lives,
// or, where a source had to gather them (a tensor-parallel rank's columns of
// a matrix: engine/distributed/tensor_parallel_shard.h), held by `owner`
// for as long as this value or a copy of it lives.
struct TensorBlocks {
  std::string type;
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;
};

struct ModelSource {
  // The model's config; rope_layout is the layout `read` gives wq/wk (and
  // their biases and norms) in.
  ModelConfig config;
  // The classifier is the embedding: the table's Untied row is never read.
  bool tied = false;
  // Tensor t's float32 values, row-major, product(t.shape) of them. Called
  // at most once per tensor of for_each_model_tensor(config, tied) (the
  // writers in that order, the device loader in its own), by readers that
  // free them before they ask for the next.
  std::function<std::vector<float>(const ModelTensor& t)> read;
  // Tensor t's quantized blocks when its file stores it in a quantized type
  // whose values `read` decodes (GGUF), nullopt for float tensors; null for
  // sources without files of blocks. Asking costs nothing (no copy), and a
  // reader that takes the blocks need not call `read` for that tensor.
  std::function<std::optional<TensorBlocks>(const ModelTensor& t)> blocks;
  // Called (when set) by a reader done with blocks `blocks` gave (copied to
  // the device): drops their file pages from the process, so that loading
  // never keeps the whole file resident.
  std::function<void(const TensorBlocks& done)> release_blocks;
  // How the file stores each tensor, by GGUF tensor name (empty for sources
  // in memory and non-GGUF files): for messages saying what is quantized.
  std::map<std::string, StoredTensor> stored;
};

// A source over weights already in memory (each read copies one tensor).
// tied when the classifier equals the embedding bit for bit. `weights` must
// outlive the source.
ModelSource model_source(const ModelWeights& weights);
// The same, holding the weights (a llama2.c checkpoint is read whole).
ModelSource model_source(std::shared_ptr<const ModelWeights> weights);

// make_synthetic_weights(config, seed) tensor by tensor (reference/
// synthetic_model.h: each tensor made alone, bit for bit the same), the
// classifier left out when tied (`astrai make-model --tie-embeddings`).
ModelSource synthetic_model_source(const ModelConfig& config, uint64_t seed, bool tied);

// Every tensor of the source read into float32 ModelWeights (the classifier
// a copy of the embedding when tied), with the source's `stored`.
ModelWeights read_model_weights(const ModelSource& source);

}  // namespace astrai
