// w4a16_gemv — the CUDA-core row-stream path at B = 1 (expert.cu builds it with W4A16_ROWSTREAM=1;
// every other B, and K beyond what fits in shared memory, keeps the tensor-core path).
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

#include <cstdint>
#include <string>

#include "d2k/solution.h"

// Rows per warp (interleaved loads and FFMA chains).
#ifndef W4A16_RS_ROWS
#define W4A16_RS_ROWS 4
#endif
// Chunks (512 bytes of each row) in the register ring: kDepth - 1 in flight during a chunk's
// arithmetic, kDepth right after its reload is issued.
#ifndef W4A16_RS_DEPTH
#define W4A16_RS_DEPTH 3
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

// 1: the CTA's warps split K instead of rows (rowstream_sk; w4a16_rowstream_sk below).
#ifndef W4A16_RS_SPLITK
#define W4A16_RS_SPLITK 0
#endif

namespace rowstream {

constexpr int kRows = W4A16_RS_ROWS;
constexpr int kDepth = W4A16_RS_DEPTH;
constexpr int kWarps = W4A16_RS_WARPS;
static_assert(kRows >= 1 && kRows <= 8, "W4A16_RS_ROWS in [1, 8]");
static_assert(kDepth >= 2 && kDepth <= 6, "W4A16_RS_DEPTH in [2, 6]");
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

/// Rows per CTA (both kernels): kWarps groups of kRows.
constexpr int kCtaRows = kWarps * kRows;

/// The split-K kernel's warps per CTA for a row of `chunks` chunks: every warp takes the same
/// number of chunks where a divisor allows (K = 28672: 28 chunks, 7 warps of 4), at most kWarps.
inline int splitk_warps(int chunks) {
  if (chunks <= kWarps) return chunks;
  for (int w = kWarps; w > kWarps / 2; --w)
    if (chunks % w == 0) return w;
  return kWarps;
}

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

// ---- the kernel ------------------------------------------------------------------------------
#if !W4A16_RS_SPLITK
__global__ void __launch_bounds__(kWarps * 32, W4A16_RS_CTAS_PER_SM)
    w4a16_rowstream(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ qweight,
                    const __nv_bfloat16* __restrict__ scales, __nv_bfloat16* __restrict__ y, int N, int K) {
  extern __shared__ __align__(16) float4 xs[];  // [chunks · 256] float4, x_index order
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
  auto issue = [&](Stage& st, int c0, int s) {
    const bool live = (c0 + s) * kGroupsPerChunk < live_groups;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      load_chunk(st.w[r], wrow[r] + s * (kChunkK / 32), live);
      load_scale(st.s[r], srow[r] + s * kGroupsPerChunk, live);
    }
  };

  // The first kDepth chunks are requested before x is staged: the stream starts at once.
  // Registers a dead lane never loads must still hold finite values: zero words and scales.
  Stage ring[kDepth];
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) ring[s].w[r] = make_uint4(0, 0, 0, 0), ring[s].s[r] = 0u;
    issue(ring[s], 0, s);
  }
  stage_x(xs, x, K, chunks);
  __syncthreads();

  // Phase 2: the register ring; slot s holds chunk c0 + s and is refilled with chunk c0 + s + kDepth
  // as soon as its arithmetic is done.
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  const uint32_t magic = kMagic;  // one register, the LOP3s' third operand
  const float4* xc = xs + x_index(0, 0, 0, lane);
  for (int c0 = 0; c0 < chunks; c0 += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      if (c0 + s >= chunks) break;
      chunk_fma(acc, ring[s], xc + x_index(s, 0, 0, 0), magic);
      issue(ring[s], c0, s + kDepth);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      wrow[r] += kDepth * (kChunkK / 32);
      srow[r] += kDepth * kGroupsPerChunk;
    }
    xc += x_index(kDepth, 0, 0, 0);
  }

  // Phase 3: the 32 lanes' partials of each row by xor-butterfly (every lane ends with the sum),
  // then lane r writes row r: one bf16 rounding.
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], o);
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (lane == r && row0 + r < N) y[row0 + r] = __float2bfloat16_rn(acc[r]);
}
#endif  // !W4A16_RS_SPLITK

