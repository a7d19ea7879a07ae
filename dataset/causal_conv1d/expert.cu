// causal_conv1d — expert: one pass over x with 16-byte loads; the 3-element halo of each 8-element
// vector comes from the neighbouring lane by warp shuffle; bias and SiLU fused before one 16-byte
// store of bf16.
//
//   out[r, l] = bf16( silu( bias[d] + sum_{k<4} w[d,k] * x[r, l-3+k] ) ),  r = b*D + d
//
// Compulsory traffic is 4BDL + 20D bytes (x read once, out written once, fp32 weight and bias).
// Each input feeds 4 outputs; the kernel reads it from DRAM once:
//   - a warp owns a tile of one row: kSteps steps of 32 lanes x 8 elements (1024 positions at
//     kSteps = 4, fewer for rows shorter than that), so the channel d, its 4 taps and its bias are
//     warp-uniform and live in registers for the whole tile;
//   - every lane issues its kSteps 16-byte loads before using any (bytes in flight);
//   - the 3 inputs before a lane's vector are the last 3 of lane-1's vector: one rotate-by-one
//     shuffle of the vector's upper 8 bytes per step; lane 0 takes lane 31's from the previous step,
//     and at the tile's start the 16 bytes before the tile (read from L2: the neighbouring warp
//     reads that sector from DRAM) or zeros at the row's start (the causal padding);
//   - fp32 FMAs from the bias, SiLU as z * rcp(1 + exp(-z)) (ex2.approx), one cvt to bf16x2 per pair.
// Rows with L % 8 != 0 or tensors that are not 16-byte aligned take a 2-byte-access kernel of the
// same arithmetic (each thread 8 outputs from 11 scalar loads, the overlap served by L1).
//
// Designs considered:
//   a. a thread per output reading its 4 inputs (naive's conv without the materialised fp32 casts):
//      4 loads per output, served by L1/L2 after the first: load instructions and L1 traffic, rather
//      than DRAM, would set its speed (not built: naive's conv kernel is this form, in fp32).
//   b. a CTA tile staged in shared memory with a halo of 3 (cp.async or TMA, then reads from smem):
//      one DRAM read per input, but a shared-memory round trip and a barrier per tile for data that
//      a warp shuffle can pass between neighbouring lanes.
//   c. (chosen) register tiles along L with the halo passed by shuffle: no shared memory, no
//      barrier; one 16-byte load and one 16-byte store per 8 outputs.
//   d. (variant flat) tiles over the flattened [B*D*L] tensor instead of per row: every warp tile is
//      full whatever L is (rows of 512 give a row-tiled warp only 2 steps of loads in flight), at the
//      cost of per-lane taps (reloaded from L1 when a lane's vector crosses into the next row) and a
//      zero halo at every row start.
//   The tile depth kSteps trades bytes in flight per thread against the number of warps for short
//   rows; the variants below sweep it and the flat tiling (times pending the H200 run:
//   docs/results/causal_conv1d.md).
//   %VARIANT% steps2 -DCONV_STEPS=2 -DCONV_ROWS=0 -DCONV_RCP_APPROX=0 -DCONV_MIN_BLOCKS=1
//   %VARIANT% steps8 -DCONV_STEPS=8 -DCONV_ROWS=0 -DCONV_RCP_APPROX=0 -DCONV_MIN_BLOCKS=1
//   %VARIANT% flat -DCONV_FLAT=1 -DCONV_ROWS=0 -DCONV_RCP_APPROX=0 -DCONV_MIN_BLOCKS=1
//   Variants for the short rows (64 x 2048 x 512: a row is 2 warp spans, so a warp there has only 2
//   loads of 16 bytes in flight per lane and lives for one load round trip and one arithmetic phase;
//   docs/results/causal_conv1d.md, "Seventh session's variants"), each one change from the build
//   it is compared with:
//   e. (rcpapprox, vs the expert) SiLU's reciprocal as MUFU.RCP alone (rcp.approx.ftz) instead of
//      __frcp_rn's Newton step and slow-path call: about half the instructions per output and no
//      call (40 registers, 6 CTAs per SM), if instruction issue in the arithmetic phase stretches
//      each warp's life.
//   f. (rowsrcp, vs rcpapprox) a warp per 2 whole rows where a row is at most half a tile: twice the
//      loads in flight per lane (4 at L = 512, as on long rows) and the warp's fixed cost shared by
//      2 rows, with warp-uniform taps (flat's tiling without its per-lane row tracking). Built with
//      e's reciprocal and 5 CTAs per SM: 48 registers, no stack (with __frcp_rn's call it needs 54).
//   g. (persistrcp, vs rcpapprox) resident warps that loop over the row tiles (CONV_STEPS = 2: a
//      tile is a 512-row) and issue the next tile's loads before computing the current one: loads
//      in flight through the arithmetic phase, no CTA turnover. 64 registers, 4 CTAs per SM (5
//      spill).
//   h. (cta64, vs the expert) CTAs of 2 warps instead of 8: a CTA's slot on the SM is freed only
//      when its slowest warp ends, so with short-lived warps smaller CTAs return idle warp slots
//      sooner (21 CTAs, 42 warps per SM).
//   Measured (H200, 2026-12-03; docs/results/causal_conv1d.md, "Seventh session"): rowsrcp 95.1% /
//   95.0% / 95.0% of SOL (1.29x / 1.08x / 1.05x the register tiles with __frcp_rn), rcpapprox
//   1.23x / 1.08x / 1.05x: the reciprocal's instructions were most of what the rows lacked. rowsrcp
//   is the default since (CONV_ROWS=1, CONV_RCP_APPROX=1, CONV_MIN_BLOCKS=5); the form it replaced
//   is the variant vec_prev, and the variants above and below keep the flags they were timed with.
//   %VARIANT% vec_prev -DCONV_ROWS=0 -DCONV_RCP_APPROX=0 -DCONV_MIN_BLOCKS=1
//   %VARIANT% rcpapprox -DCONV_ROWS=0 -DCONV_MIN_BLOCKS=1
//   %VARIANT% persistrcp -DCONV_PERSIST=1 -DCONV_STEPS=2 -DCONV_ROWS=0 -DCONV_MIN_BLOCKS=1
//   %VARIANT% cta64 -DCONV_THREADS=64 -DCONV_ROWS=0 -DCONV_RCP_APPROX=0 -DCONV_MIN_BLOCKS=1
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

