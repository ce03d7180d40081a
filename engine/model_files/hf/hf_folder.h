// Hugging Face model folders, the format GPU servers (vLLM) load by path:
//   config.json                      architecture and shape (hf_config.h)
//   model.safetensors                the weights, or shards listed by
//   model.safetensors.index.json     {"weight_map": {tensor name: shard file}}
//   generation_config.json           optional: EOS ids, sampling defaults
//   tokenizer.json, tokenizer_config.json   located here, read by the tokenizer
//
// Integration: load_hf_folder(dir) gives the float32 ModelWeights (rotate-half
// RoPE layout), the generation defaults and the tokenizer files' paths; the
// caller loads the tokenizer (engine/tokenizer/hf_tokenizer.h) from
// tokenizer_json. Nothing here reads the tokenizer itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/model_files/hf/hf_config.h"
#include "engine/model_files/model_source.h"
#include "engine/model_files/hf/safetensors_file.h"
#include "reference/model_weights.h"

namespace astrai {

struct HfModelFolder {
  ModelWeights weights;
  HfArchitecture architecture = HfArchitecture::Llama;
  // generation_config.json; when it has no eos_token_id / bos_token_id,
  // config.json's (as transformers' GenerationConfig.from_model_config does).
  HfGenerationConfig generation;
  std::string tokenizer_json;         // path of tokenizer.json, "" when the folder has none
  std::string tokenizer_config_json;  // path of tokenizer_config.json, "" when the folder has none
  std::string name;                   // the folder's name ("Qwen3-0.6B")
};

// Whether `path` is a directory holding config.json (what load_hf_folder needs first).
bool is_hf_folder(const std::string& path);

// Loads a folder. Tensors: F32, F16 or BF16, each one's shape checked against
// config.json before it is read. As vLLM: a missing tensor is an error, and so
// is any tensor the architecture does not use, except the rotary tables some
// exporters leave in (names ending in rotary_emb.inv_freq, .cos_cached,
// .sin_cached) and lm_head.weight when tie_word_embeddings (the classifier is
// then a copy of the embedding). Throws std::runtime_error naming the file and
// the field or tensor.
HfModelFolder load_hf_folder(const std::string& dir);

// The folder with its weights left in the files: `folder` is what
// load_hf_folder gives but for weights (only weights.config is set), and
// `weights` reads them one tensor at a time from the memory-mapped
// safetensors files (rotate-half layout; tied as config.json says), each
// tensor's pages dropped from the process once converted. The same checks as
// load_hf_folder, all made here before anything is read, except a tensor's
// dtype, made when it is read. What `astrai convert` streams from.
struct HfFolderSource {
  HfModelFolder folder;
  ModelSource weights;
};
HfFolderSource open_hf_folder(const std::string& dir);

// How write_hf_folder stores the weights.
struct HfWriteOptions {
  SafetensorsDType dtype = SafetensorsDType::BF16;  // F32, F16 or BF16, every tensor (norms too, as transformers)
  // 0: one model.safetensors. Otherwise shards model-0000i-of-0000n.safetensors
  // plus model.safetensors.index.json, a new shard starting when the next
  // tensor would take one past this many data bytes (a bigger tensor gets a
  // shard of its own).
  uint64_t max_shard_bytes = 0;
  // Default: hf_architecture_for(config). Mistral may be chosen for a Llama-shaped config.
  std::optional<HfArchitecture> architecture{};
  // generation_config.json is written when set.
  std::optional<HfGenerationConfig> generation{};
};

// Writes config.json, the safetensors file(s) and generation_config.json
// (when options.generation is set) into `dir` (created when missing). Weight
// files of an earlier write (model.safetensors, its index, model-*.safetensors)
// are removed first; other files (a tokenizer, an existing
// generation_config.json) are left as they are. lm_head.weight is left out, with
// tie_word_embeddings true, when the classifier equals the embedding bit for
// bit. Throws std::invalid_argument for weights Hugging Face cannot hold as
// such (adjacent-pair RoPE: permute wq/wk rows first; invalid shapes) and
// std::runtime_error when writing fails.
void write_hf_folder(const std::string& dir, const ModelWeights& weights, const HfWriteOptions& options = {});
// The same folder, byte for byte, from a source read one tensor at a time
// (each converted and written before the next is read: `astrai make-model
// --format hf` of real shapes in bounded memory); lm_head.weight is left
// out when source.tied. The source's config must be in the rotate-half
// layout (rope_layout.h's with_rope_layout moves a source there).
void write_hf_folder(const std::string& dir, const ModelSource& source, const HfWriteOptions& options = {});

// "bfloat16" / "float16" / "float32" for F32, F16, BF16 (config.json's torch_dtype).
std::string hf_torch_dtype_name(SafetensorsDType dtype);

}  // namespace astrai
