// w4a16_gemv — expert: int4 weights dequantised in registers and multiplied on the tensor cores
// (mma.sync m16n8k16, bf16 in, fp32 accumulate), each packed weight read from DRAM once.
//
//   y[b, n] = bf16( sum_g scales[n, g] · sum_{k in group g} x[b, k] · (q[n, k] - 8) )
//
// Compulsory traffic is half a byte per weight plus the scales (1/64 byte per weight); x (at most
// 16 x 28672 bf16 = 917 KB) stays in L2/L1 and is re-read per CTA. At B = 1 the H200 streams
// weights at ~9.6e12 per second, too fast for CUDA-core fp32 arithmetic (a conversion, a
// subtraction and an FFMA per weight is ~3 instructions, at the issue limit of ~3.3e13 lane
// instructions per second), so the multiply-adds go to the tensor cores, which also make B = 16
// cost the same instructions as B = 1. Per weight the CUDA cores do ~1.4 instructions of
// dequantisation:
//   1. dequantise by magic number: (w >> 4j) & 0x000F000F | 0x43004300 is the bf16 pair
//      (128 + q_j, 128 + q_{j+4}) (0x4300 = 128.0, whose ulp is 1, so the nibble lands in the
//      mantissa as an integer); one bf16x2 FMA subtracts 136 exactly, giving (q - 8) in bf16:
//      one shift, one LOP3 and one HFMA2 per two weights. No I2F, no lookup table.
//   2. the k order inside an mma is free (a sum): thread (g, t) of a warp feeds the A fragment
//      with words 4t..4t+3 of each group of rows g and g + 8 (one 16-byte load per row and
//      group), the pairs (q_j, q_{j+4}) in the slots (2t, 2t+1) and (2t+8, 2t+9); the x (B)
//      fragment is permuted the same way with two PRMTs per word of eight values.
//   3. per group of 128: 8 mma steps accumulate an fp32 partial from zero, then one FFMA per
//      output applies the group's scale: the scale never touches bf16, so the products are exact
//      and every sum is fp32 (the spec's precision; no bf16 rounding of the weight at all).
//   4. dataflow: a CTA owns 32 rows (two m16 tiles per warp: the x fragments of a group serve
//      both) and all of K; its warps split K by groups (warp w takes groups w, w + W, ...: split-K
//      inside the CTA, so every N gets enough warps without a global reduction), reduce their
//      fp32 sums through shared memory in a fixed order, and write y once. The next group's
//      weights and scales (and for B <= 8 its x) are loaded (weights with 16-byte
//      ld.global.nc.L1::no_allocate) before the current group's arithmetic: two groups of loads
//      in flight per warp, ~2 KB, ~32 KB per SM at 16 warps (Little's law at 4.8 TB/s and
//      ~0.8 us under load asks ~29 KB per SM). ptxas: 102 registers (B <= 8), 128 (B <= 16),
//      no spills: 2 CTAs of 256 threads per SM.
// Batch: B <= 8 uses one n8 tile (rows of x beyond B are zero fragments), B <= 16 two.
//
// Variants considered:
//   a. CUDA-core GEMV, a warp per row, fp32 FFMA per weight after a magic-number conversion:
//      ~3 instructions per weight, issue-bound near 75% of SOL at B = 1 and 16x the FFMAs at
//      B = 16; rejected for the tensor-core form.
//   b. bf16 HFMA2 accumulation within a group (the classic fast GEMV): half the instructions but
//      bf16 sums, which the task's rule rejects (tests/unit/tasks/w4a16_gemv).
//   c. dequantise into shared memory then mma (Marlin without its offline weight shuffle): an
//      extra STS/LDS round trip per weight; the register path needs no shuffle because the k
//      order inside an mma is free.
//   d. (chosen) registers only, split-K over the CTA's warps, 32 rows per CTA.
//   e. grid-level split-K with fp32 atomics: one more launch (zeroing) or a counter per tile;
//      only needed where N/32 CTAs cannot fill the GPU, which the in-CTA split covers.
//   f. x staged in shared memory: with K split over the CTA's warps a CTA needs all of x
//      (B·K·2 bytes, up to 917 KB), so only a K-slice per iteration would fit, with a barrier
//      per slice; x's 16-byte read-only loads hit L1 (every CTA on an SM reads the same x) and
//      land directly in fragment registers, so no staging and no barriers.
// Times on the H200: docs/results/w4a16_gemv.md (2026-12-01: 51.2 / 58.6 / 59.7% of the
// calibrated 4.29 TB/s at B = 1, issue #15 asks 75%).
// Why the measured time exceeds the SOL (from those numbers and this code; not profiled):
//   - the stream, not the tail: 8192 x 28672 is one wave (256 CTAs on 264 slots, 28 groups per
//     warp) and still reaches only 59.7%. A line through the three B = 1 points gives a marginal
//     2.74 TB/s (31.6 us for the 86.5 MB between 8192^2 and the 28672 shapes) plus ~3.2 us fixed:
//     the steady read runs at ~61% of the 4.52 TB/s read-only rate of docs/results/calibrate-
//     2026-11-29.md, and 8192^2 (bar 10.77 us) also needs most of that fixed time back.
//   - bytes in flight: the register double buffer holds at most two groups (2 x 2 KB) per warp,
//     and the load of group i+1 issues only when group i-1's arithmetic is done, so an SM has
//     32-64 KB of weights in flight, ~4-8 MB on the GPU. The arithmetic between loads is ~240 issue
//     slots per warp and group (64 LOP3, 48 SHF, 64 HFMA2, 16 HMMA, 16 PRMT, loads, FFMA) for 2 KB:
//     about half of the SM's issue rate at 4.3 TB/s, which delays the next loads further.
//   - the tail is secondary: 896 CTAs at N = 28672 are 3.39 waves (a last wave of 39%), and the
//     28672 x 8192 row is at 58.6%, no worse than the one-wave 8192 x 28672.
// So the variants below put more bytes in flight without registers (the copy engine's L2
// prefetch, or 256-byte L2 fills) and take the HFMA2 out of the dequantisation:
//   pf4       contiguous K range per warp; each warp has the copy engine fetch its next 4-8
//             groups of all 32 rows into L2 (cp.async.bulk.prefetch.L2, 256 B per row and op),
//             and the CTA's scales at the start. The per-lane addresses make ptxas loop over the
//             lanes (R2UR + UBLKPF + BRA.U.ANY): ~8 issue slots per op, ~+25% issue.
//   l2blk     contiguous K range per warp, weight loads with .L2::256B: a miss fills the 256-byte
//             block, the warp's next three groups of that row; no extra instruction.
//   l2blkpf4  both.    l2blkpf4o: both plus the offset form (W4A16_OFFSET_MMA, B <= 8): A holds
//             128 + q (SHF + LOP3 per pair, no HFMA2) and p = mma - 136 · sum(x) per group, the
//             x sums from one all-ones mma per step shared by both m16 tiles: ~-20% issue.
//   spf2      the default strided split with 2 CTA steps (512 B per row each) prefetched into L2
//             by one warp per step: 32 ops per step instead of 32 per warp, ~+13% issue.
//   spf4o     4 steps ahead plus the offset form.
// Prefetched and not yet read (L2 is 60 MB): pf4* 4-8 groups per warp ahead, 8-16 KB, up to
// 34 MB on the GPU (at 8192 x 8192 that is the whole matrix, requested in the first iteration);
// spf2 2-3 CTA steps of 16 KB, 8-13 MB; spf4o 4-5 steps, 17-21 MB.
// Variants built (`// %VARIANT%` lines; measured by scripts/gpu/checks/t-w4a16.sh):
//   %VARIANT% warps16 -DW4A16_WARPS=16
//   %VARIANT% rows16 -DW4A16_MTILES=1
//   %VARIANT% pf4 -DW4A16_KSPLIT=1 -DW4A16_PREFETCH=4
//   %VARIANT% l2blkpf4 -DW4A16_KSPLIT=1 -DW4A16_L2_256B=1 -DW4A16_PREFETCH=4
//   %VARIANT% l2blk -DW4A16_KSPLIT=1 -DW4A16_L2_256B=1
//   %VARIANT% l2blkpf4o -DW4A16_KSPLIT=1 -DW4A16_L2_256B=1 -DW4A16_PREFETCH=4 -DW4A16_OFFSET_MMA=1
//   %VARIANT% spf2 -DW4A16_PREFETCH_STEPS=2
//   %VARIANT% spf4o -DW4A16_PREFETCH_STEPS=4 -DW4A16_OFFSET_MMA=1
// warps16: 16 warps split K (one CTA per SM, fewer CTAs for the tail); rows16: 16 rows per CTA
// (more, shorter CTAs: a smaller tail at N = 28672, half the reuse of the x fragments).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

