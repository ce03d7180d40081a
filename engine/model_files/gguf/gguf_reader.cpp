// GGUF parsing with every count, length and range checked (see gguf_reader.h).
//
// Layout (all little-endian):
//   "GGUF" | uint32 version | uint64 n_tensors | uint64 n_kv
//   n_kv x (string key | uint32 value type | value)
//   n_tensors x (string name | uint32 n_dims | n_dims x uint64 ne | uint32 ggml type | uint64 offset)
//   padding to general.alignment | data section (tensor offsets are relative to its start)
// where a string is uint64 length + bytes, and an array value is
// uint32 element type | uint64 count | count x value.
#include "engine/model_files/gguf/gguf_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "engine/model_files/checked_math.h"
#include "engine/model_files/float_formats.h"
#include "engine/model_files/quant/dequantize.h"
#include "engine/model_files/tensor_shape.h"

namespace astrai {
namespace {

constexpr uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;       // deeper nesting is corruption, and would recurse deeply
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;        // empty key, type tag, smallest value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims = 0, type, offset
// Metadata is decoded into GgufValues of sizeof(GgufValue) bytes each, so a
// file of one-byte array elements would take ~40 times its size in memory.
// The largest real metadata (a 256k-piece vocabulary with its merges) takes
// a few tens of MiB; beyond this budget the file is refused before anything
// is allocated for it.
constexpr uint64_t kMaxMetadataMemory = uint64_t(256) << 20;

// Counts the memory that decoding the metadata will take, failing past kMaxMetadataMemory.
class MetadataBudget {
 public:
  void charge(ByteReader& r, uint64_t count, uint64_t bytes_each, const std::string& what) {
    const auto bytes = checked_mul(count, bytes_each);
    if (!bytes || *bytes > kMaxMetadataMemory - used_) {
      r.fail(what + ": metadata would take more than " + std::to_string(kMaxMetadataMemory >> 20) +
             " MiB of memory (" + std::to_string(count) + " values); this reader refuses it");
    }
    used_ += *bytes;
  }

 private:
  uint64_t used_ = 0;
};

std::string read_gguf_string(ByteReader& r, const std::string& what, MetadataBudget* budget = nullptr) {
  const uint64_t length = r.read<uint64_t>(what + " length");
  // read_bytes checks the length against the bytes left before anything is allocated.
  const auto bytes = r.read_bytes(length, what);
  if (budget) budget->charge(r, length, 1, what);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// The fewest bytes one value of `type` takes in the file: bounds an array's
// count by the bytes that remain before any element is allocated.
uint64_t min_encoded_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::Uint8: case GgufValueType::Int8: case GgufValueType::Bool: return 1;
    case GgufValueType::Uint16: case GgufValueType::Int16: return 2;
    case GgufValueType::Uint32: case GgufValueType::Int32: case GgufValueType::Float32: return 4;
    case GgufValueType::Uint64: case GgufValueType::Int64: case GgufValueType::Float64: return 8;
    case GgufValueType::String: return 8;
    case GgufValueType::Array: return 4 + 8;
  }
  return 1;
}

GgufValueType read_value_type(ByteReader& r, const std::string& what) {
  const uint32_t tag = r.read<uint32_t>(what);
  if (tag > uint32_t(GgufValueType::Float64)) r.fail(what + " is " + std::to_string(tag) + ", not a GGUF value type");
  return GgufValueType(tag);
}

GgufValue read_value(ByteReader& r, GgufValueType type, const std::string& what, int depth, MetadataBudget& budget);

GgufArray read_array(ByteReader& r, const std::string& what, int depth, MetadataBudget& budget) {
  if (depth >= kMaxArrayNesting) r.fail(what + ": arrays nested deeper than " + std::to_string(kMaxArrayNesting));
  GgufArray array;
  array.element_type = read_value_type(r, what + " element type");
  const uint64_t count = r.read<uint64_t>(what + " element count");
  if (count > r.remaining() / min_encoded_bytes(array.element_type)) {
    r.fail(what + ": array of " + std::to_string(count) + " " + gguf_value_type_name(array.element_type) +
           " values cannot fit in the " + std::to_string(r.remaining()) + " bytes left");
  }
  budget.charge(r, count, sizeof(GgufValue), what);
  array.elements.reserve(size_t(count));
  for (uint64_t i = 0; i < count; ++i)
    array.elements.push_back(read_value(r, array.element_type, what, depth + 1, budget));
  return array;
}

GgufValue read_value(ByteReader& r, GgufValueType type, const std::string& what, int depth, MetadataBudget& budget) {
  switch (type) {
    case GgufValueType::Uint8: return r.read<uint8_t>(what);
    case GgufValueType::Int8: return r.read<int8_t>(what);
    case GgufValueType::Uint16: return r.read<uint16_t>(what);
    case GgufValueType::Int16: return r.read<int16_t>(what);
    case GgufValueType::Uint32: return r.read<uint32_t>(what);
    case GgufValueType::Int32: return r.read<int32_t>(what);
    case GgufValueType::Float32: return r.read<float>(what);
    case GgufValueType::Bool: {
      const uint8_t b = r.read<uint8_t>(what);
      if (b > 1) r.fail(what + ": bool value " + std::to_string(b) + " is neither 0 nor 1");
      return b == 1;
    }
    case GgufValueType::String: return read_gguf_string(r, what, &budget);
    case GgufValueType::Array: return read_array(r, what, depth, budget);
    case GgufValueType::Uint64: return r.read<uint64_t>(what);
    case GgufValueType::Int64: return r.read<int64_t>(what);
    case GgufValueType::Float64: return r.read<double>(what);
  }
  r.fail(what + ": unknown value type");
}

uint32_t read_version(ByteReader& r) {
  const auto magic = r.read_bytes(4, "magic");
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) r.fail("not a GGUF file (the first 4 bytes are not \"GGUF\")");
  const uint32_t version = r.read<uint32_t>("version");
  if (version == 2 || version == 3) return version;
  if (version == 1) r.fail("GGUF version 1 is not supported (only versions 2 and 3)");
  if ((version & 0xFFFF) == 0 && version != 0) r.fail("GGUF version field reads " + std::to_string(version) +
                                                      ": a big-endian file? Only little-endian GGUF is supported");
  r.fail("unsupported GGUF version " + std::to_string(version) + " (only versions 2 and 3)");
}

