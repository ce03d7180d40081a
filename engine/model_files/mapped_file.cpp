// Memory-mapped files and the bounds-checked byte cursor (see mapped_file.h).
#include "engine/model_files/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace astrai {
namespace {

[[noreturn]] void throw_errno(const std::string& path, const std::string& action, int err) {
  throw std::runtime_error(path + ": cannot " + action + " (" + std::strerror(err) + ")");
}

// Closes a file descriptor on every path out of the constructor.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) throw_errno(path, "open", errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw_errno(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(path + ": not a regular file");
  size_ = uint64_t(st.st_size);
  if (size_ == 0) return;  // mmap of length 0 is an error; an empty span is the honest answer
  void* p = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) throw_errno(path, "map", errno);
  data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::release(std::span<const std::byte> range) const {
  if (range.empty() || data_ == nullptr) return;
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const auto round_up = [&](uintptr_t x) { return (x + page - 1) / page * page; };
  // Whole pages around the range: a neighbour's page dropped too just comes
  // back from the page cache when it is read. The map starts on a page and
  // covers its last page in full, so the rounded range stays inside it.
  const auto map_begin = reinterpret_cast<uintptr_t>(data_);
  const auto begin = reinterpret_cast<uintptr_t>(range.data()) / page * page;
  const auto end = std::min(round_up(reinterpret_cast<uintptr_t>(range.data() + range.size())),
                            map_begin + round_up(uintptr_t(size_)));
  if (begin < map_begin || begin >= end) return;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice: a failure loses nothing
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::unmap() noexcept {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_t(size_));
  data_ = nullptr;
  size_ = 0;
}

ByteReader::ByteReader(std::span<const std::byte> bytes, std::string name)
    : bytes_(bytes), name_(std::move(name)) {}

std::span<const std::byte> ByteReader::read_bytes(uint64_t n, std::string_view what) {
  if (n > remaining()) {
    throw std::runtime_error(name_ + ": truncated at offset " + std::to_string(offset_) + " reading " +
                             std::string(what) + " (" + std::to_string(n) + " bytes needed, " +
                             std::to_string(remaining()) + " left)");
  }
  const auto out = bytes_.subspan(size_t(offset_), size_t(n));
  offset_ += n;
  return out;
}

void ByteReader::read_floats(std::span<float> out, std::string_view what) {
  // out.size() * 4 cannot overflow: out is an allocated array of floats.
  copy_le_floats(read_bytes(uint64_t(out.size()) * 4, what), out);
}

void ByteReader::seek(uint64_t offset) {
  if (offset > size()) {
    throw std::runtime_error(name_ + ": cannot seek to offset " + std::to_string(offset) + " past the end (" +
                             std::to_string(size()) + " bytes)");
  }
  offset_ = offset;
}

void ByteReader::fail(const std::string& problem) const {
  throw std::runtime_error(name_ + ": " + problem + " at offset " + std::to_string(offset_));
}

void copy_le_floats(std::span<const std::byte> bytes, std::span<float> out) {
  if (bytes.size() != out.size() * 4) throw std::logic_error("copy_le_floats: byte count is not 4 * float count");
  if (out.empty()) return;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
  } else {
    for (size_t i = 0; i < out.size(); ++i) {
      unsigned char b[4];
      std::memcpy(b, bytes.data() + 4 * i, 4);
      std::swap(b[0], b[3]);
      std::swap(b[1], b[2]);
      std::memcpy(&out[i], b, 4);
    }
  }
}

}  // namespace astrai
