#pragma once
/// Device-side hash of a buffer's bytes, for the input-mutation check.
#include <cuda_runtime.h>

#include <cstddef>

namespace d2k {

/// Adds a position-mixed hash of the `n` bytes at `p` into *out (atomically), on stream `s`.
/// The caller checks the launch.
void launch_checksum_bytes(const void* p, std::size_t n, unsigned long long* out, cudaStream_t s);

/// Adds to *out the number of 16-bit words among the `n_words` at `p` equal to `value`, on `s`
/// (how much of a poisoned buffer is still poison). The caller checks the launch.
void launch_count_words(const void* p, std::size_t n_words, unsigned short value, unsigned long long* out, cudaStream_t s);

}  // namespace d2k
