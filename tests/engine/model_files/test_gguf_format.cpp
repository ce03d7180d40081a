// GGUF reader and writer against hand-assembled bytes (the format as the spec
// spells it, not as our writer produces it), metadata of every type round
// tripping through writer and reader, and a clear error for each malformed field.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <bit>
#include <cmath>

#include "engine/model_files/gguf/gguf_reader.h"
#include "engine/model_files/gguf/gguf_writer.h"
#include "tests/engine/model_files/gguf_test_files.h"

using namespace astrai;
using astrai::test::ByteBuilder;
using astrai::test::all_types_file;
using astrai::test::gguf_file;
using astrai::test::parse_gguf_bytes;
using Catch::Matchers::Contains;


TEST_CASE("GGUF reader parses every metadata type and tensor layout", "[gguf]") {
  const GgufReader g = parse_gguf_bytes(all_types_file());
  CHECK(g.version() == 3);
  CHECK(g.alignment() == 64);
  CHECK(g.data_offset() % 64 == 0);
  REQUIRE(g.metadata().size() == 15);
  CHECK(g.get("u8") == GgufValue(uint8_t(200)));
  CHECK(g.get("i8") == GgufValue(int8_t(-100)));
  CHECK(g.get("u16") == GgufValue(uint16_t(60000)));
  CHECK(g.get("i16") == GgufValue(int16_t(-30000)));
  CHECK(g.get("u32") == GgufValue(uint32_t(4000000000u)));
  CHECK(g.get("i32") == GgufValue(int32_t(-2000000000)));
  CHECK(g.get("f32") == GgufValue(0.25f));
  CHECK(g.get_bool("bool"));
  CHECK(g.get_string("str") == "h\xC3\xA9llo");
  CHECK(g.get_int_array("arr") == std::vector<int64_t>{1, -2, 3});
  CHECK(g.get("u64") == GgufValue(uint64_t((uint64_t(1) << 63) + 5)));
  CHECK(g.get_int("i64") == -(int64_t(1) << 62));
  CHECK(g.get_float("f64") == -0.125);
  CHECK(g.get_float("f32") == 0.25);
  CHECK(g.get_int("u8") == 200);
  CHECK(g.get_int("i16") == -30000);
  const auto& nested = g.get_array("nested");
  REQUIRE(nested.element_type == GgufValueType::Array);
  REQUIRE(nested.elements.size() == 2);
  CHECK(std::get<GgufArray>(nested.elements[0].value) == make_gguf_array(std::vector<std::string>{"a", "bc"}));
  CHECK(std::get<GgufArray>(nested.elements[1].value).elements.empty());

  REQUIRE(g.tensors().size() == 3);
  const auto& mat = g.tensor("mat");
  CHECK(mat.ne == std::vector<uint64_t>{3, 2});
  CHECK(mat.shape() == std::vector<size_t>{2, 3});
  CHECK(mat.n_bytes == 24);
  // ne[0] = 3 varies fastest: the data 1..6 is the row-major matrix [[1,2,3],[4,5,6]].
  const auto m = g.read_tensor<2>("mat", {2, 3});
  CHECK(m(0, 2) == 3.0f);
  CHECK(m(1, 0) == 4.0f);
  const auto h = g.read_tensor<1>("half", {4});
  CHECK(h(0) == 1.0f);
  CHECK(h(1) == -2.0f);
  CHECK(h(2) == 0.5f);
  CHECK(h(3) == 65504.0f);
  // Trailing ne of 1 may be dropped from the requested shape.
  const auto b = g.read_tensor<1>("bf", {2});
  CHECK(b(0) == 1.0f);
  CHECK(b(1) == -2.0f);
  CHECK(g.read_tensor<3>("bf", {1, 1, 2})(0, 0, 1) == -2.0f);
}

