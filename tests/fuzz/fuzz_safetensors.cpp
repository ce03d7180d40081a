// Fuzz target: a safetensors file of any bytes. SafetensorsFile either
// rejects it with a clean error or gives a directory whose ranges tile the
// data section exactly, inside the file; every F32/F16/BF16 tensor then reads,
// and the floats rewritten by SafetensorsWriter as F32 parse back to the same
// names, shapes and bits. The same bytes are also the model.safetensors of a
// fixed tiny Qwen 2 folder (kFolderConfig; the seeds are such files), which
// load_hf_folder loads or rejects cleanly: a loaded model has the config's shapes.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/hf/safetensors_file.h"
#include "engine/model_files/hf/safetensors_writer.h"
#include "tests/fuzz/expected_errors.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {
namespace {

// The folder's config.json: dim 8, 2 heads of 4 (1 KV head), hidden 16, one
// layer, vocabulary 8, q/k/v biases; untied (lm_head.weight expected).
constexpr const char* kFolderConfig = R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 8,
  "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
  "vocab_size": 8, "max_position_embeddings": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

bool readable(SafetensorsDType d) {
  return d == SafetensorsDType::F32 || d == SafetensorsDType::F16 || d == SafetensorsDType::BF16;
}

// A folder (made once per process, removed at exit) whose model.safetensors
// links to the input file.
class InputFolder {
 public:
  InputFolder() {
    char pattern[] = "/tmp/astrai-fuzz-folder-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::logic_error("mkdtemp failed");
    dir_ = pattern;
    std::ofstream(dir_ / "config.json") << kFolderConfig;
    std::filesystem::create_symlink(input_file().path(), dir_ / "model.safetensors");
  }
  ~InputFolder() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

std::string folder_for_input() {
  static const InputFolder folder;
  return folder.path();
}

void check_file(const std::string& path, size_t size) {
  const SafetensorsFile st(path);
  check(st.data_offset() >= 8 && st.data_offset() <= size, "the header lies inside the file");
  uint64_t covered = 0;
  SafetensorsWriter rewrite;
  std::vector<std::vector<float>> values;
  for (const auto& t : st.tensors()) {
    check(t.begin == covered, "each tensor begins where the previous one ended");
    check(t.end - t.begin == t.n_elements * safetensors_dtype_bytes(t.dtype), "a range holds its shape's bytes");
    check(st.tensor_data(t).size() == t.end - t.begin, "tensor_data has the range's bytes");
    check(st.find_tensor(t.name) == &t, "a listed tensor is found by name");
    covered = t.end;
    if (!readable(t.dtype)) continue;
    // At least 2 bytes per element in the file: at most twice its size in floats.
    std::vector<float> out(size_t(t.n_elements));
    st.read_tensor_floats(t, out);
    rewrite.add_tensor(t.name, t.shape, out, SafetensorsDType::F32);
    values.push_back(std::move(out));
  }
  check(st.data_offset() + covered == size, "the tensors end at the end of the file");

  // Written again as F32 (copied bit for bit both ways), the floats come back unchanged.
  static MemoryFile second;
  const std::string bytes = rewrite.bytes();
  const SafetensorsFile again(second.write(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  size_t i = 0;
  for (const auto& t : st.tensors()) {
    if (!readable(t.dtype)) continue;
    const auto* r = again.find_tensor(t.name);
    check(r != nullptr && r->shape == t.shape && r->dtype == SafetensorsDType::F32, "rewritten tensor has its shape");
    std::vector<float> back(size_t(r->n_elements));
    again.read_tensor_floats(*r, back);
    // (memcmp only when non-empty: an empty vector's data() may be null.)
    check(back.size() == values[i].size() &&
              (back.empty() || std::memcmp(back.data(), values[i].data(), back.size() * sizeof(float)) == 0),
          "rewritten floats keep their bits");
    ++i;
  }
}

}  // namespace

int fuzz_safetensors(const uint8_t* data, size_t size) {
  const std::string& path = input_file().write(data, size);
  expect_clean_errors([&] { check_file(path, size); });
  expect_clean_errors([&] {
    const HfModelFolder folder = load_hf_folder(folder_for_input());
    folder.weights.validate_shapes();
    check(folder.weights.config.dim == 8 && folder.weights.layers.size() == 1, "a loaded model has config.json's shape");
  });
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_safetensors)
