#pragma once
/// Philox4x32-10 (Salmon et al., SC'11) and the stream layout of D2K-Bench's input generators.
/// Usable on host and device; integer arithmetic only, so host and device agree bit for bit.
/// docs/generators.md documents the layout: key = mix(seed, stream id), counter =
/// (element index low, element index high, sub-stream, 0).
#include <cstdint>
#include <string_view>

#include "data/hd.h"

namespace d2k::data {

/// A 128-bit Philox counter or output block.
struct Philox4 {
  std::uint32_t v[4];
};

/// A 64-bit Philox key, as two 32-bit words.
struct PhiloxKey {
  std::uint32_t k0 = 0, k1 = 0;
};

namespace philox_detail {
constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
}  // namespace philox_detail

/// Philox4x32 with 10 rounds: the Random123 reference function (kat_vectors "philox4x32 10").
D2K_HD Philox4 philox4x32_10(Philox4 c, PhiloxKey key) {
  using namespace philox_detail;
  std::uint32_t k0 = key.k0, k1 = key.k1;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c.v[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c.v[2];
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += kW0;  // the bump after round 10 is unused, harmless
    k1 += kW1;
  }
  return c;
}

/// SplitMix64's finaliser: a bijective 64-bit mix with full avalanche.
D2K_HD std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// 64-bit FNV-1a of a byte string.
constexpr std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = 0xCBF29CE484222325ull) {
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

/// Stream id of an input: FNV-1a of its name, continued over its position (little-endian
/// 4 bytes), so that two inputs never share a stream even if a task repeats a name.
constexpr std::uint64_t input_stream_id(std::string_view name, std::uint32_t position) {
  std::uint64_t h = fnv1a64(name);
  for (int b = 0; b < 4; ++b) {
    h ^= (position >> (8 * b)) & 0xFFu;
    h *= 0x100000001B3ull;
  }
  return h;
}

/// The Philox key of (seed, stream): mix64(seed ^ mix64(stream + golden)), split in two words.
D2K_HD PhiloxKey stream_key(std::uint64_t seed, std::uint64_t stream) {
  const std::uint64_t k = mix64(seed ^ mix64(stream + 0x9E3779B97F4A7C15ull));
  return PhiloxKey{static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
}

/// The random block of element `index` in sub-stream `sub`.
D2K_HD Philox4 philox_block(PhiloxKey key, std::uint64_t index, std::uint32_t sub) {
  return philox4x32_10(
      Philox4{{static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), sub, 0u}}, key);
}

/// Two 32-bit words joined as one 64-bit word (hi first).
D2K_HD std::uint64_t join64(std::uint32_t hi, std::uint32_t lo) {
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

/// High 64 bits of a 64x64-bit product.
D2K_HD std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<std::uint64_t>((static_cast<u128>(a) * b) >> 64);
#endif
}

/// floor(r * n / 2^64): maps a uniform 64-bit word onto [0, n) (bias below n / 2^64).
D2K_HD std::uint64_t bounded64(std::uint64_t r, std::uint64_t n) { return mulhi64(r, n); }

/// floor(r * n / 2^32) for a 32-bit word and a small n.
D2K_HD std::uint32_t bounded32(std::uint32_t r, std::uint32_t n) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(r) * n) >> 32);
}

}  // namespace d2k::data
