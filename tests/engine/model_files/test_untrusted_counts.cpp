// A count read from a model file is a claim, not a fact: the loaders must
// check it against what the file really holds before allocating for it, so a
// few-KB file can never make them allocate gigabytes (found by fuzzing:
// tests/fuzz/fuzz_gguf, see docs/reliability.md). Memory is measured as the
// growth of the process's peak resident set (getrusage's ru_maxrss), which
// any allocation that is actually written to raises.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/gguf/gguf_writer.h"
#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/support/peak_rss.h"

using namespace astrai;
using Catch::Matchers::Contains;
using astrai::test::peak_rss_mib;

namespace {

// A one-layer model written by the engine, rewritten with every metadata key
// and tensor kept except llama.block_count, which claims `claimed_layers`.
std::string model_claiming_layers(uint32_t claimed_layers) {
  ModelConfig c{.dim = 8, .hidden_dim = 16, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1,
                .vocab_size = kSyntheticTokenizerMinVocab, .max_seq_len = 4};
  const auto honest = test::scratch_file("one-layer").string();
  write_gguf_model(honest, make_synthetic_weights(c, 3), make_synthetic_tokenizer(c.vocab_size), GgufDType::F32,
                   "one layer");
  const GgufReader in(honest);
  GgufWriter out;
  for (const auto& [key, value] : in.metadata())
    out.add_metadata(key, key == "llama.block_count" ? GgufValue(claimed_layers) : value);
  for (const auto& t : in.tensors()) {
    std::vector<float> values(size_t(t.n_elements));
    in.read_tensor_floats(t, values);
    out.add_tensor(t.name, t.ne, values, GgmlType::F32);
  }
  const auto lying = test::scratch_file("claims-layers").string();
  out.write(lying);
  return lying;
}

}  // namespace

TEST_CASE("A GGUF claiming many more layers than it holds fails at the first missing tensor, allocating nothing "
          "for the layers it lacks",
          "[gguf_model][untrusted]") {
  // 2^20 layers of empty weight tensors would take 2^20 * sizeof(LayerWeights)
  // (816 bytes with xtensor 0.24): about 800 MiB for a 26 KB file.
  const auto path = model_claiming_layers(uint32_t(1) << 20);
  const long before = peak_rss_mib();
  REQUIRE_THROWS_WITH(read_gguf_model(path), Contains(path) && Contains("tensor 'blk.1.attn_norm.weight' is missing"));
  CHECK(peak_rss_mib() - before < 256);
}

TEST_CASE("A GGUF claiming 2^31 - 1 layers fails with a clean error, not an allocation failure",
          "[gguf_model][untrusted]") {
  // 2^31 layers would ask for about 1.7 TB at once: std::bad_alloc in a
  // release build, an allocation-size report under AddressSanitizer.
  const auto path = model_claiming_layers(uint32_t(std::numeric_limits<int32_t>::max()));
  REQUIRE_THROWS_WITH(read_gguf_model(path), Contains("tensor 'blk.1.attn_norm.weight' is missing"));
}

TEST_CASE("GGUF metadata that would take more than 256 MiB of memory is refused before it is allocated",
          "[gguf][untrusted]") {
  // Each array element becomes a GgufValue of sizeof(GgufValue) bytes in
  // memory (40 with libstdc++), so an 8 MiB file of one-byte elements would
  // take over 300 MiB; a 1 MiB one (40 MiB) is within the budget.
  auto array_file = [](uint64_t count) {
    test::ByteBuilder body;
    body.u64(5).raw("bytes").u32(uint32_t(GgufValueType::Array)).u32(uint32_t(GgufValueType::Uint8)).u64(count);
    return test::gguf_file(0, 1, body.bytes() + std::string(size_t(count), '\1'));
  };
  const GgufReader fits = test::parse_gguf_bytes(array_file(uint64_t(1) << 20));
  CHECK(fits.get_array("bytes").elements.size() == (size_t(1) << 20));

  const std::string too_much = array_file(uint64_t(8) << 20);
  const long before = peak_rss_mib();
  REQUIRE_THROWS_WITH(test::parse_gguf_bytes(too_much),
                      Contains("metadata 'bytes'") && Contains("more than 256 MiB of memory"));
  CHECK(peak_rss_mib() - before < 64);
}