TEST_CASE("GGUF writer produces the spec's bytes exactly", "[gguf]") {
  GgufWriter w(64);  // records general.alignment first
  w.add_metadata("u8", uint8_t(200));
  w.add_metadata("i8", int8_t(-100));
  w.add_metadata("u16", uint16_t(60000));
  w.add_metadata("i16", int16_t(-30000));
  w.add_metadata("u32", uint32_t(4000000000u));
  w.add_metadata("i32", int32_t(-2000000000));
  w.add_metadata("f32", 0.25f);
  w.add_metadata("bool", true);
  w.add_metadata("str", "h\xC3\xA9llo");
  w.add_metadata("arr", make_gguf_array(std::vector<int32_t>{1, -2, 3}));
  w.add_metadata("u64", uint64_t((uint64_t(1) << 63) + 5));
  w.add_metadata("i64", int64_t(-(int64_t(1) << 62)));
  w.add_metadata("f64", -0.125);
  GgufArray nested{GgufValueType::Array, {}};
  nested.elements.emplace_back(make_gguf_array(std::vector<std::string>{"a", "bc"}));
  nested.elements.emplace_back(make_gguf_array(std::vector<std::string>{}));
  w.add_metadata("nested", nested);
  w.add_tensor("mat", xt::xtensor<float, 2>{{1, 2, 3}, {4, 5, 6}}, GgmlType::F32);
  w.add_tensor("half", {4}, std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}, GgmlType::F16);
  w.add_tensor("bf", {2, 1, 1}, std::vector<float>{1.0f, -2.0f}, GgmlType::BF16);
  const auto path = astrai::test::scratch_file("writer-bytes");
  w.write(path.string());
  CHECK(astrai::test::read_file(path) == all_types_file());
}

TEST_CASE("GGUF writer rejects inconsistent input", "[gguf]") {
  GgufWriter w;
  w.add_metadata("k", uint32_t(1));
  REQUIRE_THROWS_WITH(w.add_metadata("k", uint32_t(2)), Contains("'k' added twice"));
  GgufArray bad{GgufValueType::Float32, {GgufValue(1.0f), GgufValue(uint8_t(2))}};
  REQUIRE_THROWS_WITH(w.add_metadata("bad", bad), Contains("array of float32 holds a uint8"));
  const std::vector<float> three{1, 2, 3};
  REQUIRE_THROWS_WITH(w.add_tensor("t", {2, 2}, three, GgmlType::F32), Contains("hold 4 elements, data has 3"));
  REQUIRE_THROWS_WITH(w.add_tensor("t", {3}, three, GgmlType::Q8_0), Contains("rows of 3 are not a multiple of the Q8_0 block"));
  REQUIRE_THROWS_WITH(w.add_tensor("t", {3}, three, GgmlType::I8), Contains("not I8"));
  REQUIRE_THROWS_WITH(w.add_tensor("t", {}, three, GgmlType::F32), Contains("1 to 4 dimensions"));
  REQUIRE_THROWS_WITH(w.add_tensor(std::string(64, 'x'), {3}, three, GgmlType::F32), Contains("longer than 63"));
  w.add_tensor("t", {3}, three, GgmlType::F32);
  REQUIRE_THROWS_WITH(w.add_tensor("t", {3}, three, GgmlType::F32), Contains("'t' added twice"));
  REQUIRE_THROWS_WITH(GgufWriter(48), Contains("48 is not a power of two"));
  REQUIRE_THROWS_WITH(w.write((astrai::test::scratch_dir() / "no-such-dir" / "x.gguf").string()),
                      Contains("cannot open"));
}

