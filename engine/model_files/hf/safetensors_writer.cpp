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

}  // namespace

void SafetensorsWriter::add_metadata(const std::string& key, const std::string& value) {
  if (key == "format") throw std::invalid_argument("safetensors metadata key \"format\" is always \"pt\"");
  metadata_[key] = value;
}

void SafetensorsWriter::add_tensor(const std::string& name, std::vector<uint64_t> shape, std::span<const float> values,
                                   SafetensorsDType dtype) {
  if (name == "__metadata__") throw std::invalid_argument("safetensors: \"__metadata__\" is not a tensor name");
  if (dtype != SafetensorsDType::F32 && dtype != SafetensorsDType::F16 && dtype != SafetensorsDType::BF16)
    throw std::invalid_argument("safetensors writer: tensor '" + name + "': dtype " + safetensors_dtype_name(dtype) +
                                " (only F32, F16 and BF16 are written)");
  uint64_t n = 1;
  for (const uint64_t d : shape) n *= d;
  if (n != values.size())
    throw std::invalid_argument("safetensors writer: tensor '" + name + "' has " + std::to_string(values.size()) +
                                " values for a shape of " + std::to_string(n));
  if (!names_.insert(name).second) throw std::invalid_argument("safetensors writer: duplicate tensor '" + name + "'");
  const uint64_t begin = data_.size();
  for (const float v : values) {
    switch (dtype) {
      case SafetensorsDType::F16: append_u16(data_, float_to_half(v)); break;
      case SafetensorsDType::BF16: append_u16(data_, float_to_bf16(v)); break;
      default: append_f32(data_, v); break;
    }
  }
  tensors_.push_back(Entry{name, dtype, std::move(shape), begin, data_.size()});
}

std::vector<std::string> SafetensorsWriter::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& t : tensors_) names.push_back(t.name);
  return names;
}

std::string SafetensorsWriter::bytes() const {
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json metadata = {{"format", "pt"}};
  for (const auto& [k, v] : metadata_) metadata[k] = v;
  header["__metadata__"] = metadata;
  for (const auto& t : tensors_)
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // as the Python library pads it
  std::string out;
  out.reserve(8 + text.size() + data_.size());
  append_u64(out, text.size());
  out += text;
  out += data_;
  return out;
}

void SafetensorsWriter::write(const std::string& path) const {
  const std::string b = bytes();
  write_file_atomically(path, [&](std::ostream& out) { out.write(b.data(), std::streamsize(b.size())); });
}

}  // namespace astrai