#ifndef W4A16_WARPS
#define W4A16_WARPS 8
#endif
#ifndef W4A16_MTILES
#define W4A16_MTILES 2
#endif
// How a CTA's warps split K: 0, warp w takes groups w, w + W, ... (the CTA's warps together read
// 512 contiguous bytes of each row at a time); 1, warp w takes the contiguous range
// [w·G/W, (w+1)·G/W) (each warp streams its own stretch of every row, so that what it will read
// next can be fetched ahead of it: W4A16_PREFETCH, W4A16_L2_256B).
#ifndef W4A16_KSPLIT
#define W4A16_KSPLIT 0
#endif
// Groups of each row that a warp has the copy engine fetch into L2 ahead of its loads
// (cp.async.bulk.prefetch.L2, one per row and 4 groups = 256 bytes); 0: none. Needs W4A16_KSPLIT 1.
#ifndef W4A16_PREFETCH
#define W4A16_PREFETCH 0
#endif
// With the strided split (W4A16_KSPLIT 0): CTA steps ahead that the copy engine fetches into L2.
// Step s is groups [s·W, (s+1)·W), 512 contiguous bytes of each row at W = 8, the CTA's warps'
// iteration s; warp s mod W, at its iteration s, has step s + D fetched (lane r: row r), so each
// step costs 32 prefetches (not 32 per warp) and one warp in W pays them. 0: none.
#ifndef W4A16_PREFETCH_STEPS
#define W4A16_PREFETCH_STEPS 0
#endif
// 1: the A fragments carry 128 + q (one SHF and one LOP3 per pair, no HFMA2) and the offset is
// taken out per group in fp32: p = mma(x, 128 + q) - 136 · sum_k x, the x sums from one more mma
// per step with an all-ones A (shared by the warp's m16 tiles).
#ifndef W4A16_OFFSET_MMA
#define W4A16_OFFSET_MMA 0
#endif
// 1: the weight loads carry .L2::256B, so each miss fills the 256-byte block around it (the
// warp's next three groups of that row with W4A16_KSPLIT 1).
#ifndef W4A16_L2_256B
#define W4A16_L2_256B 0
#endif

