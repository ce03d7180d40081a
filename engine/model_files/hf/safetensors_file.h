// Reads a safetensors file (Hugging Face's tensor format, the one model
// folders ship): an 8-byte little-endian header length N, N bytes of JSON
//   {"<tensor name>": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]},
//    ..., "__metadata__": {"format": "pt"}}
// then the data section, in which each tensor's bytes lie at [begin, end)
// (relative to the section's start, row-major, little-endian).
//
// The file is memory-mapped; tensor bytes are only touched when a tensor is
// read. Everything in the header is checked before it is trusted, as the
// reference implementation (the `safetensors` Rust crate) checks it: the header
// length against the file and a 100 MB limit, the JSON's structure, every
// dtype, every shape's element count and byte size (overflow-checked), every
// data range against its shape, and that the ranges tile the data section
// exactly (sorted by offset: no gap, no overlap, ending at the file's end). Any
// problem is a std::runtime_error naming the file and the tensor.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/model_files/mapped_file.h"

namespace astrai {

// Every dtype the safetensors format defines (1-byte and wider; the newer
// sub-byte F4/F6 types are not listed and so refused as unknown). Only F32,
// F16 and BF16 tensors can be read as float32; the others are listed and
// bounds-checked, and reading one throws naming its dtype.
enum class SafetensorsDType { BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64 };

std::optional<SafetensorsDType> parse_safetensors_dtype(std::string_view name);  // "BF16" -> BF16
std::string safetensors_dtype_name(SafetensorsDType dtype);                       // BF16 -> "BF16"
uint64_t safetensors_dtype_bytes(SafetensorsDType dtype);                         // bytes per element

// The safetensors crate's limit on the header (MAX_HEADER_SIZE).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;
// More dimensions than any real tensor has; a longer shape is refused.
inline constexpr size_t kSafetensorsMaxDims = 8;

struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<uint64_t> shape;  // row-major, outermost first ([] is a scalar)
  uint64_t begin = 0;           // data_offsets, relative to the data section
  uint64_t end = 0;
  uint64_t n_elements = 0;      // product of shape (1 for a scalar)
};

class SafetensorsFile {
 public:
  // Maps and parses the file; throws std::runtime_error on any problem.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  uint64_t data_offset() const { return data_offset_; }  // 8 + header length
  uint64_t file_size() const { return file_.size(); }

  // Tensors sorted by data offset (ties by name).
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  const SafetensorsTensorInfo* find_tensor(const std::string& name) const;  // nullptr when absent
  // "__metadata__" (string to string), empty when absent.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor's bytes inside the mapped file (already bounds-checked).
  std::span<const std::byte> tensor_data(const SafetensorsTensorInfo& info) const;
  // Converts an F32, F16 or BF16 tensor to float32 (out.size() == n_elements);
  // other dtypes throw naming the dtype.
  void read_tensor_floats(const SafetensorsTensorInfo& info, std::span<float> out) const;

  // The tensor `name` as float32, after checking that it exists and that its
  // shape is `shape` (before anything is allocated). `expected_from` says
  // where the expected shape comes from ("config.json") in the error.
  template <size_t N>
  xt::xtensor<float, N> read_tensor(const std::string& name, const std::array<size_t, N>& shape,
                                    const std::string& expected_from = "the caller") const {
    const auto& info = require_tensor(name);
    check_shape(info, std::span<const size_t>(shape), expected_from);
    xt::xtensor<float, N> out(shape);
    read_tensor_floats(info, std::span<float>(out.data(), out.size()));
    return out;
  }
  // The same as a vector of any rank's values.
  std::vector<float> read_tensor_values(const std::string& name, std::span<const size_t> shape,
                                        const std::string& expected_from = "the caller") const {
    const auto& info = require_tensor(name);
    check_shape(info, shape, expected_from);
    std::vector<float> out(size_t(info.n_elements));
    read_tensor_floats(info, out);
    return out;
  }

 private:
  void parse();
  const SafetensorsTensorInfo& require_tensor(const std::string& name) const;
  void check_shape(const SafetensorsTensorInfo& info, std::span<const size_t> want,
                   const std::string& expected_from) const;

  MappedFile file_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace astrai
