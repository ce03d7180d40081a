// safetensors files: bytes assembled in the test from the format's
// description parse to the right directory and values; the writer produces
// exactly the bytes the format prescribes; random tensors survive write ->
// read (F32 bit for bit, F16/BF16 as the rounding computed independently in
// safetensors_test_files.h); the streamed writer writes the same bytes
// holding one tensor at a time; each malformed field gives its own clear error
// naming the file and the tensor.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/model_files/hf/safetensors_file.h"
#include "engine/model_files/hf/safetensors_writer.h"
#include "engine/text/read_file.h"
#include "tests/engine/model_files/gguf_test_files.h"
#include "tests/engine/model_files/safetensors_test_files.h"

using namespace astrai;
using astrai::test::safetensors_bytes;
using Catch::Matchers::Contains;

namespace {

// Parses bytes through an in-memory file (the reader only takes paths).
struct Parsed {
  astrai::test::MemoryFile file;
  std::unique_ptr<SafetensorsFile> st;
  explicit Parsed(const std::string& bytes) {
    file.set(bytes);
    st = std::make_unique<SafetensorsFile>(file.path());
  }
};

// The error message parsing `bytes` gives ("" when it parses).
std::string parse_error(const std::string& bytes) {
  astrai::test::MemoryFile file;
  file.set(bytes);
  try {
    SafetensorsFile st(file.path());
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    REQUIRE(message.rfind(file.path() + ": ", 0) == 0);  // every message starts with the file
    return message.substr(file.path().size() + 2);
  }
  return "";
}

std::vector<float> floats_of(const SafetensorsFile& st, const std::string& name) {
  const auto* info = st.find_tensor(name);
  REQUIRE(info != nullptr);
  std::vector<float> out(size_t(info->n_elements));
  st.read_tensor_floats(*info, out);
  return out;
}

// Data of the hand-built file: a [2, 3] F32 matrix, 4 F16 values, 2 BF16, a
// scalar F32, an empty [0, 5] F16, and 3 I8 values (listed, not readable).
std::string hand_built_data() {
  astrai::test::ByteBuilder d;
  for (int i = 1; i <= 6; ++i) d.f32(float(i) / 4.0f);           // [0, 24)
  d.u16(0x3C00).u16(0xC000).u16(0x3800).u16(0x7BFF);              // [24, 32): 1, -2, 0.5, 65504
  d.u16(0x3F80).u16(0xC0A0);                                      // [32, 36): 1, -5
  d.f32(-0.0f);                                                   // [36, 40)
  d.u8(1).u8(2).u8(255);                                          // [40, 43)
  return d.bytes();
}

const std::string kHandBuiltHeader =
    R"({"mat":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("half":{"dtype":"F16","shape":[4],"data_offsets":[24,32]},)"
    R"("bf":{"dtype":"BF16","shape":[1,2],"data_offsets":[32,36]},)"
    R"("scalar":{"dtype":"F32","shape":[],"data_offsets":[36,40]},)"
    R"("empty":{"dtype":"F16","shape":[0,5],"data_offsets":[36,36]},)"
    R"("bytes":{"dtype":"I8","shape":[3],"data_offsets":[40,43]},)"
    R"("__metadata__":{"format":"pt","note":"h\u00e9"}})";

// "t<i>" (std::string, not "t" + to_string(i): GCC 12 warns falsely about that form).
std::string tensor_name(int i) {
  std::string name = std::to_string(i);
  name.insert(name.begin(), 't');
  return name;
}

}  // namespace