namespace {

constexpr int kGroup = 128;              // quantisation group along K
constexpr int kMTiles = W4A16_MTILES;    // m16 tiles (of weight rows) per warp
constexpr int kRowsPerCta = 16 * kMTiles;
constexpr int kMaxWarps = 16;
static_assert(W4A16_WARPS >= 1 && W4A16_WARPS <= kMaxWarps, "W4A16_WARPS in [1, 16]");
constexpr bool kContiguousK = W4A16_KSPLIT != 0;
constexpr bool kOffsetMma = W4A16_OFFSET_MMA != 0;
constexpr int kPrefetchGroups = W4A16_PREFETCH;
constexpr int kPrefetchChunk = 4;  // groups per bulk prefetch: 256 bytes of a row
constexpr int kPrefetchSteps = W4A16_PREFETCH_STEPS;
static_assert(kPrefetchSteps == 0 || !kContiguousK, "W4A16_PREFETCH_STEPS is for the strided split (W4A16_KSPLIT=0)");
static_assert(kPrefetchGroups == 0 || (kContiguousK && kPrefetchGroups % kPrefetchChunk == 0),
              "W4A16_PREFETCH needs W4A16_KSPLIT=1 and a multiple of 4 groups");

// ---- register-level pieces ------------------------------------------------------------------

/// 16 bytes of streamed weights: read once, so no L1 allocation.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
#if W4A16_L2_256B
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#else
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#endif
  return v;
}

/// Has the copy engine fetch [p, p + bytes) into L2 (p and bytes multiples of 16): bytes in flight
/// from DRAM that hold no register and no shared memory.
__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

/// The bf16 pair (q_j - 8, q_{j+4} - 8) of word w, exact: 0x4300 | q is 128 + q in bf16, and the
/// FMA (v · 1 - 136) is exact because the result is a small integer.
__device__ __forceinline__ uint32_t code_pair(uint32_t w, int j) {
  const uint32_t v = ((w >> (4 * j)) & 0x000F000Fu) | 0x43004300u;
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(v), "r"(0x3F803F80u), "r"(0xC308C308u));
  return d;
}

