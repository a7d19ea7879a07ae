// w4a16_gemv — the row-stream path at B = 1: the default expert's B = 1 kernel
// (W4A16_ROWSTREAM=1; its FFMA form measured on the H200 1.05 / 1.03 / 1.17x the tensor-core path
// at 1x8192x8192, 1x28672x8192, 1x8192x28672, and its chunks on the tensor cores, W4A16_RS_MMA and
// w4a16_rowstream_mma.cuh, the default since 2026-12-03, 1.00 / 1.08 / 1.04x the FFMA form); every
// other B, and K beyond what fits in shared memory, keeps the tensor-core path of expert.cu.
// Variant rs_ffma is the FFMA form (W4A16_RS_MMA=0); persist the persistent form (W4A16_RS_PERSIST:
// a second kernel body below, the same phases).
//
// Dataflow: a warp owns kRows consecutive weight rows and all of K. One warp load instruction
// reads 512 contiguous bytes of one row (lane l: bytes 16l..16l+15 of chunk c, i.e. the words
// 4l..4l+3 = weights k = 1024c + 32l .. 1024c + 32l + 31, all in group 8c + l/4): a dense DRAM
// window per instruction, as a copy kernel streams. The warp's rows are interleaved (one load of
// each row per chunk) for independent FFMA chains, and kDepth chunks are kept in a register ring
// (kDepth - 1 in flight while one is computed). x is staged once per CTA in shared memory as fp32,
// pre-scaled for the conversion below and permuted so that the lanes' reads are conflict-free.
//
// Dequantisation by magic number with the nibble left in place: for a word v and e in 0..3,
// (v & 0xF << 4e) | 0x4B000000 is the fp32 2^23 + 16^e·q exactly (ulp 1 at 2^23; 16^3·15 < 2^23);
// one FADD of -(2^23 + 8·16^e) gives 16^e·(q - 8) exactly, and one FFMA with x·16^-e (pre-scaled
// in shared memory, exact: a power of two) adds the exact product x·(q - 8). Nibbles 0..3 come from
// the word, nibbles 4..7 from the word shifted right by 16: per 8 weights one SHF, 8 LOP3, 8 FADD,
// 8 FFMA (3.125 lane instructions per weight), no I2F, no lookup.
//
// Precision: per lane, row and chunk one fp32 partial of its 32 exact products (word by word,
// nibbles 0..3 then 4..7; the first product starts it), then one FFMA with the group's scale into
// the lane's fp32 accumulator; across chunks in order; at the end an xor-butterfly of the 32 lanes
// (offsets 16, 8, 4, 2, 1) and one bf16 rounding. Every sum is fp32 (the spec's precision);
// tests/unit/tasks/w4a16_gemv emulates exactly this order (RowstreamLaneEmulationPasses).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