#ifndef CONV_STEPS
#define CONV_STEPS 4
#endif
#ifndef CONV_FLAT
#define CONV_FLAT 0
#endif
#ifndef CONV_RCP_APPROX
#define CONV_RCP_APPROX 1
#endif
#ifndef CONV_ROWS
#define CONV_ROWS 1
#endif
#ifndef CONV_PERSIST
#define CONV_PERSIST 0
#endif
#ifndef CONV_THREADS
#define CONV_THREADS 256
#endif
#ifndef CONV_MIN_BLOCKS
#define CONV_MIN_BLOCKS 5
#endif

namespace {

constexpr int kWidth = 4;          // the filter width the kernels are written for (Mamba's d_conv)
constexpr int kVec = 8;            // bf16 elements per 16-byte access
constexpr int kWarpSpan = 32 * kVec;  // positions one step of a warp covers
constexpr int kSteps = CONV_STEPS;
constexpr int kThreads = CONV_THREADS;  // 256; variant cta64: 64
constexpr int kWarpsPerBlock = kThreads / 32;
#if CONV_ROWS || CONV_PERSIST
// CTAs per SM the rows and persist kernels are compiled for (__launch_bounds__' second argument).
constexpr int kMinBlocks = CONV_MIN_BLOCKS;
#endif

struct Taps {
  float w0, w1, w2, w3, bias;
};

/// The channel's taps in one 16-byte load ([D, 4] fp32: 16 bytes a channel) when the weight tensor
/// is 16-byte aligned (it always is from the harness's allocations), else four 4-byte loads.
__device__ __forceinline__ Taps load_taps(const float* __restrict__ weight, const float* __restrict__ bias,
                                          int64_t d) {
  if ((reinterpret_cast<uintptr_t>(weight) & 15u) == 0) {
    const float4 w = __ldg(reinterpret_cast<const float4*>(weight) + d);
    return {w.x, w.y, w.z, w.w, __ldg(bias + d)};
  }
  const float* w = weight + d * kWidth;
  return {__ldg(w), __ldg(w + 1), __ldg(w + 2), __ldg(w + 3), __ldg(bias + d)};
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

#if CONV_RCP_APPROX
/// 1/x by MUFU.RCP alone (at most 1 ulp of fp32 from the rounded quotient; +inf gives +0). __frcp_rn
/// adds a Newton step and a range test that branches to a slow path for huge or tiny x, which
/// compiles to about 10 instructions and a BSSY/BSYNC pair per output.
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#endif

/// silu(b + w0*a + w1*b1 + w2*c + w3*x), the taps applied oldest first from the bias.
__device__ __forceinline__ float conv_silu(const Taps& t, float xm3, float xm2, float xm1, float x0) {
  float z = t.bias;
  z = fmaf(t.w0, xm3, z);
  z = fmaf(t.w1, xm2, z);
  z = fmaf(t.w2, xm1, z);
  z = fmaf(t.w3, x0, z);
  constexpr float kLog2e = 1.4426950408889634f;
  // 1 + 2^(-z log2 e) is +inf for z < -88.7: rcp gives 0 and the output -0, within atol of the
  // golden's |silu(z)| < 1e-36.
#if CONV_RCP_APPROX
  return z * rcp_approx(1.f + ex2(-z * kLog2e));  // variant rcpapprox
#else
  return z * __frcp_rn(1.f + ex2(-z * kLog2e));
#endif
}

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&p);
}

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

