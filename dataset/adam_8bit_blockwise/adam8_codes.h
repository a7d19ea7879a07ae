// adam_8bit_blockwise — the 8-bit state format every implementation shares: the block size, the
// two code maps (bitsandbytes' create_dynamic_map, built here from its definition), and the two
// ways of finding the code of a normalised state: exact nearest entry by binary search over the
// sorted fp32 map (the reference flow, and what bitsandbytes' quantize_2D does), and the
// closed-form index the expert computes from the map's structure. Plain C++ with __host__
// __device__ functions: the CPU tests run the very code the kernels run.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__CUDACC__)
#define ADAM8_HD __host__ __device__ __forceinline__
#else
#define ADAM8_HD inline
#endif

namespace adam8 {

/// Elements per quantisation block (one absmax per block).
inline constexpr int kBlock = 256;
/// Entries of each code map; index 127 of the signed map and index 0 of the unsigned one are 0.
inline constexpr int kCodes = 256;
inline constexpr int kSignedZero = 127;
/// Exponent bits of the dynamic map (create_dynamic_map's max_exponent_bits): decades 0..6.
inline constexpr int kDecades = 7;

/// The two maps, sorted ascending: m uses the signed one, v the unsigned one.
struct CodeMaps {
  float m[kCodes];
  float v[kCodes];
};

/// create_dynamic_map(signed, max_exponent_bits=7, total_bits=8), from its definition: for each
/// decade i = 0..6, the F midpoints of linspace(0.1, 1, F + 1) times 10^(i-6), F = 2^i (signed:
/// mirrored to negative values too) or 2^(i+1) (unsigned); then 0 and 1; sorted. Each entry is
/// computed in double and rounded once to fp32 (bitsandbytes computes it in fp32 torch ops: its
/// entries may differ from these in the last bit, which no rule here can see).
inline std::vector<double> dynamic_map(bool is_signed) {
  std::vector<double> d;
  for (int i = 0; i < kDecades; ++i) {
    const int f = is_signed ? 1 << i : 1 << (i + 1);
    const double scale = std::pow(10.0, i - (kDecades - 1));
    for (int j = 0; j < f; ++j) {
      const double lo = 0.1 + 0.9 * j / f, hi = 0.1 + 0.9 * (j + 1) / f;
      d.push_back(scale * (lo + hi) / 2.0);
      if (is_signed) d.push_back(-scale * (lo + hi) / 2.0);
    }
  }
  d.push_back(0.0);
  d.push_back(1.0);
  std::sort(d.begin(), d.end());
  return d;  // 2*127 + 2 = 254 + 2 = 256 entries
}

inline CodeMaps make_code_maps() {
  CodeMaps c{};
  const std::vector<double> s = dynamic_map(true), u = dynamic_map(false);
  for (int k = 0; k < kCodes; ++k) {
    c.m[k] = static_cast<float>(s[static_cast<std::size_t>(k)]);
    c.v[k] = static_cast<float>(u[static_cast<std::size_t>(k)]);
  }
  return c;
}

/// The index of the entry of the sorted fp32 `code` nearest to x, by binary search (ties to the
/// upper entry; x beyond the ends takes the end). Eight probes of the table.
ADAM8_HD int nearest_code_bsearch(const float* code, float x) {
  int lo = 0;
  for (int step = kCodes / 2; step > 0; step >>= 1)
    if (code[lo + step] <= x) lo += step;  // code[lo] <= x < code[lo + 2*step], or lo = 0
  if (lo == kCodes - 1 || x <= code[0]) return lo;
  const float mid = 0.5f * (code[lo] + code[lo + 1]);
  return x >= mid ? lo + 1 : lo;
}

/// The nearest code of x = state / absmax computed from the map's structure, without a table:
/// the decade from six thresholds, the position in the decade from one fused multiply-add, then
/// the two corrections the structure needs (the top of the previous decade is nearer than the
/// bottom of this one below 10^(i-7) * (1 + 1.8/F); near 0 the zero entry). fp32 throughout: it
/// agrees with nearest_code_bsearch except where x lies within a few fp32 ulps of the midpoint of
/// two entries (about 1e-7 of the elements; the comparison rule admits one code step there).
ADAM8_HD int nearest_code_arith(float x, bool is_signed) {
  const bool neg = x < 0.0f;
  if (neg && !is_signed) return 0;  // below the unsigned map: its first entry, 0
  const float a = fabsf(x);
  const int f6 = is_signed ? 64 : 128;  // entries in the top decade
  // Above the midpoint of the top decade's last mean and 1.0: the entry 1 (the signed map has no
  // -1: a negative state there takes the most negative entry, index 0).
  if (a >= 1.0f - 0.225f / static_cast<float>(f6)) return is_signed ? (neg ? 0 : kCodes - 1) : kCodes - 1;
  // Decade i: a in [10^(i-7), 10^(i-6)), i = 0 below 1e-6; t = a * 10^(6-i) in [0.1, 1).
  int i = 0;
  float s = 1e6f;
  if (a >= 1e-6f) { i = 1; s = 1e5f; }
  if (a >= 1e-5f) { i = 2; s = 1e4f; }
  if (a >= 1e-4f) { i = 3; s = 1e3f; }
  if (a >= 1e-3f) { i = 4; s = 1e2f; }
  if (a >= 1e-2f) { i = 5; s = 1e1f; }
  if (a >= 1e-1f) { i = 6; s = 1.0f; }
  const int f = is_signed ? 1 << i : 2 << i;       // entries in decade i
  const int first = is_signed ? (1 << i) - 1 : (2 << i) - 2;  // positive entries below decade i
  const float u = (a * s - 0.1f) * (static_cast<float>(f) / 0.9f);  // position in cells of the decade
  const int cell = static_cast<int>(floorf(u));
  int p = first + (cell < 0 ? 0 : cell > f - 1 ? f - 1 : cell);
  bool zero = false;
  if (i == 0) zero = a * s < (is_signed ? 0.275f : 0.1625f);  // half the smallest entry
  else if (u < 0.2f) p -= 1;                                  // nearer the previous decade's top
  if (is_signed) return zero ? kSignedZero : (neg ? kSignedZero - 1 - p : kSignedZero + 1 + p);
  return zero ? 0 : 1 + p;
}

/// The bucket table of the direct-index requantiser (nearest_code_lut). A bucket is the fp32
/// values of [0, 1] that share their exponent and top 7 mantissa bits (the float's bits >> 16):
/// 23 binades from 2^-23 to 1, 128 buckets each, and one bucket for 1 (and above). The finest
/// spacing of either map within a binade is wider than the binade's bucket (the unsigned map's top
/// decade: 0.9/128 against 0.5/128), so a bucket holds at most one midpoint between two entries;
/// below 2^-23 (half the smallest entry is 1.6e-7) the zero entry is the nearest.
inline constexpr int kLutShift = 16;
inline constexpr std::int32_t kLutLo = 0x34000000;  // the bits of 2^-23
inline constexpr std::int32_t kLutHi = 0x3f800000;  // the bits of 1.0f
inline constexpr int kLutEntries = ((kLutHi - kLutLo) >> kLutShift) + 1;  // 2945
inline constexpr std::uint32_t kLutLowMask = (1u << kLutShift) - 1;

ADAM8_HD std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
ADAM8_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// Bucket k's word: the index nearest to the bucket's low end (nearest_code_bsearch, so on the
/// positive side of a signed map), times 2^24, plus 2^24 minus the low 16 bits of the midpoint
/// inside the bucket (2^16 when there is none). Adding a value's low 16 bits carries into the top
/// byte exactly when the value is at or above that midpoint: nearest_code_lut's one addition.
ADAM8_HD std::uint32_t lut_word(const float* code, int k) {
  const std::uint32_t lo = static_cast<std::uint32_t>(kLutLo) + (static_cast<std::uint32_t>(k) << kLutShift);
  const int c = nearest_code_bsearch(code, bits_float(lo));
  std::uint32_t thr = kLutLowMask + 1;
  if (c < kCodes - 1 && k < kLutEntries - 1) {
    const std::uint32_t mid = float_bits(0.5f * (code[c] + code[c + 1]));
    if ((mid >> kLutShift) == (lo >> kLutShift)) thr = mid & kLutLowMask;
  }
  return (static_cast<std::uint32_t>(c) << 24) + ((1u << 24) - thr);
}

/// The nearest code of x by one lookup in `lut` (lut_word of every bucket of the map): the bucket
/// from x's bits clamped to [2^-23, 1], then one integer addition against the bucket's midpoint.
/// Over [0, 1] (and beyond, clamped) it is nearest_code_bsearch exactly, the same fp32 midpoints
/// and ties to the upper entry; a negative x of the signed map takes the mirror of |x|'s code
/// (the map is symmetric but for the 1: 255 mirrors to 0), so a tie there goes to the lower
/// magnitude instead. A negative x of the unsigned map clamps to the zero entry.
ADAM8_HD int nearest_code_lut(const std::uint32_t* lut, float x, bool is_signed) {
  const auto ib = static_cast<std::int32_t>(float_bits(x));
  const std::int32_t mag = is_signed ? (ib & 0x7fffffff) : ib;
  const std::int32_t cl = mag < kLutLo ? kLutLo : mag > kLutHi ? kLutHi : mag;
  const std::uint32_t w = lut[(cl - kLutLo) >> kLutShift];
  const int p = static_cast<int>((w + (static_cast<std::uint32_t>(cl) & kLutLowMask)) >> 24);
  if (!is_signed || ib >= 0) return p;
  const int mirror = 2 * kSignedZero - p;
  return mirror < 0 ? 0 : mirror;
}

}  // namespace adam8