/// The bf16 pair (128 + q_j, 128 + q_{j+4}) of word w, exact (W4A16_OFFSET_MMA).
__device__ __forceinline__ uint32_t code_pair_biased(uint32_t w, int j) {
  return ((w >> (4 * j)) & 0x000F000Fu) | 0x43004300u;
}

/// d = a · b + d on the tensor cores: A 16x16 (row), B 16x8 (col), bf16; D fp32.
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float bf16_bits_to_float(unsigned short b) { return __uint_as_float(uint32_t(b) << 16); }

/// One group's weights and scales for the warp's rows: rows g and g + 8 of each m16 tile.
struct WeightFrag {
  uint4 w[kMTiles][2];   // words 4t..4t+3 of the group
  float s[kMTiles][2];   // the group's scale of each row
};

/// x of one group for NB n8 tiles as loaded: per word u (0..3) of the thread's 4 words, eight
/// consecutive bf16 (x0 x1) (x2 x3) (x4 x5) (x6 x7) of batch row nb·8 + g.
template <int NB>
struct XRaw {
  uint4 v[NB][4];
};

/// The B registers of steps 2u and 2u+1 from word u's eight x values, pairs permuted to
/// (x_j, x_{j+4}) as the weight pairs are: slot pairs (2t, 2t+1) and (2t+8, 2t+9) of each step.
__device__ __forceinline__ void x_pairs(const uint4& v, uint32_t (&b)[4]) {
  b[0] = __byte_perm(v.x, v.z, 0x5410);  // (x0, x4)  step 2u
  b[1] = __byte_perm(v.x, v.z, 0x7632);  // (x1, x5)  step 2u
  b[2] = __byte_perm(v.y, v.w, 0x5410);  // (x2, x6)  step 2u+1
  b[3] = __byte_perm(v.y, v.w, 0x7632);  // (x3, x7)  step 2u+1
}

/// L2 prefetch of the scales of rows [row0, row0 + kRowsPerCta) (one contiguous block), rounded
/// in to 16 bytes so that it stays inside the scales array.
__device__ __forceinline__ void prefetch_scales(const __nv_bfloat16* scales, int row0, int N, int G) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(scales);
  const uintptr_t lo = (base + size_t(row0) * G * 2 + 15) & ~uintptr_t{15};
  const uintptr_t hi = (base + size_t(min(row0 + kRowsPerCta, N)) * G * 2) & ~uintptr_t{15};
  if (lo < hi) prefetch_l2(reinterpret_cast<const void*>(lo), static_cast<uint32_t>(hi - lo));
}

// ---- the kernel ------------------------------------------------------------------------------