/// 8 outputs from a vector v of 8 inputs and the 3 inputs before it (elements 5, 6, 7 of the
/// previous vector, given as its upper two words: prev_z holds 4 and 5, prev_w holds 6 and 7).
__device__ __forceinline__ uint4 conv_vector(const Taps& t, uint32_t prev_z, uint32_t prev_w, const uint4& v) {
  float x[kVec + kWidth - 1];
  x[0] = bf16_hi(prev_z);
  x[1] = bf16_lo(prev_w);
  x[2] = bf16_hi(prev_w);
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[3 + 2 * i] = bf16_lo(words[i]);
    x[4 + 2 * i] = bf16_hi(words[i]);
  }
  float y[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) y[j] = conv_silu(t, x[j], x[j + 1], x[j + 2], x[j + 3]);
  return {pack_bf16x2(y[0], y[1]), pack_bf16x2(y[2], y[3]), pack_bf16x2(y[4], y[5]), pack_bf16x2(y[6], y[7])};
}

#if !CONV_PERSIST  // variant persist replaces this kernel
/// The 16-byte path: L % 8 == 0, x and out 16-byte aligned. A warp per tile of `steps` x 256
/// positions of one row; tiles_per_row = ceil(L / (steps * 256)).
__global__ void __launch_bounds__(kThreads) causal_conv1d_silu_vec(const __nv_bfloat16* __restrict__ x,
                                                                   const float* __restrict__ weight,
                                                                   const float* __restrict__ bias,
                                                                   __nv_bfloat16* __restrict__ out, int64_t rows,
                                                                   int64_t D, int64_t L, int steps,
                                                                   int64_t tiles_per_row) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t row = warp / tiles_per_row;
  if (row >= rows) return;  // warp-uniform
  const int64_t tile_begin = (warp - row * tiles_per_row) * steps * kWarpSpan;
  const int64_t row_offset = row * L;
  const uint4* src = reinterpret_cast<const uint4*>(x + row_offset);
  uint4* dst = reinterpret_cast<uint4*>(out + row_offset);
  const int64_t vec_begin = tile_begin / kVec + lane;  // this lane's first vector in the row
  const int64_t row_vecs = L / kVec;

  // Phase 1: every load of the tile in flight, and the halo before the tile.
  uint4 v[kSteps];
#pragma unroll
  for (int u = 0; u < kSteps; ++u) {
    const int64_t i = vec_begin + u * 32;
    v[u] = (u < steps && i < row_vecs) ? load_stream(src + i) : make_uint4(0, 0, 0, 0);
  }
  uint4 halo = make_uint4(0, 0, 0, 0);  // zeros: the causal padding at the row's start
  if (lane == 0 && tile_begin > 0) halo = __ldg(src + tile_begin / kVec - 1);
  const Taps t = load_taps(weight, bias, row % D);

  // Phase 2: per step, lane l takes lane l-1's upper words; lane 0 the previous step's lane 31.
  uint32_t carry_z = halo.z, carry_w = halo.w;
