// Shared plumbing of the fuzz targets in tests/fuzz/.
//
// Each target is a function `int fuzz_<name>(const uint8_t* data, size_t size)`
// in namespace astrai::fuzz. ASTRAI_FUZZ_ENTRY turns it into libFuzzer's
// LLVMFuzzerTestOneInput in the libFuzzer build (-Dfuzz=true defines
// ASTRAI_LIBFUZZER); in the ordinary test build the same function is called by
// tests/fuzz/replay/test_fuzz_corpus.cpp on every committed corpus file, so
// each input the fuzzer ever found stays a regression test.
//
// A finding is a crash, a sanitizer report, a timeout, or a violated property:
// check() prints what was violated and aborts. Expected errors (bad input
// rejected with an exception) are not findings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include <sys/mman.h>
#include <unistd.h>

namespace astrai::fuzz {

// The targets (one per fuzz_<name>.cpp). Each returns 0, as libFuzzer wants.
int fuzz_gguf(const uint8_t* data, size_t size);
int fuzz_llama2c(const uint8_t* data, size_t size);
int fuzz_tokenizer_file(const uint8_t* data, size_t size);
int fuzz_tokenizer(const uint8_t* data, size_t size);
int fuzz_text_stream(const uint8_t* data, size_t size);
int fuzz_tool_calls(const uint8_t* data, size_t size);
int fuzz_request(const uint8_t* data, size_t size);
int fuzz_responses(const uint8_t* data, size_t size);
int fuzz_safetensors(const uint8_t* data, size_t size);
int fuzz_jinja(const uint8_t* data, size_t size);
int fuzz_schema(const uint8_t* data, size_t size);

// Aborts with a message when a property the target asserts does not hold.
inline void check(bool ok, const char* property) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", property);
  std::fflush(stderr);
  std::abort();
}

// An in-memory file (memfd) that the file readers open by path
// (/proc/self/fd/N): inputs never touch the disk, and MappedFile maps exactly
// the input's bytes, so a read past the end of the mapping that goes beyond
// the last page faults (and reads within it are caught by the bounds checks
// that _GLIBCXX_ASSERTIONS adds to std::span in the fuzz build).
class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("astrai-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) throw std::logic_error("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the file's contents with the bytes; returns its path.
  const std::string& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) throw std::logic_error("ftruncate failed");
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, off_t(done));
      if (n <= 0) throw std::logic_error("pwrite to memfd failed");
      done += size_t(n);
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// The one file every target reuses (a fuzzer runs inputs one after another).
inline MemoryFile& input_file() {
  static MemoryFile file;
  return file;
}

// Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF). Written here, independently of engine/text/utf8.h,
// to check that code's output.
inline bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (b < 0x80) { ++i; continue; }
    if ((b & 0xE0) == 0xC0) { n = 2; cp = b & 0x1F; }
    else if ((b & 0xF0) == 0xE0) { n = 3; cp = b & 0x0F; }
    else if ((b & 0xF8) == 0xF0) { n = 4; cp = b & 0x07; }
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace astrai::fuzz

#ifdef ASTRAI_LIBFUZZER
#define ASTRAI_FUZZ_ENTRY(function)                                               \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {      \
    return ::astrai::fuzz::function(data, size);                                  \
  }
#else
#define ASTRAI_FUZZ_ENTRY(function)
#endif