template <int NB>
__global__ void __launch_bounds__(kMaxWarps * 32)
    w4a16_mma_splitk(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ qweight,
                     const __nv_bfloat16* __restrict__ scales, __nv_bfloat16* __restrict__ y, int B, int N, int K) {
  extern __shared__ float red[];  // [warps][kRowsPerCta][NB * 8] fp32 partial sums
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;  // mma groupID and thread-in-group
  const int G = K / kGroup, words_per_row = K / 8;
  const int row0 = blockIdx.x * kRowsPerCta;

  // Row pointers, clamped to N - 1 so that loads stay in bounds (results of rows >= N are dropped).
  const uint4* wrow[kMTiles][2];
  const unsigned short* srow[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = min(row0 + mt * 16 + h * 8 + g, N - 1);
      wrow[mt][h] = reinterpret_cast<const uint4*>(qweight + static_cast<size_t>(r) * words_per_row) + t;
      srow[mt][h] = reinterpret_cast<const unsigned short*>(scales) + static_cast<size_t>(r) * G;
    }
  auto load_weights = [&](WeightFrag& f, int gi) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f.w[mt][h] = load_stream(wrow[mt][h] + gi * 4);
        f.s[mt][h] = bf16_bits_to_float(__ldg(srow[mt][h] + gi));
      }
  };
  auto load_x = [&](XRaw<NB>& xr, int gi) {
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const int bi = nb * 8 + g;
      const uint4* xp = reinterpret_cast<const uint4*>(x + static_cast<size_t>(bi) * K + gi * kGroup + 32 * t);
#pragma unroll
      for (int u = 0; u < 4; ++u) xr.v[nb][u] = bi < B ? __ldg(xp + u) : make_uint4(0, 0, 0, 0);
    }
  };

  // With one n8 tile the next group's x is prefetched with its weights (16 more registers); with
  // two, x is loaded at the top of the iteration (prefetching it would pass 128 registers).
  // W4A16_OFFSET_MMA's x sums take 4 registers more: there, x is loaded at the top of the iteration
  // (an L1 hit: every CTA of the SM reads the same x), and the offset form is for one n8 tile only.
  constexpr bool kOffset = kOffsetMma && NB == 1;
  constexpr bool kPrefetchX = NB == 1 && !kOffset;
  // The warp's groups: first, first + step, ... below last.
  const int g_first = kContiguousK ? warp * G / warps : warp;
  const int g_last = kContiguousK ? (warp + 1) * G / warps : G;
  const int g_step = kContiguousK ? 1 : warps;

  // L2 prefetch: lane r fetches row r of the CTA (rows past N clamped, as the loads are).
  const uint32_t* pf_row = qweight + static_cast<size_t>(min(row0 + (lane % kRowsPerCta), N - 1)) * words_per_row;
  auto prefetch_groups = [&](int from, int to) {  // groups [from, to) of the lane's row
    if (lane < kRowsPerCta && from < to) prefetch_l2(pf_row + from * 16, static_cast<uint32_t>(to - from) * 64u);
  };
  if constexpr (kPrefetchGroups > 0) {
    prefetch_groups(g_first, min(g_last, g_first + kPrefetchGroups));
    if (threadIdx.x == 0) prefetch_scales(scales, row0, N, G);
  }
  auto prefetch_step = [&](int st) { prefetch_groups(st * warps, min(G, (st + 1) * warps)); };
  if constexpr (kPrefetchSteps > 0) {
    for (int st = warp; st < kPrefetchSteps; st += warps) prefetch_step(st);
    if (threadIdx.x == 0) prefetch_scales(scales, row0, N, G);
  }
  int it = 0;  // the warp's iteration (strided split: the CTA step)

  float acc[kMTiles][NB][4] = {};
  WeightFrag cur, nxt;
  XRaw<NB> xc, xn;
  int gi = g_first;
  if (gi < g_last) {
    load_weights(cur, gi);
    if constexpr (kPrefetchX) load_x(xc, gi);
  }
#pragma unroll 2  // two copies of the body let cur/nxt swap roles instead of being copied
  for (; gi < g_last; gi += g_step) {
    if constexpr (kPrefetchGroups > 0) {
      if ((gi - g_first) % kPrefetchChunk == 0)
        prefetch_groups(gi + kPrefetchGroups, min(g_last, gi + kPrefetchGroups + kPrefetchChunk));
    }
    if constexpr (kPrefetchSteps > 0) {
      if (it % warps == warp) prefetch_step(it + kPrefetchSteps);
      ++it;
    }
    const bool more = gi + g_step < g_last;
    if (more) load_weights(nxt, gi + g_step);  // the next group in flight during this one
    if constexpr (kPrefetchX) {
      if (more) load_x(xn, gi + g_step);
    } else {
      load_x(xc, gi);
    }
    uint32_t xb[NB][4][4];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int u = 0; u < 4; ++u) x_pairs(xc.v[nb][u], xb[nb][u]);
    // W4A16_OFFSET_MMA: xs[nb][i] = sum of the group's x over k for column 2t + (i & 1) (every row
    // of an all-ones A gives the same sum).
    float xs[NB][4] = {};
    if constexpr (kOffset) {
      constexpr uint32_t kOnes = 0x3F803F80u;  // bf16 (1, 1)
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int nb = 0; nb < NB; ++nb)
            mma_bf16(xs[nb], kOnes, kOnes, kOnes, kOnes, xb[nb][u][2 * half], xb[nb][u][2 * half + 1]);
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      float p[NB][4] = {};
      const uint32_t w_lo[4] = {cur.w[mt][0].x, cur.w[mt][0].y, cur.w[mt][0].z, cur.w[mt][0].w};
      const uint32_t w_hi[4] = {cur.w[mt][1].x, cur.w[mt][1].y, cur.w[mt][1].z, cur.w[mt][1].w};
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int half = 0; half < 2; ++half) {  // step 2u + half: pairs (2·half) and (2·half + 1)
          auto pair = [](uint32_t w, int j) { return kOffset ? code_pair_biased(w, j) : code_pair(w, j); };
          const uint32_t a0 = pair(w_lo[u], 2 * half), a1 = pair(w_hi[u], 2 * half);
          const uint32_t a2 = pair(w_lo[u], 2 * half + 1), a3 = pair(w_hi[u], 2 * half + 1);
#pragma unroll
          for (int nb = 0; nb < NB; ++nb)
            mma_bf16(p[nb], a0, a1, a2, a3, xb[nb][u][2 * half], xb[nb][u][2 * half + 1]);
        }
      if constexpr (kOffset) {
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int i = 0; i < 4; ++i) p[nb][i] = fmaf(-136.f, xs[nb][i], p[nb][i]);
      }
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {  // c0, c1: row g; c2, c3: row g + 8
        acc[mt][nb][0] = fmaf(cur.s[mt][0], p[nb][0], acc[mt][nb][0]);
        acc[mt][nb][1] = fmaf(cur.s[mt][0], p[nb][1], acc[mt][nb][1]);
        acc[mt][nb][2] = fmaf(cur.s[mt][1], p[nb][2], acc[mt][nb][2]);
        acc[mt][nb][3] = fmaf(cur.s[mt][1], p[nb][3], acc[mt][nb][3]);
      }
    }
    cur = nxt;
    if constexpr (kPrefetchX) xc = xn;
  }

  // Split-K reduction over the warps in a fixed order (deterministic), one bf16 rounding.
  constexpr int kCols = NB * 8;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = mt * 16 + g + (i >> 1) * 8, c = nb * 8 + 2 * t + (i & 1);
        red[(warp * kRowsPerCta + r) * kCols + c] = acc[mt][nb][i];
      }
  __syncthreads();
  for (int e = threadIdx.x; e < B * kRowsPerCta; e += blockDim.x) {
    const int b = e / kRowsPerCta, r = e % kRowsPerCta, n = row0 + r;
    if (n >= N) continue;
    float s = 0.f;
    for (int w = 0; w < warps; ++w) s += red[(w * kRowsPerCta + r) * kCols + b];
    y[static_cast<size_t>(b) * N + n] = __float2bfloat16_rn(s);
  }
}

