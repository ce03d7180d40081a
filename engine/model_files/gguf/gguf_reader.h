// Reads a GGUF file (versions 2 and 3, little-endian): the metadata key/values,
// the tensor directory, and tensor data converted to float32. The file is
// memory-mapped; tensor bytes are only touched when a tensor is read.
//
// Everything read from the file is checked before it is trusted: every count
// and length against the bytes that remain (so a corrupt length never
// allocates), every tensor's element count and byte size against 64-bit
// overflow, and every tensor's data range against the file and the
// alignment. A truncated or corrupt file gives std::runtime_error naming the
// file, the offset and the field, never a crash.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/model_files/gguf/gguf_types.h"
#include "engine/model_files/mapped_file.h"

namespace astrai {

// GGUF's default tensor data alignment when general.alignment is absent.
inline constexpr uint32_t kGgufDefaultAlignment = 32;

// One entry of the tensor directory.
struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // ggml dimensions, ne[0] varies fastest (at most 4)
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;       // from the start of the data section
  uint64_t n_elements = 0;   // product of ne
  uint64_t n_bytes = 0;      // size of the data in the file

  // The row-major shape, outermost first: ne reversed. ne = [in, out] is the
  // matrix [out][in].
  std::vector<size_t> shape() const;
};

class GgufReader {
 public:
  // Maps and parses the file; throws std::runtime_error on any problem.
  explicit GgufReader(const std::string& path);

  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the (aligned) data section

  // ---- metadata ----
  // All key/values in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;  // nullptr when absent
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // The typed getters throw "<file>: metadata key 'k' is missing" or
  // "<file>: metadata key 'k' has type string, expected an integer".
  const GgufValue& get(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;   // any integer type (a uint64 must fit in int64)
  double get_float(const std::string& key) const;  // float32 or float64
  bool get_bool(const std::string& key) const;
  const GgufArray& get_array(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<float> get_float_array(const std::string& key) const;  // float32 (or float64, rounded)
  std::vector<int64_t> get_int_array(const std::string& key) const;  // any integer element type

  // ---- tensors ----
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;  // nullptr when absent
  const GgufTensorInfo& tensor(const std::string& name) const;       // throws when absent
  // The tensor's bytes inside the mapped file (already bounds-checked).
  std::span<const std::byte> tensor_data(const GgufTensorInfo& info) const;
  // Drops the pages of `range` (bytes of this file) from the process once a
  // caller is done with them (MappedFile::release).
  void release(std::span<const std::byte> range) const { file_.release(range); }
  // Converts an F32, F16 or BF16 tensor, or dequantizes a quantized one
  // (quant/dequantize.h: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K ... Q6_K),
  // to float32 into out (out.size() == n_elements). Other types throw, naming
  // the type.
  void read_tensor_floats(const GgufTensorInfo& info, std::span<float> out) const;

  // Tensor `name` checked to have the row-major shape `shape` (outermost
  // first, ne reversed, shapes padded with 1s as ggml pads ne): throws naming the
  // tensor when it is missing or has another shape.
  const GgufTensorInfo& tensor_with_shape(const std::string& name, std::span<const size_t> shape) const;
  // Its values as float32 (read_tensor_floats), row-major.
  std::vector<float> read_tensor_values(const std::string& name, std::span<const size_t> shape) const;
  // The tensor as float32 with the row-major shape `shape` (outermost first,
  // i.e. ne reversed; shapes compared padded with 1s). Throws when the
  // tensor is missing, has another shape or an unsupported type.
  template <size_t N>
  xt::xtensor<float, N> read_tensor(const std::string& name, const std::array<size_t, N>& shape) const {
    const auto& info = tensor_with_shape(name, std::span<const size_t>(shape));
    xt::xtensor<float, N> out(shape);
    read_tensor_floats(info, std::span<float>(out.data(), out.size()));
    return out;
  }

 private:
  void parse();
  void check_shape(const GgufTensorInfo& info, std::span<const size_t> want) const;
  [[noreturn]] void key_error(const std::string& key, const std::string& problem) const;

  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace astrai