GgufTensorInfo read_tensor_info(ByteReader& r, uint64_t index) {
  GgufTensorInfo t;
  t.name = read_gguf_string(r, "tensor " + std::to_string(index) + " name");
  const std::string what = "tensor '" + t.name + "'";
  const uint32_t n_dims = r.read<uint32_t>(what + " n_dims");
  if (n_dims > kMaxDims) r.fail(what + " has " + std::to_string(n_dims) + " dimensions (at most 4)");
  t.n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t n = r.read<uint64_t>(what + " ne[" + std::to_string(d) + "]");
    if (n > uint64_t(std::numeric_limits<int64_t>::max())) r.fail(what + " ne[" + std::to_string(d) + "] is too large");
    const auto product = checked_mul(t.n_elements, n);
    if (!product || *product > uint64_t(std::numeric_limits<int64_t>::max()))
      r.fail(what + ": element count overflows 64 bits");
    t.n_elements = *product;
    t.ne.push_back(n);
  }
  const uint32_t type_id = r.read<uint32_t>(what + " type");
  const auto traits = ggml_type_traits(type_id);
  if (!traits) r.fail(what + " has unknown ggml type " + std::to_string(type_id));
  t.type = GgmlType(type_id);
  const uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
  if (ne0 % traits->block_size != 0) {
    r.fail(what + ": ne[0] = " + std::to_string(ne0) + " is not a multiple of the " + std::string(traits->name) +
           " block size " + std::to_string(traits->block_size));
  }
  // n_elements is a multiple of the block size because ne[0] is.
  const auto n_bytes = checked_mul(t.n_elements / traits->block_size, traits->block_bytes);
  if (!n_bytes) r.fail(what + ": byte size overflows 64 bits");
  t.n_bytes = *n_bytes;
  t.offset = r.read<uint64_t>(what + " data offset");
  return t;
}

}  // namespace

std::vector<size_t> GgufTensorInfo::shape() const { return std::vector<size_t>(ne.rbegin(), ne.rend()); }

GgufReader::GgufReader(const std::string& path) : file_(path) { parse(); }