// ---- host side -------------------------------------------------------------------------------

template <int NB>
void launch(const d2k_args* args, const __nv_bfloat16* x, const uint32_t* qw, const __nv_bfloat16* sc,
            __nv_bfloat16* y, int B, int N, int K, cudaStream_t st) {
  const int warps = std::max(1, std::min(W4A16_WARPS, K / kGroup));  // no idle warps when K is short
  const size_t smem = size_t(warps) * kRowsPerCta * NB * 8 * sizeof(float);
  const unsigned ctas = static_cast<unsigned>((N + kRowsPerCta - 1) / kRowsPerCta);
  w4a16_mma_splitk<NB><<<ctas, warps * 32, smem, st>>>(x, qw, sc, y, B, N, K);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw d2k::abi_error(std::string("expert: launch failed: ") + cudaGetErrorString(e));
  (void)args;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    if (B < 1 || B > 16 || N < 1 || N > (int64_t{1} << 30) || K < kGroup || K % kGroup != 0 || K > (int64_t{1} << 30))
      throw d2k::abi_error("expert: need 1 <= B <= 16, N >= 1, K >= 128 a multiple of 128 (got B=" + std::to_string(B) +
                           ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ")");
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {B, K});
    const DLTensor& qweight = d2k::input(args, "qweight", kDLCUDA, d2k::dl::i32, {N, K / 8});
    const DLTensor& scales = d2k::input(args, "scales", kDLCUDA, d2k::dl::bf16, {N, K / kGroup});
    const DLTensor& y = d2k::output(args, "y", kDLCUDA, d2k::dl::bf16, {B, N});
    const auto* xp = d2k::data<const __nv_bfloat16>(x);
    const auto* qp = d2k::data<const uint32_t>(qweight);
    if (!aligned16(xp) || !aligned16(qp))
      throw d2k::abi_error("expert: x and qweight must be 16-byte aligned (16-byte vector loads)");
    const auto* sp = d2k::data<const __nv_bfloat16>(scales);
    auto* yp = d2k::data<__nv_bfloat16>(y);
    auto st = static_cast<cudaStream_t>(args->stream);
    if (B <= 8)
      launch<1>(args, xp, qp, sp, yp, int(B), int(N), int(K), st);
    else
      launch<2>(args, xp, qp, sp, yp, int(B), int(N), int(K), st);
    return D2K_OK;
  });
}
