// topk_topp_mask — the per-row decisions of the expert (expert.cu), shared with the host
// emulation in tests/unit/tasks/topk_topp_mask/ so that the CPU tests run this exact code:
// the order-preserving key, the radix digit levels, the choice of the bin that holds the k-th
// largest key, and the threshold decision over the sorted candidates (top-k, top-p by tie group,
// and the band in which fp32 statistics cannot decide top-p and the row is decided in fp64).
// Plain C++ with __host__ __device__ under nvcc.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TOPK_HD __host__ __device__ __forceinline__
#else
#define TOPK_HD inline
#endif

namespace topk {

/// Candidates a row may list on chip (keys of the bin that holds the k-th largest, and above).
constexpr int kCap = 2048;
/// Largest k the task allows (definition.json's constraint): a row can always list the keys
/// strictly above a tie group.
constexpr int kMaxK = 1024;
static_assert(kMaxK <= kCap, "keys above the k-th largest must fit the candidate buffer");

/// Radix digits, most significant first: 12 + 10 + 10 bits of the 32-bit key.
constexpr int kLevels = 3;
constexpr int kMaxBins = 1 << 12;
/// Level 0 reads key bits 31..20, level 1 bits 19..10, level 2 bits 9..0.
TOPK_HD int level_shift(int level) { return level == 0 ? 20 : level == 1 ? 10 : 0; }
TOPK_HD int level_bits(int level) { return level == 0 ? 12 : 10; }

/// Error of one fp32 term e = exp2f(t), t = (x - m) * c with c = log2(e) / temperature rounded to
/// fp32: exp2f is within 2 ulp (2^-22 relative), and t carries three fp32 roundings (x - m, c,
/// the product), 3 * 2^-24 * |t|, which exp2 turns into ln(2) * 3 * 2^-24 * |t| relative. Both
/// bounds doubled for margin.
constexpr double kTermRel = 4.8e-7;
constexpr double kTermRelPerT = 2.5e-7;

/// Order-preserving map of a float to uint32: a < b (as floats) iff key(a) < key(b); -0 maps to +0's
/// key so that the two zeros are one value, as they compare equal.
TOPK_HD std::uint32_t order_key(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
TOPK_HD float key_value(std::uint32_t key) {
  const std::uint32_t u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
TOPK_HD std::uint32_t digit(std::uint32_t key, int level) {
  return (key >> level_shift(level)) & ((1u << level_bits(level)) - 1u);
}
/// digit(order_key(x), 0) in fewer instructions (the expert's TOPK_LEAN form, its default): adding +0 maps
/// -0 to +0 (round to nearest; x + 0 is x for every other float, subnormals included: nothing is
/// built to flush them), then the sign's arithmetic shift flips all bits of a negative and only
/// the sign bit of a positive.
TOPK_HD std::uint32_t first_digit(float x) {
#if defined(__CUDA_ARCH__)
  const float y = __fadd_rn(x, 0.f);  // not contracted or folded away
#else
  volatile float zero = 0.f;  // kept from being folded away
  const float y = x + zero;
#endif
  std::uint32_t u;
  std::memcpy(&u, &y, sizeof u);
  const std::uint32_t key = u ^ (static_cast<std::uint32_t>(static_cast<std::int32_t>(u) >> 31) | 0x80000000u);
  return key >> 20;
}

/// The float f such that, for every non-NaN x, order_key(x) >= from iff x >= f (the expert's
/// TOPK_LEAN collecting compare, its default): the keys up to -inf's (0x007FFFFF; those below are negative NaNs'
/// bit patterns, which order_key gives no float) admit every non-NaN x, so -inf; any other from
/// reads back as the value whose key it is. The key 0x7FFFFFFF (-0's raw key, which order_key
/// maps to +0's) reads as -0, which compares equal to +0: the zeros and above, as the keys do. A
/// from among the positive NaNs' patterns reads as a NaN: nothing compares >= it, nor does any
/// non-NaN key reach it.
TOPK_HD float key_floor(std::uint32_t from) { return from <= 0x007FFFFFu ? -INFINITY : key_value(from); }

/// Whether `key` lies in the bucket [lo, hi] that level `level` refines.
TOPK_HD bool in_bucket(std::uint32_t key, std::uint32_t lo, std::uint32_t hi) { return key >= lo && key <= hi; }

/// Where the select stands for one row after a histogram level.
struct Bucket {
  std::uint32_t lo = 0, hi = 0xFFFFFFFFu;  ///< key range holding the k-th largest
  std::uint32_t above = 0;                  ///< keys > hi
  std::uint32_t in = 0;                     ///< keys in [lo, hi]
  int next_level = 0;                       ///< next level to histogram; kLevels when resolved
  bool listed = false;                      ///< resolved: the keys in [lo, hi] are collected too
};

/// After level `level`'s histogram of the keys in b.lo..b.hi: moves b to the bin holding the
/// k_eff-th largest key of the row and decides whether the row is resolved (its candidates fit
/// kCap, or the bin is a single value) or needs the next level. `acc` counts the keys in the
/// level's bins above `bin`, `count` those in it.
TOPK_HD void advance(Bucket& b, int level, std::uint32_t bin, std::uint32_t acc, std::uint32_t count) {
  const std::uint32_t width = 1u << level_shift(level);
  b.lo = b.lo + bin * width;  // b.lo's bits below the previous level's digit are 0
  b.hi = b.lo + (width - 1u);
  b.above += acc;
  b.in = count;
  if (b.above + b.in <= static_cast<std::uint32_t>(kCap)) {
    b.listed = true;
    b.next_level = kLevels;
  } else if (level + 1 == kLevels) {
    b.listed = false;  // a single value (lo == hi) tied more than kCap - above times
    b.next_level = kLevels;
  } else {
    b.next_level = level + 1;
  }
}

/// The serial form of the bin choice (the device does it with a warp scan): scanning bins from
/// the top, the first whose running count reaches `need` (= k_eff - keys above the bucket).
TOPK_HD void pick_bin(const std::uint32_t* hist, int nbins, std::uint32_t need, std::uint32_t* bin,
                      std::uint32_t* acc, std::uint32_t* count) {
  std::uint32_t a = 0;
  for (int i = nbins - 1; i >= 0; --i) {
    if (a + hist[i] >= need) {
      *bin = static_cast<std::uint32_t>(i);
      *acc = a;
      *count = hist[i];
      return;
    }
    a += hist[i];
  }
  *bin = 0;  // unreachable when the histogram holds >= need keys
  *acc = a;
  *count = 0;
}

/// Softmax statistics of (part of) a row relative to its maximum m, in log2 units
/// t = (x - m) * c: z = sum 2^t, w = sum 2^t * (-t) (the weight of the argument errors).
struct Stats {
  float m = -INFINITY;
  double z = 0, w = 0;
};
/// Combines two partial statistics (either may be empty).
TOPK_HD Stats merge(Stats a, Stats b, float c) {
  if (b.z == 0) return a;
  if (a.z == 0) return b;
  if (a.m < b.m) {
    const Stats t = a;
    a = b;
    b = t;
  }
  const double d = (static_cast<double>(b.m) - a.m) * c;  // <= 0
  const double f = exp2(d);
  Stats r;
  r.m = a.m;
  r.z = a.z + f * b.z;
  r.w = a.w + f * (b.w - d * b.z);
  return r;
}

/// Raises a running statistic's maximum to x > s.m: what was summed against the old maximum is
/// rescaled in fp64, and w takes the shift of every earlier term's argument.
TOPK_HD void raise_max(Stats& s, float x, float c) {
  if (s.z > 0) {
    const double d = (static_cast<double>(s.m) - x) * c;  // < 0
    const double f = exp2(d);
    s.w = f * (s.w - d * s.z);
    s.z *= f;
  }
  s.m = x;
}

/// Adds logit x to a thread's running statistics (online maximum: what was summed against an
/// older maximum is rescaled in fp64 when a larger logit arrives).
TOPK_HD void accumulate(Stats& s, float x, float c) {
  if (x > s.m) raise_max(s, x, c);
  const float t = (x - s.m) * c;
  const float e = exp2f(t);
  s.z += e;
  s.w += static_cast<double>(e) * -t;
}

/// accumulate with the error weight's terms summed in fp32 into `wf` (the expert's TOPK_W32
/// variant: one fp64 conversion per logit fewer). `wf` is folded into s.w at each new maximum and
/// by flush_w at the end. w only weighs the argument errors in the error bound: an fp32 sum of n
/// non-negative terms is within (n - 1) * 2^-24 relative (1.2e-4 for the 2048 terms of a thread
/// over a 2^20-logit row), far inside the bound's factor-2 margin (kTermRelPerT).
/// A new maximum x (rare: about ln n times over n logits; out of line and by value, so that the
/// per-logit path keeps its registers and no local memory).
#if defined(__CUDACC__)
__host__ __device__ __noinline__
#else
inline
#endif
Stats rescale_w32(Stats s, float wf, float x, float c) {
  if (s.z > 0) {
    const double d = (static_cast<double>(s.m) - x) * c;  // < 0
    const double f = exp2(d);
    s.w = f * (s.w + wf - d * s.z);
    s.z *= f;
  }
  s.m = x;
  return s;
}
TOPK_HD void accumulate_w32(Stats& s, float& wf, float x, float c) {
  if (x > s.m) {
    s = rescale_w32(s, wf, x, c);
    wf = 0;
  }
  const float t = (x - s.m) * c;
  const float e = exp2f(t);
  s.z += e;
  wf = fmaf(e, -t, wf);
}
TOPK_HD void flush_w(Stats& s, float& wf) {
  s.w += wf;
  wf = 0;
}

/// The per-thread part of the statistics in fp32 only (the expert's TOPK_C32 variant: no fp64
/// operation or conversion per logit): z as a compensated pair (hi + lo, Knuth's TwoSum: lo
/// collects each addition's exact rounding error) and w as in accumulate_w32. Folded into a
/// Stats (fp64) at each new maximum and by flush_c32. The pair's error is at most about
/// (n * 2^-24)^2 relative for n terms (Ogita, Rump and Oishi's Sum2), 1.5e-8 for the 2048 terms
/// of a thread over a 2^20-logit row: far inside the bound's factor-2 margin (kTermRel).
struct Part32 {
  float zh = 0, zl = 0, w = 0;
};
TOPK_HD void fold_c32(Stats& s, Part32& q) {
  s.z += static_cast<double>(q.zh) + static_cast<double>(q.zl);
  s.w += q.w;
  q = Part32{};
}
/// A new maximum x (rare; out of line and by value as rescale_w32).
#if defined(__CUDACC__)
__host__ __device__ __noinline__
#else
inline
#endif
Stats rescale_c32(Stats s, Part32 q, float x, float c) {
  fold_c32(s, q);  // the pair's w is in s now: the fp32 weight's rescale with nothing pending
  return rescale_w32(s, 0.f, x, c);
}
TOPK_HD void accumulate_c32(Stats& s, Part32& q, float x, float c) {
  if (x > s.m) {
    s = rescale_c32(s, q, x, c);
    q = Part32{};
  }
  const float t = (x - s.m) * c;
  const float e = exp2f(t);
  const float sum = q.zh + e;  // TwoSum: sum + err == q.zh + e exactly
  const float bp = sum - q.zh;
  const float err = (q.zh - (sum - bp)) + (e - bp);
  q.zh = sum;
  q.zl += err;
  q.w = fmaf(e, -t, q.w);
}

/// 2^t for t <= 0 as the hardware approximation computes it, results below 2^-126 flushed to 0
/// (the device's ex2.approx.ftz: exp2f's accuracy in the normal range, without exp2f's rescaling
/// for subnormal results). A flushed term is below 2^-126: over at most 2^20 logits that is under
/// 2^-106 of a z that is at least 1 (the maximum's own term), nothing against kTermRel's margin.
TOPK_HD float exp2_ftz(float t) {
#if defined(__CUDA_ARCH__)
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t));
  return e;
#else
  return t < -126.f ? 0.f : exp2f(t);
#endif
}

/// accumulate over a batch of N logits of one thread (the expert's TOPK_LEAN form, its default: the N
/// logits of one unrolled load round). The maximum moves once per batch, to the batch's maximum,
/// before any of its terms is taken: the per-logit compare and branch of the online form go. A
/// term's argument |t| is taken against a maximum at most the row's, so it is at most the |t| that
/// w weighs once the rescales have shifted it to the row's maximum: w still bounds the argument
/// errors. z sums the fp32 terms in fp64 as accumulate; w's batch part is an fp32 sum of at most
/// N non-negative terms, within N * 2^-24 relative (1e-6 for N = 16), far inside the factor-2
/// margin of kTermRelPerT; exp2_ftz as exp2f in the normal range.
template <int N>
TOPK_HD void accumulate_batch(Stats& s, const float (&x)[N], float c) {
  float bm = x[0];
  for (int i = 1; i < N; ++i) bm = fmaxf(bm, x[i]);
  if (bm > s.m) raise_max(s, bm, c);
  float wb = 0.f;
  for (int i = 0; i < N; ++i) {
    const float t = (x[i] - s.m) * c;
    const float e = exp2_ftz(t);
    s.z += e;
    wb = fmaf(e, -t, wb);
  }
  s.w += wb;
}

/// What the threshold decision needs about a row.
struct RowInput {
  std::int64_t k_eff;  ///< min(k, V)
  double top_p;        ///< 1 disables top-p
  float m, c;          ///< row maximum, log2(e) / temperature
  double z, w;         ///< statistics of the whole row (fp32 terms summed in fp64)
  Bucket bucket;       ///< the resolved bucket
};
/// The decision: kept = {x : key(x) >= tau_key}.
struct RowDecision {
  std::uint32_t tau_key = 0;
  int n_keep = 0;         ///< listed candidates kept (a prefix of the sorted list)
  bool tie_kept = false;  ///< the unlisted tie group is kept too (output needs a read pass)
  float inv_s = 0;        ///< 1 / sum of the kept terms
  bool uncertain = false; ///< top-p mass within the fp32 error of top_p * z: decide in fp64
};

TOPK_HD float term(std::uint32_t key, float m, float c) { return exp2f((key_value(key) - m) * c); }
TOPK_HD double term64(std::uint32_t key, float m, double inv_t) {
  return exp((static_cast<double>(key_value(key)) - m) * inv_t);
}

/// The threshold over `n` candidate keys sorted descending (the row's keys >= bucket.lo when
/// listed, else > bucket.hi with the tie group (bucket.lo, bucket.in) after them). With `exact`,
/// the terms, z and the top-p comparison are fp64 (z64 = the row's fp64 sum of exp((x-m)/T)).
TOPK_HD RowDecision decide(const RowInput& r, const std::uint32_t* keys, int n, bool exact, double z64,
                           double inv_t) {
  RowDecision d;
  const bool listed = r.bucket.listed;
  const std::uint32_t tk = listed ? keys[r.k_eff - 1] : r.bucket.lo;  // the k_eff-th largest key
  const double z = exact ? z64 : r.z;
  const double pz = r.top_p * z;
  const double z_err = exact ? 0 : r.top_p * (kTermRel * r.z + kTermRelPerT * r.w);
  const bool use_p = r.top_p < 1.0;
  double above = 0, above_err = 0, s = 0;  // mass of the groups kept so far, its error bound
  int i = 0;
  while (i < n && keys[i] >= tk) {
    int j = i;
    while (j < n && keys[j] == keys[i]) ++j;
    const double e = exact ? term64(keys[i], r.m, inv_t) : static_cast<double>(term(keys[i], r.m, r.c));
    if (use_p) {
      if (!exact && fabs(above - pz) <= above_err + z_err) d.uncertain = true;
      if (!(above < pz)) break;
    }
    d.tau_key = keys[i];
    d.n_keep = j;
    above += (j - i) * e;
    const double t = -static_cast<double>((key_value(keys[i]) - r.m) * r.c);
    above_err += (j - i) * e * (kTermRel + kTermRelPerT * t);
    i = j;
  }
  if (!listed) {  // the tie group at the k-th largest key, below every listed key
    const double e = exact ? term64(r.bucket.lo, r.m, inv_t) : static_cast<double>(term(r.bucket.lo, r.m, r.c));
    bool keep = i == n;  // every listed group above it was kept
    if (keep && use_p) {
      if (!exact && fabs(above - pz) <= above_err + z_err) d.uncertain = true;
      keep = above < pz;
    }
    if (keep) {
      d.tie_kept = true;
      d.tau_key = r.bucket.lo;
      above += r.bucket.in * e;
    }
  }
  // The renormaliser from the fp32 terms the output will hold (fp64 sum).
  for (int q = 0; q < d.n_keep; ++q) s += term(keys[q], r.m, r.c);
  if (d.tie_kept) s += static_cast<double>(r.bucket.in) * term(r.bucket.lo, r.m, r.c);
  d.inv_s = static_cast<float>(1.0 / s);
  return d;
}

}  // namespace topk
