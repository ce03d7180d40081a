// Test helpers for model-file tests: a little-endian byte builder written
// independently of the engine's writers (so files built with it check the
// readers against the format, not against our own encoder), and whole-file
// read/write.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace astrai::test {

class ByteBuilder {
 public:
  template <class T>
  ByteBuilder& le(T value) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));  // the test machines are little-endian (x86-64, aarch64)
    bytes_.append(reinterpret_cast<const char*>(b), sizeof(T));
    return *this;
  }
  ByteBuilder& u8(uint8_t v) { return le(v); }
  ByteBuilder& u16(uint16_t v) { return le(v); }
  ByteBuilder& u32(uint32_t v) { return le(v); }
  ByteBuilder& u64(uint64_t v) { return le(v); }
  ByteBuilder& i32(int32_t v) { return le(v); }
  ByteBuilder& f32(float v) { return le(v); }
  ByteBuilder& raw(std::string_view s) {
    bytes_ += s;
    return *this;
  }
  // A GGUF string: uint64 length, then the bytes.
  ByteBuilder& str(std::string_view s) { return u64(s.size()).raw(s); }
  // Zero bytes up to the next multiple of `alignment`.
  ByteBuilder& pad_to(size_t alignment) {
    while (bytes_.size() % alignment) bytes_ += '\0';
    return *this;
  }
  size_t size() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("test: cannot write " + path.string());
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("test: cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace astrai::test
