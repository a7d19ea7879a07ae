#pragma once
/// Checked CUDA calls and an owning device buffer, for the data and check libraries.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "core/cuda_util.h"

namespace d2k::data {

/// The shared owning buffer (core/cuda_util.h).
using ::d2k::DeviceBuffer;

/// Throws ::d2k::CudaError (core/cuda_error.h) naming the file, line, call text and CUDA error.
using ::d2k::cuda_check;

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

/// Checks a CUDA runtime call; throws ::d2k::CudaError with file, line and call text.
#define D2K_DATA_CUDA_CHECK(call) ::d2k::data::cuda_check((call), #call, __FILE__, __LINE__)
/// Checks the last kernel launch.
#define D2K_DATA_LAUNCH_CHECK() ::d2k::data::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
