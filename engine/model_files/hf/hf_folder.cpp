// Hugging Face model folders <-> ModelWeights (see hf_folder.h).
//
// Tensor names and shapes: weight_table.h (the hf_name column).
#include "engine/model_files/hf/hf_folder.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model_files/hf/multimodal_text_config.h"
#include "engine/model_files/hf/out_last_layout.h"
#include "engine/model_files/hf/safetensors_writer.h"
#include "engine/model_files/tensor_shape.h"
#include "engine/model_files/weight_table.h"
#include "engine/text/read_file.h"

namespace astrai {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kConfig = "config.json";
constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";
constexpr const char* kGenerationConfig = "generation_config.json";

std::string read_text(const fs::path& path) { return read_whole_file(path.string(), path.string()); }

// Tensors that exporters sometimes leave in a checkpoint and that carry
// nothing the model needs: RoPE's tables (recomputed from rope_theta). vLLM's
// Llama / Qwen loaders skip exactly these names.
bool harmless_extra(const std::string& name) {
  for (const char* suffix : {"rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached"}) {
    const size_t n = std::strlen(suffix);
    if (name.size() >= n && name.compare(name.size() - n, n, suffix) == 0) return true;
  }
  return false;
}

// The folder's safetensors files and which of them holds each tensor.
class TensorSource {
 public:
  // multimodal_text: a Gemma3ForConditionalGeneration folder, whose text
  // model's tensors are read by the names a Gemma3ForCausalLM gives them.
  TensorSource(const fs::path& dir, bool multimodal_text) : dir_(dir), multimodal_text_(multimodal_text) {
    if (fs::exists(dir / kIndex)) open_sharded(dir / kIndex);
    else if (fs::exists(dir / kSingleFile)) add_file(dir / kSingleFile, nullptr);
    else
      throw std::runtime_error(dir.string() + ": neither " + kSingleFile + " nor " + kIndex +
                               " (only safetensors weights are supported, not pytorch_model.bin)");
    // transformers before 4.52 saved the text model under "language_model.".
    old_multimodal_layout_ = std::any_of(where_.begin(), where_.end(),
                                         [](const auto& entry) { return entry.first.starts_with("language_model."); });
  }

  // Every tensor the files hold, by its stored name.
  const std::map<std::string, const SafetensorsFile*>& tensors() const { return where_; }

  // The stored name of the tensor weight_table.h names `name`.
  std::string stored(const std::string& name) const {
    return multimodal_text_ ? multimodal_text_tensor_name(name, old_multimodal_layout_) : name;
  }

  // Tensor t's float32 values, row-major: a stack (an MoE layer's experts)
  // gathered from its one tensor per expert, in expert order, or from the
  // layer's one output-last tensor (gpt-oss: out_last_layout.h).
  std::vector<float> read_values(const ModelTensor& t) const {
    if (t.row->hf_layout != HfLayout::AsTable) {
      const std::string name = stored(t.hf_name());
      if (!where_.count(name) && where_.count(name + "_blocks")) return read_mxfp4(t);
      return from_out_last(*out_last_values(t), t);
    }
    std::vector<std::string> names = t.hf_names();
    for (std::string& name : names) name = stored(name);
    if (t.shape.size() < 3) return file_of(names[0]).read_tensor_values(names[0], t.shape, "config.json");
    const std::vector<size_t> matrix(t.shape.begin() + 1, t.shape.end());
    std::vector<float> values;
    values.reserve(t.shape[0] * matrix[0] * matrix[1]);
    for (const std::string& name : names) {
      const std::vector<float> one = file_of(name).read_tensor_values(name, matrix, "config.json");
      values.insert(values.end(), one.begin(), one.end());
    }
    return values;
  }

 private:
  // The folder's output-last tensor behind t. gate_up_proj holds two rows
  // (HfLayout::OutLastEven and OutLastOdd): the first of them to be read
  // converts it to float once and keeps it for the other, which takes it.
  std::shared_ptr<const std::vector<float>> out_last_values(const ModelTensor& t) const {
    const std::string name = stored(t.hf_name());
    const bool shared = t.row->hf_layout == HfLayout::OutLastEven || t.row->hf_layout == HfLayout::OutLastOdd;
    std::lock_guard lock(shared_mutex_);
    if (shared && shared_name_ == name) {
      shared_name_.clear();
      return std::move(shared_values_);
    }
    auto values = std::make_shared<const std::vector<float>>(file_of(name).read_tensor_values(name, t.hf_shape(), "config.json"));
    if (shared) {
      shared_name_ = name;
      shared_values_ = values;
    }
    return values;
  }

