// Tokenizer speed on the real llama2.c vocabularies: encoding and decoding
// ~100 KB of mixed English, code-like text and a little non-ASCII.
// The vocabularies come from the shared data folder: $ASTRAI_SHARED_DIR, else
// ../shared or ../../shared from the working directory (the repository root or
// a build directory inside it).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace

BENCHMARK_CAPTURE(encode_benchmark, llama2, "models/llama2-tokenizer/tokenizer.bin", 32000)
    ->Arg(100 << 10)->Arg(4 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_benchmark, tok512, "models/stories260K/tok512.bin", 512)
    ->Arg(100 << 10)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode_benchmark, llama2, "models/llama2-tokenizer/tokenizer.bin", 32000)
    ->Arg(100 << 10)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
