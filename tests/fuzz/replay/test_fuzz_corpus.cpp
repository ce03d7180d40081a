// Replays the committed fuzz corpus (tests/fuzz/corpus/<target>/) through the
// fuzz targets: the seeds must pass, and every input that once made a target
// fail (named regression-*) stays fixed. A target that finds a violation
// aborts with "fuzz property violated: ..." (the input is named just before);
// an input that makes a loader allocate memory out of proportion to its size
// fails the peak-RSS check here (libFuzzer's -malloc_limit_mb does that job
// while fuzzing).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "tests/fuzz/fuzz_support.h"
#include "tests/support/shared_data.h"

namespace {

namespace fs = std::filesystem;

long peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // Linux reports KiB
}

std::vector<fs::path> corpus_files(const std::string& target) {
  const fs::path dir = astrai::test::source_root() / "tests" / "fuzz" / "corpus" / target;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

void replay(const std::string& target, int (*run)(const uint8_t*, size_t)) {
  const auto files = corpus_files(target);
  REQUIRE(!files.empty());
  for (const auto& file : files) {
    INFO("corpus input " << file.string());
    std::fprintf(stderr, "replaying %s\n", file.c_str());  // named before a possible abort
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const long before = peak_rss_mib();
    CHECK(run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == 0);
    CHECK(peak_rss_mib() - before < 256);
  }
}

}  // namespace

TEST_CASE("fuzz corpus: GGUF files", "[fuzz]") { replay("gguf", astrai::fuzz::fuzz_gguf); }
TEST_CASE("fuzz corpus: llama2.c checkpoints", "[fuzz]") { replay("llama2c", astrai::fuzz::fuzz_llama2c); }
TEST_CASE("fuzz corpus: tokenizer.bin files", "[fuzz]") {
  replay("tokenizer_file", astrai::fuzz::fuzz_tokenizer_file);
}
TEST_CASE("fuzz corpus: tokenizer encode and decode", "[fuzz]") { replay("tokenizer", astrai::fuzz::fuzz_tokenizer); }
TEST_CASE("fuzz corpus: tool-call and reasoning streams", "[fuzz]") { replay("tool_calls", astrai::fuzz::fuzz_tool_calls); }
TEST_CASE("fuzz corpus: text streams with stop sequences", "[fuzz]") {
  replay("text_stream", astrai::fuzz::fuzz_text_stream);
}
TEST_CASE("fuzz corpus: chat requests of both protocols", "[fuzz]") { replay("request", astrai::fuzz::fuzz_request); }
TEST_CASE("fuzz corpus: Responses API requests", "[fuzz]") { replay("responses", astrai::fuzz::fuzz_responses); }
TEST_CASE("fuzz corpus: safetensors files and Hugging Face folders", "[fuzz]") {
  replay("safetensors", astrai::fuzz::fuzz_safetensors);
}
TEST_CASE("fuzz corpus: chat templates (Jinja)", "[fuzz]") { replay("jinja", astrai::fuzz::fuzz_jinja); }
TEST_CASE("fuzz corpus: JSON Schemas (structured outputs)", "[fuzz]") { replay("schema", astrai::fuzz::fuzz_schema); }