#pragma unroll
  for (int u = 0; u < kSteps; ++u) {
    if (u >= steps) break;
    const uint32_t rz = __shfl_sync(0xFFFFFFFFu, v[u].z, (lane + 31) & 31);
    const uint32_t rw = __shfl_sync(0xFFFFFFFFu, v[u].w, (lane + 31) & 31);
    const uint32_t pz = lane == 0 ? carry_z : rz;
    const uint32_t pw = lane == 0 ? carry_w : rw;
    carry_z = rz;  // lane 0's rotated value is lane 31's: the next step's halo
    carry_w = rw;
    const int64_t i = vec_begin + u * 32;
    if (i < row_vecs) dst[i] = conv_vector(t, pz, pw, v[u]);
  }
}

#endif  // !CONV_PERSIST

#if CONV_ROWS
/// Variant rows, the 16-byte path for rows of at most kSteps / 2 warp spans (L <= 512 at kSteps = 4):
/// a warp owns kPackedRows = 2 whole rows of kRowSteps steps each, so every lane has 2 * kRowSteps
/// 16-byte loads in flight (4 at L = 512, as on long rows; a row-tiled warp has only kRowSteps), and
/// the warp's fixed cost (index arithmetic, taps, launch and retirement) is paid once per 2 rows.
/// Slot u of the tile is step u % kRowSteps of row u / kRowSteps, both compile-time, so each row's
/// taps and its causal zeros are warp-uniform as in the row-tiled kernel. (Four rows of one span
/// a warp would need two more sets of taps live: 64 registers and a stack frame around
/// __frcp_rn's slow-path call.)
constexpr int kPackedRows = 2;
template <int kRowSteps>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    causal_conv1d_silu_rows(const __nv_bfloat16* __restrict__ x, const float* __restrict__ weight,
                            const float* __restrict__ bias, __nv_bfloat16* __restrict__ out, int64_t rows, int64_t D,
                            int64_t row_vecs) {
  constexpr int kRows = kPackedRows;
  constexpr int kSlots = kRows * kRowSteps;
  static_assert(kSlots <= kSteps, "no more loads in flight than a long row's tile");
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t row0 = warp * kRows;
  if (row0 >= rows) return;  // warp-uniform
  const uint4* src = reinterpret_cast<const uint4*>(x) + row0 * row_vecs;
  uint4* dst = reinterpret_cast<uint4*>(out) + row0 * row_vecs;

  // Phase 1: the loads of every row of the tile in flight, then each row's taps (an L2 hit after
  // the first warps of a channel).
  uint4 v[kSlots];
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int r = u / kRowSteps;
    const int64_t i = (u % kRowSteps) * 32 + lane;
    v[u] = (row0 + r < rows && i < row_vecs) ? load_stream(src + r * row_vecs + i) : make_uint4(0, 0, 0, 0);
  }
  Taps t[kRows];
  int64_t d = row0 % D;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    t[r] = load_taps(weight, bias, d);  // a row past the last reads a valid channel; its outputs are masked
    d = d + 1 == D ? 0 : d + 1;
  }

  // Phase 2: as the row-tiled kernel, with zeros as lane 0's halo at each row's first step.
  uint32_t carry_z = 0, carry_w = 0;
#pragma unroll
  for (int u = 0; u < kSlots; ++u) {
    const int r = u / kRowSteps;
    const uint32_t rz = __shfl_sync(0xFFFFFFFFu, v[u].z, (lane + 31) & 31);
    const uint32_t rw = __shfl_sync(0xFFFFFFFFu, v[u].w, (lane + 31) & 31);
    const bool row_start = u % kRowSteps == 0;
    const uint32_t pz = lane == 0 ? (row_start ? 0u : carry_z) : rz;
    const uint32_t pw = lane == 0 ? (row_start ? 0u : carry_w) : rw;
    carry_z = rz;
    carry_w = rw;
    const int64_t i = (u % kRowSteps) * 32 + lane;
    if (row0 + r < rows && i < row_vecs) dst[r * row_vecs + i] = conv_vector(t[r], pz, pw, v[u]);
  }
}
#endif  // CONV_ROWS

#if CONV_PERSIST
/// One tile of the row-tiled 16-byte path in registers: its vectors, the halo before it and its taps.
struct Tile {
  uint4 v[kSteps];
  uint32_t halo_z, halo_w;
  Taps t;
  int64_t vec_begin;   // the lane's first vector in the row
  int64_t row_offset;  // in vectors
};

