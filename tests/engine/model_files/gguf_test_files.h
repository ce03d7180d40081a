// Helpers shared by the GGUF tests: hand-assembled GGUF bytes and parsing
// bytes through a scratch file (the reader only reads files).
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "engine/model_files/gguf/gguf_reader.h"
#include "tests/engine/model_files/byte_builder.h"
#include "tests/support/shared_data.h"

namespace astrai::test {

// A GGUF v3 file: header with the given counts, then `body` (metadata and
// tensor infos as the test spelled them), zero padding to `alignment`, then `data`.
inline std::string gguf_file(uint64_t n_tensors, uint64_t n_kv, const std::string& body, const std::string& data = "",
                             size_t alignment = 32) {
  ByteBuilder b;
  b.raw("GGUF").u32(3).u64(n_tensors).u64(n_kv).raw(body).pad_to(alignment).raw(data);
  return b.bytes();
}

// A fresh scratch path for a test file.
inline std::filesystem::path scratch_file(const std::string& stem, const std::string& ext = ".gguf") {
  static std::atomic<int> counter{0};
  return scratch_dir() / (stem + "-" + std::to_string(counter++) + ext);
}

// Writes bytes to a scratch file and parses it.
inline GgufReader parse_gguf_bytes(const std::string& bytes) {
  const auto path = scratch_file("parse");
  write_file(path, bytes);
  return GgufReader(path.string());
}

// An anonymous in-memory file (memfd) reachable by a path, for tests that
// parse thousands of variants of a file: rewriting a disk file that often
// makes them slow on busy disks, and the readers only take paths.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("astrai-test", MFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("test: memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the file's contents with `bytes`.
  void set(std::string_view bytes) {
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size()))
      throw std::runtime_error("test: cannot write the memory file");
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// Metadata of all 13 types (and nested arrays) plus F32, F16 and BF16
// tensors, aligned to 64, spelled byte by byte.
inline std::string all_types_file() {
  ByteBuilder kv;
  kv.str("general.alignment").u32(4).u32(64);
  kv.str("u8").u32(0).u8(200);
  kv.str("i8").u32(1).le<int8_t>(-100);
  kv.str("u16").u32(2).u16(60000);
  kv.str("i16").u32(3).le<int16_t>(-30000);
  kv.str("u32").u32(4).u32(4000000000u);
  kv.str("i32").u32(5).i32(-2000000000);
  kv.str("f32").u32(6).f32(0.25f);
  kv.str("bool").u32(7).u8(1);
  kv.str("str").u32(8).str("h\xC3\xA9llo");
  kv.str("arr").u32(9).u32(5).u64(3).i32(1).i32(-2).i32(3);
  kv.str("u64").u32(10).u64((uint64_t(1) << 63) + 5);
  kv.str("i64").u32(11).le<int64_t>(-(int64_t(1) << 62));
  kv.str("f64").u32(12).le<double>(-0.125);
  kv.str("nested").u32(9).u32(9).u64(2);  // array of 2 arrays:
  kv.u32(8).u64(2).str("a").str("bc");    //   ["a", "bc"]
  kv.u32(8).u64(0);                       //   [] of strings
  // Tensor infos: name, n_dims, ne..., type, offset.
  kv.str("mat").u32(2).u64(3).u64(2).u32(0).u64(0);   // F32, 2 rows of 3
  kv.str("half").u32(1).u64(4).u32(1).u64(64);        // F16
  kv.str("bf").u32(3).u64(2).u64(1).u64(1).u32(30).u64(128);  // BF16
  ByteBuilder data;
  for (int i = 1; i <= 6; ++i) data.f32(float(i));
  data.pad_to(64).u16(0x3C00).u16(0xC000).u16(0x3800).u16(0x7BFF);  // 1, -2, 0.5, 65504
  data.pad_to(64).u16(0x3F80).u16(0xC000).pad_to(64);               // 1, -2
  return gguf_file(3, 15, kv.bytes(), data.bytes(), 64);
}


}  // namespace astrai::test
