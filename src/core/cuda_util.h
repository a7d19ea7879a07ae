#pragma once
/// RAII device memory and streams, shared by every library of the harness (CUDA errors:
/// core/cuda_error.h).
#include <cuda_runtime_api.h>

#include "core/cuda_error.h"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace d2k {

/// Owns one cudaMalloc allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (!bytes) return;
    if (cudaError_t e = cudaMalloc(&ptr_, bytes); e != cudaSuccess) {
      (void)cudaGetLastError();
      // Out of memory names the request and what was free: which allocation did not fit.
      std::size_t free_b = 0, total_b = 0;
      const bool known = e == cudaErrorMemoryAllocation && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess;
      throw CudaError(e, "cudaMalloc of " + std::to_string(bytes) + " bytes" +
                             (known ? " (" + std::to_string(free_b) + " of " + std::to_string(total_b) +
                                          " bytes of device memory free)"
                                    : ""));
    }
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t size() const { return bytes_; }
  void reset() noexcept {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a failed free leaks at worst
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Owns a CUDA stream.
class Stream {
 public:
  Stream() { D2K_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { if (s_) cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace d2k