TEST_CASE("safetensors assembled byte by byte parses to its directory and values", "[safetensors]") {
  const Parsed p(safetensors_bytes(kHandBuiltHeader, hand_built_data()));
  const SafetensorsFile& st = *p.st;
  const uint64_t header = kHandBuiltHeader.size() + (8 - kHandBuiltHeader.size() % 8) % 8;
  CHECK(st.data_offset() == 8 + header);
  CHECK(st.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"note", "h\xC3\xA9"}});
  // Sorted by offset, the empty tensor (36, 36) before the scalar (36, 40).
  std::vector<std::string> names;
  for (const auto& t : st.tensors()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"mat", "half", "bf", "empty", "scalar", "bytes"});
  const auto* mat = st.find_tensor("mat");
  REQUIRE(mat);
  CHECK(mat->shape == std::vector<uint64_t>{2, 3});
  CHECK(mat->n_elements == 6);
  CHECK(mat->dtype == SafetensorsDType::F32);
  CHECK(floats_of(st, "mat") == std::vector<float>{0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f});
  CHECK(floats_of(st, "half") == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f});
  CHECK(floats_of(st, "bf") == std::vector<float>{1.0f, -5.0f});
  const auto scalar = floats_of(st, "scalar");
  REQUIRE(scalar.size() == 1);
  CHECK(std::bit_cast<uint32_t>(scalar[0]) == 0x80000000u);  // -0 kept
  CHECK(st.find_tensor("empty")->n_elements == 0);
  CHECK(floats_of(st, "empty").empty());
  CHECK(st.tensor_data(*st.find_tensor("bytes")).size() == 3);
  std::vector<float> three(3);
  CHECK_THROWS_WITH(st.read_tensor_floats(*st.find_tensor("bytes"), three),
                    Contains("tensor 'bytes' has dtype I8; only F32, F16 and BF16"));
  // read_tensor checks the shape first and names the tensor and both shapes.
  CHECK(st.read_tensor<2>("mat", {2, 3})(1, 2) == 1.5f);
  CHECK_THROWS_WITH(st.read_tensor<2>("mat", {3, 2}, "config.json"),
                    Contains("tensor 'mat' has shape [2, 3], config.json implies [3, 2]"));
  CHECK_THROWS_WITH(st.read_tensor<1>("nope", {1}), Contains("tensor 'nope' is missing"));
  CHECK(st.find_tensor("__metadata__") == nullptr);
}

TEST_CASE("the safetensors writer produces the bytes the format prescribes", "[safetensors]") {
  SafetensorsWriter w;
  const std::vector<float> a{1.0f, -2.0f};
  const std::vector<float> b{1.0f, 0.5f, -0.0f};
  w.add_tensor("b", {3}, b, SafetensorsDType::BF16);
  w.add_tensor("a", {1, 2}, a, SafetensorsDType::F32);
  w.add_metadata("source", "test");
  // nlohmann writes object keys sorted; the data follows in add order.
  const std::string header =
      R"({"__metadata__":{"format":"pt","source":"test"},"a":{"data_offsets":[6,14],"dtype":"F32","shape":[1,2]},)"
      R"("b":{"data_offsets":[0,6],"dtype":"BF16","shape":[3]}})";
  astrai::test::ByteBuilder data;
  data.u16(0x3F80).u16(0x3F00).u16(0x8000).f32(1.0f).f32(-2.0f);
  CHECK(w.bytes() == safetensors_bytes(header, data.bytes()));
  CHECK(w.bytes().size() % 8 == (8 + 14) % 8);  // header padded to a multiple of 8
  CHECK_THROWS_AS(w.add_tensor("a", {2}, a, SafetensorsDType::F32), std::invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("c", {3}, a, SafetensorsDType::F32), std::invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("c", {2}, a, SafetensorsDType::I8), std::invalid_argument);
  CHECK_THROWS_AS(w.add_tensor("__metadata__", {2}, a, SafetensorsDType::F32), std::invalid_argument);
  CHECK_THROWS_AS(w.add_metadata("format", "np"), std::invalid_argument);
}

