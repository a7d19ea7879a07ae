#pragma once
/// Device-side hash of a buffer's bytes, for the input-mutation check.
#include <cuda_runtime.h>

#include <cstddef>

namespace d2k {

/// Adds a position-mixed hash of the `n` bytes at `p` into *out (atomically), on stream `s`.
/// The caller checks the launch.
void launch_checksum_bytes(const void* p, std::size_t n, unsigned long long* out, cudaStream_t s);

}  // namespace d2k
