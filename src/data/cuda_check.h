#pragma once
/// Checked CUDA calls and an owning device buffer, for the data and check libraries.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

namespace d2k::data {

/// Throws std::runtime_error naming the file, line, call text and CUDA error.
inline void cuda_check(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                             cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

/// Device memory owned by this object (cudaMalloc / cudaFree).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) cuda_check(cudaMalloc(&ptr_, bytes), "cudaMalloc", __FILE__, __LINE__);
  }
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
  ~DeviceBuffer() { reset(); }

  void reset() noexcept {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor path
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Scratch memory ordered on a stream: cudaMallocAsync / cudaFreeAsync where the device has
/// memory pools, else cudaMalloc and a synchronised cudaFree.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, cudaStream_t s) : stream_(s) {
    if (bytes == 0) return;
    int dev = 0, pools = 0;
    cuda_check(cudaGetDevice(&dev), "cudaGetDevice", __FILE__, __LINE__);
    cuda_check(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev), "cudaDeviceGetAttribute",
               __FILE__, __LINE__);
    pooled_ = pools != 0;
    if (pooled_) cuda_check(cudaMallocAsync(&ptr_, bytes, s), "cudaMallocAsync", __FILE__, __LINE__);
    else cuda_check(cudaMalloc(&ptr_, bytes), "cudaMalloc", __FILE__, __LINE__);
  }
  ~StreamScratch() {
    if (!ptr_) return;
    if (pooled_) {
      cudaFreeAsync(ptr_, stream_);
    } else {
      cudaStreamSynchronize(stream_);  // the stream's kernels may still use the memory
      cudaFree(ptr_);
    }
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
  bool pooled_ = false;
};

}  // namespace d2k::data

/// Checks a CUDA runtime call; throws std::runtime_error with file, line and call text.
#define D2K_DATA_CUDA_CHECK(call) ::d2k::data::cuda_check((call), #call, __FILE__, __LINE__)
/// Checks the last kernel launch.
#define D2K_DATA_LAUNCH_CHECK() ::d2k::data::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
