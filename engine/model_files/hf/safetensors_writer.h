// Writes safetensors files (the layout is described in safetensors_file.h):
// float32 tensors stored as F32, F16 or BF16 (16-bit types round to nearest,
// ties to even, through float_formats.h), laid out back to back in the order
// they were added, with the JSON header padded with spaces to a multiple of 8
// bytes as the Python `safetensors` library pads it (so every tensor's data
// starts 8-byte aligned relative to the file when the sizes before it are).
// "__metadata__" always holds {"format": "pt"}, which transformers requires
// to load a file, plus whatever add_metadata adds.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/model_files/hf/safetensors_file.h"

namespace astrai {

class SafetensorsWriter {
 public:
  // Throws std::invalid_argument for the key "format" (always "pt").
  void add_metadata(const std::string& key, const std::string& value);

  // A row-major tensor of product(shape) values stored as `dtype` (F32, F16
  // or BF16). Throws std::invalid_argument for a duplicate or reserved name
  // ("__metadata__"), another dtype, or a size that disagrees with the shape.
  void add_tensor(const std::string& name, std::vector<uint64_t> shape, std::span<const float> values,
                  SafetensorsDType dtype);
  template <size_t N>
  void add_tensor(const std::string& name, const xt::xtensor<float, N>& t, SafetensorsDType dtype) {
    add_tensor(name, std::vector<uint64_t>(t.shape().begin(), t.shape().end()),
               std::span<const float>(t.data(), t.size()), dtype);
  }

  // Bytes the data section holds so far (for splitting a model into shards).
  uint64_t data_bytes() const { return data_.size(); }
  size_t tensor_count() const { return tensors_.size(); }
  std::vector<std::string> tensor_names() const;

  // The whole file as bytes, and the file itself (written through
  // "<path>.tmp", renamed at the end; std::runtime_error naming the path
  // when writing fails).
  std::string bytes() const;
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    SafetensorsDType dtype;
    std::vector<uint64_t> shape;
    uint64_t begin, end;
  };
  std::map<std::string, std::string> metadata_;
  std::vector<Entry> tensors_;
  std::unordered_set<std::string> names_;
  std::string data_;
};

// A tensor of a file written as it is made (write_safetensors_streamed).
struct SafetensorsPlannedTensor {
  std::string name;
  std::vector<uint64_t> shape;
};

// The file SafetensorsWriter writes for the same tensors added in the same
// order, byte for byte, holding one tensor at a time: the header (every
// offset follows from the shapes) goes first, then tensor i's values, asked
// of values(i) in order, each converted to `dtype` and written before the
// next is asked for. Written through "<path>.tmp" as write() is; throws
// std::invalid_argument for what add_tensor refuses (checked before anything
// is written, but for a values(i) of the wrong size, found when it is given).
void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsPlannedTensor>& tensors,
                                SafetensorsDType dtype, const std::function<std::vector<float>(size_t i)>& values);

}  // namespace astrai