// ---- the split-K kernel (rowstream_sk) -------------------------------------------------------
#if W4A16_RS_SPLITK
// The same chunks, arithmetic and register ring, with the work cut the other way: a CTA owns
// kCtaRows consecutive rows (kWarps groups of kRows) and its W warps split every row's chunks
// (warp w: chunks w, w + W, ...), walking the row groups in order. The CTA's loads in flight then
// cover whole rows of a contiguous block of the matrix (K = 8192, W = 8: 3 row groups = 12 rows x
// 4 KB = 48 KB contiguous), the densest address window a row-major GEMV can keep: the DRAM side
// sees a copy kernel's stream. Each warp reduces a row group's lane partials by a transposing
// butterfly (18 instructions for 4 rows instead of 40; every row's tree is the plain butterfly's)
// into shared memory; one barrier at the end, then the W partials of each row in warp order.

/// The lanes' 4 partials (rows 0..3 of a group) reduced over the warp: lane 8j ends with row j.
/// xor 16 and 8 exchange only the rows the lane keeps; 4, 2, 1 finish one row per lane.
__device__ __forceinline__ float transpose_reduce4(const float (&a)[4], int lane) {
  const bool hi16 = lane & 16, hi8 = lane & 8;
  float k0 = hi16 ? a[2] : a[0], k1 = hi16 ? a[3] : a[1];
  const float s0 = hi16 ? a[0] : a[2], s1 = hi16 ? a[1] : a[3];
  k0 += __shfl_xor_sync(0xFFFFFFFFu, s0, 16);
  k1 += __shfl_xor_sync(0xFFFFFFFFu, s1, 16);
  float k = hi8 ? k1 : k0;
  k += __shfl_xor_sync(0xFFFFFFFFu, hi8 ? k0 : k1, 8);
#pragma unroll
  for (int o = 4; o >= 1; o >>= 1) k += __shfl_xor_sync(0xFFFFFFFFu, k, o);
  return k;  // row 2·(lane bit 4) + (lane bit 3) = lane >> 3 for lanes 0, 8, 16, 24
}

__global__ void __launch_bounds__(kWarps * 32, W4A16_RS_CTAS_PER_SM)
    w4a16_rowstream_sk(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ qweight,
                       const __nv_bfloat16* __restrict__ scales, __nv_bfloat16* __restrict__ y, int N, int K) {
  static_assert(kRows == 4, "the split-K kernel reduces row groups of 4 (transpose_reduce4)");
  extern __shared__ __align__(16) float4 xs[];  // [chunks · 256] float4 (x), then red[W][kCtaRows]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
  const int G = K / kGroup, words_per_row = K / 8;
  const int chunks = (G + kGroupsPerChunk - 1) / kGroupsPerChunk;
  float* red = reinterpret_cast<float*>(xs + chunks * 256);
  const int row_base = blockIdx.x * kCtaRows;
  const int lane_group = lane >> 2;
  const int cw = (chunks - warp + W - 1) / W;  // this warp's chunks per row: warp, warp + W, ...
  const int steps = kWarps * cw;              // (row group, chunk) steps, row group major

  // Step (g, i): chunk warp + i·W of the rows of group g. A lane whose group is past K, a row past
  // N or a step past the end loads nothing and keeps its registers (finite words and scales: x is
  // zero past K, and rows past N are never written). Addresses: one row pointer per row of the
  // group (at group 0, chunk 0) plus one 32-bit offset per step shared by the rows.
  const uint4* wrow[kRows];
  const unsigned short* srow[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    wrow[r] = reinterpret_cast<const uint4*>(qweight + static_cast<size_t>(row_base + r) * words_per_row) + lane;
    srow[r] = reinterpret_cast<const unsigned short*>(scales) + static_cast<size_t>(row_base + r) * G + lane_group;
  }
  const int rows_left = N - row_base;
  const unsigned group_uint4 = kRows * (words_per_row / 4), group_scales = kRows * G;
  auto issue = [&](Stage& st, int g, int i, bool step_live) {
    const int c = warp + i * W;
    const bool live = step_live && c * kGroupsPerChunk + lane_group < G;
    const unsigned woff = g * group_uint4 + c * (kChunkK / 32), soff = g * group_scales + c * kGroupsPerChunk;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const bool row_live = live && g * kRows + r < rows_left;
      load_chunk(st.w[r], wrow[r] + woff, row_live);
      load_scale(st.s[r], srow[r] + soff, row_live);
    }
  };
  auto advance = [cw](int& g, int& i) {
    if (++i == cw) i = 0, ++g;
  };

  Stage ring[kDepth];
  int gi = 0, ii = 0;  // the next step to request