  // An expert stack in the published gpt-oss checkpoints' MXFP4 form
  // (out_last_layout.h): its _blocks and _scales tensors, bytes of the
  // shapes the config implies.
  std::vector<float> read_mxfp4(const ModelTensor& t) const {
    const auto [block_shape, scale_shape] = mxfp4_shapes(t);
    const auto bytes_of = [&](const std::string& name, const std::vector<size_t>& shape) {
      const SafetensorsFile& file = file_of(name);
      const SafetensorsTensorInfo& info = *file.find_tensor(name);
      if (info.dtype != SafetensorsDType::U8 || info.shape != std::vector<uint64_t>(shape.begin(), shape.end()))
        throw std::runtime_error(file.path() + ": tensor '" + name + "' is " + safetensors_dtype_name(info.dtype) + " " +
                                 format_dims(info.shape) + ", expected U8 " +
                                 format_dims(std::vector<uint64_t>(shape.begin(), shape.end())) +
                                 " (MXFP4 for config.json's model)");
      return file.tensor_data(info);
    };
    const std::string name = stored(t.hf_name());
    return from_out_last_mxfp4(bytes_of(name + "_blocks", block_shape), bytes_of(name + "_scales", scale_shape), t);
  }

  const SafetensorsFile& file_of(const std::string& name) const {
    const auto it = where_.find(name);
    if (it == where_.end())
      throw std::runtime_error(dir_.string() + ": tensor '" + name + "' is missing (config.json's model needs it)");
    return *it->second;
  }

  // The index: {"metadata": {...}, "weight_map": {"tensor": "shard file", ...}}.
  void open_sharded(const fs::path& index_path) {
    const std::string where = index_path.string();
    Json index;
    try {
      index = Json::parse(read_text(index_path));
    } catch (const Json::exception& e) {
      throw std::runtime_error(where + ": not valid JSON (" + e.what() + ")");
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw std::runtime_error(where + ": no \"weight_map\" object");
    std::map<std::string, std::set<std::string>> by_shard;  // shard file -> tensor names the index puts there
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string())
        throw std::runtime_error(where + ": weight_map entry of tensor '" + tensor + "' is not a file name");
      const std::string file = shard.get<std::string>();
      // A shard is a file of this folder: no paths that lead elsewhere.
      if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." ||
          file == "..")
        throw std::runtime_error(where + ": weight_map puts tensor '" + tensor + "' in '" + file +
                                 "', which is not a plain file name in the folder");
      by_shard[file].insert(tensor);
    }
    for (const auto& [file, names] : by_shard) add_file(dir_ / file, &names);
  }

  // Opens one safetensors file; with `listed`, the tensors it holds must be
  // exactly those the index puts in it.
  void add_file(const fs::path& path, const std::set<std::string>* listed) {
    if (!fs::exists(path)) throw std::runtime_error(path.string() + ": missing (the index lists it as a shard)");
    const SafetensorsFile& file = *files_.emplace_back(std::make_unique<SafetensorsFile>(path.string()));
    for (const auto& t : file.tensors()) {
      if (listed && !listed->count(t.name))
        throw std::runtime_error(path.string() + ": holds tensor '" + t.name + "', which " + kIndex +
                                 " does not put in this shard");
      if (!where_.emplace(t.name, &file).second)
        throw std::runtime_error(path.string() + ": tensor '" + t.name + "' is also in " + where_[t.name]->path());
    }
    if (listed) {
      for (const auto& name : *listed)
        if (!file.find_tensor(name))
          throw std::runtime_error(path.string() + ": " + kIndex + " puts tensor '" + name + "' here, but the file does not hold it");
    }
  }

  fs::path dir_;
  bool multimodal_text_ = false, old_multimodal_layout_ = false;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
  // A shared output-last tensor read for one of its two rows, kept for the other.
  mutable std::mutex shared_mutex_;
  mutable std::string shared_name_;
  mutable std::shared_ptr<const std::vector<float>> shared_values_;
};

