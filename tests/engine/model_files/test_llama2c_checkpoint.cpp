// llama2.c checkpoints: every weight lands where llama2.c's layout puts it
// (checked element by element on a synthetic file whose floats count their
// own position), stories260K loads with its documented shape and values read
// straight from the file, and wrong sizes or headers fail with clear errors.
#include <catch2/catch.hpp>

#include <fstream>

#include "engine/model_files/llama2c/llama2c_checkpoint.h"
#include "tests/engine/model_files/gguf_test_files.h"

using namespace astrai;
using astrai::test::ByteBuilder;
using Catch::Matchers::Contains;

namespace {

struct Shape {
  int dim, hidden, layers, heads, kv_heads, vocab, seq;
};

// A checkpoint whose i-th float (after the header) has the value i, so a
// loaded weight tells where in the file it came from.
std::string counting_checkpoint(const Shape& s, bool shared) {
  const int head = s.dim / s.heads, kv_dim = s.kv_heads * head;
  const long n_floats = long(s.vocab) * s.dim * (shared ? 1 : 2) +
                        long(s.layers) * (2 * s.dim + 2L * s.dim * s.dim + 2L * kv_dim * s.dim + 3L * s.hidden * s.dim) +
                        s.dim + long(s.seq) * head;
  ByteBuilder b;
  b.i32(s.dim).i32(s.hidden).i32(s.layers).i32(s.heads).i32(s.kv_heads).i32(shared ? s.vocab : -s.vocab).i32(s.seq);
  for (long i = 0; i < n_floats; ++i) b.f32(float(i));
  return b.bytes();
}

// Where llama2.c's run.c (memory_map_weights) finds each weight, in floats
// after the header, spelled out tensor by tensor.
struct Offsets {
  long dim, hidden, L, kv_dim, vocab, seq, head;
  long emb(long v, long d) const { return v * dim + d; }
  long rms_att(long l, long d) const { return vocab * dim + l * dim + d; }
  long wq(long l, long r, long c) const { return rms_att(L, 0) + l * dim * dim + r * dim + c; }
  long wk(long l, long r, long c) const { return wq(L, 0, 0) + l * kv_dim * dim + r * dim + c; }
  long wv(long l, long r, long c) const { return wk(L, 0, 0) + l * kv_dim * dim + r * dim + c; }
  long wo(long l, long r, long c) const { return wv(L, 0, 0) + l * dim * dim + r * dim + c; }
  long rms_ffn(long l, long d) const { return wo(L, 0, 0) + l * dim + d; }
  long w1(long l, long r, long c) const { return rms_ffn(L, 0) + l * hidden * dim + r * dim + c; }
  long w2(long l, long r, long c) const { return w1(L, 0, 0) + l * dim * hidden + r * hidden + c; }
  long w3(long l, long r, long c) const { return w2(L, 0, 0) + l * hidden * dim + r * dim + c; }
  long rms_final(long d) const { return w3(L, 0, 0) + d; }
  long wcls(long v, long d) const { return rms_final(dim) + seq * head + v * dim + d; }  // after both freq_cis tables
};

Offsets offsets_for(const Shape& s) {
  const long head = s.dim / s.heads;
  return {s.dim, s.hidden, s.layers, s.kv_heads * head, s.vocab, s.seq, head};
}

void check_every_weight(const ModelWeights& w, const Offsets& o, bool shared) {
  auto each = [](const auto& t, auto expected) {
    for (size_t r = 0; r < t.shape(0); ++r)
      for (size_t c = 0; c < t.shape(1); ++c) REQUIRE(t(r, c) == float(expected(long(r), long(c))));
  };
  each(w.token_embedding, [&](long r, long c) { return o.emb(r, c); });
  for (long l = 0; l < o.L; ++l) {
    const auto& L = w.layers[size_t(l)];
    for (long d = 0; d < o.dim; ++d) {
      REQUIRE(L.attn_norm(d) == float(o.rms_att(l, d)));
      REQUIRE(L.ffn_norm(d) == float(o.rms_ffn(l, d)));
    }
    each(L.wq, [&](long r, long c) { return o.wq(l, r, c); });
    each(L.wk, [&](long r, long c) { return o.wk(l, r, c); });
    each(L.wv, [&](long r, long c) { return o.wv(l, r, c); });
    each(L.wo, [&](long r, long c) { return o.wo(l, r, c); });
    each(L.w_gate, [&](long r, long c) { return o.w1(l, r, c); });
    each(L.w_down, [&](long r, long c) { return o.w2(l, r, c); });
    each(L.w_up, [&](long r, long c) { return o.w3(l, r, c); });
  }
  for (long d = 0; d < o.dim; ++d) REQUIRE(w.final_norm(d) == float(o.rms_final(d)));
  each(w.classifier, [&](long r, long c) { return shared ? o.emb(r, c) : o.wcls(r, c); });
}

// The float at `index` floats after the 28-byte header, read with plain file I/O.
float raw_float(const std::filesystem::path& path, long index) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(28 + 4 * index);
  float f = 0;
  in.read(reinterpret_cast<char*>(&f), 4);
  REQUIRE(in.gcount() == 4);
  return f;
}

}  // namespace

