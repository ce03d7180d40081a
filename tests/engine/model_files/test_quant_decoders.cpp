// The quantized-block decoders (engine/model_files/quant/): hand-built blocks
// whose values are worked out in the comments (scales, minimums, the sign
// and nibble order at the block's edges), and random blocks of every type
// decoded against quant_oracle.h, which reads each element's bits one at a
// time (bit for bit: see the argument at the top of quant_oracle.h).
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model_files/gguf/gguf_types.h"
#include "engine/model_files/quant/dequantize.h"
#include "quant_oracle.h"

using astrai::GgmlType;
using astrai::ggml_type_name;
using astrai::ggml_type_traits;

namespace {

struct Block {
  GgmlType type;
  std::vector<uint8_t> bytes;

  explicit Block(GgmlType t) : type(t), bytes(ggml_type_traits(uint32_t(t))->block_bytes, 0) {}
  Block& set(size_t at, uint8_t v) {
    bytes[at] = v;
    return *this;
  }
  Block& half(size_t at, uint16_t bits) { return set(at, uint8_t(bits & 0xFF)).set(at + 1, uint8_t(bits >> 8)); }
  std::vector<float> decode() const {
    std::vector<float> out(ggml_type_traits(uint32_t(type))->block_size);
    astrai::quant::dequantize(type, std::as_bytes(std::span(bytes)), out);
    return out;
  }
};

// float16 bit patterns used below.
constexpr uint16_t kOne = 0x3C00, kHalf = 0x3800, kTwo = 0x4000, kMinusEight = 0xC800;

// Every element equals the oracle's (bit for bit; NaN as NaN).
void check_against_oracle(const Block& b) {
  const auto got = b.decode();
  for (size_t e = 0; e < got.size(); ++e) {
    const float want = astrai::test::oracle_element(b.type, b.bytes, e);
    INFO(ggml_type_name(b.type) << " element " << e);
    if (std::isnan(want)) CHECK(std::isnan(got[e]));
    else CHECK(std::bit_cast<uint32_t>(got[e]) == std::bit_cast<uint32_t>(want));
  }
}

const std::vector<GgmlType> kTypes = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                      GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K, GgmlType::Q3_K,
                                      GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

}  // namespace

TEST_CASE("Q8_0: int8 quants times the scale, both ends of int8", "[quant]") {
  Block b(GgmlType::Q8_0);
  b.half(0, kHalf).set(2, 0x80).set(3, 0x7F).set(4, 0xFF).set(33, 0x01);
  const auto x = b.decode();
  CHECK(x[0] == -64.0f);   // -128 * 0.5
  CHECK(x[1] == 63.5f);    // 127 * 0.5
  CHECK(x[2] == -0.5f);    // -1 * 0.5
  CHECK(x[31] == 0.5f);
  check_against_oracle(b);
}

TEST_CASE("Q4_0: low nibbles are elements 0..15, high nibbles 16..31, minus 8", "[quant]") {
  Block b(GgmlType::Q4_0);
  b.half(0, kTwo).set(2, 0x0F).set(17, 0x80);
  const auto x = b.decode();
  CHECK(x[0] == 14.0f);    // (15 - 8) * 2
  CHECK(x[16] == -16.0f);  // (0 - 8) * 2
  CHECK(x[15] == -16.0f);  // low nibble of qs[15] = 0
  CHECK(x[31] == 0.0f);    // high nibble of qs[15] = 8
  check_against_oracle(b);
}

TEST_CASE("Q4_1: d * q + m", "[quant]") {
  Block b(GgmlType::Q4_1);
  b.half(0, kOne).half(2, kMinusEight).set(4, 0xF0);
  const auto x = b.decode();
  CHECK(x[0] == -8.0f);   // 0 * 1 - 8
  CHECK(x[16] == 7.0f);   // 15 * 1 - 8
  CHECK(x[1] == -8.0f);
  check_against_oracle(b);
}

TEST_CASE("Q5_0: bit j of qh is bit 4 of element j", "[quant]") {
  Block b(GgmlType::Q5_0);
  b.half(0, kOne).set(2, 0x01).set(5, 0x80).set(21, 0xF0);  // qh = 0x80000001
  const auto x = b.decode();
  CHECK(x[0] == 0.0f);     // (0 | 16) - 16
  CHECK(x[16] == -16.0f);  // 0 - 16, qh bit 16 clear
  CHECK(x[15] == -16.0f);
  CHECK(x[31] == 15.0f);   // (15 | 16) - 16, qh bit 31 set
  check_against_oracle(b);
}

