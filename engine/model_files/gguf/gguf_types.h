// The vocabulary of GGUF files (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
// metadata value types, ggml tensor types with their block sizes, and the
// in-memory form of one metadata value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace astrai {

// gguf_type: the type tag written before every metadata value.
enum class GgufValueType : uint32_t {
  Uint8 = 0, Int8 = 1, Uint16 = 2, Int16 = 3, Uint32 = 4, Int32 = 5, Float32 = 6, Bool = 7,
  String = 8, Array = 9, Uint64 = 10, Int64 = 11, Float64 = 12,
};
// "uint8", "string", ...; "type N" for an unknown tag.
std::string gguf_value_type_name(GgufValueType type);

// ggml_type: how a tensor's elements are stored (ids as in ggml.h; 4, 5 and
// 31-33 were removed from ggml and are not valid in files).
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35,
  MXFP4 = 39,
};

// Storage of one ggml type: `block_size` elements take `block_bytes` bytes
// (1 and 4 for F32; 32 and 34 for Q8_0).
struct GgmlTypeTraits {
  std::string_view name;
  uint32_t block_size;
  uint32_t block_bytes;
};
// The traits of a type id read from a file, or nothing for an unknown id.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
// "F32", "Q8_0", ...; "type N" for an unknown id.
std::string ggml_type_name(GgmlType type);

struct GgufValue;

// A metadata array: all elements share element_type (which may itself be Array).
struct GgufArray {
  GgufValueType element_type = GgufValueType::Uint8;
  std::vector<GgufValue> elements;
  bool operator==(const GgufArray&) const;
};

// One metadata value. The variant's alternatives are in GgufValueType order,
// so type() is the variant index.
struct GgufValue {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArray, uint64_t, int64_t, double>;
  Storage value;

  GgufValue() = default;
  // Implicit on purpose: GgufValue(uint32_t(7)), GgufValue(std::string("x")),
  // GgufValue(0.5f). The C++ type picks the GGUF type, so spell it exactly.
  template <class T>
    requires(!std::is_same_v<std::remove_cvref_t<T>, GgufValue> && std::is_constructible_v<Storage, T &&>)
  GgufValue(T&& v) : value(std::forward<T>(v)) {}
  GgufValue(const char* s) : value(std::string(s)) {}

  GgufValueType type() const { return GgufValueType(value.index()); }
  // Equality of type and value; floats compare by bit pattern so that NaN == NaN.
  bool operator==(const GgufValue& other) const;
};

// An array whose element type follows from T: make_gguf_array(std::vector<float>{...})
// is an array of float32, std::vector<std::string> an array of strings.
template <class T>
GgufArray make_gguf_array(const std::vector<T>& values) {
  GgufArray a;
  a.element_type = GgufValue(T{}).type();
  a.elements.reserve(values.size());
  for (const auto& v : values) a.elements.emplace_back(T(v));  // T(v): vector<bool> yields proxies
  return a;
}

}  // namespace astrai