/// Issue every load of tile `tile` (the row-tiled kernel's phase 1) without waiting for any.
__device__ __forceinline__ void issue_tile(Tile& s, const uint4* __restrict__ src, const float* __restrict__ weight,
                                           const float* __restrict__ bias, int64_t tile, int64_t D, int64_t row_vecs,
                                           int steps, int64_t tiles_per_row, int lane) {
  const int64_t row = tile / tiles_per_row;
  const int64_t tile_vec = (tile - row * tiles_per_row) * steps * 32;
  s.row_offset = row * row_vecs;
  s.vec_begin = tile_vec + lane;
#pragma unroll
  for (int u = 0; u < kSteps; ++u) {
    const int64_t i = s.vec_begin + u * 32;
    s.v[u] = (u < steps && i < row_vecs) ? load_stream(src + s.row_offset + i) : make_uint4(0, 0, 0, 0);
  }
  uint4 halo = make_uint4(0, 0, 0, 0);
  if (lane == 0 && tile_vec > 0) halo = __ldg(src + s.row_offset + tile_vec - 1);
  s.halo_z = halo.z;
  s.halo_w = halo.w;
  s.t = load_taps(weight, bias, row % D);
}

/// Variant persist, the row-tiled 16-byte path with resident warps: the grid is what fits on the
/// GPU at once, warp g takes tiles g, g + W, g + 2W, ... (W warps in the grid) and issues the loads
/// of its next tile before computing the current one, so its loads stay in flight through the
/// arithmetic phase and no CTA is launched or retired after the first wave.
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    causal_conv1d_silu_persist(const __nv_bfloat16* __restrict__ x, const float* __restrict__ weight,
                               const float* __restrict__ bias, __nv_bfloat16* __restrict__ out, int64_t tiles,
                               int64_t D, int64_t row_vecs, int steps, int64_t tiles_per_row) {
  const int lane = threadIdx.x & 31;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  int64_t tile = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (tile >= tiles) return;  // warp-uniform
  const uint4* src = reinterpret_cast<const uint4*>(x);
  uint4* dst = reinterpret_cast<uint4*>(out);

  Tile cur;
  issue_tile(cur, src, weight, bias, tile, D, row_vecs, steps, tiles_per_row, lane);
  for (;;) {
    // Phase 1: the next tile's loads in flight while this one is computed.
    const int64_t next = tile + stride;
    Tile nxt;
    if (next < tiles) issue_tile(nxt, src, weight, bias, next, D, row_vecs, steps, tiles_per_row, lane);

    // Phase 2: the row-tiled kernel's shuffles, arithmetic and stores for the current tile.
    uint32_t carry_z = cur.halo_z, carry_w = cur.halo_w;
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      if (u >= steps) break;
      const uint32_t rz = __shfl_sync(0xFFFFFFFFu, cur.v[u].z, (lane + 31) & 31);
      const uint32_t rw = __shfl_sync(0xFFFFFFFFu, cur.v[u].w, (lane + 31) & 31);
      const uint32_t pz = lane == 0 ? carry_z : rz;
      const uint32_t pw = lane == 0 ? carry_w : rw;
      carry_z = rz;
      carry_w = rw;
      const int64_t i = cur.vec_begin + u * 32;
      if (i < row_vecs) dst[cur.row_offset + i] = conv_vector(cur.t, pz, pw, cur.v[u]);
    }
    if (next >= tiles) break;  // warp-uniform
    tile = next;
    cur = nxt;
  }
}
#endif  // CONV_PERSIST

#if CONV_FLAT
/// Variant flat, the 16-byte path over the flattened tensor: warp w owns vectors
/// [w * 32 * kSteps, (w + 1) * 32 * kSteps) of the B*D*L/8 vectors (L % 8 == 0, so a vector never
/// straddles two rows). A vector at a row start takes zeros as its halo; each lane tracks its row and
/// channel incrementally (32 vectors per step) and reloads its taps when the row changes.
__global__ void __launch_bounds__(kThreads) causal_conv1d_silu_flat(const __nv_bfloat16* __restrict__ x,
                                                                    const float* __restrict__ weight,
                                                                    const float* __restrict__ bias,
                                                                    __nv_bfloat16* __restrict__ out,
                                                                    int64_t total_vecs, int64_t D, int64_t row_vecs) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t warp_begin = warp * (32 * kSteps);
  if (warp_begin >= total_vecs) return;  // warp-uniform
  const uint4* src = reinterpret_cast<const uint4*>(x);
  uint4* dst = reinterpret_cast<uint4*>(out);

  uint4 v[kSteps];