#pragma unroll
  for (int s = 0; s < kDepth; ++s) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) ring[s].w[r] = make_uint4(0, 0, 0, 0), ring[s].s[r] = 0u;
    issue(ring[s], gi, ii, s < steps);
    advance(gi, ii);
  }
  stage_x(xs, x, K, chunks);
  __syncthreads();

  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  const uint32_t magic = kMagic;
  int gc = 0, ic = 0;  // the step being computed
  for (int t0 = 0; t0 < steps; t0 += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      if (t0 + s >= steps) break;
      chunk_fma(acc, ring[s], xs + x_index(warp + ic * W, 0, 0, lane), magic);
      if (ic == cw - 1) {  // the row group's last chunk of this warp: its partials to shared memory
        const float v = transpose_reduce4(acc, lane);
        if ((lane & 7) == 0) red[warp * kCtaRows + gc * kRows + (lane >> 3)] = v;
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
      }
      advance(gc, ic);
      issue(ring[s], gi, ii, t0 + s + kDepth < steps);
      advance(gi, ii);
    }
  }
  __syncthreads();
  // The W warps' partials of each row in warp order, one bf16 rounding.
  for (int r = threadIdx.x; r < kCtaRows; r += blockDim.x) {
    float v = 0.f;
    for (int w = 0; w < W; ++w) v += red[w * kCtaRows + r];
    if (row_base + r < N) y[row_base + r] = __float2bfloat16_rn(v);
  }
}
#endif  // W4A16_RS_SPLITK

// ---- host side -------------------------------------------------------------------------------

inline void launch(const __nv_bfloat16* x, const uint32_t* qw, const __nv_bfloat16* sc, __nv_bfloat16* y, int N,
                   int K, cudaStream_t st) {
  const int chunks = (K / kGroup + kGroupsPerChunk - 1) / kGroupsPerChunk;
#if W4A16_RS_SPLITK
  const int warps = splitk_warps(chunks);
  const int smem = (chunks * kChunkK + warps * kCtaRows) * static_cast<int>(sizeof(float));
  auto* kernel = w4a16_rowstream_sk;
#else
  const int warps = kWarps;
  const int smem = chunks * kChunkK * static_cast<int>(sizeof(float));
  auto* kernel = w4a16_rowstream;
#endif
  // Two CTAs per SM need up to 2 x 113 KB: ask for the largest shared-memory carveout (L1 only
  // holds x's staging reads and the scales; the weights bypass it).
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             static_cast<int>(cudaSharedmemCarveoutMaxShared));
  if (e != cudaSuccess) throw d2k::abi_error(std::string("expert: rowstream shared memory: ") + cudaGetErrorString(e));
  const unsigned ctas = static_cast<unsigned>((N + kCtaRows - 1) / kCtaRows);
  kernel<<<ctas, warps * 32, smem, st>>>(x, qw, sc, y, N, K);
  if (e = cudaGetLastError(); e != cudaSuccess)
    throw d2k::abi_error(std::string("expert: rowstream launch failed: ") + cudaGetErrorString(e));
}

}  // namespace rowstream
