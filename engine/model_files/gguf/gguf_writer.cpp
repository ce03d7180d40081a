// GGUF v3 writer (see gguf_writer.h; the layout is described in gguf_reader.cpp).
#include "engine/model_files/gguf/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "engine/model_files/checked_math.h"
#include "engine/model_files/float_formats.h"
#include "engine/model_files/quant/quantize.h"

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

std::vector<std::byte> encode_floats(std::span<const float> data, GgmlType type) {
  std::string bytes;
  switch (type) {
    case GgmlType::F32:
      bytes.reserve(data.size() * 4);
      for (float x : data) append_le<float>(bytes, x);
      break;
    case GgmlType::F16:
      bytes.reserve(data.size() * 2);
      for (float x : data) append_le<uint16_t>(bytes, float_to_half(x));
      break;
    case GgmlType::BF16:
      bytes.reserve(data.size() * 2);
      for (float x : data) append_le<uint16_t>(bytes, float_to_bf16(x));
      break;
    default: {
      if (!quant::can_quantize(type))
        throw std::invalid_argument("GGUF writer stores float tensors as F32, F16, BF16, Q8_0, Q4_0, Q4_K or Q6_K, not " +
                                    ggml_type_name(type));
      const auto traits = *ggml_type_traits(uint32_t(type));
      std::vector<std::byte> blocks(data.size() / traits.block_size * traits.block_bytes);
      quant::quantize(type, data, blocks);
      return blocks;
    }
  }
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  return std::vector<std::byte>(p, p + bytes.size());
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

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> ne, std::span<const float> data,
                            GgmlType type) {
  if (name.size() > kMaxTensorName)
    throw std::invalid_argument("GGUF tensor name '" + name + "' is longer than 63 bytes (ggml's limit)");
  if (ne.empty() || ne.size() > 4)
    throw std::invalid_argument("GGUF tensor '" + name + "' needs 1 to 4 dimensions, got " + std::to_string(ne.size()));
  std::optional<uint64_t> n = 1;
  for (auto d : ne) n = n ? checked_mul(*n, d) : n;
  if (!n || *n != data.size())
    throw std::invalid_argument("GGUF tensor '" + name + "': dimensions hold " + (n ? std::to_string(*n) : "too many") +
                                " elements, data has " + std::to_string(data.size()));
  if (tensor_names_.count(name)) throw std::invalid_argument("GGUF tensor '" + name + "' added twice");
  if (ne[0] % ggml_type_traits(uint32_t(type)).value_or(GgmlTypeTraits{"", 1, 1}).block_size != 0)
    throw std::invalid_argument("GGUF tensor '" + name + "': rows of " + std::to_string(ne[0]) +
                                " are not a multiple of the " + ggml_type_name(type) + " block");
  auto bytes = encode_floats(data, type);  // validates type before anything is recorded
  tensor_names_.insert(name);
  tensors_.push_back({name, std::move(ne), type, std::move(bytes)});
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
    offset = align_up(offset + t.bytes.size(), alignment_);
  }
  head.resize(size_t(align_up(head.size(), alignment_)), '\0');

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot open " + tmp + " for writing");
    out.write(head.data(), std::streamsize(head.size()));
    const std::string zeros(alignment_, '\0');
    for (const auto& t : tensors_) {
      out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
      const uint64_t pad = align_up(t.bytes.size(), alignment_) - t.bytes.size();
      out.write(zeros.data(), std::streamsize(pad));
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": writing failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place");
  }
}

}  // namespace astrai