// Rows per warp (interleaved loads and FFMA chains).
#ifndef W4A16_RS_ROWS
#define W4A16_RS_ROWS 4
#endif
// Warps per CTA (each CTA stages x once for its kWarps · kRows rows).
#ifndef W4A16_RS_WARPS
#define W4A16_RS_WARPS 8
#endif
// CTAs per SM the registers are budgeted for (__launch_bounds__): 2 gives 128 registers per
// thread at 8 warps; 3 gives 85 (24 warps per SM where x fits three times: K <= 16384).
#ifndef W4A16_RS_CTAS_PER_SM
#define W4A16_RS_CTAS_PER_SM 2
#endif
// 1: the chunk arithmetic on the tensor cores (w4a16_rowstream_mma.cuh, diagonal mma.sync: ~1.9
// lane instructions per weight instead of ~3.4); 0: the magic-number FFMA form below.
#ifndef W4A16_RS_MMA
#define W4A16_RS_MMA 1
#endif
// 1: persistent CTAs (as many as fit at once): x staged once per CTA for all of its rows, each
// warp walks row blocks gw, gw + W_grid, ... with the register ring running on across them (the
// next block's first chunks load during the current block's last), so a multi-wave N pays one
// ramp and one tail instead of one per wave; 0: one row block per warp, one CTA per 32 rows.
#ifndef W4A16_RS_PERSIST
#define W4A16_RS_PERSIST 0
#endif
// 1 (the default since 2026-12-03; issue #15): the tensor-core chunks with the codes 128 + q and
// the group's -136 · sum(x) as the first mma step's C (w4a16_rowstream_mma.cuh: no HFMA2, ~22%
// fewer instructions per chunk), the sums made while x is staged: 1.06 / 1.06 / 1.04x the q - 8
// form on the three B = 1 rows of the H200 sweep (docs/results/w4a16_gemv.md). 0: codes q - 8
// (variant `prev`).
#ifndef W4A16_RS_OFFSET
#define W4A16_RS_OFFSET 1
#endif
// 1 (rsrot: 1.02 / 0.97 / 0.99x the q - 8 default on the H200, retired; issue #15): warp gw walks its rows' chunks from
// chunk chunks - 3j (j = gw mod ceil(chunks / 3); j = 0: chunk 0), wrapping around, instead of
// from chunk 0: at K = 8192 the row stride is 4 KB and in order every warp of a wave sits at the
// same 1.5 KB window of its rows (all of the GPU's requests at one offset mod 4 KB); rotated, the
// warps' windows start at chunks 0, 5 and 2 and cover every offset. 0: chunks in order from 0.
#ifndef W4A16_RS_ROTATE
#define W4A16_RS_ROTATE 0
#endif
#if (W4A16_RS_OFFSET || W4A16_RS_ROTATE) && W4A16_RS_PERSIST
#error "W4A16_RS_OFFSET and W4A16_RS_ROTATE are built for the one-block-per-warp kernel only"
#endif
#if W4A16_RS_OFFSET && !W4A16_RS_MMA
#error "W4A16_RS_OFFSET needs the tensor-core chunks (W4A16_RS_MMA=1)"
#endif
#if W4A16_RS_MMA
#include "w4a16_rowstream_mma.cuh"
#endif

namespace rowstream {

constexpr int kRows = W4A16_RS_ROWS;
// Chunks (512 bytes of each row) in the register ring: kDepth - 1 in flight during a chunk's
// arithmetic, kDepth right after its reload is issued. (Six chunks of two rows, rowstream2, was
// measured 0.80-0.99x this ring of three: issue #15, docs/results/w4a16_gemv.md.)
constexpr int kDepth = 3;
constexpr int kWarps = W4A16_RS_WARPS;
static_assert(kRows >= 1 && kRows <= 8, "W4A16_RS_ROWS in [1, 8]");
static_assert(kWarps >= 1 && kWarps <= 16, "W4A16_RS_WARPS in [1, 16]");

constexpr int kGroup = 128;
constexpr int kChunkK = 1024;                 // weights of one row per warp load instruction (512 bytes)
constexpr int kGroupsPerChunk = kChunkK / kGroup;
// x of one CTA in shared memory: K rounded up to whole chunks, fp32. 112 KB (K = 28672, Llama 3
// 70B down_proj) still lets two CTAs share an SM; longer K keeps the tensor-core path.
constexpr int kMaxXBytes = 28 * kChunkK * 4;

constexpr uint32_t kMagic = 0x4B000000u;  // 2^23 in fp32

/// Whether the row-stream path serves this shape (else the caller uses the tensor-core path).
inline bool serves(int64_t B, int64_t K) {
  const int64_t chunks = (K / kGroup + kGroupsPerChunk - 1) / kGroupsPerChunk;
  return B == 1 && chunks * kChunkK * 4 <= kMaxXBytes;
}

/// Rows per CTA: kWarps groups of kRows.
constexpr int kCtaRows = kWarps * kRows;

// ---- register-level pieces ------------------------------------------------------------------

/// 512 contiguous bytes of a row per warp (read once, so no L1 allocation), where `live`: a lane
/// past K keeps its old registers. Those stale words are finite codes that meet x = 0 (x is zero
/// past K in shared memory), so they add exact zeros and need no zeroing instructions.
__device__ __forceinline__ void load_chunk(uint4& v, const uint4* p, bool live) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
      " @p ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
      : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)
      : "l"(p), "r"(int(live)));
}

/// The bf16 bits of a group scale, where `live` (else the old register: its product with the
/// lane's exact-zero partial is zero, as long as it is finite; the ring starts at 0).
__device__ __forceinline__ void load_scale(uint32_t& s, const unsigned short* p, bool live) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n"
      " @p ld.global.nc.u16 %0, [%1];\n}"
      : "+r"(s)
      : "l"(p), "r"(int(live)));
}