TEST_CASE("Q5_1: five-bit quants with a minimum", "[quant]") {
  Block b(GgmlType::Q5_1);
  b.half(0, kHalf).half(2, kOne).set(6, 0x01).set(8, 0x1F);  // qh = 0x00010000: bit 16
  const auto x = b.decode();
  CHECK(x[0] == 8.5f);   // 15 * 0.5 + 1
  CHECK(x[16] == 9.5f);  // (1 | 16) * 0.5 + 1
  CHECK(x[1] == 1.0f);
  check_against_oracle(b);
}

TEST_CASE("IQ4_NL: nibbles index the non-linear grid", "[quant]") {
  Block b(GgmlType::IQ4_NL);
  b.half(0, kOne).set(2, 0xF0);
  const auto x = b.decode();
  CHECK(x[0] == -127.0f);
  CHECK(x[16] == 113.0f);
  CHECK(x[1] == -127.0f);
  check_against_oracle(b);
}

TEST_CASE("MXFP4: E2M1 nibbles (low: elements 0..15) times 2^(e - 127)", "[quant]") {
  Block b(GgmlType::MXFP4);
  b.set(0, 128).set(1, 0xF1).set(2, 0x07);  // scale 2; nibbles 1 (0.5) and 15 (-6), 7 (6) and 0
  const auto x = b.decode();
  CHECK(x[0] == 1.0f);
  CHECK(x[16] == -12.0f);
  CHECK(x[1] == 12.0f);
  CHECK(x[17] == 0.0f);
  b.set(0, 0);  // 2^-127: subnormal in float32, still exact
  CHECK(b.decode()[0] == std::ldexp(0.5f, -127));
  check_against_oracle(b);
}

TEST_CASE("Q2_K: 2-bit quants, groups of 16 with 4-bit scale and min", "[quant]") {
  Block b(GgmlType::Q2_K);
  b.half(80, kOne).half(82, kHalf);
  for (size_t g = 0; g < 16; ++g) b.set(g, 0x21);  // scale 1, min 2 * 0.5: x = q - 1
  b.set(15, 0xF3);                                 // group 15: scale 3, min 15 * 0.5: x = 3 q - 7.5
  b.set(16, 0xE4);  // qs[0]: elements 0, 32, 64, 96 get q = 0, 1, 2, 3
  b.set(79, 0xC0);  // qs[63]: elements 159, 191, 223, 255 get q = 0, 0, 0, 3
  const auto x = b.decode();
  CHECK(x[0] == -1.0f);
  CHECK(x[32] == 0.0f);
  CHECK(x[64] == 1.0f);
  CHECK(x[96] == 2.0f);
  CHECK(x[159] == -1.0f);
  CHECK(x[223] == -1.0f);
  CHECK(x[255] == 1.5f);  // 3 * 3 - 7.5
  check_against_oracle(b);
}

TEST_CASE("Q3_K: a clear hmask bit subtracts 4; 6-bit scales minus 32", "[quant]") {
  Block b(GgmlType::Q3_K);
  b.half(108, kOne);
  // Every scale 32 (stored 0b10'0000: low nibbles 0, top bits 2 in bytes 104..107), so x = 0 ...
  for (size_t i = 104; i < 108; ++i) b.set(i, 0xAA);
  b.set(96, 0x01);   // ... except group 0: 33, i.e. +1
  b.set(107, 0x2A);  // and group 15: top bits 0, i.e. 0 - 32
  b.set(32, 0x03).set(0, 0x01);  // element 0: low 3, hmask set: q = 3
  // element 1: low 0, hmask clear: q = -4
  b.set(95, 0x40);  // element 255: qs[63] bits 6-7 = 1, hmask[31] bit 7 clear: q = -3
  const auto x = b.decode();
  CHECK(x[0] == 3.0f);
  CHECK(x[1] == -4.0f);
  CHECK(x[16] == 0.0f);    // group 1: scale 0
  CHECK(x[255] == 96.0f);  // -32 * -3
  check_against_oracle(b);
}

