#pragma once
// Small helpers of the data/check GPU tests.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "data/cuda_check.h"

namespace d2k::test {

/// Skips the test when no CUDA device is present (so a stray run on a CPU machine is clear).
inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

inline std::vector<std::byte> to_host(const data::DeviceBuffer& b, std::size_t bytes) {
  std::vector<std::byte> h(bytes);
  if (bytes) D2K_DATA_CUDA_CHECK(cudaMemcpy(h.data(), b.get(), bytes, cudaMemcpyDeviceToHost));
  return h;
}

inline data::DeviceBuffer to_device(const void* src, std::size_t bytes) {
  data::DeviceBuffer b(bytes);
  if (bytes) D2K_DATA_CUDA_CHECK(cudaMemcpy(b.get(), src, bytes, cudaMemcpyHostToDevice));
  return b;
}

}  // namespace d2k::test

#define D2K_REQUIRE_GPU()                                   \
  do {                                                      \
    if (!::d2k::test::have_gpu()) GTEST_SKIP() << "no GPU"; \
  } while (0)