/// (v & mask) | magic in one LOP3: written as C++, the compiler splits it into an AND and an OR
/// (each with its own immediate); here the magic is a register operand.
template <uint32_t kMask>
__device__ __forceinline__ uint32_t and_or(uint32_t v, uint32_t magic) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(v), "n"(kMask), "r"(magic));  // (a & b) | c
  return d;
}

/// 16^e·(q - 8) for the nibble e (0..3) of v, exact: the magic-number float minus its offset.
template <int E>
__device__ __forceinline__ float code_scaled(uint32_t v, uint32_t magic) {
  constexpr float kOffset = 8388608.f + 8.f * float(1u << (4 * E));  // 2^23 + 8·16^e, exact
  return __uint_as_float(and_or<(0xFu << (4 * E))>(v, magic)) - kOffset;
}

__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xFFFF0000u); }

/// Shared-memory index (in float4) of the x values of chunk c, word u (0..3), half h (nibbles
/// 0..3 or 4..7) for lane l: a lane's reads of one (u, h) are 32 consecutive float4, so each
/// quarter-warp's LDS.128 touches 8 distinct 16-byte bank groups.
__device__ __forceinline__ int x_index(int c, int u, int h, int l) { return ((c * 4 + u) * 2 + h) * 32 + l; }

/// One chunk's weights and scales for the warp's rows, as loaded (lane l: words 4l..4l+3).
struct Stage {
  uint4 w[kRows];
  uint32_t s[kRows];  // the bf16 bits of the lane's group scale (in the low half)
};

// ---- the CTA's phases -------------------------------------------------------------------------

