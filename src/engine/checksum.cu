// The device side of the input checksum; host code lives in device_backend.cpp (plain C++).
#include "engine/checksum.h"

#include <algorithm>

namespace d2k {

namespace {

__device__ __forceinline__ unsigned long long mix64(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/// Order-independent hash: the sum over bytes of mix(position, byte). Position is mixed in so
/// that swapping two elements changes the hash.
__global__ void checksum_bytes_grid_stride(const unsigned char* p, std::size_t n, unsigned long long* out) {
  unsigned long long acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    acc += mix64((i << 8) | p[i]);
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

__global__ void count_words_grid_stride(const unsigned short* p, std::size_t n, unsigned short value, unsigned long long* out) {
  unsigned long long acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    acc += p[i] == value;
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0 && acc) atomicAdd(out, acc);
}

}  // namespace

void launch_count_words(const void* p, std::size_t n_words, unsigned short value, unsigned long long* out, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(1024, (n_words + 255) / 256 + 1));
  count_words_grid_stride<<<blocks, 256, 0, s>>>(static_cast<const unsigned short*>(p), n_words, value, out);
}

void launch_checksum_bytes(const void* p, std::size_t n, unsigned long long* out, cudaStream_t s) {
  checksum_bytes_grid_stride<<<1024, 256, 0, s>>>(static_cast<const unsigned char*>(p), n, out);
}

}  // namespace d2k