TEST_CASE("Q4_K: 6-bit scales and mins in 12 bytes; nibbles by halves of 64", "[quant]") {
  Block b(GgmlType::Q4_K);
  b.half(0, kOne).half(2, kOne);
  b.set(4, 0x01);   // group 0: scale 1, min 0
  b.set(15, 0xFF);  // group 7: low nibbles of scale and min 15
  b.set(7, 0xC0);   // group 7: scale's top bits 3 -> 63 (group 3's scale stays 0)
  b.set(11, 0xC0);  // group 7: min's top bits 3 -> 63 (group 3's min stays 0)
  b.set(16, 0x5F);  // element 0 (low nibble) 15, element 32 (high nibble, group 1) 5
  b.set(143, 0xA0);  // element 255: high nibble of qs[127] = 10
  const auto x = b.decode();
  CHECK(x[0] == 15.0f);
  CHECK(x[32] == 0.0f);     // group 1: scale 0, min 0
  CHECK(x[224] == -63.0f);  // 63 * 0 - 63
  CHECK(x[255] == 567.0f);  // 63 * 10 - 63
  check_against_oracle(b);
}

TEST_CASE("Q5_K: bit g of qh[l] is the fifth bit of element 32 g + l", "[quant]") {
  Block b(GgmlType::Q5_K);
  b.half(0, kOne).half(2, kOne);
  b.set(4, 0x01).set(15, 0xFF).set(7, 0xC0).set(11, 0xC0);  // as in the Q4_K case
  b.set(48, 0x0F).set(16, 0x01);   // element 0: 15 + 16
  b.set(175, 0xA0).set(47, 0x80);  // element 255: 10 + 16
  const auto x = b.decode();
  CHECK(x[0] == 31.0f);
  CHECK(x[32] == 0.0f);
  CHECK(x[255] == 1575.0f);  // 63 * 26 - 63
  check_against_oracle(b);
}

TEST_CASE("Q6_K: 4 + 2 bit quants minus 32, int8 scales", "[quant]") {
  Block b(GgmlType::Q6_K);
  b.half(208, kHalf).set(192, 0xFF).set(207, 0x7F);  // scale of group 0: -1, of group 15: 127
  b.set(127, 0xF0).set(191, 0xC0);  // element 255: low 15 (high nibble of ql[127]), high 3 (qh[63] bits 6-7)
  const auto x = b.decode();
  CHECK(x[0] == 16.0f);        // 0.5 * -1 * (0 - 32)
  CHECK(x[64] == 0.0f);        // group 4: scale 0
  CHECK(x[255] == 1968.5f);    // 0.5 * 127 * (63 - 32)
  CHECK(x[254] == -2032.0f);   // 0.5 * 127 * (0 - 32)
  check_against_oracle(b);
}

TEST_CASE("random blocks of every quantized type decode as the bit-by-bit oracle", "[quant]") {
  for (const GgmlType type : kTypes) {
    INFO(ggml_type_name(type));
    rc::prop(ggml_type_name(type), [type] {
      Block b(type);
      b.bytes = *rc::gen::container<std::vector<uint8_t>>(b.bytes.size(), rc::gen::arbitrary<uint8_t>());
      check_against_oracle(b);
    });
  }
}

TEST_CASE("dequantize decodes consecutive blocks and checks sizes", "[quant]") {
  // Three Q4_0 blocks with scales 1, 2, 4 and every nibble 9: x = d.
  std::vector<uint8_t> bytes;
  for (uint16_t d : {kOne, kTwo, uint16_t(0x4400)}) {
    bytes.push_back(uint8_t(d & 0xFF));
    bytes.push_back(uint8_t(d >> 8));
    bytes.insert(bytes.end(), 16, 0x99);
  }
  std::vector<float> out(96);
  astrai::quant::dequantize(GgmlType::Q4_0, std::as_bytes(std::span(bytes)), out);
  for (size_t i = 0; i < 96; ++i) CHECK(out[i] == float(1 << (i / 32)));
  std::vector<float> short_out(95);
  CHECK_THROWS_AS(astrai::quant::dequantize(GgmlType::Q4_0, std::as_bytes(std::span(bytes)), short_out),
                  std::logic_error);
  CHECK_THROWS_AS(astrai::quant::dequantize(GgmlType::Q4_0, std::as_bytes(std::span(bytes).first(53)), out),
                  std::logic_error);
  CHECK_FALSE(astrai::quant::can_dequantize(GgmlType::F16));
  CHECK_FALSE(astrai::quant::can_dequantize(GgmlType::IQ2_XXS));
}
