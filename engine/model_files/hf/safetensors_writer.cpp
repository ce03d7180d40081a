// safetensors writer (see safetensors_writer.h).
#include "engine/model_files/hf/safetensors_writer.h"

#include "engine/model_files/atomic_file.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model_files/checked_math.h"
#include "engine/model_files/float_formats.h"
#include "engine/model_files/tensor_shape.h"

namespace astrai {
namespace {

void append_u16(std::string& out, uint16_t v) {
  out += char(v & 0xFF);
  out += char(v >> 8);
}

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += char((v >> (8 * i)) & 0xFF);
}

void append_f32(std::string& out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; ++i) out += char((bits >> (8 * i)) & 0xFF);
}

// What both writers refuse of a tensor before its values: the reserved name,
// a dtype they do not write.
void check_tensor(const std::string& name, SafetensorsDType dtype) {
  if (name == "__metadata__") throw std::invalid_argument("safetensors: \"__metadata__\" is not a tensor name");
  if (dtype != SafetensorsDType::F32 && dtype != SafetensorsDType::F16 && dtype != SafetensorsDType::BF16)
    throw std::invalid_argument("safetensors writer: tensor '" + name + "': dtype " + safetensors_dtype_name(dtype) +
                                " (only F32, F16 and BF16 are written)");
}

void check_size(const std::string& name, uint64_t want, size_t got) {
  if (want != got)
    throw std::invalid_argument("safetensors writer: tensor '" + name + "' has " + std::to_string(got) +
                                " values for a shape of " + std::to_string(want));
}

// The values as `dtype`'s little-endian bytes, appended to `out`.
void append_values(std::string& out, std::span<const float> values, SafetensorsDType dtype) {
  for (const float v : values) {
    switch (dtype) {
      case SafetensorsDType::F16: append_u16(out, float_to_half(v)); break;
      case SafetensorsDType::BF16: append_u16(out, float_to_bf16(v)); break;
      default: append_f32(out, v); break;
    }
  }
}

struct HeaderEntry {
  const std::string& name;
  SafetensorsDType dtype;
  const std::vector<uint64_t>& shape;
  uint64_t begin, end;
};

// The 8-byte header length and the JSON header, padded with spaces to a
// multiple of 8 bytes as the Python library pads it.
std::string header_bytes(const std::vector<HeaderEntry>& tensors, const std::map<std::string, std::string>& extra) {
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json metadata = {{"format", "pt"}};
  for (const auto& [k, v] : extra) metadata[k] = v;
  header["__metadata__"] = metadata;
  for (const auto& t : tensors)
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::string out;
  append_u64(out, text.size());
  return out + text;
}

}  // namespace

void SafetensorsWriter::add_metadata(const std::string& key, const std::string& value) {
  if (key == "format") throw std::invalid_argument("safetensors metadata key \"format\" is always \"pt\"");
  metadata_[key] = value;
}

void SafetensorsWriter::add_tensor(const std::string& name, std::vector<uint64_t> shape, std::span<const float> values,
                                   SafetensorsDType dtype) {
  check_tensor(name, dtype);
  check_size(name, element_count(shape), values.size());
  if (!names_.insert(name).second) throw std::invalid_argument("safetensors writer: duplicate tensor '" + name + "'");
  const uint64_t begin = data_.size();
  append_values(data_, values, dtype);
  tensors_.push_back(Entry{name, dtype, std::move(shape), begin, data_.size()});
}

std::vector<std::string> SafetensorsWriter::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& t : tensors_) names.push_back(t.name);
  return names;
}

std::string SafetensorsWriter::bytes() const {
  std::vector<HeaderEntry> entries;
  for (const auto& t : tensors_) entries.push_back(HeaderEntry{t.name, t.dtype, t.shape, t.begin, t.end});
  std::string out = header_bytes(entries, metadata_);
  out.reserve(out.size() + data_.size());
  out += data_;
  return out;
}

void SafetensorsWriter::write(const std::string& path) const {
  const std::string b = bytes();
  write_file_atomically(path, [&](std::ostream& out) { out.write(b.data(), std::streamsize(b.size())); });
}

void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsPlannedTensor>& tensors,
                                SafetensorsDType dtype, const std::function<std::vector<float>(size_t i)>& values) {
  std::unordered_set<std::string> names;
  std::vector<HeaderEntry> entries;
  uint64_t offset = 0;
  const uint64_t element_bytes = safetensors_dtype_bytes(dtype);
  for (const auto& t : tensors) {
    check_tensor(t.name, dtype);
    if (!names.insert(t.name).second) throw std::invalid_argument("safetensors writer: duplicate tensor '" + t.name + "'");
    const uint64_t bytes = element_count(t.shape) * element_bytes;
    entries.push_back(HeaderEntry{t.name, dtype, t.shape, offset, offset + bytes});
    offset += bytes;
  }
  const std::string header = header_bytes(entries, {});
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(header.data(), std::streamsize(header.size()));
    std::string encoded;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::vector<float> v = values(i);
      check_size(tensors[i].name, element_count(tensors[i].shape), v.size());
      encoded.clear();
      encoded.reserve(v.size() * element_bytes);  // one allocation, not a doubling string's copies
      append_values(encoded, v, dtype);
      out.write(encoded.data(), std::streamsize(encoded.size()));
    }
  });
}

}  // namespace astrai