TEST_CASE("the streamed safetensors writer produces the bytes the format prescribes", "[safetensors]") {
  const std::vector<float> a{1.0f, -2.0f};
  const std::vector<float> b{1.0f, 0.5f, -0.0f};
  const std::vector<SafetensorsPlannedTensor> plan{{"b", {3}}, {"a", {1, 2}}};
  const std::vector<std::vector<float>> values{b, a};
  const std::string path = astrai::test::scratch_file("streamed", ".safetensors").string();
  std::vector<size_t> asked;
  write_safetensors_streamed(path, plan, SafetensorsDType::BF16, [&](size_t i) {
    asked.push_back(i);
    return values[i];
  });
  CHECK(asked == std::vector<size_t>{0, 1});  // in order, once each
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"data_offsets":[6,10],"dtype":"BF16","shape":[1,2]},)"
      R"("b":{"data_offsets":[0,6],"dtype":"BF16","shape":[3]}})";
  astrai::test::ByteBuilder data;
  data.u16(0x3F80).u16(0x3F00).u16(0x8000).u16(0x3F80).u16(0xC000);
  CHECK(read_whole_file(path, path) == safetensors_bytes(header, data.bytes()));

  // Refusals: before anything is written (a duplicate, a dtype it cannot
  // write), or when a tensor's values disagree with its shape, leaving no
  // file (the temporary one removed).
  std::filesystem::remove(path);
  auto give = [&](size_t i) { return values[i]; };
  CHECK_THROWS_AS(write_safetensors_streamed(path, {{"b", {3}}, {"b", {1, 2}}}, SafetensorsDType::BF16, give),
                  std::invalid_argument);
  CHECK_THROWS_AS(write_safetensors_streamed(path, plan, SafetensorsDType::I8, give), std::invalid_argument);
  CHECK_THROWS_AS(write_safetensors_streamed(path, {{"__metadata__", {3}}}, SafetensorsDType::F32, give),
                  std::invalid_argument);
  CHECK_THROWS_AS(write_safetensors_streamed(path, {{"b", {4}}}, SafetensorsDType::F32, give), std::invalid_argument);
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("the streamed safetensors writer writes the whole writer's file", "[safetensors]") {
  rc::prop("random tensors, one dtype", [] {
    const auto dtype = *rc::gen::element(SafetensorsDType::F32, SafetensorsDType::F16, SafetensorsDType::BF16);
    const int n_tensors = *rc::gen::inRange(0, 6);
    SafetensorsWriter whole;
    std::vector<SafetensorsPlannedTensor> plan;
    std::vector<std::vector<float>> values;
    for (int t = 0; t < n_tensors; ++t) {
      const auto shape = *rc::gen::container<std::vector<uint64_t>>(*rc::gen::inRange(0, 4), rc::gen::inRange<uint64_t>(0, 6));
      uint64_t n = 1;
      for (const auto d : shape) n *= d;
      std::vector<float> v;
      for (uint64_t i = 0; i < n; ++i) v.push_back(*rc::gen::arbitrary<float>());
      whole.add_tensor(tensor_name(t), shape, v, dtype);
      plan.push_back({tensor_name(t), shape});
      values.push_back(std::move(v));
    }
    const std::string path = astrai::test::scratch_file("streamed-random", ".safetensors").string();
    write_safetensors_streamed(path, plan, dtype, [&](size_t i) { return values[i]; });
    RC_ASSERT(read_whole_file(path, path) == whole.bytes());
    std::filesystem::remove(path);
  });
}

TEST_CASE("random tensors survive safetensors write -> read", "[safetensors]") {
  rc::prop("F32 bit for bit, F16 and BF16 as rounded independently", [] {
    const auto dtype = *rc::gen::element(SafetensorsDType::F32, SafetensorsDType::F16, SafetensorsDType::BF16);
    const int n_tensors = *rc::gen::inRange(0, 6);
    SafetensorsWriter w;
    std::vector<std::pair<std::vector<uint64_t>, std::vector<float>>> originals;
    for (int t = 0; t < n_tensors; ++t) {
      const auto shape = *rc::gen::container<std::vector<uint64_t>>(*rc::gen::inRange(0, 4), rc::gen::inRange<uint64_t>(0, 6));
      uint64_t n = 1;
      for (const auto d : shape) n *= d;
      // Any float bits but NaN (whose payload a 16-bit format cannot keep).
      std::vector<float> values;
      for (uint64_t i = 0; i < n; ++i) {
        const float x = std::bit_cast<float>(*rc::gen::arbitrary<uint32_t>());
        values.push_back(std::isnan(x) ? 1.0f : x);
      }
      w.add_tensor(tensor_name(t), shape, values, dtype);
      originals.emplace_back(shape, values);
    }
    const Parsed p(w.bytes());
    RC_ASSERT(p.st->tensors().size() == size_t(n_tensors));
    for (int t = 0; t < n_tensors; ++t) {
      const auto* info = p.st->find_tensor(tensor_name(t));
      RC_ASSERT(info != nullptr);
      RC_ASSERT(info->shape == originals[size_t(t)].first);
      RC_ASSERT(info->dtype == dtype);
      std::vector<float> got(size_t(info->n_elements));
      p.st->read_tensor_floats(*info, got);
      const auto& want = originals[size_t(t)].second;
      for (size_t i = 0; i < want.size(); ++i)
        RC_ASSERT(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(astrai::test::stored_as(want[i], dtype)));
    }
  });
}

