// The device side of the input checksum; host code lives in device_backend.cpp (plain C++).
#include "engine/checksum.h"

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

}  // namespace

void launch_checksum_bytes(const void* p, std::size_t n, unsigned long long* out, cudaStream_t s) {
  checksum_bytes_grid_stride<<<1024, 256, 0, s>>>(static_cast<const unsigned char*>(p), n, out);
}

}  // namespace d2k
