// Corrupt and truncated files: every truncation and many byte flips of a
// GGUF file, and random ones of a GGUF model and of a llama2.c checkpoint,
// must either throw std::runtime_error with a message or load a model that is
// internally consistent; never crash, read out of bounds (these tests also run
// under AddressSanitizer) or throw anything else (bad_alloc would mean a
// corrupt length reached an allocation unchecked).
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/llama2c/llama2c_checkpoint.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/engine/model_files/gguf_test_files.h"

using namespace astrai;
using astrai::test::all_types_file;

namespace {

enum class Outcome { Threw, Loaded };

// Parses `bytes` as a GGUF file and reads every tensor. A std::runtime_error
// (with a message naming the file) is an accepted outcome; anything else
// escapes and fails the test.
Outcome parse_and_read_all(const std::string& bytes, astrai::test::MemoryFile& file) {
  file.set(bytes);
  const std::string& path = file.path();
  try {
    const GgufReader g(path);
    for (const auto& t : g.tensors()) {
      std::vector<float> out(t.n_elements);
      try {
        g.read_tensor_floats(t, out);
      } catch (const std::runtime_error& e) {
        // A flipped type byte may turn a tensor into one AstrAI does not decode
        // (the quantized types it decodes read any bytes): listed, not converted.
        REQUIRE(std::string(e.what()).find("AstrAI reads F32, F16, BF16") != std::string::npos);
      }
    }
    return Outcome::Loaded;
  } catch (const std::runtime_error& e) {
    REQUIRE(std::string(e.what()).rfind(path, 0) == 0);  // the message starts with the file
    return Outcome::Threw;
  }
}

// Loads `bytes` as a GGUF model; a model that loads must be consistent.
Outcome load_model_bytes(const std::string& bytes, astrai::test::MemoryFile& file) {
  file.set(bytes);
  const std::string& path = file.path();
  try {
    const GgufModel m = read_gguf_model(path);
    m.weights.validate_shapes();
    REQUIRE(m.tokenizer.vocab_size() == m.weights.config.vocab_size);
    return Outcome::Loaded;
  } catch (const std::runtime_error& e) {
    REQUIRE(std::string(e.what()).find(path) != std::string::npos);
    return Outcome::Threw;
  }
}

std::string small_model_bytes() {
  const ModelConfig c{.dim = 4, .hidden_dim = 6, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 259,
                      .max_seq_len = 8};
  ModelWeights w = make_synthetic_weights(c, 11);
  const auto path = astrai::test::scratch_file("corrupt-src");
  write_gguf_model(path.string(), w, make_synthetic_tokenizer(259), GgufDType::F16, "small");
  return astrai::test::read_file(path);
}

}  // namespace

TEST_CASE("GGUF truncated at every byte offset fails cleanly", "[corruption]") {
  const std::string file = all_types_file();
  const GgufReader whole = astrai::test::parse_gguf_bytes(file);
  // Past the end of the last tensor's data only padding is lost.
  uint64_t data_end = 0;
  for (const auto& t : whole.tensors()) data_end = std::max(data_end, whole.data_offset() + t.offset + t.n_bytes);
  astrai::test::MemoryFile mem;
  for (size_t n = 0; n < file.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    const Outcome outcome = parse_and_read_all(file.substr(0, n), mem);
    REQUIRE((outcome == Outcome::Threw) == (n < data_end));
  }
}

TEST_CASE("GGUF with any header, metadata or tensor-info byte changed fails cleanly or parses", "[corruption]") {
  const std::string file = all_types_file();
  const uint64_t data_offset = astrai::test::parse_gguf_bytes(file).data_offset();
  astrai::test::MemoryFile mem;
  size_t threw = 0, loaded = 0;
  for (size_t at = 0; at < data_offset; ++at) {
    const auto original = uint8_t(file[at]);
    for (const uint8_t value : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t(0x7F), uint8_t(original ^ 0x01),
                                uint8_t(original ^ 0x40)}) {
      INFO("byte " << at << " set to " << int(value));
      std::string bytes = file;
      bytes[at] = char(value);
      (parse_and_read_all(bytes, mem) == Outcome::Threw ? threw : loaded)++;
    }
  }
  // Both outcomes occur: the checks are not simply rejecting everything.
  CHECK(threw > 0);
  CHECK(loaded > 0);
}

TEST_CASE("GGUF model truncated or with bytes changed fails cleanly or loads a consistent model", "[corruption]") {
  const std::string file = small_model_bytes();
  astrai::test::MemoryFile mem;
  mem.set(file);
  const uint64_t data_offset = GgufReader(mem.path()).data_offset();
  // The tensor directory starts 8 bytes (the name length) before the first tensor name.
  const uint64_t infos_start = file.find("token_embd.weight") - 8;
  REQUIRE(load_model_bytes(file, mem) == Outcome::Loaded);

  rc::prop("truncated", [&] {
    const auto n = *rc::gen::inRange<size_t>(0, file.size());
    // The last tensor ends at the file's end or in its final padding.
    if (n + 32 <= file.size()) RC_ASSERT(load_model_bytes(file.substr(0, n), mem) == Outcome::Threw);
    else load_model_bytes(file.substr(0, n), mem);
  });
  rc::prop("bytes changed", [&] {
    // Anywhere before the data, or concentrated on the header and the tensor directory.
    const auto at = *rc::gen::oneOf(rc::gen::inRange<uint64_t>(0, data_offset), rc::gen::inRange<uint64_t>(0, 24),
                                    rc::gen::inRange<uint64_t>(infos_start, data_offset));
    const auto n_changed = *rc::gen::inRange(1, 4);
    std::string bytes = file;
    for (int i = 0; i < n_changed && at + uint64_t(i) < data_offset; ++i)
      bytes[at + uint64_t(i)] = char(*rc::gen::arbitrary<uint8_t>());
    load_model_bytes(bytes, mem);
  });
}

TEST_CASE("llama2.c checkpoint with header bytes changed fails cleanly or loads", "[corruption]") {
  ASTRAI_REQUIRE_SHARED(model, "models/stories260K/stories260K.bin");
  const std::string file = astrai::test::read_file(model);
  astrai::test::MemoryFile mem;
  const std::string& path = mem.path();
  for (size_t at = 0; at < 28; ++at) {
    for (const uint8_t value : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t(file[at] ^ 0x01)}) {
      INFO("header byte " << at << " set to " << int(value));
      std::string bytes = file;
      bytes[at] = char(value);
      mem.set(bytes);
      try {
        load_llama2c_checkpoint(path).validate_shapes();
      } catch (const std::runtime_error& e) {
        REQUIRE(std::string(e.what()).rfind(path, 0) == 0);
      }
    }
  }
}
