// safetensors parsing with every length, shape and range checked (see safetensors_file.h).
#include "engine/model_files/hf/safetensors_file.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model_files/checked_math.h"
#include "engine/model_files/float_formats.h"
#include "engine/model_files/tensor_shape.h"

namespace astrai {
namespace {

using Json = nlohmann::json;

struct DTypeEntry {
  SafetensorsDType dtype;
  const char* name;
  uint64_t bytes;
};

constexpr DTypeEntry kDTypes[] = {
    {SafetensorsDType::BOOL, "BOOL", 1},       {SafetensorsDType::U8, "U8", 1},
    {SafetensorsDType::I8, "I8", 1},           {SafetensorsDType::F8_E5M2, "F8_E5M2", 1},
    {SafetensorsDType::F8_E4M3, "F8_E4M3", 1}, {SafetensorsDType::F8_E8M0, "F8_E8M0", 1},
    {SafetensorsDType::I16, "I16", 2},         {SafetensorsDType::U16, "U16", 2},
    {SafetensorsDType::F16, "F16", 2},         {SafetensorsDType::BF16, "BF16", 2},
    {SafetensorsDType::I32, "I32", 4},         {SafetensorsDType::U32, "U32", 4},
    {SafetensorsDType::F32, "F32", 4},         {SafetensorsDType::I64, "I64", 8},
    {SafetensorsDType::U64, "U64", 8},         {SafetensorsDType::F64, "F64", 8},
};

const DTypeEntry& entry_of(SafetensorsDType dtype) {
  for (const auto& e : kDTypes)
    if (e.dtype == dtype) return e;
  throw std::logic_error("safetensors: unknown dtype enumerator");
}

// The header's JSON nests at most: object (depth 0) > tensor object (1) >
// shape array (2) > integers (3). Anything deeper is refused while parsing, so
// a header of 10^8 '[' can neither recurse deeply nor build a deep tree.
constexpr int kMaxJsonDepth = 3;

// Thrown from the JSON parser's callback; turned into the file's error.
struct HeaderStructureError {
  std::string problem;
};

// Parses the header, refusing deep nesting and duplicate keys in any object
// (nlohmann would silently keep the last of two equal keys, hiding a second
// definition of a tensor).
Json parse_header_json(std::string_view text) {
  std::vector<std::set<std::string>> keys_seen;  // one set per open object
  const Json::parser_callback_t callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxJsonDepth)
      throw HeaderStructureError{"JSON nests deeper than " + std::to_string(kMaxJsonDepth) +
                                 " levels (a safetensors header needs 3)"};
    switch (event) {
      case Json::parse_event_t::object_start: keys_seen.emplace_back(); break;
      case Json::parse_event_t::object_end: keys_seen.pop_back(); break;
      case Json::parse_event_t::key:
        if (!keys_seen.back().insert(parsed.get<std::string>()).second)
          throw HeaderStructureError{"key \"" + parsed.get<std::string>() + "\" appears twice in one JSON object"};
        break;
      default: break;
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), callback);
}

// A JSON integer in [0, 2^64), or nothing.
std::optional<uint64_t> json_uint(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
  return std::nullopt;
}

[[noreturn]] void fail_at(const std::string& path, const std::string& problem) {
  throw std::runtime_error(path + ": " + problem);
}

}  // namespace

std::optional<SafetensorsDType> parse_safetensors_dtype(std::string_view name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return e.dtype;
  return std::nullopt;
}

std::string safetensors_dtype_name(SafetensorsDType dtype) { return entry_of(dtype).name; }
uint64_t safetensors_dtype_bytes(SafetensorsDType dtype) { return entry_of(dtype).bytes; }

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) { parse(); }