namespace {

rc::Gen<GgufValue> gen_value_of(GgufValueType type, int depth);

rc::Gen<GgufValueType> gen_type(int depth) {
  return rc::gen::map(rc::gen::inRange(0, 13), [depth](int t) {
    // Without depth left, an array becomes a string.
    return GgufValueType(t == 9 && depth <= 0 ? 8 : t);
  });
}

template <class T>
rc::Gen<GgufValue> scalar() {
  return rc::gen::map(rc::gen::arbitrary<T>(), [](T v) { return GgufValue(v); });
}

rc::Gen<GgufValue> gen_value_of(GgufValueType type, int depth) {
  switch (type) {
    case GgufValueType::Uint8: return scalar<uint8_t>();
    case GgufValueType::Int8: return scalar<int8_t>();
    case GgufValueType::Uint16: return scalar<uint16_t>();
    case GgufValueType::Int16: return scalar<int16_t>();
    case GgufValueType::Uint32: return scalar<uint32_t>();
    case GgufValueType::Int32: return scalar<int32_t>();
    case GgufValueType::Bool: return scalar<bool>();
    case GgufValueType::Uint64: return scalar<uint64_t>();
    case GgufValueType::Int64: return scalar<int64_t>();
    case GgufValueType::String: return scalar<std::string>();
    // Floats from raw bits: NaN payloads, infinities and subnormals must survive too.
    case GgufValueType::Float32:
      return rc::gen::map(rc::gen::arbitrary<uint32_t>(), [](uint32_t b) { return GgufValue(std::bit_cast<float>(b)); });
    case GgufValueType::Float64:
      return rc::gen::map(rc::gen::arbitrary<uint64_t>(), [](uint64_t b) { return GgufValue(std::bit_cast<double>(b)); });
    case GgufValueType::Array:
      return rc::gen::mapcat(gen_type(depth - 1), [depth](GgufValueType element_type) {
        return rc::gen::map(
            rc::gen::resize(6, rc::gen::container<std::vector<GgufValue>>(gen_value_of(element_type, depth - 1))),
            [element_type](std::vector<GgufValue> elements) {
              return GgufValue(GgufArray{element_type, std::move(elements)});
            });
      });
  }
  return scalar<uint8_t>();
}

}  // namespace

TEST_CASE("GGUF metadata of every type and tensors round-trip through writer and reader", "[gguf]") {
  rc::prop("round trip", [] {
    const auto values = *rc::gen::resize(
        20, rc::gen::container<std::vector<GgufValue>>(rc::gen::mapcat(gen_type(3), [](GgufValueType t) {
          return gen_value_of(t, 3);
        })));
    const uint32_t alignment = 1u << *rc::gen::inRange(0, 9);
    const auto n_floats = *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(1, 40));
    GgufWriter w(alignment);
    std::vector<std::pair<std::string, GgufValue>> expected;
    if (alignment != 32) expected.emplace_back("general.alignment", GgufValue(alignment));
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string key = std::string("key.") + std::to_string(i);
      w.add_metadata(key, values[i]);
      expected.emplace_back(key, values[i]);
    }
    std::vector<std::vector<float>> tensors;
    for (size_t i = 0; i < n_floats.size(); ++i) {
      std::vector<float> data(n_floats[i]);
      for (size_t j = 0; j < data.size(); ++j) data[j] = float(i) * 100.0f + float(j) * 0.5f;
      w.add_tensor(std::string("t") + std::to_string(i), {data.size()}, data, GgmlType::F32);
      tensors.push_back(std::move(data));
    }
    const auto path = astrai::test::scratch_file("roundtrip");
    w.write(path.string());
    const GgufReader g(path.string());
    RC_ASSERT(g.alignment() == alignment);
    RC_ASSERT(g.metadata() == expected);
    RC_ASSERT(g.tensors().size() == tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& info = g.tensors()[i];
      RC_ASSERT(info.offset % alignment == 0);
      std::vector<float> back(tensors[i].size());
      g.read_tensor_floats(info, back);
      RC_ASSERT(back == tensors[i]);
    }
    std::filesystem::remove(path);
  });
}

TEST_CASE("GGUF metadata getters give clear errors", "[gguf]") {
  const GgufReader g = parse_gguf_bytes(all_types_file());
  const std::string p = g.path();
  CHECK(g.find("nope") == nullptr);
  CHECK_FALSE(g.has("nope"));
  REQUIRE_THROWS_WITH(g.get_string("nope"), p + ": metadata key 'nope' is missing");
  REQUIRE_THROWS_WITH(g.get_string("u32"), p + ": metadata key 'u32' has type uint32, expected string");
  REQUIRE_THROWS_WITH(g.get_int("str"), p + ": metadata key 'str' has type string, expected an integer");
  REQUIRE_THROWS_WITH(g.get_int("u64"), p + ": metadata key 'u64' holds a uint64 too large for int64");
  REQUIRE_THROWS_WITH(g.get_int("bool"), Contains("has type bool, expected an integer"));
  REQUIRE_THROWS_WITH(g.get_float("i32"), Contains("has type int32, expected float32 or float64"));
  REQUIRE_THROWS_WITH(g.get_bool("u8"), Contains("has type uint8, expected bool"));
  REQUIRE_THROWS_WITH(g.get_array("f64"), Contains("has type float64, expected array"));
  REQUIRE_THROWS_WITH(g.get_string_array("arr"), Contains("'arr' is an array of int32, expected an array of string"));
  REQUIRE_THROWS_WITH(g.get_float_array("arr"), Contains("is an array of int32, expected an array of float32"));
  REQUIRE_THROWS_WITH(g.get_int_array("nested"), Contains("element 0 has type array"));
  REQUIRE_THROWS_WITH(g.tensor("nope"), p + ": tensor 'nope' is missing");
  REQUIRE_THROWS_WITH(g.read_tensor<2>("mat", {3, 2}), p + ": tensor 'mat' has shape [2, 3], expected [3, 2]");
  REQUIRE_THROWS_WITH(g.read_tensor<1>("mat", {6}), Contains("has shape [2, 3], expected [6]"));
}