/// Phase 1: x (bf16, row 0) to shared memory as fp32 x·16^-(k mod 4), in x_index order, zero
/// beyond K (so the chunk tail contributes exact zeros). Thread i takes 8 consecutive k; lanes of
/// a warp take consecutive l, so the stores are conflict-free. The loads go out in batches of
/// kStageBatch before any is used: the CTA's start waits one or two L2/DRAM round trips for x, not
/// one per unit (K = 28672: 14 units per thread).
constexpr int kStageBatch = 8;
__device__ __forceinline__ void stage_x(float4* xs, const __nv_bfloat16* __restrict__ x, int K, int chunks) {
  const int units = chunks * 128;
  for (int i0 = threadIdx.x; i0 < units; i0 += kStageBatch * blockDim.x) {
    uint4 v[kStageBatch];
#pragma unroll
    for (int b = 0; b < kStageBatch; ++b) {
      const int i = i0 + b * blockDim.x;
      const int k0 = (i >> 7) * kChunkK + 32 * (i & 31) + 8 * ((i >> 5) & 3);  // a multiple of 8; K of 128
      v[b] = i < units && k0 < K ? __ldg(reinterpret_cast<const uint4*>(x + k0)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kStageBatch; ++b) {
      const int i = i0 + b * blockDim.x;
      if (i >= units) break;
      const int l = i & 31, u = (i >> 5) & 3, c = i >> 7;
      xs[x_index(c, u, 0, l)] = make_float4(bf16_lo(v[b].x), bf16_hi(v[b].x) * 0x1p-4f, bf16_lo(v[b].y) * 0x1p-8f,
                                            bf16_hi(v[b].y) * 0x1p-12f);
      xs[x_index(c, u, 1, l)] = make_float4(bf16_lo(v[b].z), bf16_hi(v[b].z) * 0x1p-4f, bf16_lo(v[b].w) * 0x1p-8f,
                                            bf16_hi(v[b].w) * 0x1p-12f);
    }
  }
}

/// Phase 2 (per chunk): dequantise the lane's 32 weights of each row and multiply-add them with x
/// in one fp32 partial per row (word by word; nibbles 0..3, then 4..7), then apply the group's
/// scale once. xc points at the chunk's x (x_index(c, 0, 0, lane)).
__device__ __forceinline__ void chunk_fma(float (&acc)[kRows], const Stage& st, const float4* xc, uint32_t magic) {
  float p[kRows];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const float4 xl = xc[x_index(0, u, 0, 0)], xh = xc[x_index(0, u, 1, 0)];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint32_t w = u == 0 ? st.w[r].x : u == 1 ? st.w[r].y : u == 2 ? st.w[r].z : st.w[r].w;
      const uint32_t wh = w >> 16;  // nibbles 4..7 at positions 0..3
      // the first product starts the partial (exact: no zeroed register, no rounding)
      p[r] = u == 0 ? xl.x * code_scaled<0>(w, magic) : fmaf(xl.x, code_scaled<0>(w, magic), p[r]);
      p[r] = fmaf(xl.y, code_scaled<1>(w, magic), p[r]);
      p[r] = fmaf(xl.z, code_scaled<2>(w, magic), p[r]);
      p[r] = fmaf(xl.w, code_scaled<3>(w, magic), p[r]);
      p[r] = fmaf(xh.x, code_scaled<0>(wh, magic), p[r]);
      p[r] = fmaf(xh.y, code_scaled<1>(wh, magic), p[r]);
      p[r] = fmaf(xh.z, code_scaled<2>(wh, magic), p[r]);
      p[r] = fmaf(xh.w, code_scaled<3>(wh, magic), p[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = fmaf(__uint_as_float(st.s[r] << 16), p[r], acc[r]);
}

// ---- the variants' dispatch (the default: the FFMA form) ---------------------------------------
#if W4A16_RS_MMA
constexpr int kXVecPerChunk = kMmaXVecPerChunk;  // 16-byte x vectors per chunk in shared memory
using XVec = uint4;
#else
constexpr int kXVecPerChunk = 8 * 32;
using XVec = float4;
#endif

/// Phase 1 of the build's form: x to shared memory, kXVecPerChunk vectors per chunk.
#if W4A16_RS_OFFSET
__device__ __forceinline__ void stage_x_any(XVec* xs, const __nv_bfloat16* __restrict__ x, int K, int chunks) {
  stage_x_pairs_sums(xs, reinterpret_cast<float*>(xs + chunks * kXVecPerChunk), x, K, chunks);
}
#else
__device__ __forceinline__ void stage_x_any(XVec* xs, const __nv_bfloat16* __restrict__ x, int K, int chunks) {
#if W4A16_RS_MMA
  stage_x_pairs(xs, x, K, chunks);
#else
  stage_x(xs, x, K, chunks);
#endif
}
#endif

/// Phase 2 of the build's form for one chunk; xc is the chunk's x for this lane.
#if W4A16_RS_OFFSET
/// (The offset form: xsum_c is the chunk's -136 · sum(x) of the lane's group.)
__device__ __forceinline__ void chunk_any(float (&acc)[kRows], const Stage& st, const XVec* xc, float xsum_c,
                                          bool odd_group) {
  const uint32_t bf16_magic = 0x43004300u;  // 128.0 as a bf16 pair: a register operand of the LOP3s
  chunk_mma<true, kRows>(acc, st, xc, xsum_c, odd_group, bf16_magic);
}
#else
__device__ __forceinline__ void chunk_any(float (&acc)[kRows], const Stage& st, const XVec* xc, uint32_t magic,
                                          bool odd_group) {
#if W4A16_RS_MMA
  (void)magic;
  const uint32_t bf16_magic = 0x43004300u;  // 128.0 as a bf16 pair: a register operand of the LOP3s
  chunk_mma<false, kRows>(acc, st, xc, 0.f, odd_group, bf16_magic);
#else
  (void)odd_group;
  chunk_fma(acc, st, xc, magic);
#endif
}
#endif

/// Phase 3: each row's lane partials by xor-butterfly (every lane ends with the sum), then lane r
/// writes row r: one bf16 rounding. The tensor-core form first zeroes the lanes off the diagonal
/// (their accumulators hold other groups' cross terms), so the butterfly adds the 8 diagonal lanes.
__device__ __forceinline__ void write_rows(float (&acc)[kRows], __nv_bfloat16* __restrict__ y, int row0, int N,
                                           int lane) {
#if W4A16_RS_MMA
  const bool diagonal = (lane & 3) == (lane >> 3);  // lane (g, t) with t = g >> 1
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = diagonal ? acc[r] : 0.f;
#endif
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], o);
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (lane == r && row0 + r < N) y[row0 + r] = __float2bfloat16_rn(acc[r]);
}

// ---- the kernel ------------------------------------------------------------------------------
#if !W4A16_RS_PERSIST
__global__ void __launch_bounds__(kWarps * 32, W4A16_RS_CTAS_PER_SM)
    w4a16_rowstream(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ qweight,
                    const __nv_bfloat16* __restrict__ scales, __nv_bfloat16* __restrict__ y, int N, int K) {
  extern __shared__ __align__(16) XVec xs[];  // [chunks · kXVecPerChunk], x_index order (FFMA form)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int G = K / kGroup, words_per_row = K / 8;
  const int chunks = (G + kGroupsPerChunk - 1) / kGroupsPerChunk;
  const int row0 = (blockIdx.x * kWarps + warp) * kRows;
  const int lane_group = lane >> 2;  // the lane's group within a chunk

  // Row pointers (at chunk 0; advanced by kDepth chunks per turn of the ring, so every load's
  // address is a pointer plus an immediate), clamped to N - 1 so that loads stay in bounds
  // (results of rows >= N are dropped).
  const uint4* wrow[kRows];
  const unsigned short* srow[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int n = min(row0 + r, N - 1);
    wrow[r] = reinterpret_cast<const uint4*>(qweight + static_cast<size_t>(n) * words_per_row) + lane;
    srow[r] = reinterpret_cast<const unsigned short*>(scales) + static_cast<size_t>(n) * G + lane_group;
  }
  // Chunk c0 + s of the current turn: a lane whose group is past K loads nothing and keeps its
  // registers (x is zero there, so they add exact zeros).
  const int live_groups = G - lane_group;  // the lane's group of chunk c is live iff 8c < live_groups
#if W4A16_RS_ROTATE
  // The warp's c-th chunk is chunk (c + first) mod chunks of its rows. first is chunks - 3j (j =
  // gw mod phases; j = 0: first = 0), so the wrap from the row's last chunk to its chunk 0 falls
  // between two turns of the ring: within a turn the loads stay pointer + immediate, and the
  // pointers (here at the NEXT turn's first chunk, which the turn's refills load) move by kDepth
  // chunks per turn, or back to chunk 0 at the wrap: the default's instructions plus a select.
  // Phases: ceil(chunks / 3), 3 at K = 8192 (first chunk 0, 5 or 2: the warps' in-flight windows
  // of 3 chunks cover all 8 positions of a 4 KB row), 10 at K = 28672.
  const int phases = (chunks + kDepth - 1) / kDepth;
  const int phase = (static_cast<int>(blockIdx.x) * kWarps + warp) % phases;
  const int first = phase == 0 ? 0 : chunks - kDepth * phase;
  int at = first;  // the chunk of the row that the pointers (and the next refills) are at
  auto turn_on = [&]() {  // the pointers to the turn after: kDepth chunks on, or the row's chunk 0
    const int step = at + kDepth == chunks ? kDepth - chunks : kDepth;
    at += step;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      wrow[r] += step * (kChunkK / 32);
      srow[r] += step * kGroupsPerChunk;
    }
  };
  // Slot s of the turn whose first logical chunk is c0 (the pointers at its first chunk).
  auto issue = [&](Stage& st, int c0, int s) {
    const bool live = c0 + s < chunks && (at + s) * kGroupsPerChunk < live_groups;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      load_chunk(st.w[r], wrow[r] + s * (kChunkK / 32), live);
      load_scale(st.s[r], srow[r] + s * kGroupsPerChunk, live);
    }
  };