TEST_CASE("llama2.c checkpoint: every weight comes from its place in the file", "[llama2c]") {
  const Shape s{8, 12, 2, 4, 2, 11, 5};
  for (const bool shared : {true, false}) {
    INFO("shared classifier: " << shared);
    const auto path = astrai::test::scratch_file(shared ? "shared" : "unshared", ".bin");
    astrai::test::write_file(path, counting_checkpoint(s, shared));
    const auto header = read_llama2c_header(path.string());
    CHECK(header.shared_classifier == shared);
    CHECK(llama2c_file_size(header) == std::filesystem::file_size(path));
    const ModelWeights w = load_llama2c_checkpoint(path.string());
    const ModelConfig& c = w.config;
    CHECK(c.dim == 8);
    CHECK(c.hidden_dim == 12);
    CHECK(c.n_layers == 2);
    CHECK(c.n_heads == 4);
    CHECK(c.n_kv_heads == 2);
    CHECK(c.vocab_size == 11);
    CHECK(c.max_seq_len == 5);
    CHECK(c.norm_eps == 1e-5f);
    CHECK(c.rope_theta == 10000.0f);
    CHECK(c.rope_layout == RopeLayout::AdjacentPairs);
    check_every_weight(w, offsets_for(s), shared);
  }
}

TEST_CASE("llama2.c checkpoint: stories260K", "[llama2c]") {
  ASTRAI_REQUIRE_SHARED(path, "models/stories260K/stories260K.bin");
  const ModelWeights w = load_llama2c_checkpoint(path.string());
  const ModelConfig& c = w.config;
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.vocab_size == 512);
  CHECK(c.max_seq_len == 512);
  CHECK(read_llama2c_header(path.string()).shared_classifier);
  CHECK(llama2c_file_size(read_llama2c_header(path.string())) == 1056540);
  CHECK(xt::all(xt::equal(w.classifier, w.token_embedding)));

  const Offsets o = offsets_for({64, 172, 5, 8, 4, 512, 512});
  CHECK(w.token_embedding(7, 3) == raw_float(path, o.emb(7, 3)));
  CHECK(w.token_embedding(511, 63) == raw_float(path, o.emb(511, 63)));
  CHECK(w.layers[4].attn_norm(10) == raw_float(path, o.rms_att(4, 10)));
  CHECK(w.layers[1].wq(2, 3) == raw_float(path, o.wq(1, 2, 3)));
  CHECK(w.layers[2].wk(31, 5) == raw_float(path, o.wk(2, 31, 5)));
  CHECK(w.layers[4].wv(31, 63) == raw_float(path, o.wv(4, 31, 63)));
  CHECK(w.layers[0].wo(63, 0) == raw_float(path, o.wo(0, 63, 0)));
  CHECK(w.layers[3].ffn_norm(1) == raw_float(path, o.rms_ffn(3, 1)));
  CHECK(w.layers[1].w_gate(171, 63) == raw_float(path, o.w1(1, 171, 63)));
  CHECK(w.layers[2].w_down(63, 171) == raw_float(path, o.w2(2, 63, 171)));
  CHECK(w.layers[4].w_up(0, 0) == raw_float(path, o.w3(4, 0, 0)));
  CHECK(w.final_norm(63) == raw_float(path, o.rms_final(63)));
  // The freq_cis tables fill the rest of the file exactly.
  CHECK(28 + 4 * (o.rms_final(64) + 512 * 8) == 1056540);
}

TEST_CASE("llama2.c checkpoint: wrong sizes and headers fail clearly", "[llama2c]") {
  ASTRAI_REQUIRE_SHARED(path, "models/stories260K/stories260K.bin");
  const std::string bytes = astrai::test::read_file(path);
  const auto bad = astrai::test::scratch_file("bad", ".bin").string();

  astrai::test::write_file(bad, std::string_view(bytes).substr(0, bytes.size() - 4));
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(bad),
                      bad + ": file is 1056536 bytes, but its header (dim=64 hidden=172 layers=5 heads=8 kv_heads=4 "
                            "vocab=512 ctx=512, shared classifier) implies 1056540 bytes (truncated?)");
  astrai::test::write_file(bad, bytes + std::string(4, '\0'));
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(bad), Contains("file is 1056544 bytes") && Contains("(trailing data?)"));
  astrai::test::write_file(bad, std::string_view(bytes).substr(0, 20));
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(bad),
                      bad + ": truncated at offset 20 reading header field vocab_size (4 bytes needed, 0 left)");

  auto header_only = [&](std::initializer_list<int32_t> fields) {
    ByteBuilder b;
    for (int32_t f : fields) b.i32(f);
    astrai::test::write_file(bad, b.bytes());
    return bad;
  };
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(header_only({8, 12, 2, 3, 3, 11, 5})),
                      Contains("header does not describe a valid model") && Contains("dim is not a multiple of n_heads"));
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(header_only({-8, 12, 2, 4, 2, 11, 5})), Contains("dim must be positive"));
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(header_only({8, 12, 2, 4, 2, INT32_MIN, 5})),
                      Contains("vocab_size must be positive"));
  // Sizes that overflow 64 bits are caught, not wrapped into a small number.
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(header_only({1 << 30, 1 << 30, 1 << 30, 2, 2, 11, 5})),
                      Contains("overflows 64 bits"));
  // A plausible header over too little data.
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(header_only({8, 12, 2, 4, 2, 11, 5})),
                      Contains("file is 28 bytes") && Contains("(truncated?)"));
  REQUIRE_THROWS_WITH(load_llama2c_checkpoint(bad + ".missing"), Contains("cannot open"));
}