void GgufReader::parse() {
  ByteReader r(file_.bytes(), file_.path());
  version_ = read_version(r);
  const uint64_t n_tensors = r.read<uint64_t>("tensor count");
  const uint64_t n_kv = r.read<uint64_t>("metadata count");
  if (n_kv > r.remaining() / kMinKeyValueBytes)
    r.fail("metadata count " + std::to_string(n_kv) + " cannot fit in the " + std::to_string(r.remaining()) + " bytes left");
  MetadataBudget budget;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = read_gguf_string(r, "metadata key " + std::to_string(i), &budget);
    const std::string what = "metadata '" + key + "'";
    const auto type = read_value_type(r, what + " type");
    budget.charge(r, 1, sizeof(GgufValue) + sizeof(std::string), what);
    GgufValue value = read_value(r, type, what, 0, budget);
    if (!metadata_index_.emplace(key, metadata_.size()).second) r.fail("duplicate " + what);
    metadata_.emplace_back(std::move(key), std::move(value));
  }

  if (const auto* a = find("general.alignment")) {
    const auto* v = std::get_if<uint32_t>(&a->value);
    if (!v) key_error("general.alignment", "has type " + gguf_value_type_name(a->type()) + ", expected uint32");
    if (*v == 0 || (*v & (*v - 1)) != 0) key_error("general.alignment", std::to_string(*v) + " is not a power of two");
    alignment_ = *v;
  }

  if (n_tensors > r.remaining() / kMinTensorInfoBytes)
    r.fail("tensor count " + std::to_string(n_tensors) + " cannot fit in the " + std::to_string(r.remaining()) + " bytes left");
  tensors_.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    auto info = read_tensor_info(r, i);
    if (!tensor_index_.emplace(info.name, tensors_.size()).second) r.fail("duplicate tensor name '" + info.name + "'");
    tensors_.push_back(std::move(info));
  }

  const auto data_start = checked_align_up(r.offset(), alignment_);
  if (!data_start || (!tensors_.empty() && *data_start > file_.size())) {
    r.fail("the tensor data section (aligned to " + std::to_string(alignment_) + ") starts past the end of the " +
           std::to_string(file_.size()) + "-byte file");
  }
  data_offset_ = *data_start;
  const uint64_t data_size = tensors_.empty() ? 0 : file_.size() - data_offset_;
  for (const auto& t : tensors_) {
    const std::string what = path() + ": tensor '" + t.name + "'";
    if (t.offset % alignment_ != 0)
      throw std::runtime_error(what + " data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                               std::to_string(alignment_));
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      throw std::runtime_error(what + " data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                               ") runs past the end of the " + std::to_string(data_size) + "-byte data section");
    }
  }
}

const GgufValue* GgufReader::find(const std::string& key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

void GgufReader::key_error(const std::string& key, const std::string& problem) const {
  throw std::runtime_error(path() + ": metadata key '" + key + "' " + problem);
}

const GgufValue& GgufReader::get(const std::string& key) const {
  const auto* v = find(key);
  if (!v) key_error(key, "is missing");
  return *v;
}

std::string GgufReader::get_string(const std::string& key) const {
  const auto& v = get(key);
  if (const auto* s = std::get_if<std::string>(&v.value)) return *s;
  key_error(key, "has type " + gguf_value_type_name(v.type()) + ", expected string");
}

namespace {

// The integer in `v`, if it holds one that fits in int64.
std::optional<int64_t> as_int(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (x > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return int64_t(x);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return int64_t(x);
        } else {
          return std::nullopt;
        }
      },
      v.value);
}

std::optional<double> as_float(const GgufValue& v) {
  if (const auto* f = std::get_if<float>(&v.value)) return double(*f);
  if (const auto* d = std::get_if<double>(&v.value)) return *d;
  return std::nullopt;
}

}  // namespace

int64_t GgufReader::get_int(const std::string& key) const {
  const auto& v = get(key);
  if (const auto i = as_int(v)) return *i;
  if (v.type() == GgufValueType::Uint64) key_error(key, "holds a uint64 too large for int64");
  key_error(key, "has type " + gguf_value_type_name(v.type()) + ", expected an integer");
}

double GgufReader::get_float(const std::string& key) const {
  const auto& v = get(key);
  if (const auto f = as_float(v)) return *f;
  key_error(key, "has type " + gguf_value_type_name(v.type()) + ", expected float32 or float64");
}

bool GgufReader::get_bool(const std::string& key) const {
  const auto& v = get(key);
  if (const auto* b = std::get_if<bool>(&v.value)) return *b;
  key_error(key, "has type " + gguf_value_type_name(v.type()) + ", expected bool");
}

const GgufArray& GgufReader::get_array(const std::string& key) const {
  const auto& v = get(key);
  if (const auto* a = std::get_if<GgufArray>(&v.value)) return *a;
  key_error(key, "has type " + gguf_value_type_name(v.type()) + ", expected array");
}

