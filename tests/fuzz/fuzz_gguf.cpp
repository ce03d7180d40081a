// Fuzz target: a GGUF file of any bytes. GgufReader either rejects it with a
// clean error or gives a directory whose every tensor lies inside the file;
// then every metadata getter and tensor read, and the whole-model loader
// (config, weights, tokenizer) run on it without a crash, a hang, an
// allocation out of proportion to the file, or a read outside the mapping.
#include <span>
#include <vector>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "tests/fuzz/expected_errors.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {
namespace {

// Calls every typed getter on every key: each returns or throws cleanly.
void read_all_metadata(const GgufReader& g) {
  for (const auto& entry : g.metadata()) {
    const std::string& key = entry.first;  // not a structured binding: clang 14 cannot capture those
    check(g.find(key) != nullptr, "a listed metadata key is found");
    expect_clean_errors([&] { (void)g.get_string(key); });
    expect_clean_errors([&] { (void)g.get_int(key); });
    expect_clean_errors([&] { (void)g.get_float(key); });
    expect_clean_errors([&] { (void)g.get_bool(key); });
    expect_clean_errors([&] { (void)g.get_string_array(key); });
    expect_clean_errors([&] { (void)g.get_float_array(key); });
    expect_clean_errors([&] { (void)g.get_int_array(key); });
  }
}

void read_all_tensors(const GgufReader& g, size_t file_size) {
  for (const auto& t : g.tensors()) {
    // The reader promised: the data range lies inside the file.
    check(g.data_offset() <= file_size && t.offset <= file_size - g.data_offset() &&
              t.n_bytes <= file_size - g.data_offset() - t.offset,
          "tensor data lies inside the file");
    check(g.tensor_data(t).size() == t.n_bytes, "tensor_data has n_bytes bytes");
    check(g.find_tensor(t.name) != nullptr, "a listed tensor is found by name");
    // Its floats take at most 4 bytes per element, and elements take at least
    // 2 bytes in the file (F16/BF16), so this allocation is at most twice the
    // file; other types are rejected before any conversion.
    if (t.n_elements > file_size) continue;  // quantized types: a block may hold many elements
    std::vector<float> out(size_t(t.n_elements));
    expect_clean_errors([&] { g.read_tensor_floats(t, out); });
  }
}

}  // namespace

int fuzz_gguf(const uint8_t* data, size_t size) {
  const std::string& path = input_file().write(data, size);
  expect_clean_errors([&] {
    const GgufReader g(path);
    read_all_metadata(g);
    read_all_tensors(g, size);
  });
  expect_clean_errors([&] {
    const GgufModel model = read_gguf_model(path);
    model.weights.validate_shapes();
    check(model.tokenizer.vocab_size() == model.weights.config.vocab_size, "tokenizer size equals vocab_size");
    // The file's own vocabulary must encode and decode any text without failing.
    const auto ids = model.tokenizer.encode("Hello, w\xC3\xB6rld! \xF0\x9F\x98\x80 <s>", true);
    for (const int id : ids) check(id >= 0 && id < model.tokenizer.vocab_size(), "encode gives ids in range");
    (void)model.tokenizer.decode(ids);
  });
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_gguf)
