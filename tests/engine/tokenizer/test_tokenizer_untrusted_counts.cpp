// A piece length read from a tokenizer.bin is a claim, not a fact: the loader
// must check it against the bytes that remain before allocating for it, so a
// few-byte file can never make it allocate gigabytes (found by fuzzing:
// tests/fuzz/fuzz_tokenizer_file, see docs/reliability.md). Memory is
// measured as the growth of the process's peak resident set (getrusage's
// ru_maxrss), which an allocation that is written to (a string of n zero
// bytes) raises.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>


#include "engine/tokenizer/tokenizer.h"
#include "tests/support/peak_rss.h"
#include "tests/support/shared_data.h"

using astrai::Tokenizer;
using Catch::Matchers::Contains;
using astrai::test::peak_rss_mib;

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_tokenizer_untrusted_counts {

template <class T>
void append_le(std::string& out, T value) {  // the test machines are little-endian
  char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  out.append(b, sizeof(T));
}


TEST_CASE("A tokenizer.bin whose piece claims 2 GiB of bytes it lacks fails without allocating them",
          "[tokenizer][load][untrusted]") {
  constexpr int32_t kHuge = std::numeric_limits<int32_t>::max();
  std::string bytes;
  append_le<int32_t>(bytes, kHuge);  // max_token_length: allows the claim below
  append_le<float>(bytes, 0.0f);     // id 0: score
  append_le<int32_t>(bytes, kHuge);  // id 0: length, with only 5 bytes after it
  bytes += "<unk>";
  const auto path = astrai::test::scratch_dir() / "tokenizer-claims-2GiB.bin";
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));

  const long before = peak_rss_mib();
  REQUIRE_THROWS_WITH(Tokenizer::load_llama2c(path.string(), 3),
                      Contains("id 0") && Contains("truncated") && Contains("2147483647 bytes but only 5 remain"));
  CHECK(peak_rss_mib() - before < 256);
}

}  // namespace test_tokenizer_untrusted_counts