#pragma unroll
  for (int u = 0; u < kSteps; ++u) {
    const int64_t i = warp_begin + u * 32 + lane;
    v[u] = i < total_vecs ? load_stream(src + i) : make_uint4(0, 0, 0, 0);
  }
  uint4 halo = make_uint4(0, 0, 0, 0);
  if (lane == 0 && warp_begin % row_vecs != 0) halo = __ldg(src + warp_begin - 1);
  int64_t row = (warp_begin + lane) / row_vecs;
  int64_t col = warp_begin + lane - row * row_vecs;  // the lane's vector within its row
  int64_t d = row % D;
  Taps t = load_taps(weight, bias, d);

  uint32_t carry_z = halo.z, carry_w = halo.w;
#pragma unroll
  for (int u = 0; u < kSteps; ++u) {
    const uint32_t rz = __shfl_sync(0xFFFFFFFFu, v[u].z, (lane + 31) & 31);
    const uint32_t rw = __shfl_sync(0xFFFFFFFFu, v[u].w, (lane + 31) & 31);
    uint32_t pz = lane == 0 ? carry_z : rz;
    uint32_t pw = lane == 0 ? carry_w : rw;
    carry_z = rz;
    carry_w = rw;
    if (u > 0) {  // advance 32 vectors: the row (and channel) may change, possibly several times
      col += 32;
      bool moved = false;
      while (col >= row_vecs) {
        col -= row_vecs;
        d = d + 1 == D ? 0 : d + 1;
        moved = true;
      }
      if (moved) t = load_taps(weight, bias, d);
    }
    if (col == 0) pz = pw = 0;  // the row's first vector: the causal padding
    const int64_t i = warp_begin + u * 32 + lane;
    if (i < total_vecs) dst[i] = conv_vector(t, pz, pw, v[u]);
  }
}
#endif  // CONV_FLAT

/// The 2-byte path for any L and alignment: a thread per 8 consecutive outputs of one row, from
/// 11 scalar loads (the 3 before its first output overlap its neighbour's, served by L1).
__global__ void __launch_bounds__(kThreads) causal_conv1d_silu_scalar(const __nv_bfloat16* __restrict__ x,
                                                                      const float* __restrict__ weight,
                                                                      const float* __restrict__ bias,
                                                                      __nv_bfloat16* __restrict__ out,
                                                                      int64_t rows, int64_t D, int64_t L,
                                                                      int64_t chunks_per_row) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t row = g / chunks_per_row;
  if (row >= rows) return;
  const int64_t l0 = (g - row * chunks_per_row) * kVec;
  const __nv_bfloat16* xr = x + row * L;
  float xs[kVec + kWidth - 1];
#pragma unroll
  for (int j = 0; j < kVec + kWidth - 1; ++j) {
    const int64_t l = l0 - (kWidth - 1) + j;
    xs[j] = (l >= 0 && l < L) ? __bfloat162float(xr[l]) : 0.f;
  }
  const Taps t = load_taps(weight, bias, row % D);
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    if (l0 + j < L) out[row * L + l0 + j] = __float2bfloat16_rn(conv_silu(t, xs[j], xs[j + 1], xs[j + 2], xs[j + 3]));
}