TEST_CASE("each malformed safetensors field has its own error", "[safetensors]") {
  auto one = [](const std::string& entry, const std::string& data = std::string(8, '\0')) {
    return safetensors_bytes("{" + entry + "}", data);
  };
  const std::string ok_entry = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  REQUIRE(parse_error(one(ok_entry)).empty());

  // The header length and the JSON.
  CHECK_THAT(parse_error(std::string("\x05\x00\x00", 3)), Contains("file is 3 bytes, too short for safetensors' 8-byte header length"));
  astrai::test::ByteBuilder long_header;
  long_header.u64(100).raw("{}");
  CHECK_THAT(parse_error(long_header.bytes()), Contains("header length 100 runs past the end of the file (2 bytes"));
  astrai::test::ByteBuilder huge_header;
  huge_header.u64(uint64_t(1) << 62).raw("{}");
  CHECK_THAT(parse_error(huge_header.bytes()), Contains("exceeds safetensors' limit of 100000000 bytes"));
  CHECK_THAT(parse_error(safetensors_bytes(R"({"w":{"dtype":"F32",)", "")), Contains("header is not valid JSON"));
  CHECK_THAT(parse_error(safetensors_bytes("[1, 2]", "")), Contains("header is JSON but not an object of tensors"));
  CHECK_THAT(parse_error(safetensors_bytes("{\"w\xFF\":1}", "")), Contains("header is not valid JSON"));
  CHECK_THAT(parse_error(one(R"("w":[[[[1]]]])")), Contains("JSON nests deeper than 3 levels"));
  CHECK_THAT(parse_error(one(ok_entry + "," + ok_entry)), Contains("key \"w\" appears twice"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]})")),
             Contains("key \"dtype\" appears twice"));
  CHECK_THAT(parse_error(one(R"("__metadata__":[],)" + ok_entry)), Contains("\"__metadata__\" is not an object"));
  CHECK_THAT(parse_error(one(R"("__metadata__":{"format":1},)" + ok_entry)),
             Contains("\"__metadata__\" value of \"format\" is not a string"));

  // One tensor entry, field by field; every message names the tensor.
  CHECK_THAT(parse_error(one(R"("w":7)")), Contains("tensor 'w': header entry is not an object"));
  CHECK_THAT(parse_error(one(R"("w":{"shape":[2],"data_offsets":[0,8]})")),
             Contains("tensor 'w': \"dtype\" is missing or not a string"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F12","shape":[2],"data_offsets":[0,8]})")),
             Contains("tensor 'w': unknown dtype \"F12\""));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":2,"data_offsets":[0,8]})")),
             Contains("tensor 'w': \"shape\" is missing or not an array"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})")),
             Contains("tensor 'w': shape [-2] holds something other than a non-negative integer"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})")),
             Contains("holds something other than a non-negative integer"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]})")),
             Contains("tensor 'w': shape has 9 dimensions (at most 8"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})")),
             Contains("tensor 'w': shape [4294967296,4294967296] has more elements than 64 bits can count"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]})")),
             Contains("takes more bytes than 64 bits can count"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0]})")),
             Contains("tensor 'w': \"data_offsets\" is missing or not a [begin, end] pair"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]})")),
             Contains("tensor 'w': data_offsets [0,-8] are not non-negative integers"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]})")),
             Contains("tensor 'w': data_offsets [8,0] end before they begin"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})")),
             Contains("tensor 'w': data_offsets [0,8] span 8 bytes, but shape [3] of F32 takes 12"));

  // The ranges against each other and the file.
  const std::string two_ok = R"("a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]})";
  REQUIRE(parse_error(one(two_ok)).empty());
  CHECK_THAT(parse_error(one(R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]})")),
             Contains("tensor 'b': data_offsets [4, 8] overlap tensor 'a' (which ends at 8)"));
  CHECK_THAT(parse_error(one(R"("a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]})")),
             Contains("tensor 'b': data_offsets [4, 8] leave a gap of 2 bytes after tensor 'a'"));
  CHECK_THAT(parse_error(one(R"("b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]})")),
             Contains("leave a gap of 4 bytes after the header"));
  CHECK_THAT(parse_error(one(ok_entry, std::string(6, '\0'))),
             Contains("tensor 'w': data_offsets [0, 8] run past the end of the data section (6 bytes; truncated?)"));
  CHECK_THAT(parse_error(one(ok_entry, std::string(9, '\0'))),
             Contains("the data section is 9 bytes, but the tensors cover 8 (trailing bytes)"));
  CHECK_THAT(parse_error(one(R"("w":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551615,18446744073709551615]})")),
             Contains("span 0 bytes, but shape [2] of F32 takes 8"));
}

