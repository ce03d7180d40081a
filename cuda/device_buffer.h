// Owned device memory: one cudaMalloc, freed when the buffer goes. Running
// out of device memory is a clear error that says how much was asked for and
// how much was free.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace astrai::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws std::runtime_error naming `what`, the bytes needed and the bytes
  // free when the allocation fails.
  DeviceBuffer(size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(other.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// "1234.5 MiB"
std::string format_mib(size_t bytes);

}  // namespace astrai::cuda