TEST_CASE("GGUF reader accepts version 2 and rejects bad headers", "[gguf]") {
  std::string v2 = gguf_file(0, 1, ByteBuilder().str("k").u32(4).u32(7).bytes());
  v2[4] = 2;
  CHECK(parse_gguf_bytes(v2).get_int("k") == 7);
  CHECK(parse_gguf_bytes(v2).version() == 2);

  std::string bad = v2;
  bad[0] = 'X';
  REQUIRE_THROWS_WITH(parse_gguf_bytes(bad), Contains("not a GGUF file"));
  bad = v2;
  bad[4] = 1;
  REQUIRE_THROWS_WITH(parse_gguf_bytes(bad), Contains("GGUF version 1 is not supported"));
  bad = v2;
  bad[4] = 4;
  REQUIRE_THROWS_WITH(parse_gguf_bytes(bad), Contains("unsupported GGUF version 4"));
  bad = v2;
  bad[4] = 0;
  bad[7] = 3;  // 3 written big-endian
  REQUIRE_THROWS_WITH(parse_gguf_bytes(bad), Contains("big-endian"));
  REQUIRE_THROWS_WITH(parse_gguf_bytes("GGU"), Contains("truncated at offset 0 reading magic (4 bytes needed, 3 left)"));
}

TEST_CASE("GGUF reader rejects each malformed field with a message naming it", "[gguf]") {
  auto kv = [](const ByteBuilder& b, uint64_t n_kv = 1) { return gguf_file(0, n_kv, b.bytes()); };
  auto check = [](const std::string& bytes, const std::string& message) {
    REQUIRE_THROWS_WITH(parse_gguf_bytes(bytes), Contains(message));
  };
  // Counts and lengths far beyond the file are refused before allocating.
  check(gguf_file(0, uint64_t(1) << 62, ""), "metadata count 4611686018427387904 cannot fit");
  check(gguf_file(uint64_t(1) << 62, 0, ""), "tensor count 4611686018427387904 cannot fit");
  check(kv(ByteBuilder().u64(uint64_t(1) << 60).u64(0)), "reading metadata key 0 (1152921504606846976 bytes needed");
  check(kv(ByteBuilder().str("s").u32(8).u64(~uint64_t(0))), "reading metadata 's' (18446744073709551615 bytes needed");
  check(kv(ByteBuilder().str("a").u32(9).u32(6).u64(uint64_t(1) << 61)),
        "array of 2305843009213693952 float32 values cannot fit");
  check(kv(ByteBuilder().str("a").u32(9).u32(8).u64(1000).str("x")), "array of 1000 string values cannot fit");
  check(kv(ByteBuilder().str("t").u32(13).u8(0)), "metadata 't' type is 13, not a GGUF value type");
  check(kv(ByteBuilder().str("a").u32(9).u32(77).u64(0)), "metadata 'a' element type is 77, not a GGUF value type");
  check(kv(ByteBuilder().str("b").u32(7).u8(2)), "bool value 2 is neither 0 nor 1");
  check(kv(ByteBuilder().str("k").u32(4).u32(1).str("k").u32(4).u32(2), 2), "duplicate metadata 'k'");
  ByteBuilder deep;
  deep.str("deep").u32(9);
  for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
  deep.u32(0).u64(0);
  check(kv(deep), "arrays nested deeper than 8");
  check(kv(ByteBuilder().str("general.alignment").u32(5).i32(32)), "'general.alignment' has type int32, expected uint32");
  check(kv(ByteBuilder().str("general.alignment").u32(4).u32(48)), "'general.alignment' 48 is not a power of two");
  check(kv(ByteBuilder().str("general.alignment").u32(4).u32(0)), "'general.alignment' 0 is not a power of two");

  auto tensor = [](const ByteBuilder& info, const std::string& data = std::string(64, '\0'), uint64_t n = 1) {
    return gguf_file(n, 0, info.bytes(), data);
  };
  check(tensor(ByteBuilder().str("t").u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0)),
        "tensor 't' has 5 dimensions (at most 4)");
  check(tensor(ByteBuilder().str("t").u32(2).u64(uint64_t(1) << 40).u64(uint64_t(1) << 40).u32(0).u64(0)),
        "tensor 't': element count overflows 64 bits");
  check(tensor(ByteBuilder().str("t").u32(1).u64(~uint64_t(0)).u32(0).u64(0)), "tensor 't' ne[0] is too large");
  check(tensor(ByteBuilder().str("t").u32(2).u64(uint64_t(1) << 30).u64(uint64_t(1) << 31).u32(0).u64(0)),
        "tensor 't' data [0, +9223372036854775808) runs past the end");  // 2^61 floats: 2^63 bytes
  check(tensor(ByteBuilder().str("t").u32(1).u64(uint64_t(1) << 62).u32(0).u64(0)),
        "tensor 't': byte size overflows 64 bits");
  check(tensor(ByteBuilder().str("t").u32(1).u64(4).u32(4).u64(0)), "tensor 't' has unknown ggml type 4");
  check(tensor(ByteBuilder().str("t").u32(1).u64(4).u32(1000).u64(0)), "tensor 't' has unknown ggml type 1000");
  check(tensor(ByteBuilder().str("t").u32(1).u64(33).u32(8).u64(0)),
        "tensor 't': ne[0] = 33 is not a multiple of the Q8_0 block size 32");
  check(tensor(ByteBuilder().str("t").u32(1).u64(4).u32(0).u64(16)),
        "tensor 't' data offset 16 is not a multiple of the alignment 32");
  check(tensor(ByteBuilder().str("t").u32(1).u64(17).u32(0).u64(0)), "tensor 't' data [0, +68) runs past the end");
  check(tensor(ByteBuilder().str("t").u32(1).u64(4).u32(0).u64(~uint64_t(0) - 31)), "runs past the end");
  check(tensor(ByteBuilder().str("t").u32(1).u64(4).u32(0).u64(0).str("t").u32(1).u64(4).u32(0).u64(32),
               std::string(64, '\0'), 2),
        "duplicate tensor name 't'");
  // Tensor infos present but the file ends before the aligned data section.
  check(gguf_file(1, 0, ByteBuilder().str("t").u32(1).u64(1).u32(0).u64(0).bytes(), "", 1),
        "starts past the end");
}