struct Shape {
  int64_t B, D, L;
};
Shape shape_of(const d2k_args* args) {
  const Shape s{d2k::scalar_i(args, "B"), d2k::scalar_i(args, "D"), d2k::scalar_i(args, "L")};
  if (s.B < 0 || s.D < 0 || s.L < 0) throw d2k::abi_error("expert: need B, D, L >= 0");
  if (d2k::scalar_i(args, "W") != kWidth) throw d2k::abi_error("expert: the kernels are written for W = 4");
  return s;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

unsigned blocks_for(int64_t n, int64_t per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

#if CONV_ROWS
/// Variant rows' launch for rows of kRowSteps warp spans; false (nothing launched) where a tile of
/// kSteps steps cannot hold kPackedRows such rows.
template <int kRowSteps>
bool launch_rows(const __nv_bfloat16* x, const float* w, const float* b, __nv_bfloat16* out, int64_t rows, int64_t D,
                 int64_t row_vecs, cudaStream_t stream) {
  if constexpr (kPackedRows * kRowSteps > kSteps) {
    return false;
  } else {
    const int64_t warps = (rows + kPackedRows - 1) / kPackedRows;
    causal_conv1d_silu_rows<kRowSteps>
        <<<blocks_for(warps, kWarpsPerBlock), kThreads, 0, stream>>>(x, w, b, out, rows, D, row_vecs);
    return true;
  }
}
#endif

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)shape_of(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    const DLTensor& xt = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {s.B, s.D, s.L});
    const DLTensor& wt = d2k::input(args, "weight", kDLCUDA, d2k::dl::f32, {s.D, kWidth});
    const DLTensor& bt = d2k::input(args, "bias", kDLCUDA, d2k::dl::f32, {s.D});
    const DLTensor& ot = d2k::output(args, "out", kDLCUDA, d2k::dl::bf16, {s.B, s.D, s.L});
    const int64_t rows = s.B * s.D;
    if (rows == 0 || s.L == 0) return D2K_OK;
    const auto* x = d2k::data<const __nv_bfloat16>(xt);
    const auto* w = d2k::data<const float>(wt);
    const auto* b = d2k::data<const float>(bt);
    auto* out = d2k::data<__nv_bfloat16>(ot);
    auto stream = static_cast<cudaStream_t>(args->stream);

#if CONV_FLAT
    if (s.L % kVec == 0 && aligned16(x) && aligned16(out)) {
      const int64_t total_vecs = rows * (s.L / kVec);
      const int64_t warps = (total_vecs + 32 * kSteps - 1) / (32 * kSteps);
      if (warps > int64_t{2147483647} * kWarpsPerBlock) throw d2k::abi_error("expert: too many tiles for the grid");
      causal_conv1d_silu_flat<<<blocks_for(warps, kWarpsPerBlock), kThreads, 0, stream>>>(x, w, b, out, total_vecs,
                                                                                          s.D, s.L / kVec);
    } else
#endif
        if (s.L % kVec == 0 && aligned16(x) && aligned16(out)) {
      // Rows shorter than kSteps warp spans get fewer steps, so no warp holds only idle steps.
      const int64_t spans = (s.L + kWarpSpan - 1) / kWarpSpan;
      const int steps = static_cast<int>(spans < kSteps ? spans : kSteps);
      const int64_t tiles_per_row = (s.L + steps * kWarpSpan - 1) / (steps * kWarpSpan);
      if (rows * tiles_per_row > int64_t{2147483647} * kWarpsPerBlock) throw d2k::abi_error("expert: too many tiles for the grid");
      bool packed = false;  // variant rows: rows of at most half a tile, 2 whole rows a warp
#if CONV_ROWS
      if (steps == 1) packed = launch_rows<1>(x, w, b, out, rows, s.D, s.L / kVec, stream);
      if (steps == 2) packed = launch_rows<2>(x, w, b, out, rows, s.D, s.L / kVec, stream);
#endif
      if (!packed) {
#if CONV_PERSIST
        // Variant persist: as many CTAs as are resident at once, each warp looping over tiles.
        int device = 0, sms = 0, per_sm = 0;
        D2K_CUDA_TRY(args, cudaGetDevice(&device));
        D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, causal_conv1d_silu_persist, kThreads, 0));
        const int64_t tiles = rows * tiles_per_row;
        const int64_t resident = static_cast<int64_t>(sms) * (per_sm > 0 ? per_sm : 1);
        const int64_t needed = blocks_for(tiles, kWarpsPerBlock);
        causal_conv1d_silu_persist<<<static_cast<unsigned>(needed < resident ? needed : resident), kThreads, 0, stream>>>(
            x, w, b, out, tiles, s.D, s.L / kVec, steps, tiles_per_row);
#else
        causal_conv1d_silu_vec<<<blocks_for(rows * tiles_per_row, kWarpsPerBlock), kThreads, 0, stream>>>(
            x, w, b, out, rows, s.D, s.L, steps, tiles_per_row);
#endif
      }
    } else {
      const int64_t chunks_per_row = (s.L + kVec - 1) / kVec;
      if (rows * chunks_per_row > int64_t{2147483647} * kThreads) throw d2k::abi_error("expert: too many chunks for the grid");
      causal_conv1d_silu_scalar<<<blocks_for(rows * chunks_per_row, kThreads), kThreads, 0, stream>>>(
          x, w, b, out, rows, s.D, s.L, chunks_per_row);
    }
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
