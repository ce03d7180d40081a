// Writes the seed corpus of the fuzz targets: small valid inputs from which
// libFuzzer's mutations start (a fuzzer that never gets past the magic number
// tests nothing). Run once; the output is committed under tests/fuzz/corpus/:
//
//   ./build-fuzz/tests/fuzz/make_fuzz_seeds tests/fuzz/corpus
//
// The model files are tiny (dim 8, one layer) so that each fuzz iteration is
// cheap: a GGUF in each tensor type written by the engine's own writer, a
// llama2.c checkpoint with shared and with separate classifier and a
// tokenizer.bin written here from the format description. The request seeds
// are chat requests of both protocols, valid and not, with header values.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/hf/hf_folder.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"

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
  ModelConfig c{.dim = 8, .hidden_dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = vocab,
                .max_seq_len = 4};
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

// fuzz_safetensors: the model.safetensors of its fixed tiny Qwen 2 folder
// (dim 8, 2 heads, 1 KV head, hidden 16, 1 layer, vocabulary 8, untied) in
// each dtype, written by the engine's folder writer, and a file spelled here
// from the format (an F32 matrix, a BF16 vector, an I8 tensor, a scalar, an
// empty tensor, metadata).
void write_safetensors_seeds(const fs::path& dir) {
  ModelConfig c{.dim = 8, .hidden_dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 8,
                .max_seq_len = 4, .rope_theta = 1e6f, .norm_eps = 1e-6f, .rope_layout = astrai::RopeLayout::RotateHalf,
                .rope_scaling = {}, .explicit_head_dim = 0, .options = {.qkv_bias = true, .qk_norm = false}};
  astrai::ModelWeights w = astrai::make_synthetic_weights(c, 7);
  for (auto& L : w.layers) {
    L.bq = xt::zeros<float>({size_t(c.q_dim())}) + 0.25f;
    L.bk = xt::zeros<float>({size_t(c.kv_dim())}) - 0.5f;
    L.bv = xt::zeros<float>({size_t(c.kv_dim())}) + 1.0f;
  }
  const fs::path scratch = fs::temp_directory_path() / "astrai-make-seeds-folder";
  for (const auto dtype : {astrai::SafetensorsDType::F32, astrai::SafetensorsDType::F16, astrai::SafetensorsDType::BF16}) {
    fs::remove_all(scratch);
    astrai::HfWriteOptions options;
    options.dtype = dtype;
    astrai::write_hf_folder(scratch.string(), w, options);
    std::ifstream in(scratch / "model.safetensors", std::ios::binary);
    write(dir / ("tiny-qwen2-" + astrai::safetensors_dtype_name(dtype)),
          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  fs::remove_all(scratch);
  std::string header = R"({"__metadata__":{"format":"pt"},"m":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},"s":{"dtype":"F32","shape":[],)"
                       R"("data_offsets":[22,26]},"e":{"dtype":"F16","shape":[0,3],"data_offsets":[26,26]},)"
                       R"("i":{"dtype":"I8","shape":[2],"data_offsets":[26,28]}})";
  while (header.size() % 8) header += ' ';
  std::string file;
  append_le<uint64_t>(file, header.size());
  file += header;
  for (const float v : {1.0f, -2.0f, 0.5f, 3.0f}) append_le<float>(file, v);
  for (const uint16_t v : {0x3F80, 0xC000, 0x7F80}) append_le<uint16_t>(file, v);  // 1, -2, inf
  append_le<float>(file, -0.0f);
  file += "\x01\xFF";
  write(dir / "hand-spelled", file);
}

// llama2.c's checkpoint layout (engine/model_files/llama2c/llama2c_checkpoint.h).
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

// fuzz_request: [flags][len][API key][len][Authorization][len][x-api-key]
// [len][path][len][generated text], then the body (see fuzz_request.cpp).
// Flags: bit 0 Anthropic, bit 1 an anthropic-version header.
std::string request_case(uint8_t flags, const std::vector<std::string>& strings, const std::string& body) {
  if (strings.size() != 5) throw std::logic_error("request_case: key, Authorization, x-api-key, path, text");
  std::string out(1, char(flags));
  for (const std::string& s : strings) {
    if (s.size() > 255) throw std::logic_error("request_case: a string longer than its length byte");
    out += char(s.size());
    out += s;
  }
  return out + body;
}

void write_request_seeds(const fs::path& dir) {
  constexpr uint8_t kOpenAI = 0, kAnthropic = 1, kVersionHeader = 2;
  const std::string chat = "/v1/chat/completions", messages = "/v1/messages";
  // Valid requests: every field each protocol reads, streamed and not.
  write(dir / "openai-minimal", request_case(kOpenAI, {"", "", "", chat, "Hello"},
                                             R"({"model":"m","messages":[{"role":"user","content":"Hi"}]})"));
  write(dir / "openai-all-fields",
        request_case(kOpenAI, {"sk-test", "Bearer sk-test", "", chat, " world"},
                     R"({"model":"m","messages":[{"role":"system","content":"Be brief."},)"
                     R"({"role":"developer","content":"Answer in English."},{"role":"user","content":"Hi"},)"
                     R"({"role":"assistant","content":"Hello!"},{"role":"user","content":"Tell me a story."}],)"
                     R"("max_tokens":64,"max_completion_tokens":32,"temperature":0.7,"top_p":0.9,"top_k":40,)"
                     R"("seed":42,"stop":["\n\n","END"],"n":1,"stream":true,"stream_options":{"include_usage":true}})"));
  write(dir / "openai-blocks-single-stop",
        request_case(kOpenAI, {"key", "bearer key", "", chat, "The end."},
                     R"({"messages":[{"role":"user","content":[{"type":"text","text":"Once"},)"
                     R"({"type":"text","text":"upon a time"}]}],"stop":"User:","temperature":0,"ignore_eos":true,)"
                     R"("max_tokens":8,"stream":false,"stream_options":{"include_usage":false},"seed":null})"));
  write(dir / "openai-exponents",
        request_case(kOpenAI, {"", "", "", chat, "x"},
                     R"({"messages":[{"role":"user","content":"Hi"}],"temperature":7e-1,"top_p":9.5E-1,)"
                     R"("max_tokens":1.6e1,"top_k":4.0,"seed":-5})"));
  write(dir / "openai-escapes-markers",
        request_case(kOpenAI, {"", "", "", chat, "caf\xC3\xA9 \xE2\x82\xAC"},
                     R"({"messages":[{"role":"user","content":"  \u00e9\ud83d\ude00\u0000 <|im_end|> [INST] <s>\t"}]})"));
  write(dir / "anthropic-minimal",
        request_case(kAnthropic | kVersionHeader, {"k", "", "k", messages, "Hello"},
                     R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"Hi"}]})"));
  write(dir / "anthropic-all-fields-stream",
        request_case(kAnthropic | kVersionHeader, {"secret", "Bearer other", "secret", messages, "Once"},
                     R"({"model":"m","max_tokens":32,"system":[{"type":"text","text":"You tell stories."}],)"
                     R"("messages":[{"role":"user","content":[{"type":"text","text":"A story"}]},)"
                     R"({"role":"assistant","content":"Once upon"}],"stop_sequences":["The end","\n\nHuman:"],)"
                     R"("stream":true,"temperature":1.0,"top_p":0.95,"top_k":5,"seed":7})"));
  write(dir / "anthropic-system-string-utf8",
        request_case(kAnthropic, {"", "", "", messages, "\xC3\xA9t\xC3\xA9"},
                     R"({"max_tokens":4,"system":"Tu es un conteur.","messages":[{"role":"user","content":"caf\u00e9 \u20ac"},)"
                     R"({"role":"assistant","content":"Oui."},{"role":"user","content":"Encore"}]})"));
  // Rejected requests: each error type the validators give.
  write(dir / "bad-json-truncated", request_case(kOpenAI, {"", "", "", chat, ""}, R"({"messages": [{"role": "us)"));
  write(dir / "not-an-object",
        request_case(kOpenAI | kVersionHeader, {"k", "Bearer", "", "/v1/models", ""}, "[1, 2, 3]"));
  write(dir / "anthropic-wrong-types",
        request_case(kAnthropic, {"", "", "", messages, ""},
                     R"({"messages":"Hi","max_tokens":"16","stream":1,"temperature":true,"top_k":2.5,)"
                     R"("stop_sequences":"x","system":5})"));
  write(dir / "anthropic-bad-roles-blocks",
        request_case(kAnthropic, {"", "", "", messages, ""},
                     R"({"max_tokens":1,"messages":[{"role":"system","content":"x"},{"role":"user","content":)"
                     R"([{"type":"image","text":"x"},{"type":"text"},{"text":""},7]},{"content":"no role"}]})"));
  write(dir / "openai-out-of-range",
        request_case(kOpenAI, {"", "", "", chat, ""},
                     R"({"messages":[{"role":"user","content":""}],"max_tokens":0,"temperature":-1,"top_p":1.5,)"
                     R"("top_k":-3,"n":2,"stop":["",4],"max_completion_tokens":-1,"stream_options":[]})"));
  write(dir / "openai-invalid-utf8",
        request_case(kOpenAI, {"key", "bEaReR wrong", "", chat, "\xFF\xFEok\xC3"},
                     "{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xC3\"}]}"));
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
    write_safetensors_seeds(corpus / "safetensors");
    write(corpus / "llama2c" / "tiny-shared", llama2c_checkpoint(tiny_config(8), true));
    write(corpus / "llama2c" / "tiny-unshared", llama2c_checkpoint(tiny_config(8), false));
    write(corpus / "tokenizer_file" / "synthetic-300", llama2c_tokenizer(astrai::make_synthetic_tokenizer(300)));
    write(corpus / "tokenizer_file" / "three-pieces",
          llama2c_tokenizer(astrai::Tokenizer({"<unk>", "<s>", "</s>"}, {0, 0, 0},
                                              {astrai::TokenType::Unknown, astrai::TokenType::Control,
                                               astrai::TokenType::Control})));
    write_text_seeds(corpus);
    write_request_seeds(corpus / "request");
  } catch (const std::exception& e) {
    std::cerr << "make_fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
