// GGUF v3 writer (see gguf_writer.h; the layout is described in gguf_reader.cpp).
#include "engine/model_files/gguf/gguf_writer.h"

#include "engine/model_files/atomic_file.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "engine/model_files/checked_math.h"
#include "engine/model_files/float_formats.h"
#include "engine/model_files/quant/quantize.h"
#include "engine/model_files/tensor_shape.h"

namespace astrai {
namespace {

constexpr size_t kMaxTensorName = 63;  // ggml's GGML_MAX_NAME is 64 including the terminator

template <class T>
void append_le(std::string& out, T value) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}

void append_string(std::string& out, const std::string& s) {
  append_le<uint64_t>(out, s.size());
  out += s;
}

void append_value(std::string& out, const GgufValue& v);

void append_array(std::string& out, const GgufArray& a) {
  append_le<uint32_t>(out, uint32_t(a.element_type));
  append_le<uint64_t>(out, a.elements.size());
  for (const auto& e : a.elements) append_value(out, e);
}

void append_value(std::string& out, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) append_string(out, x);
        else if constexpr (std::is_same_v<T, GgufArray>) append_array(out, x);
        else if constexpr (std::is_same_v<T, bool>) append_le<uint8_t>(out, x ? 1 : 0);
        else append_le<T>(out, x);
      },
      v.value);
}

void check_array_types(const GgufValue& v, const std::string& key) {
  const auto* a = std::get_if<GgufArray>(&v.value);
  if (!a) return;
  for (const auto& e : a->elements) {
    if (e.type() != a->element_type)
      throw std::invalid_argument("GGUF metadata '" + key + "': array of " + gguf_value_type_name(a->element_type) +
                                  " holds a " + gguf_value_type_name(e.type()));
    check_array_types(e, key);
  }
}

// Whether the writer can store float32 values as `type`.
bool writable(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || quant::can_quantize(type);
}

template <class T, class Convert>
void store_le(std::span<const float> data, std::vector<std::byte>& out, Convert convert) {
  out.resize(data.size() * sizeof(T));
  unsigned char b[sizeof(T)];
  for (size_t i = 0; i < data.size(); ++i) {
    const T v = convert(data[i]);
    std::memcpy(b, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
    std::memcpy(out.data() + i * sizeof(T), b, sizeof(T));
  }
}

// `data` as `n_bytes` bytes of `type` (writable(type); n_bytes from ne and type).
std::vector<std::byte> encode_floats(std::span<const float> data, GgmlType type, uint64_t n_bytes) {
  std::vector<std::byte> bytes;
  switch (type) {
    case GgmlType::F32: store_le<float>(data, bytes, [](float x) { return x; }); break;
    case GgmlType::F16: store_le<uint16_t>(data, bytes, float_to_half); break;
    case GgmlType::BF16: store_le<uint16_t>(data, bytes, float_to_bf16); break;
    default:
      bytes.resize(size_t(n_bytes));
      quant::quantize(type, data, bytes);
  }
  return bytes;
}


uint64_t align_up(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("GGUF alignment " + std::to_string(alignment) + " is not a power of two");
  if (alignment != 32) add_metadata("general.alignment", GgufValue(alignment));
}

void GgufWriter::add_metadata(const std::string& key, GgufValue value) {
  check_array_types(value, key);
  if (!keys_.insert(key).second) throw std::invalid_argument("GGUF metadata key '" + key + "' added twice");
  metadata_.emplace_back(key, std::move(value));
}

uint64_t GgufWriter::check_tensor(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type) const {
  if (name.size() > kMaxTensorName)
    throw std::invalid_argument("GGUF tensor name '" + name + "' is longer than 63 bytes (ggml's limit)");
  if (ne.empty() || ne.size() > 4)
    throw std::invalid_argument("GGUF tensor '" + name + "' needs 1 to 4 dimensions, got " + std::to_string(ne.size()));
  if (tensor_names_.count(name)) throw std::invalid_argument("GGUF tensor '" + name + "' added twice");
  if (!writable(type))
    throw std::invalid_argument("GGUF writer stores float tensors as F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K, not " +
                                ggml_type_name(type));
  const auto traits = *ggml_type_traits(uint32_t(type));
  if (ne[0] % traits.block_size != 0)
    throw std::invalid_argument("GGUF tensor '" + name + "': rows of " + std::to_string(ne[0]) +
                                " are not a multiple of the " + ggml_type_name(type) + " block");
  std::optional<uint64_t> n = 1;
  for (auto d : ne) n = n ? checked_mul(*n, d) : n;
  const auto bytes = n ? checked_mul(*n / traits.block_size, traits.block_bytes) : std::nullopt;
  if (!bytes) throw std::invalid_argument("GGUF tensor '" + name + "': its dimensions overflow 64 bits");
  return *bytes;
}

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> ne, std::span<const float> data,
                            GgmlType type) {
  const uint64_t n_bytes = check_tensor(name, ne, type);
  const uint64_t n = element_count(ne);
  if (n != data.size())
    throw std::invalid_argument("GGUF tensor '" + name + "': dimensions hold " + std::to_string(n) +
                                " elements, data has " + std::to_string(data.size()));
  tensor_names_.insert(name);
  tensors_.push_back({name, std::move(ne), type, n_bytes, encode_floats(data, type, n_bytes), nullptr});
}

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type, Producer produce) {
  const uint64_t n_bytes = check_tensor(name, ne, type);
  tensor_names_.insert(name);
  tensors_.push_back({name, std::move(ne), type, n_bytes, {}, std::move(produce)});
}

void GgufWriter::write(const std::string& path) const {
  std::string head;
  head += "GGUF";
  append_le<uint32_t>(head, 3);
  append_le<uint64_t>(head, tensors_.size());
  append_le<uint64_t>(head, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    append_string(head, key);
    append_le<uint32_t>(head, uint32_t(value.type()));
    append_value(head, value);
  }
  uint64_t offset = 0;  // within the data section
  for (const auto& t : tensors_) {
    append_string(head, t.name);
    append_le<uint32_t>(head, uint32_t(t.ne.size()));
    for (auto d : t.ne) append_le<uint64_t>(head, d);
    append_le<uint32_t>(head, uint32_t(t.type));
    append_le<uint64_t>(head, offset);
    offset = align_up(offset + t.n_bytes, alignment_);
  }
  head.resize(size_t(align_up(head.size(), alignment_)), '\0');

  write_file_atomically(path, [&](std::ostream& out) {
    out.write(head.data(), std::streamsize(head.size()));
    const std::string zeros(alignment_, '\0');
    for (const auto& t : tensors_) {
      std::vector<std::byte> made;  // a produced tensor's bytes, freed after it is written
      if (t.produce) {
        const std::vector<float> values = t.produce();
        if (values.size() != element_count(t.ne))
          throw std::invalid_argument("GGUF tensor '" + t.name + "': dimensions hold " +
                                      std::to_string(element_count(t.ne)) + " elements, its producer made " +
                                      std::to_string(values.size()));
        made = encode_floats(values, t.type, t.n_bytes);
      }
      const auto& bytes = t.produce ? made : t.bytes;
      out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
      const uint64_t pad = align_up(bytes.size(), alignment_) - bytes.size();
      out.write(zeros.data(), std::streamsize(pad));
    }
  });
}

}  // namespace astrai