#else
  auto issue = [&](Stage& st, int c0, int s) {
    const bool live = (c0 + s) * kGroupsPerChunk < live_groups;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      load_chunk(st.w[r], wrow[r] + s * (kChunkK / 32), live);
      load_scale(st.s[r], srow[r] + s * kGroupsPerChunk, live);
    }
  };
#endif

  // The first kDepth chunks are requested before x is staged: the stream starts at once.
  // Registers a dead lane never loads must still hold finite values: zero words and scales.
  Stage ring[kDepth];
#if W4A16_RS_ROTATE
#pragma unroll
  for (int r = 0; r < kRows; ++r) {  // the first turn's chunk
    wrow[r] += first * (kChunkK / 32);
    srow[r] += first * kGroupsPerChunk;
  }
#endif
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) ring[s].w[r] = make_uint4(0, 0, 0, 0), ring[s].s[r] = 0u;
    issue(ring[s], 0, s);
  }
#if W4A16_RS_ROTATE
  int xat = at;  // the chunk of x the current turn computes
  turn_on();
#endif
  stage_x_any(xs, x, K, chunks);
  __syncthreads();

  // Phase 2: the register ring; slot s holds chunk c0 + s and is refilled with chunk c0 + s + kDepth
  // as soon as its arithmetic is done.
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  const uint32_t magic = kMagic;  // one register, the LOP3s' third operand
  const bool odd_group = lane_group & 1;
