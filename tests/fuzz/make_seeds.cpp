// Writes the seed corpus of the fuzz targets: small valid inputs from which
// libFuzzer's mutations start (a fuzzer that never gets past the magic number
// tests nothing). Run once; the output is committed under tests/fuzz/corpus/:
//
//   ./build-fuzz/tests/fuzz/make_fuzz_seeds tests/fuzz/corpus
//
// The model files are tiny (dim 8, one layer) so that each fuzz iteration is
// cheap: a GGUF in each tensor type written by the engine's own writer, a
// llama2.c checkpoint with shared and with separate classifier and a
// tokenizer.bin written here from the format description.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/model_files/gguf_model.h"
#include "engine/model_files/synthetic_model.h"
#include "engine/model_files/synthetic_tokenizer.h"

namespace {

namespace fs = std::filesystem;
using astrai::ModelConfig;

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
  std::cout << path.string() << ": " << bytes.size() << " bytes\n";
}

template <class T>
void append_le(std::string& out, T value) {  // x86-64 and aarch64 are little-endian
  char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  out.append(b, sizeof(T));
}

ModelConfig tiny_config(int vocab) {
  ModelConfig c;
  c.dim = 8;
  c.hidden_dim = 16;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.vocab_size = vocab;
  c.max_seq_len = 4;
  return c;
}

void write_gguf_seeds(const fs::path& dir) {
  const ModelConfig c = tiny_config(astrai::kSyntheticTokenizerMinVocab);
  const auto weights = astrai::make_synthetic_weights(c, 7);
  const auto tokenizer = astrai::make_synthetic_tokenizer(c.vocab_size);
  for (const auto dtype : {astrai::GgufDType::F32, astrai::GgufDType::F16, astrai::GgufDType::BF16}) {
    const fs::path path = dir / ("tiny-model-" + astrai::gguf_dtype_name(dtype));
    fs::create_directories(dir);
    astrai::write_gguf_model(path.string(), weights, tokenizer, dtype, "fuzz-seed");
    std::cout << path.string() << ": " << fs::file_size(path) << " bytes\n";
  }
  // Metadata only, no tensors: version 3, 0 tensors, 2 key/values (a string
  // and an array of uint32), as the format describes it.
  std::string g = "GGUF";
  append_le<uint32_t>(g, 3);
  append_le<uint64_t>(g, 0);
  append_le<uint64_t>(g, 2);
  append_le<uint64_t>(g, 20);
  g += "general.architecture";
  append_le<uint32_t>(g, 8);
  append_le<uint64_t>(g, 5);
  g += "llama";
  append_le<uint64_t>(g, 17);
  g += "general.alignment";
  append_le<uint32_t>(g, 4);
  append_le<uint32_t>(g, 64);
  write(dir / "metadata-only", g);
}

// llama2.c's checkpoint layout (engine/model_files/llama2c_checkpoint.h).
std::string llama2c_checkpoint(const ModelConfig& c, bool shared) {
  std::string out;
  for (const int v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, shared ? c.vocab_size : -c.vocab_size,
                      c.max_seq_len})
    append_le<int32_t>(out, v);
  const int64_t head = c.dim / c.n_heads, kv = c.n_kv_heads * head;
  const int64_t floats = int64_t(c.vocab_size) * c.dim * (shared ? 1 : 2) +
                         c.n_layers * (2 * c.dim + 2 * c.dim * c.dim + 2 * kv * c.dim + 3 * c.hidden_dim * c.dim) +
                         c.dim + c.max_seq_len * head;
  for (int64_t i = 0; i < floats; ++i) append_le<float>(out, float(i % 17) / 17.0f - 0.5f);
  return out;
}

// llama2.c's tokenizer.bin: int32 max_token_length, then per piece float32
// score, int32 length, bytes.
std::string llama2c_tokenizer(const astrai::Tokenizer& tok) {
  std::string out;
  size_t longest = 0;
  for (const auto& p : tok.pieces()) longest = std::max(longest, p.size());
  append_le<int32_t>(out, int32_t(longest));
  for (int id = 0; id < tok.vocab_size(); ++id) {
    append_le<float>(out, tok.score(id));
    append_le<int32_t>(out, int32_t(tok.piece(id).size()));
    out += tok.piece(id);
  }
  return out;
}

void write_text_seeds(const fs::path& corpus) {
  // fuzz_tokenizer: even first byte = text to encode, odd = ids to decode.
  const fs::path tok = corpus / "tokenizer";
  write(tok / "text-ascii", std::string("\x00", 1) + "Once upon a time, there was a little dog.");
  write(tok / "text-utf8", std::string("\x00", 1) + " \xC3\xA9t\xC3\xA9 \xE2\x82\xAC 5 \xF0\x9F\x98\x80 caf\xC3\xA9");
  write(tok / "text-bytes", std::string("\x02\xFF\xC3\x00\n\t <s></s>", 12));
  std::string ids = "\x01";
  for (const int id : {1, 300, 301, 5, 72, 259, 2, 0, 700, 705}) append_le<uint16_t>(ids, uint16_t(id + 4));
  write(tok / "ids", ids);

  // fuzz_text_stream: [n_stops][len][stop]...[len][piece]...
  const fs::path ts = corpus / "text_stream";
  write(ts / "no-stop", std::string("\x00\x05Hello\x01,\x06 world", 15));
  write(ts / "stop-across-pieces", std::string("\x01\x06\nUser:") + "\x03" + "Hi!" + "\x02\n\n" + "\x04User" + "\x01:" +
                                       "\x04more");
  write(ts / "two-stops-utf8", std::string("\x02\x03\xE2\x82\xAC\x02") + "ab" + "\x02" + "x\xE2" + "\x02\x82\xAC" +
                                   "\x01" + "a" + "\x01" + "b");
  write(ts / "prefix-then-no-stop", std::string("\x01\x03") + "END" + "\x02" + "EN" + "\x01" + "D" + "\x02" + "ND");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_seeds CORPUS_DIR\n";
    return 2;
  }
  try {
    const fs::path corpus = argv[1];
    write_gguf_seeds(corpus / "gguf");
    write(corpus / "llama2c" / "tiny-shared", llama2c_checkpoint(tiny_config(8), true));
    write(corpus / "llama2c" / "tiny-unshared", llama2c_checkpoint(tiny_config(8), false));
    write(corpus / "tokenizer_file" / "synthetic-300", llama2c_tokenizer(astrai::make_synthetic_tokenizer(300)));
    write(corpus / "tokenizer_file" / "three-pieces",
          llama2c_tokenizer(astrai::Tokenizer({"<unk>", "<s>", "</s>"}, {0, 0, 0},
                                              {astrai::TokenType::Unknown, astrai::TokenType::Control,
                                               astrai::TokenType::Control})));
    write_text_seeds(corpus);
  } catch (const std::exception& e) {
    std::cerr << "make_fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