TEST_CASE("GGUF reader decodes quantized tensors and refuses the types it does not decode", "[gguf]") {
  // One Q8_0 block: 32 elements in 34 bytes, d = 0.5 (0x3800), qs[j] = j - 16.
  std::string q8(34, '\0');
  q8[1] = char(0x38);
  for (int j = 0; j < 32; ++j) q8[size_t(2 + j)] = char(int8_t(j - 16));
  // One IQ2_XXS block (256 elements in 66 bytes): a type AstrAI does not decode.
  const std::string body = ByteBuilder().str("q").u32(1).u64(32).u32(8).u64(0)
                               .str("iq").u32(1).u64(256).u32(16).u64(64).bytes();
  const GgufReader g = parse_gguf_bytes(gguf_file(2, 0, body, q8 + std::string(30, '\0') + std::string(66, '\0')));
  CHECK(g.tensor("q").n_bytes == 34);
  const auto q = g.read_tensor<1>("q", {32});
  for (int j = 0; j < 32; ++j) CHECK(q(size_t(j)) == 0.5f * float(j - 16));  // exact: halves of small integers
  REQUIRE_THROWS_WITH(g.read_tensor<1>("iq", {256}), Contains("tensor 'iq' has type IQ2_XXS; AstrAI reads F32"));
}
