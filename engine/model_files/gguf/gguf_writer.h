// Writes GGUF version 3 files: metadata of any value type and float32 tensors
// stored as F32, F16 or BF16 or quantized, with every tensor's data aligned to
// the file's alignment (general.alignment, 32 by default). A tensor's bytes
// are known in size before its values are (ne and type fix it), so write()
// lays out the header with every offset first and then streams the data: a
// tensor added with a producer is made, encoded, written and freed one at a
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "engine/model_files/gguf/gguf_types.h"

namespace astrai {

class GgufWriter {
 public:
  // A power-of-two alignment; other than the default 32, it is recorded as
  // the general.alignment metadata key.
  explicit GgufWriter(uint32_t alignment = 32);

  // Throws std::invalid_argument for a duplicate key, or an array whose
  // elements do not all have its element_type.
  void add_metadata(const std::string& key, GgufValue value);

  // A tensor with ggml dimensions ne (ne[0] varies fastest, 1 to 4 of them)
  // from data.size() == product(ne) float32 values, stored as `type`
  // (F32, F16 or BF16, 16-bit types rounded to nearest even; or Q8_0, Q4_0,
  // Q4_K, Q6_K, quantized as llama.cpp does, quant/quantize.h, whose rows
  // ne[0] must be whole blocks). Throws std::invalid_argument for a
  // duplicate name or bad arguments.
  void add_tensor(const std::string& name, std::vector<uint64_t> ne, std::span<const float> data, GgmlType type);

  // The same, with the values made only when write() reaches the tensor:
  // `produce` returns product(ne) float32 values (checked then; a wrong count
  // throws std::invalid_argument and no file is left). Arguments are checked
  // now, as above.
  using Producer = std::function<std::vector<float>()>;
  void add_tensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type, Producer produce);

  // A row-major xtensor: shape [out][in] is stored with ne = [in, out].
  template <size_t N>
  void add_tensor(const std::string& name, const xt::xtensor<float, N>& t, GgmlType type) {
    std::vector<uint64_t> ne(t.shape().rbegin(), t.shape().rend());
    add_tensor(name, std::move(ne), std::span<const float>(t.data(), t.size()), type);
  }

  // Writes the file (through a temporary beside it, renamed at the end).
  // Throws std::runtime_error naming the path when writing fails.
  void write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    uint64_t n_bytes;              // the size of its data in the file
    std::vector<std::byte> bytes;  // already converted to `type`, or
    Producer produce;              // its values, made when written
  };
  // Checks a new tensor's arguments; returns its data's size in bytes.
  uint64_t check_tensor(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type) const;
  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_set<std::string> keys_;
  std::vector<PendingTensor> tensors_;
  std::unordered_set<std::string> tensor_names_;
};

}  // namespace astrai