void SafetensorsFile::parse() {
  const std::string& path = file_.path();
  ByteReader r(file_.bytes(), path);
  if (file_.size() < 8)
    fail_at(path, "file is " + std::to_string(file_.size()) + " bytes, too short for safetensors' 8-byte header length");
  const uint64_t header_length = r.read<uint64_t>("header length");
  if (header_length > kSafetensorsMaxHeaderBytes)
    fail_at(path, "header length " + std::to_string(header_length) + " exceeds safetensors' limit of " +
         std::to_string(kSafetensorsMaxHeaderBytes) + " bytes (not a safetensors file?)");
  if (header_length > r.remaining())
    fail_at(path, "header length " + std::to_string(header_length) + " runs past the end of the file (" +
         std::to_string(r.remaining()) + " bytes follow the length; truncated?)");
  const auto header_bytes = r.read_bytes(header_length, "header");
  data_offset_ = 8 + header_length;
  const std::string_view header_text(reinterpret_cast<const char*>(header_bytes.data()), header_bytes.size());

  Json header;
  try {
    header = parse_header_json(header_text);
  } catch (const HeaderStructureError& e) {
    fail_at(path, "header: " + e.problem);
  } catch (const Json::exception& e) {
    fail_at(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail_at(path, "header is JSON but not an object of tensors");

  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail_at(path, "header: \"__metadata__\" is not an object");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) fail_at(path, "header: \"__metadata__\" value of \"" + key + "\" is not a string");
        metadata_.emplace(key, text.get<std::string>());
      }
      continue;
    }
    const std::string what = "tensor '" + name + "'";
    if (!value.is_object()) fail_at(path, what + ": header entry is not an object");
    SafetensorsTensorInfo t;
    t.name = name;
    // dtype
    const auto dtype_it = value.find("dtype");
    if (dtype_it == value.end() || !dtype_it->is_string()) fail_at(path, what + ": \"dtype\" is missing or not a string");
    const auto dtype = parse_safetensors_dtype(dtype_it->get<std::string>());
    if (!dtype) fail_at(path, what + ": unknown dtype \"" + dtype_it->get<std::string>() + "\"");
    t.dtype = *dtype;
    // shape, and the element count and byte size it implies, overflow-checked
    const auto shape_it = value.find("shape");
    if (shape_it == value.end() || !shape_it->is_array()) fail_at(path, what + ": \"shape\" is missing or not an array");
    if (shape_it->size() > kSafetensorsMaxDims)
      fail_at(path, what + ": shape has " + std::to_string(shape_it->size()) + " dimensions (at most " +
           std::to_string(kSafetensorsMaxDims) + " are accepted)");
    t.n_elements = 1;
    for (const auto& d : *shape_it) {
      const auto n = json_uint(d);
      if (!n) fail_at(path, what + ": shape " + shape_it->dump() + " holds something other than a non-negative integer");
      const auto product = checked_mul(t.n_elements, *n);
      if (!product) fail_at(path, what + ": shape " + shape_it->dump() + " has more elements than 64 bits can count");
      t.n_elements = *product;
      t.shape.push_back(*n);
    }
    const auto n_bytes = checked_mul(t.n_elements, safetensors_dtype_bytes(t.dtype));
    if (!n_bytes) fail_at(path, what + ": shape " + shape_it->dump() + " of " + dtype_it->get<std::string>() +
                       " takes more bytes than 64 bits can count");
    // data_offsets
    const auto offsets_it = value.find("data_offsets");
    if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2)
      fail_at(path, what + ": \"data_offsets\" is missing or not a [begin, end] pair");
    const auto begin = json_uint((*offsets_it)[0]), end = json_uint((*offsets_it)[1]);
    if (!begin || !end) fail_at(path, what + ": data_offsets " + offsets_it->dump() + " are not non-negative integers");
    if (*end < *begin) fail_at(path, what + ": data_offsets " + offsets_it->dump() + " end before they begin");
    if (*end - *begin != *n_bytes)
      fail_at(path, what + ": data_offsets " + offsets_it->dump() + " span " + std::to_string(*end - *begin) +
           " bytes, but shape " + format_dims(t.shape) + " of " + safetensors_dtype_name(t.dtype) + " takes " +
           std::to_string(*n_bytes));
    t.begin = *begin;
    t.end = *end;
    tensors_.push_back(std::move(t));
  }

  // The ranges must tile the data section: sorted by offset, each begins where
  // the previous one ended (the safetensors crate refuses gaps and overlaps
  // alike), and the last one ends at the end of the file.
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end != b.end ? a.end < b.end : a.name < b.name;
  });
  const uint64_t data_size = file_.size() - data_offset_;
  uint64_t covered = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const auto& t : tensors_) {
    const std::string offsets = "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    if (t.begin < covered)
      fail_at(path, "tensor '" + t.name + "': " + offsets + " overlap tensor '" + previous->name + "' (which ends at " +
           std::to_string(covered) + ")");
    if (t.begin > covered)
      fail_at(path, "tensor '" + t.name + "': " + offsets + " leave a gap of " + std::to_string(t.begin - covered) +
           " bytes after " + (previous ? "tensor '" + previous->name + "'" : std::string("the header")));
    if (t.end > data_size)
      fail_at(path, "tensor '" + t.name + "': " + offsets + " run past the end of the data section (" +
           std::to_string(data_size) + " bytes; truncated?)");
    covered = t.end;
    previous = &t;
  }
  if (covered != data_size)
    fail_at(path, "the data section is " + std::to_string(data_size) + " bytes, but the tensors cover " +
         std::to_string(covered) + " (trailing bytes)");
  index_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const SafetensorsTensorInfo* SafetensorsFile::find_tensor(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsTensorInfo& SafetensorsFile::require_tensor(const std::string& name) const {
  const auto* info = find_tensor(name);
  if (!info) throw std::runtime_error(path() + ": tensor '" + name + "' is missing");
  return *info;
}

std::span<const std::byte> SafetensorsFile::tensor_data(const SafetensorsTensorInfo& info) const {
  // parse() checked data_offset_ + end <= file size for every listed tensor.
  return file_.bytes().subspan(size_t(data_offset_ + info.begin), size_t(info.end - info.begin));
}

void SafetensorsFile::read_tensor_floats(const SafetensorsTensorInfo& info, std::span<float> out) const {
  if (out.size() != info.n_elements)
    throw std::logic_error("read_tensor_floats: output has " + std::to_string(out.size()) + " floats, tensor '" +
                           info.name + "' has " + std::to_string(info.n_elements));
  const auto bytes = tensor_data(info);
  switch (info.dtype) {
    case SafetensorsDType::F32: decode_floats(FloatEncoding::F32, bytes, out); break;
    case SafetensorsDType::F16: decode_floats(FloatEncoding::F16, bytes, out); break;
    case SafetensorsDType::BF16: decode_floats(FloatEncoding::BF16, bytes, out); break;
    default:
      throw std::runtime_error(path() + ": tensor '" + info.name + "' has dtype " + safetensors_dtype_name(info.dtype) +
                               "; only F32, F16 and BF16 tensors can be read");
  }
  file_.release(bytes);  // converted: the float32 copy is what the caller keeps
}

void SafetensorsFile::check_shape(const SafetensorsTensorInfo& info, std::span<const size_t> want,
                                  const std::string& expected_from) const {
  const std::vector<uint64_t> wanted(want.begin(), want.end());
  if (info.shape == wanted) return;
  throw std::runtime_error(path() + ": tensor '" + info.name + "' has shape " + format_dims(info.shape) + ", " +
                           expected_from + " implies " + format_dims(wanted));
}

}  // namespace astrai