// Every tensor in the files must be one the model uses (or a harmless
// extra); checked before anything is read.
void check_tensor_names(const TensorSource& src, const HfModelConfig& hf) {
  std::set<std::string> wanted;  // stored names
  for (const auto& t : model_tensors(hf.config, hf.tie_word_embeddings))
    for (const auto& table_name : t.hf_names()) {
      const std::string name = src.stored(table_name);
      wanted.insert(name);
      if (t.row->hf_layout != HfLayout::AsTable && t.shape.size() == 3 && hf.mxfp4_experts) {
        wanted.insert(name + "_blocks");  // the published gpt-oss checkpoints' experts (out_last_layout.h)
        wanted.insert(name + "_scales");
      }
    }
  for (const auto& [name, file] : src.tensors()) {
    if (wanted.count(name) || harmless_extra(name)) continue;
    if (name == src.stored("lm_head.weight") && hf.tie_word_embeddings) continue;  // tied: the embedding is the classifier
    if (hf.multimodal_text && is_image_side_tensor(name)) continue;  // the vision tower: not the text model's
    throw std::runtime_error(file->path() + ": unexpected tensor '" + name + "': a " +
                             hf_architecture_name(hf.architecture) + " with this config.json has no such weight");
  }
}


std::string folder_name(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "dir/"
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") name = fs::absolute(p).lexically_normal().filename().string();
  return name;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace

bool is_hf_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / kConfig, ec);
}

namespace {

// The folder's config and files, its tensors listed and checked, nothing read.
struct OpenFolder {
  HfModelConfig hf;
  std::shared_ptr<const TensorSource> tensors;
  HfModelFolder folder;  // weights empty but for weights.config
};

OpenFolder open_folder(const std::string& dir_string) {
  const fs::path dir(dir_string);
  if (!fs::is_directory(dir)) throw std::runtime_error(dir_string + ": not a directory");
  if (!fs::exists(dir / kConfig))
    throw std::runtime_error(dir_string + ": no config.json (not a Hugging Face model folder)");
  OpenFolder open{parse_hf_config(read_text(dir / kConfig), (dir / kConfig).string()),
                  nullptr, {}};
  open.tensors = std::make_shared<const TensorSource>(dir, open.hf.multimodal_text);
  check_tensor_names(*open.tensors, open.hf);
  HfModelFolder& out = open.folder;
  out.weights.config = open.hf.config;
  out.architecture = open.hf.architecture;
  if (fs::exists(dir / kGenerationConfig))
    out.generation = parse_hf_generation_config(read_text(dir / kGenerationConfig), (dir / kGenerationConfig).string(),
                                                open.hf.config.vocab_size);
  if (out.generation.eos_token_ids.empty()) out.generation.eos_token_ids = open.hf.eos_token_ids;
  if (!out.generation.bos_token_id) out.generation.bos_token_id = open.hf.bos_token_id;
  if (fs::exists(dir / "tokenizer.json")) out.tokenizer_json = (dir / "tokenizer.json").string();
  if (fs::exists(dir / "tokenizer_config.json")) out.tokenizer_config_json = (dir / "tokenizer_config.json").string();
  out.name = folder_name(dir);
  return open;
}

}  // namespace

HfFolderSource open_hf_folder(const std::string& dir) {
  OpenFolder open = open_folder(dir);
  auto tensors = open.tensors;
  return HfFolderSource{std::move(open.folder),
                        ModelSource{.config = open.hf.config,
                                    .tied = open.hf.tie_word_embeddings,
                                    .read = [tensors](const ModelTensor& t) { return tensors->read_values(t); },
                                    .blocks = {},  // safetensors hold floats: no quantized blocks
                                    .release_blocks = {},
                                    .stored = {}}};
}

HfModelFolder load_hf_folder(const std::string& dir) {
  HfFolderSource open = open_hf_folder(dir);
  open.folder.weights = read_model_weights(open.weights);
  return std::move(open.folder);
}

std::string hf_torch_dtype_name(SafetensorsDType dtype) {
  switch (dtype) {
    case SafetensorsDType::F32: return "float32";
    case SafetensorsDType::F16: return "float16";
    case SafetensorsDType::BF16: return "bfloat16";
    default: break;
  }
  throw std::invalid_argument("Hugging Face folders hold F32, F16 or BF16 weights, not " + safetensors_dtype_name(dtype));
}