#if W4A16_RS_OFFSET || W4A16_RS_ROTATE
#if W4A16_RS_OFFSET
  const float* xsum = reinterpret_cast<const float*>(xs + chunks * kXVecPerChunk) + lane_group;
  (void)magic;
#endif
  for (int c0 = 0; c0 < chunks; c0 += kDepth) {
#if W4A16_RS_ROTATE
    const int e0 = xat;  // this turn's first chunk of the row; the pointers are at the next turn's
    xat = at;
#else
    const int e0 = c0;
#endif
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      if (c0 + s >= chunks) break;
      const int e = e0 + s;
#if W4A16_RS_OFFSET
      chunk_any(acc, ring[s], xs + lane + e * kXVecPerChunk, xsum[e * kXSumsPerChunk], odd_group);
#else
      chunk_any(acc, ring[s], xs + lane + e * kXVecPerChunk, magic, odd_group);
#endif
#if W4A16_RS_ROTATE
      issue(ring[s], c0 + kDepth, s);
#else
      issue(ring[s], c0, s + kDepth);
#endif
    }
#if W4A16_RS_ROTATE
    turn_on();
#else
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      wrow[r] += kDepth * (kChunkK / 32);
      srow[r] += kDepth * kGroupsPerChunk;
    }
#endif
  }
#else
  const XVec* xc = xs + lane;
  for (int c0 = 0; c0 < chunks; c0 += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      if (c0 + s >= chunks) break;
      chunk_any(acc, ring[s], xc + s * kXVecPerChunk, magic, odd_group);
      issue(ring[s], c0, s + kDepth);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      wrow[r] += kDepth * (kChunkK / 32);
      srow[r] += kDepth * kGroupsPerChunk;
    }
    xc += kDepth * kXVecPerChunk;
  }
#endif

  // Phase 3: one bf16 rounding per row.
  write_rows(acc, y, row0, N, lane);
}
#else  // W4A16_RS_PERSIST
/// The persistent form: gridDim.x CTAs (as many as fit at once), warp gw = warp · gridDim.x +
/// blockIdx.x (warp-major, so the last round of row blocks spreads over every SM) takes row blocks
/// gw, gw + W, gw + 2W, ... (W warps in the grid). Two cursors walk the warp's sequence of (block,
/// chunk) steps: the issue cursor kDepth steps ahead of the compute cursor, both crossing block
/// boundaries, so the ring never drains between blocks. Ring slot s holds steps s, s + kDepth, ...
__global__ void __launch_bounds__(kWarps * 32, W4A16_RS_CTAS_PER_SM)
    w4a16_rowstream(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ qweight,
                    const __nv_bfloat16* __restrict__ scales, __nv_bfloat16* __restrict__ y, int N, int K) {
  extern __shared__ __align__(16) XVec xs[];  // [chunks · kXVecPerChunk]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int G = K / kGroup, words_per_row = K / 8;
  const int chunks = (G + kGroupsPerChunk - 1) / kGroupsPerChunk;
  const int blocks = (N + kRows - 1) / kRows;       // row blocks of kRows rows
  const int stride = static_cast<int>(gridDim.x) * kWarps;
  const int first = warp * static_cast<int>(gridDim.x) + static_cast<int>(blockIdx.x);
  const int lane_group = lane >> 2;
  const int live_groups = G - lane_group;  // the lane's group of chunk c is live iff 8c < live_groups

  // The issue cursor: block ib, chunk ic; its weight row pointers at (ib, ic), clamped to N - 1;
  // one scale pointer (row ib·kRows), the block's other rows at multiples of G from it (one
  // pointer instead of kRows keeps the form within 128 registers): a row past N loads no scale
  // (its registers keep finite old values; its result is dropped).
  int ib = first, ic = 0, rows_left = 0;
  const uint4* wrow[kRows];
  const unsigned short* srow;
  auto aim = [&](int b) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int n = min(b * kRows + r, N - 1);
      wrow[r] = reinterpret_cast<const uint4*>(qweight + static_cast<size_t>(n) * words_per_row) + lane;
    }
    srow = reinterpret_cast<const unsigned short*>(scales) + static_cast<size_t>(min(b * kRows, N - 1)) * G +
           lane_group;
    rows_left = N - b * kRows;
  };
  // One step's loads into a slot, then the cursor moves on (to the next block after its last
  // chunk). Past the warp's last block, or a lane's group past K, nothing is loaded: those
  // registers keep finite old values that are never used, or meet x = 0.
  auto issue = [&](Stage& st) {
    const bool live = ib < blocks && ic * kGroupsPerChunk < live_groups;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      load_chunk(st.w[r], wrow[r], live);
      load_scale(st.s[r], srow + static_cast<size_t>(r) * G, live && r < rows_left);
      wrow[r] += kChunkK / 32;
    }
    srow += kGroupsPerChunk;
    if (++ic == chunks) {
      ic = 0;
      ib += stride;
      aim(ib);
    }
  };

  aim(ib);
  Stage ring[kDepth];
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) ring[s].w[r] = make_uint4(0, 0, 0, 0), ring[s].s[r] = 0u;
    issue(ring[s]);
  }
  stage_x_any(xs, x, K, chunks);
  __syncthreads();

  // Phase 2: the compute cursor (block cb, chunk cc), one ring slot per step; a block's rows are
  // written after its last chunk.
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  const uint32_t magic = kMagic;
  const bool odd_group = lane_group & 1;
  int cb = first, cc = 0;
  const XVec* xc = xs + lane;
  while (cb < blocks) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      chunk_any(acc, ring[s], xc, magic, odd_group);
      issue(ring[s]);
      xc += kXVecPerChunk;
      if (++cc == chunks) {  // Phase 3 for block cb
        write_rows(acc, y, cb * kRows, N, lane);
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
        cc = 0;
        cb += stride;
        xc = xs + lane;
        if (cb >= blocks) break;
      }
    }
  }
}
#endif  // W4A16_RS_PERSIST