TEST_CASE("safetensors dtypes: names and sizes", "[safetensors]") {
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, uint64_t>>{
           {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2},
           {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}}) {
    const auto dtype = parse_safetensors_dtype(name);
    REQUIRE(dtype);
    CHECK(safetensors_dtype_name(*dtype) == name);
    CHECK(safetensors_dtype_bytes(*dtype) == bytes);
  }
  CHECK(!parse_safetensors_dtype("bf16"));
  CHECK(!parse_safetensors_dtype("F4"));
}

TEST_CASE("the independent 16-bit rounding of the tests agrees with known values", "[safetensors]") {
  // Pins the oracle itself: values whose roundings are known from the formats' definitions.
  using astrai::test::round_to_bf16;
  using astrai::test::round_to_half;
  CHECK(round_to_half(1.0f + 1.0f / 2048.0f) == 1.0f);                    // tie -> even (1.0)
  CHECK(round_to_half(1.0f + 3.0f / 2048.0f) == 1.0f + 2.0f / 1024.0f);  // tie -> even (up)
  CHECK(round_to_half(65519.0f) == 65504.0f);
  CHECK(std::isinf(round_to_half(65520.0f)));
  CHECK(round_to_half(std::ldexp(1.0f, -25)) == 0.0f);                    // half the smallest subnormal: tie -> 0
  CHECK(round_to_half(std::ldexp(1.5f, -25)) == std::ldexp(1.0f, -24));
  CHECK(round_to_bf16(1.0f + 1.0f / 256.0f) == 1.0f);
  CHECK(round_to_bf16(1.0f + 3.0f / 256.0f) == 1.0f + 1.0f / 64.0f);
  CHECK(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));
  CHECK(round_to_bf16(-3e38f) == -std::ldexp(226.0f, 120));  // float(3e38) / 2^120 = 225.69...: 8 significant bits round to 226
}

namespace {

// Parses `bytes`; a std::runtime_error starting with the file's path is a
// clean rejection. A file that parses must keep the reader's promises: every
// range inside the file, the ranges tiling the data section, and every
// F32/F16/BF16 tensor readable. Anything else escapes and fails the test.
bool parses_consistently(const std::string& bytes, astrai::test::MemoryFile& file) {
  file.set(bytes);
  try {
    const SafetensorsFile st(file.path());
    uint64_t covered = 0;
    for (const auto& t : st.tensors()) {
      REQUIRE(t.begin == covered);
      REQUIRE(t.end - t.begin == t.n_elements * safetensors_dtype_bytes(t.dtype));
      covered = t.end;
      REQUIRE(st.tensor_data(t).size() == t.end - t.begin);
      if (t.dtype == SafetensorsDType::F32 || t.dtype == SafetensorsDType::F16 || t.dtype == SafetensorsDType::BF16) {
        std::vector<float> out(size_t(t.n_elements));
        st.read_tensor_floats(t, out);
      }
    }
    REQUIRE(st.data_offset() + covered == bytes.size());
    return true;
  } catch (const std::runtime_error& e) {
    REQUIRE(std::string(e.what()).rfind(file.path() + ": ", 0) == 0);
    return false;
  }
}

}  // namespace

TEST_CASE("safetensors truncated at every byte or with any header byte changed fails cleanly", "[safetensors][corruption]") {
  const std::string file = safetensors_bytes(kHandBuiltHeader, hand_built_data());
  astrai::test::MemoryFile mem;
  REQUIRE(parses_consistently(file, mem));
  // The tensors must end exactly at the end of the file: every truncation fails.
  for (size_t n = 0; n < file.size(); ++n) {
    INFO("truncated to " << n);
    CHECK(!parses_consistently(file.substr(0, n), mem));
  }
  const uint64_t data_offset = Parsed(file).st->data_offset();
  size_t parsed = 0, refused = 0;
  for (size_t at = 0; at < data_offset; ++at) {
    const auto original = uint8_t(file[at]);
    for (const uint8_t value : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t('1'), uint8_t(original ^ 0x01),
                                uint8_t(original ^ 0x20)}) {
      INFO("byte " << at << " set to " << int(value));
      std::string bytes = file;
      bytes[at] = char(value);
      (parses_consistently(bytes, mem) ? parsed : refused)++;
    }
  }
  // Both outcomes occur (a changed padding space or a name's letter still
  // parses): the checks do not simply refuse everything.
  CHECK(parsed > 0);
  CHECK(refused > 0);
}