void write_hf_folder(const std::string& dir_string, const ModelSource& source, const HfWriteOptions& options) {
  const ModelConfig& c = source.config;
  const HfArchitecture arch = options.architecture.value_or(hf_architecture_for(c));
  const std::string config_json = hf_config_json(c, arch, source.tied, hf_torch_dtype_name(options.dtype));

  // Shards planned from the shapes alone: a new one when the next tensor
  // would take the current one past max_shard_bytes. Each shard is then
  // written tensor by tensor (one in memory at a time), in file order.
  // A stack (an MoE layer's experts) is one file tensor per expert, each
  // `part` of it; the stack is read once, when its first part is written.
  // An output-last tensor (gpt-oss) is one part, written with its partner
  // row's values where two rows share it.
  struct Part {
    ModelTensor tensor;
    size_t part = 0, parts = 1;
    std::optional<ModelTensor> partner{};
  };
  struct Shard {
    std::vector<SafetensorsPlannedTensor> planned;
    std::vector<Part> parts;
    uint64_t bytes = 0;
  };
  std::vector<Shard> shards(1);
  const uint64_t element_bytes = safetensors_dtype_bytes(options.dtype);
  const std::vector<ModelTensor> tensors = model_tensors(c, source.tied);
  for (size_t k = 0; k < tensors.size(); ++k) {
    const ModelTensor& t = tensors[k];
    const HfLayout layout = t.row->hf_layout;
    if (layout == HfLayout::OutLastOdd) continue;  // written with its partner
    std::optional<ModelTensor> partner;
    if (layout == HfLayout::OutLastEven) {
      for (size_t m = k + 1; m < tensors.size() && !partner; ++m)
        if (tensors[m].layer == t.layer && tensors[m].row->hf_layout == HfLayout::OutLastOdd &&
            std::string(tensors[m].row->hf_name) == t.row->hf_name)
          partner = tensors[m];
      if (!partner) throw std::logic_error("write_hf_folder: no partner row for " + t.hf_name());
    }
    const std::vector<std::string> names = t.hf_names();
    // One part's shape: the folder tensor's, or a per-expert stack's without its leading axis.
    const std::vector<size_t> hf_shape = t.hf_shape();
    const bool per_expert = layout == HfLayout::AsTable && hf_shape.size() == 3;
    const std::vector<uint64_t> shape(hf_shape.begin() + (per_expert ? 1 : 0), hf_shape.end());
    const uint64_t bytes = element_count(shape) * element_bytes;
    for (size_t i = 0; i < names.size(); ++i) {
      if (options.max_shard_bytes > 0 && !shards.back().parts.empty() &&
          shards.back().bytes + bytes > options.max_shard_bytes)
        shards.emplace_back();
      shards.back().planned.push_back({names[i], shape});
      shards.back().parts.push_back({t, i, names.size(), partner});
      shards.back().bytes += bytes;
    }
  }

  const fs::path dir(dir_string);
  fs::create_directories(dir);
  // Weights of an earlier write would be mixed with these: remove them first.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string f = entry.path().filename().string();
    if (f == kSingleFile || f == kIndex || (f.rfind("model-", 0) == 0 && f.size() > 12 &&
                                            f.compare(f.size() - 12, 12, ".safetensors") == 0))
      fs::remove(entry.path());
  }
  write_text(dir / kConfig, config_json);
  if (options.generation) write_text(dir / kGenerationConfig, hf_generation_config_json(*options.generation));
  std::vector<float> stack;  // the stack whose parts are being written (read at its part 0)
  auto write_shard = [&](const Shard& shard, const fs::path& path) {
    write_safetensors_streamed(path.string(), shard.planned, options.dtype, [&](size_t i) {
      const Part& p = shard.parts[i];
      if (p.tensor.row->hf_layout != HfLayout::AsTable)
        return to_out_last(source.read(p.tensor), p.partner ? source.read(*p.partner) : std::vector<float>{}, p.tensor);
      if (p.tensor.shape.size() < 3) return source.read(p.tensor);
      if (p.part == 0) stack = source.read(p.tensor);
      const size_t n = stack.size() / p.parts;
      std::vector<float> one(stack.begin() + std::ptrdiff_t(p.part * n), stack.begin() + std::ptrdiff_t((p.part + 1) * n));
      if (p.part + 1 == p.parts) std::vector<float>().swap(stack);
      return one;
    });
  };
  if (options.max_shard_bytes == 0) {
    write_shard(shards[0], dir / kSingleFile);
    return;
  }
  Json weight_map = Json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    char file[64];
    std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_shard(shards[i], dir / file);
    for (const auto& t : shards[i].planned) weight_map[t.name] = file;
    total += shards[i].bytes;
  }
  const Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_text(dir / kIndex, index.dump(2) + "\n");
}

void write_hf_folder(const std::string& dir, const ModelWeights& weights, const HfWriteOptions& options) {
  weights.validate_shapes();
  write_hf_folder(dir, model_source(weights), options);  // tied when the classifier is the embedding bit for bit
}

}  // namespace astrai