// ---- host side -------------------------------------------------------------------------------

inline void launch(const __nv_bfloat16* x, const uint32_t* qw, const __nv_bfloat16* sc, __nv_bfloat16* y, int N,
                   int K, cudaStream_t st) {
  const int chunks = (K / kGroup + kGroupsPerChunk - 1) / kGroupsPerChunk;
#if W4A16_RS_OFFSET
  const int smem = chunks * (kXVecPerChunk * 16 + kXSumsPerChunk * 4);  // x vectors, then the group sums
#else
  const int smem = chunks * kXVecPerChunk * 16;
#endif
  // Two CTAs per SM need up to 2 x 113 KB: ask for the largest shared-memory carveout (L1 only
  // holds x's staging reads and the scales; the weights bypass it).
  cudaError_t e = cudaFuncSetAttribute(w4a16_rowstream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(w4a16_rowstream, cudaFuncAttributePreferredSharedMemoryCarveout,
                             static_cast<int>(cudaSharedmemCarveoutMaxShared));
  if (e != cudaSuccess) throw d2k::abi_error(std::string("expert: rowstream shared memory: ") + cudaGetErrorString(e));
  unsigned ctas = static_cast<unsigned>((N + kCtaRows - 1) / kCtaRows);
#if W4A16_RS_PERSIST
  // As many CTAs as are resident at once (never more than one row block per warp). The occupancy
  // query runs once per device and shared-memory size (the first, eager call; graph replays and
  // later calls reuse it).
  struct Resident {
    int dev = -1, smem = -1;
    unsigned ctas = 0;
  };
  static thread_local Resident resident;
  int dev = 0;
  if (e = cudaGetDevice(&dev); e == cudaSuccess && (dev != resident.dev || smem != resident.smem)) {
    int sms = 0, per_sm = 0;
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, w4a16_rowstream, kWarps * 32,
                                                        static_cast<size_t>(smem));
    if (e == cudaSuccess) resident = {dev, smem, static_cast<unsigned>(std::max(1, sms * per_sm))};
  }
  if (e != cudaSuccess) throw d2k::abi_error(std::string("expert: rowstream occupancy: ") + cudaGetErrorString(e));
  ctas = std::min(ctas, resident.ctas);
#endif
  w4a16_rowstream<<<ctas, kWarps * 32, smem, st>>>(x, qw, sc, y, N, K);
  if (e = cudaGetLastError(); e != cudaSuccess)
    throw d2k::abi_error(std::string("expert: rowstream launch failed: ") + cudaGetErrorString(e));
}

}  // namespace rowstream
