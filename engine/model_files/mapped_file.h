// Read-only access to model files: a memory map of a whole file (nothing is
// copied; pages come in as they are touched) and a bounds-checked cursor over
// bytes that reads little-endian values and throws, naming the file, the
// offset and the field, instead of ever reading past the end.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace astrai {

// A read-only, private memory map of a whole file. Move-only; unmaps on
// destruction. An empty file maps to an empty span.
class MappedFile {
 public:
  // Throws std::runtime_error "<path>: cannot open (reason)" and the like.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_t(size_)}; }
  const std::string& path() const { return path_; }

  // Drops the pages holding `range` (a part of bytes()) from the process's
  // resident set. The map is private and never written, so the pages stay in
  // the page cache and come back unchanged when touched again; only the
  // process stops counting them. Readers call it once a tensor is converted,
  // so that reading a model through the map never keeps the whole file
  // resident (docs/model-files.md, "Converting in bounded memory").
  void release(std::span<const std::byte> range) const;

 private:
  void unmap() noexcept;
  std::string path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

// A cursor over a byte span. Every read is checked against the end first.
class ByteReader {
 public:
  // `name` (usually the file path) starts every error message.
  ByteReader(std::span<const std::byte> bytes, std::string name);

  // A little-endian integer or IEEE float. `what` names
  // the field in the error: "<name>: truncated at offset X reading <what>
  // (N bytes needed, M left)".
  template <class T>
  T read(std::string_view what) {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                  "read<T> reads fixed-size numbers (read a bool as uint8_t and check it is 0 or 1)");
    const auto raw = read_bytes(sizeof(T), what);
    unsigned char b[sizeof(T)];
    std::memcpy(b, raw.data(), sizeof(T));
    if constexpr (std::endian::native == std::endian::big) {
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    }
    T value;
    std::memcpy(&value, b, sizeof(T));
    return value;
  }

  // The next n bytes (a view into the underlying data, valid while it lives).
  std::span<const std::byte> read_bytes(uint64_t n, std::string_view what);
  // n = out.size() little-endian float32 values into out.
  void read_floats(std::span<float> out, std::string_view what);
  // Moves the cursor to an absolute offset (<= size()).
  void seek(uint64_t offset);
  void skip(uint64_t n, std::string_view what) { read_bytes(n, what); }

  uint64_t offset() const { return offset_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - offset_; }
  const std::string& name() const { return name_; }

  // Throws std::runtime_error "<name>: <problem> at offset <offset()>".
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  std::span<const std::byte> bytes_;
  std::string name_;
  uint64_t offset_ = 0;
};

// Copies n = out.size() little-endian float32 values from `bytes`
// (4 * n bytes, any alignment) into out.
void copy_le_floats(std::span<const std::byte> bytes, std::span<float> out);

}  // namespace astrai