std::vector<std::string> GgufReader::get_string_array(const std::string& key) const {
  const auto& a = get_array(key);
  if (a.element_type != GgufValueType::String)
    key_error(key, "is an array of " + gguf_value_type_name(a.element_type) + ", expected an array of string");
  std::vector<std::string> out;
  out.reserve(a.elements.size());
  for (const auto& e : a.elements) out.push_back(std::get<std::string>(e.value));
  return out;
}

std::vector<float> GgufReader::get_float_array(const std::string& key) const {
  const auto& a = get_array(key);
  if (a.element_type != GgufValueType::Float32 && a.element_type != GgufValueType::Float64)
    key_error(key, "is an array of " + gguf_value_type_name(a.element_type) + ", expected an array of float32");
  std::vector<float> out;
  out.reserve(a.elements.size());
  for (const auto& e : a.elements) out.push_back(float(*as_float(e)));
  return out;
}

std::vector<int64_t> GgufReader::get_int_array(const std::string& key) const {
  const auto& a = get_array(key);
  std::vector<int64_t> out;
  out.reserve(a.elements.size());
  for (size_t i = 0; i < a.elements.size(); ++i) {
    const auto v = as_int(a.elements[i]);
    if (!v) {
      key_error(key, "element " + std::to_string(i) + " has type " + gguf_value_type_name(a.elements[i].type()) +
                         ", expected an integer that fits in int64");
    }
    out.push_back(*v);
  }
  return out;
}

const GgufTensorInfo* GgufReader::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufReader::tensor(const std::string& name) const {
  const auto* t = find_tensor(name);
  if (!t) throw std::runtime_error(path() + ": tensor '" + name + "' is missing");
  return *t;
}

std::span<const std::byte> GgufReader::tensor_data(const GgufTensorInfo& info) const {
  // parse() checked data_offset_ + offset + n_bytes <= file size for every tensor.
  return file_.bytes().subspan(size_t(data_offset_ + info.offset), size_t(info.n_bytes));
}

void GgufReader::read_tensor_floats(const GgufTensorInfo& info, std::span<float> out) const {
  if (out.size() != info.n_elements)
    throw std::logic_error("read_tensor_floats: output has " + std::to_string(out.size()) + " floats, tensor '" +
                           info.name + "' has " + std::to_string(info.n_elements));
  const auto bytes = tensor_data(info);
  switch (info.type) {
    case GgmlType::F32: decode_floats(FloatEncoding::F32, bytes, out); break;
    case GgmlType::F16: decode_floats(FloatEncoding::F16, bytes, out); break;
    case GgmlType::BF16: decode_floats(FloatEncoding::BF16, bytes, out); break;
    default:
      if (!quant::can_dequantize(info.type))
        throw std::runtime_error(path() + ": tensor '" + info.name + "' has type " + ggml_type_name(info.type) +
                                 "; AstrAI reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 and Q2_K ... Q6_K");
      quant::dequantize(info.type, bytes, out);
  }
  file_.release(bytes);  // converted: the float32 copy is what the caller keeps
}

const GgufTensorInfo& GgufReader::tensor_with_shape(const std::string& name, std::span<const size_t> shape) const {
  const GgufTensorInfo& info = tensor(name);
  check_shape(info, shape);
  return info;
}

std::vector<float> GgufReader::read_tensor_values(const std::string& name, std::span<const size_t> shape) const {
  const GgufTensorInfo& info = tensor_with_shape(name, shape);
  std::vector<float> values(info.n_elements);
  read_tensor_floats(info, values);
  return values;
}

void GgufReader::check_shape(const GgufTensorInfo& info, std::span<const size_t> want) const {
  // Compare ne with `want` reversed, both padded with 1s as ggml pads ne
  // (llama.cpp's loader compares so too: its {dim} is a [1, dim] matrix).
  bool ok = true;
  for (size_t d = 0; ok && d < std::max(info.ne.size(), want.size()); ++d) {
    const uint64_t expected = d < want.size() ? want[want.size() - 1 - d] : 1;
    ok = (d < info.ne.size() ? info.ne[d] : 1) == expected;
  }
  if (!ok) {
    const auto got = info.shape();
    throw std::runtime_error(path() + ": tensor '" + info.name + "' has shape " + format_dims(got) + ", expected " +
                             format_dims(want));
  }
}

}  // namespace astrai
