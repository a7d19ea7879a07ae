// chunked_linear_attention — expert: the chunkwise-parallel form on tensor cores (mma.sync
// m16n8k16, bf16 operands, fp32 accumulators), the state in fp32 registers, the value dimension
// split across CTAs.
//
//   per CTA: one (b, h) and a slice of DV value columns (D / DV CTAs per head); 4 warps; chunks of
//   kC = 64 steps walked in order. Per chunk (cum_i = log2(e) * (a_1 + ... + a_i) inside the chunk,
//   inclusive, by a warp scan; padded steps past S have q = k = v = 0 and a = 0):
//     Sc  = Q K^T                           mma, warp w: rows 16w..16w+15, keys <= 16w+15 only
//     P   = bf16(Sc * 2^(cum_i - cum_j)),  j <= i, else 0      (the decayed causal mask, in registers)
//     O   = 2^(cum_i) * (Q bf16(S)) + P V   mma: the inter-chunk term from the state at the chunk's
//                                           start, then P (registers, the accumulator layout reused
//                                           as the A operand) times V of the CTA's columns
//     S   = 2^(cum_last) S + K~^T V,  K~_j = bf16(k_j * 2^(cum_last - cum_j))   mma into the fp32
//                                           state fragments (warp w: state rows w*D/4..), which never
//                                           leave registers; bf16(S) goes to shared memory for Q S
//   Every exponent is <= 0 (a <= 0, j <= i): 2^x never overflows however strong the decay; the
//   factored form (q_i 2^cum_i) . (k_j 2^-cum_j) would overflow at cum_j < -128 (a = -8 in 12 steps).
//
// Numerics (what tests/unit/tasks/chunked_linear_attention emulates): q, k, v exact bf16; scores,
// P V, Q S and the state in fp32; the operands rounded to bf16 are P, K~ and the state's copy for
// Q S. o rounded once to bf16; the final state written from the fp32 registers.
//
// Variants (µs per bench workload on the H200, 2026-12-02, d2k bench; n/m = not yet measured:
// docs/results/chunked_linear_attention.md, "Variants for the next run", gives the command):
//   variant                                                  | 2x16x8192x128 | 8x32x2048x64 | 1x64x32768x128
//   DV = 32 (default): D/32 CTAs per head, 66.8 KB shared    | 892.21        | 304.80       | 4879.53
//   memory (D = 128): 3 CTAs per SM                          |               |              |
//   dv64: DV = 64, half the CTAs (removed: 0.81x)            | 1100.34       | n/m          | n/m
//   dv16: DV = 16, twice the CTAs (removed: 0.80x)           | 1122.79       | n/m          | n/m
//   prefetch: the next chunk's q, k by cp.async into a       | 843.64 (1.06x)| n/m          | n/m
//   second buffer (K~ built shared to shared); 101.6 KB:     | once INCORRECT on the one-step check
//   2 CTAs per SM                                            | (o 0.00526): not explained yet
//   (2026-12-03, another H200: the DV = 32 default of then   | 893.22        | 246.85       | 4888.87
//   beside the three below, one run)                         |               |              |
//   chunkpar: design b below, segments of cla_segments.h's   | 823.68        | 357.78       | 6116.23
//   plan, stage_chunk's staging                              |               |              |
//   pairs: a with stage_pairs (conflict-free transposed      | 830.98        | 256.61       | 4039.75
//   stores: 672 wavefronts a chunk, not 4608)                |               |              |
//   chunkpar_pairs: chunkpar with stage_pairs                | 641.20        | 325.41       | 4762.60
// Designs considered:
//   a. (the default where its grid fills the GPU; variant one_walk always) one CTA per (b, h, DV
//      slice) walking the chunks in order: the state is
//      carried in registers, nothing goes through global memory but the compulsory traffic.
//      Parallelism: B*H heads (32 at (2,16), 64 at (1,64)) times D/DV slices; each slice recomputes
//      Q K^T (the intra-chunk scores do not depend on v), which costs 2*kC*D per step per slice on
//      the tensor cores, cheap next to the memory time. Measured: a CTA takes about 7 us a chunk
//      (892 us / 128 chunks at 2x16x8192x128, one CTA per SM): 128 CTAs cannot fill 132 SMs x 3.
//   b. (the default where a's grid is below the SM count; variant chunkpar always) the chunk-state
//      scan of Mamba-2's SSD and fla's chunk_fwd_h + chunk_fwd_o,
//      over segments of seg_chunks chunks (cla_segments.h): pass 1 each segment's local state
//      K~^T V (all but the last segment, in parallel), pass 2 an fp32 scan over segments, pass 3
//      each segment's outputs from the state entering it (the loop of a, over one segment). Traffic
//      beyond the compulsory: pass 1 reads k, v and a of all but the last segment once more, and
//      each materialised D x D fp32 state is written (pass 1), read and written (pass 2) and read
//      (pass 3). Per chunk a state is 64 KB at D = 128, as much as q, k, v and o of the chunk: one
//      state per chunk (the per-chunk form) would move 5x the compulsory bytes, so the plan takes
//      the fewest segments that give about 1584 CTAs (4 waves of 3 per SM): at the bench rows
//      seg_chunks 10 / 8 / 74, 1664 / 2048 / 1792 CTAs in pass 3, 499 / 427 / 3199 MB moved against
//      272 / 275 / 2160 compulsory (1.84 / 1.56 / 1.48x: at most 54 / 64 / 68% of the roof).
//      States in fp32: in bf16 the scan would compound a rounding per segment (the tolerance test
//      ChunkParallelBf16StatesFail: 0.0194 over 512 one-chunk segments against 0.005).
//   c. wgmma (m64nNk16) for Q K^T and the state update: a warpgroup per 64-step chunk; the mma.sync
//      form is the minimum step, wgmma the next one if the tensor pipe turns out to be the limit.
//
//   Measured on the H200 (2026-12-03, ninth session; docs/results/chunked_linear_attention.md,
//   "Round two measured"), against the form before (a with stage_chunk) at 2x16x8192x128 /
//   8x32x2048x64 / 1x64x32768x128: pairs (stage_pairs) 1.07 / 0.96 / 1.21x, chunkpar 1.08 / 0.69 /
//   0.80x, chunkpar_pairs 1.39 / 0.76 / 1.03x. The default since takes each where it won, by rules
//   from the shape (SASS of every kernel identical to the timed variant's): b with stage_pairs
//   where a's grid has fewer CTAs than SMs (use_chunk_parallel), a otherwise; stage_pairs at
//   D = 128, stage_chunk at D = 64 (kPairStaging).
//   %VARIANT% prefetch -DCLA_PREFETCH=1 -DCLA_CHUNK_PARALLEL=0 -DCLA_PAIR_STAGING=0
//   %VARIANT% one_walk -DCLA_CHUNK_PARALLEL=0
//   %VARIANT% chunkpar -DCLA_CHUNK_PARALLEL=1
//   %VARIANT% prev -DCLA_CHUNK_PARALLEL=0 -DCLA_PAIR_STAGING=0
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cla_args.h"
#include "cla_layout.h"
#include "cla_segments.h"
#include "d2k/solution.h"

#ifndef CLA_DV
#define CLA_DV 32  // value columns per CTA
#endif
#ifndef CLA_PREFETCH
#define CLA_PREFETCH 0  // 1: the next chunk's q and k by cp.async into a second buffer during this chunk
#endif
#ifndef CLA_CHUNK_PARALLEL
// 0: one walk per head (design a); 1: the three-pass segment form (design b); 2: b where a's grid
// has fewer CTAs than the GPU has SMs (use_chunk_parallel), else a
#define CLA_CHUNK_PARALLEL 2
#endif
#ifndef CLA_SEG_CHUNKS
#define CLA_SEG_CHUNKS 0  // chunk-parallel: chunks per segment; 0: cla_segments.h's plan from the shape
#endif
#ifndef CLA_PAIR_STAGING
// 0: stage_chunk; 1: stage_pairs (conflict-free transposed stores); 2: stage_pairs at D = 128, where
// stage_chunk's KwT stores conflict 16 ways, stage_chunk at D = 64 (kPairStaging)
#define CLA_PAIR_STAGING 2
#endif
#if CLA_PREFETCH && (CLA_CHUNK_PARALLEL || CLA_PAIR_STAGING)
#error "CLA_PREFETCH is a variant of its own: not with CLA_CHUNK_PARALLEL or CLA_PAIR_STAGING"
#endif

namespace {

using namespace cla_layout;
constexpr int kThreads = 32 * kWarps;
/// Whether head dimension D stages by step pairs (CLA_PAIR_STAGING).
template <int D>
constexpr bool kPairStaging = CLA_PAIR_STAGING == 1 || (CLA_PAIR_STAGING == 2 && D == 128);
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ uint32_t ld32(const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

/// c += A B, mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

constexpr int kStages = CLA_PREFETCH ? 2 : 1;

template <int D, int DV>
struct Smem {
  __nv_bfloat16 *qs, *ks, *kwt, *vt, *sbt;  // qs, ks: the buffer of the current chunk
  float* cum;
  __nv_bfloat16* qs0;  // buffer 0; buffer 1 (kStages == 2 only) starts buf1_off elements later
  int buf1_off;
  __device__ explicit Smem(unsigned char* base) {
    qs = qs0 = reinterpret_cast<__nv_bfloat16*>(base);
    ks = qs + smem_elems_q(D);
    kwt = ks + smem_elems_q(D);
    vt = kwt + smem_elems_kw(D);
    sbt = vt + smem_elems_v(DV);
    cum = reinterpret_cast<float*>(sbt + smem_elems_s(D, DV));
    buf1_off = int(reinterpret_cast<__nv_bfloat16*>(cum + kC) - qs0);
  }
  /// Q (and K, smem_elems_q(D) after it) of buffer `buf`, by arithmetic (no indexed array: local memory).
  __device__ __nv_bfloat16* q_buf(int buf) const { return qs0 + buf * buf1_off; }
  __device__ void use(int buf) {
    qs = q_buf(buf);
    ks = qs + smem_elems_q(D);
  }
};

struct Head {
  const __nv_bfloat16 *q, *k, *v;  // step 0 of this (b, h): rows of stride row
  const float* a;                  // a[b, h, 0]
  __nv_bfloat16* o;
  int64_t row;  // H * D
  int S;
};

/// Warp 0: cum[i] = log2(e) * (a_{c0} + ... + a_{c0+i}), a = 0 past S. Lane l scans steps 2l, 2l+1.
__device__ __forceinline__ void scan_decays(const Head& hd, int c0, float* cum) {
  const int lane = threadIdx.x;
  const int t0 = c0 + 2 * lane;
  const float x0 = t0 < hd.S ? hd.a[t0] * kLog2e : 0.f;
  const float x1 = t0 + 1 < hd.S ? hd.a[t0 + 1] * kLog2e : 0.f;
  const float pair = x0 + x1;
  float incl = pair;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const float up = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += up;
  }
  const float excl = incl - pair;
  cum[2 * lane] = excl + x0;
  cum[2 * lane + 1] = incl;
}

/// Stages the chunk: Qs, Ks (row-major; kWithQK: the output passes, not chunkpar's pass 1), KwT =
/// k * 2^(cum_last - cum_j) transposed, VT (the CTA's value columns, transposed). 16-byte global
/// loads; steps past S read as zeros.
template <int D, int DV, bool kWithQK, class Sm>
__device__ __forceinline__ void stage_chunk(const Head& hd, int c0, int dv0, const Sm& sm) {
  constexpr int kVecRow = D / 8;
  const float last = sm.cum[kC - 1];
#pragma unroll 4
  for (int e = threadIdx.x; e < kC * kVecRow; e += kThreads) {
    const int step = e / kVecRow, col = 8 * (e % kVecRow);
    uint4 qv = make_uint4(0, 0, 0, 0), kv = qv;
    if (c0 + step < hd.S) {
      const int64_t off = int64_t(c0 + step) * hd.row + col;
      if constexpr (kWithQK) qv = __ldg(reinterpret_cast<const uint4*>(hd.q + off));
      kv = __ldg(reinterpret_cast<const uint4*>(hd.k + off));
    }
    if constexpr (kWithQK) {
      *reinterpret_cast<uint4*>(sm.qs + qk_at(D, step, col)) = qv;
      *reinterpret_cast<uint4*>(sm.ks + qk_at(D, step, col)) = kv;
    }
    const float w = exp2f(last - sm.cum[step]);
    const __nv_bfloat16* kb = reinterpret_cast<const __nv_bfloat16*>(&kv);
#pragma unroll
    for (int x = 0; x < 8; ++x) sm.kwt[kwt_at(col + x, step)] = __float2bfloat16_rn(__bfloat162float(kb[x]) * w);
  }
  constexpr int kVecV = DV / 8;
#pragma unroll 2
  for (int e = threadIdx.x; e < kC * kVecV; e += kThreads) {
    const int step = e / kVecV, col = 8 * (e % kVecV);
    uint4 vv = make_uint4(0, 0, 0, 0);
    if (c0 + step < hd.S) vv = __ldg(reinterpret_cast<const uint4*>(hd.v + int64_t(c0 + step) * hd.row + dv0 + col));
    const __nv_bfloat16* vb = reinterpret_cast<const __nv_bfloat16*>(&vv);
#pragma unroll
    for (int x = 0; x < 8; ++x) sm.vt[vt_at(col + x, step)] = vb[x];
  }
}

/// Staging by step pairs (kPairStaging: the default at D = 128): item e loads steps 2p and 2p+1 (p =
/// pair_of(e)) of the 8 columns from pair_col(e) and writes the transposed KwT and VT as 32-bit
/// words holding both steps. The 32 lanes of a warp take the 32 pairs of one column vector, so each
/// word store of a warp covers 32 consecutive words (one shared-memory wavefront); stage_chunk's
/// (step, column) order puts a step's column vectors 8 * 36 words apart, one bank: a 16-way conflict
/// on every KwT store at D = 128 (8-way at D = 64), repeated by each of the D / DV slices.
/// Qs and Ks (kWithQK) then take twice stage_chunk's wavefronts (a warp's 16-byte stores go to 32
/// rows, not 2): per chunk and CTA, Qs + Ks + KwT + VT take 672 wavefronts where stage_chunk takes
/// 4608 at D = 128 (352 vs 1408 at D = 64; tests/unit/tasks/chunked_linear_attention: StagingBanks).
/// The global loads of a warp read 16 bytes of 32 rows (half sectors; the other half is the next
/// column vector's, a warp later, from L1). Same values, same layout as stage_chunk.
template <int D, int DV, bool kWithQK, class Sm>
__device__ __forceinline__ void stage_pairs(const Head& hd, int c0, int dv0, const Sm& sm) {
  constexpr int kItems = (kC / 2) * (D / 8);
  const float last = sm.cum[kC - 1];
#pragma unroll 2
  for (int e = threadIdx.x; e < kItems; e += kThreads) {
    const int s0 = 2 * pair_of(e), col = pair_col(e);
    uint4 k0 = make_uint4(0, 0, 0, 0), k1 = k0, q0 = k0, q1 = k0;
    const int64_t off = int64_t(c0 + s0) * hd.row + col;
    if (c0 + s0 < hd.S) {
      k0 = __ldg(reinterpret_cast<const uint4*>(hd.k + off));
      if constexpr (kWithQK) q0 = __ldg(reinterpret_cast<const uint4*>(hd.q + off));
    }
    if (c0 + s0 + 1 < hd.S) {
      k1 = __ldg(reinterpret_cast<const uint4*>(hd.k + off + hd.row));
      if constexpr (kWithQK) q1 = __ldg(reinterpret_cast<const uint4*>(hd.q + off + hd.row));
    }
    if constexpr (kWithQK) {
      *reinterpret_cast<uint4*>(sm.qs + qk_at(D, s0, col)) = q0;
      *reinterpret_cast<uint4*>(sm.qs + qk_at(D, s0 + 1, col)) = q1;
      *reinterpret_cast<uint4*>(sm.ks + qk_at(D, s0, col)) = k0;
      *reinterpret_cast<uint4*>(sm.ks + qk_at(D, s0 + 1, col)) = k1;
    }
    const float w0 = exp2f(last - sm.cum[s0]), w1 = exp2f(last - sm.cum[s0 + 1]);
    const __nv_bfloat16* kb0 = reinterpret_cast<const __nv_bfloat16*>(&k0);
    const __nv_bfloat16* kb1 = reinterpret_cast<const __nv_bfloat16*>(&k1);
#pragma unroll
    for (int x = 0; x < 8; ++x)
      *reinterpret_cast<uint32_t*>(sm.kwt + kwt_at(col + x, s0)) =
          pack_bf16(__bfloat162float(kb0[x]) * w0, __bfloat162float(kb1[x]) * w1);
  }
  constexpr int kItemsV = (kC / 2) * (DV / 8);
#pragma unroll
  for (int e = threadIdx.x; e < kItemsV; e += kThreads) {
    const int s0 = 2 * pair_of(e), col = pair_col(e);
    uint4 v0 = make_uint4(0, 0, 0, 0), v1 = v0;
    const int64_t off = int64_t(c0 + s0) * hd.row + dv0 + col;
    if (c0 + s0 < hd.S) v0 = __ldg(reinterpret_cast<const uint4*>(hd.v + off));
    if (c0 + s0 + 1 < hd.S) v1 = __ldg(reinterpret_cast<const uint4*>(hd.v + off + hd.row));
    const __nv_bfloat16* vb0 = reinterpret_cast<const __nv_bfloat16*>(&v0);
    const __nv_bfloat16* vb1 = reinterpret_cast<const __nv_bfloat16*>(&v1);
#pragma unroll
    for (int x = 0; x < 8; ++x) {
      const __nv_bfloat162 two = __halves2bfloat162(vb0[x], vb1[x]);
      *reinterpret_cast<uint32_t*>(sm.vt + vt_at(col + x, s0)) = *reinterpret_cast<const uint32_t*>(&two);
    }
  }
}

#if CLA_PREFETCH
/// 16-byte cp.async, zero-filled when `valid` is false (steps past S).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

/// Prefetch variant: q and k of the chunk at c0 into buffers qs, ks by cp.async (no registers held).
template <int D>
__device__ __forceinline__ void issue_qk(const Head& hd, int c0, __nv_bfloat16* qs, __nv_bfloat16* ks) {
  constexpr int kVecRow = D / 8;
#pragma unroll 4
  for (int e = threadIdx.x; e < kC * kVecRow; e += kThreads) {
    const int step = e / kVecRow, col = 8 * (e % kVecRow);
    const bool valid = c0 + step < hd.S;
    const int64_t off = valid ? int64_t(c0 + step) * hd.row + col : 0;
    cp_async16(qs + qk_at(D, step, col), hd.q + off, valid);
    cp_async16(ks + qk_at(D, step, col), hd.k + off, valid);
  }
  cp_async_commit();
}

/// Prefetch variant of stage_chunk: Qs and Ks have landed; KwT from Ks (shared to shared), VT from
/// global memory as in stage_chunk.
template <int D, int DV>
__device__ __forceinline__ void stage_from_buffers(const Head& hd, int c0, int dv0, const Smem<D, DV>& sm) {
  constexpr int kVecRow = D / 8;
  const float last = sm.cum[kC - 1];
#pragma unroll 4
  for (int e = threadIdx.x; e < kC * kVecRow; e += kThreads) {
    const int step = e / kVecRow, col = 8 * (e % kVecRow);
    const uint4 kv = *reinterpret_cast<const uint4*>(sm.ks + qk_at(D, step, col));
    const float w = exp2f(last - sm.cum[step]);
    const __nv_bfloat16* kb = reinterpret_cast<const __nv_bfloat16*>(&kv);
#pragma unroll
    for (int x = 0; x < 8; ++x) sm.kwt[kwt_at(col + x, step)] = __float2bfloat16_rn(__bfloat162float(kb[x]) * w);
  }
  constexpr int kVecV = DV / 8;
#pragma unroll 2
  for (int e = threadIdx.x; e < kC * kVecV; e += kThreads) {
    const int step = e / kVecV, col = 8 * (e % kVecV);
    uint4 vv = make_uint4(0, 0, 0, 0);
    if (c0 + step < hd.S) vv = __ldg(reinterpret_cast<const uint4*>(hd.v + int64_t(c0 + step) * hd.row + dv0 + col));
    const __nv_bfloat16* vb = reinterpret_cast<const __nv_bfloat16*>(&vv);
#pragma unroll
    for (int x = 0; x < 8; ++x) sm.vt[vt_at(col + x, step)] = vb[x];
  }
}

#endif  // CLA_PREFETCH

/// The warp's 16 output rows of the chunk: O = 2^cum_i (Q bf16(S)) + P V, P the decayed causal
/// scores; written to o for the steps below S.
template <int D, int DV>
__device__ __forceinline__ void chunk_output(const Head& hd, int c0, int dv0, const Smem<D, DV>& sm) {
  constexpr int kNtV = DV / 8;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Inter-chunk term first: acc = Q bf16(S), then scaled per row by 2^cum_i.
  float acc[kNtV][4];
#pragma unroll
  for (int n = 0; n < kNtV; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  float sc[8][4];
#pragma unroll
  for (int n = 0; n < 8; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t a0 = ld32(sm.qs + q_frag(D, w, kk, lane, 0)), a1 = ld32(sm.qs + q_frag(D, w, kk, lane, 1));
    const uint32_t a2 = ld32(sm.qs + q_frag(D, w, kk, lane, 2)), a3 = ld32(sm.qs + q_frag(D, w, kk, lane, 3));
#pragma unroll
    for (int n = 0; n < kNtV; ++n)
      mma_bf16(acc[n], a0, a1, a2, a3, ld32(sm.sbt + s_frag(D, n, kk, lane, 0)), ld32(sm.sbt + s_frag(D, n, kk, lane, 1)));
#pragma unroll
    for (int n = 0; n < 8; ++n)
      if (n <= 2 * w + 1)  // keys past the warp's last row are masked for all its rows
        mma_bf16(sc[n], a0, a1, a2, a3, ld32(sm.ks + k_frag(D, n, kk, lane, 0)), ld32(sm.ks + k_frag(D, n, kk, lane, 1)));
  }
  const int r_lo = 16 * w + acc_row(lane, 0), r_hi = r_lo + 8;
  const float cum_lo = sm.cum[r_lo], cum_hi = sm.cum[r_hi];
  const float g_lo = exp2f(cum_lo), g_hi = exp2f(cum_hi);
#pragma unroll
  for (int n = 0; n < kNtV; ++n) {
    acc[n][0] *= g_lo, acc[n][1] *= g_lo;
    acc[n][2] *= g_hi, acc[n][3] *= g_hi;
  }
  // Decayed causal mask: P_ij = Sc_ij * 2^(cum_i - cum_j) for j <= i, else 0.
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = e < 2 ? r_lo : r_hi, j = 8 * n + acc_col(lane, e);
      sc[n][e] = j <= i ? sc[n][e] * exp2f((e < 2 ? cum_lo : cum_hi) - sm.cum[j]) : 0.f;
    }
  // O += P V over the key steps 0..16w+15 (k-steps 0..w).
#pragma unroll
  for (int kk = 0; kk < kC / 16; ++kk) {
    if (kk > w) break;
    const uint32_t a0 = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]), a1 = pack_bf16(sc[2 * kk][2], sc[2 * kk][3]);
    const uint32_t a2 = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
    const uint32_t a3 = pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
    for (int n = 0; n < kNtV; ++n)
      mma_bf16(acc[n], a0, a1, a2, a3, ld32(sm.vt + v_frag(n, kk, lane, 0)), ld32(sm.vt + v_frag(n, kk, lane, 1)));
  }
#pragma unroll
  for (int n = 0; n < kNtV; ++n) {
    const int col = dv0 + 8 * n + acc_col(lane, 0);
    if (c0 + r_lo < hd.S)
      *reinterpret_cast<__nv_bfloat162*>(hd.o + int64_t(c0 + r_lo) * hd.row + col) = __floats2bfloat162_rn(acc[n][0], acc[n][1]);
    if (c0 + r_hi < hd.S)
      *reinterpret_cast<__nv_bfloat162*>(hd.o + int64_t(c0 + r_hi) * hd.row + col) = __floats2bfloat162_rn(acc[n][2], acc[n][3]);
  }
}

/// st = 2^cum_last st + K~^T V for the warp's state rows w*D/4.. (kMt tiles of 16).
template <int D, int DV, class Sm>
__device__ __forceinline__ void update_state(float (&st)[D / 64][DV / 8][4], const Sm& sm) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float gc = exp2f(sm.cum[kC - 1]);
#pragma unroll
  for (int m = 0; m < D / 64; ++m)
#pragma unroll
    for (int n = 0; n < DV / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[m][n][e] *= gc;
#pragma unroll
  for (int kk = 0; kk < kC / 16; ++kk)
#pragma unroll
    for (int m = 0; m < D / 64; ++m) {
      const int m0 = w * (D / 4) + 16 * m;
      const uint32_t a0 = ld32(sm.kwt + kw_frag(m0, kk, lane, 0)), a1 = ld32(sm.kwt + kw_frag(m0, kk, lane, 1));
      const uint32_t a2 = ld32(sm.kwt + kw_frag(m0, kk, lane, 2)), a3 = ld32(sm.kwt + kw_frag(m0, kk, lane, 3));
#pragma unroll
      for (int n = 0; n < DV / 8; ++n)
        mma_bf16(st[m][n], a0, a1, a2, a3, ld32(sm.vt + v_frag(n, kk, lane, 0)), ld32(sm.vt + v_frag(n, kk, lane, 1)));
    }
}

/// bf16(st) into SbT[dv][dk] (the B operand of the next chunk's Q S).
template <int D, int DV>
__device__ __forceinline__ void publish_state(const float (&st)[D / 64][DV / 8][4], const Smem<D, DV>& sm) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < D / 64; ++m)
#pragma unroll
    for (int n = 0; n < DV / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int dk = w * (D / 4) + 16 * m + acc_row(lane, e), dv = 8 * n + acc_col(lane, e);
        sm.sbt[sbt_at(D, dv, dk)] = __float2bfloat16_rn(st[m][n][e]);
      }
}

/// The CTA's D x DV block (columns dv0..) of a [D][D] fp32 state at `head`, from the accumulator
/// fragments (warp w: rows w*D/4..), the final state of the walk, and the segment form's states.
template <int D, int DV>
__device__ __forceinline__ void store_state(const float (&st)[D / 64][DV / 8][4], float* head, int dv0) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < D / 64; ++m)
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {
      const int dk = w * (D / 4) + 16 * m + acc_row(lane, 0), dv = dv0 + 8 * n + acc_col(lane, 0);
      *reinterpret_cast<float2*>(head + int64_t(dk) * D + dv) = make_float2(st[m][n][0], st[m][n][1]);
      *reinterpret_cast<float2*>(head + int64_t(dk + 8) * D + dv) = make_float2(st[m][n][2], st[m][n][3]);
    }
}

/// The inverse of store_state: the fragments from the CTA's block of a [D][D] fp32 state.
template <int D, int DV>
__device__ __forceinline__ void load_state(float (&st)[D / 64][DV / 8][4], const float* head, int dv0) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < D / 64; ++m)
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {
      const int dk = w * (D / 4) + 16 * m + acc_row(lane, 0), dv = dv0 + 8 * n + acc_col(lane, 0);
      const float2 lo = *reinterpret_cast<const float2*>(head + int64_t(dk) * D + dv);
      const float2 hi = *reinterpret_cast<const float2*>(head + int64_t(dk + 8) * D + dv);
      st[m][n][0] = lo.x, st[m][n][1] = lo.y, st[m][n][2] = hi.x, st[m][n][3] = hi.y;
    }
}

template <int D, int DV>
__global__ void __launch_bounds__(kThreads) chunked_linear_attention(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const float* __restrict__ a, __nv_bfloat16* __restrict__ o, float* __restrict__ state, int S, int H) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem<D, DV> sm(smem_raw);
  constexpr int kSplit = D / DV;
  const int bh = blockIdx.x / kSplit, dv0 = DV * (blockIdx.x % kSplit);
  const int b = bh / H, h = bh % H;
  const int64_t first = (int64_t(b) * S * H + h) * D;
  const Head hd{q + first, k + first, v + first, a + int64_t(bh) * S, o + first, int64_t(H) * D, S};

  float st[D / 64][DV / 8][4];
#pragma unroll
  for (int m = 0; m < D / 64; ++m)
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) st[m][n][0] = st[m][n][1] = st[m][n][2] = st[m][n][3] = 0.f;

#if CLA_PREFETCH
  issue_qk<D>(hd, 0, sm.q_buf(0), sm.q_buf(0) + smem_elems_q(D));
#endif
  for (int c0 = 0, it = 0; c0 < S; c0 += kC, ++it) {
#if CLA_PREFETCH
    cp_async_wait_all();  // this chunk's q and k (issued during the previous chunk) have landed
    sm.use(it & 1);
#endif
    __syncthreads();  // the previous chunk's reads of every shared array are done
    publish_state<D, DV>(st, sm);
    if (threadIdx.x < 32) scan_decays(hd, c0, sm.cum);
    __syncthreads();  // cum ready for the K~ weights
#if CLA_PREFETCH
    if (c0 + kC < S) {
      __nv_bfloat16* next = sm.q_buf((it + 1) & 1);
      issue_qk<D>(hd, c0 + kC, next, next + smem_elems_q(D));
    }
    stage_from_buffers<D, DV>(hd, c0, dv0, sm);
#else
    if constexpr (kPairStaging<D>)
      stage_pairs<D, DV, true>(hd, c0, dv0, sm);
    else
      stage_chunk<D, DV, true>(hd, c0, dv0, sm);
#endif
    __syncthreads();  // the chunk and bf16(S) staged
    chunk_output<D, DV>(hd, c0, dv0, sm);
    update_state<D, DV>(st, sm);
  }

  store_state<D, DV>(st, state + int64_t(bh) * D * D, dv0);
}

// ---- Chunk-parallel variant (design b): three kernels over segments of seg_chunks chunks ----
//   pass 1 segment_local_states  one CTA per (b, h, segment but the last, 64 value columns): the
//                                segment's local state L_s = sum_j 2^(A_end - A_j) k_j^T v_j from
//                                zero (update_state per chunk) in fp32, and its log2 decay.
//   pass 2 scan_segment_states   one thread per (b, h, state element): X_{s+1} = 2^decay_s X_s + L_s,
//                                X_0 = 0, in fp32, in place over L.
//   pass 3 segment_outputs       one CTA per (b, h, segment, value slice): the sequential kernel's
//                                chunk loop over the segment from X_s; the last segment writes the
//                                final state.
// Every per-chunk product and rounding is the sequential kernel's (bf16 P, K~ and copy of the
// state for Q S; fp32 state); only the association of the state's sum changes at segment
// boundaries, and the state crosses them in fp32 (a bf16 state per segment would compound).

/// Pass 1's shared memory: KwT, VT and the decays (cla_layout.h: smem_bytes_local).
template <int D, int DV>
struct SmemLocal {
  __nv_bfloat16 *kwt, *vt;
  float* cum;
  __device__ explicit SmemLocal(unsigned char* base) {
    kwt = reinterpret_cast<__nv_bfloat16*>(base);
    vt = kwt + smem_elems_kw(D);
    cum = reinterpret_cast<float*>(vt + smem_elems_v(DV));
  }
};

/// Pass 1. Every segment here is full (the last one, which may be partial, has no pass 1), so
/// the steps past S the staging guards against never occur; the guard stays for safety.
template <int D, int DV>
__global__ void __launch_bounds__(kThreads) segment_local_states(
    const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v, const float* __restrict__ a,
    float* __restrict__ states, float* __restrict__ decays, int S, int H, int seg_steps, int nlocal) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SmemLocal<D, DV> sm(smem_raw);
  constexpr int kSplit = D / DV;
  // Slices of one (b, h, segment) at consecutive indices: they read the same k from L2.
  const int slice = blockIdx.x % kSplit, rest = blockIdx.x / kSplit;
  const int seg = rest % nlocal, bh = rest / nlocal;
  const int b = bh / H, h = bh % H, dv0 = DV * slice;
  const int64_t first = (int64_t(b) * S * H + h) * D;
  const Head hd{nullptr, k + first, v + first, a + int64_t(bh) * S, nullptr, int64_t(H) * D, S};

  float st[D / 64][DV / 8][4];
#pragma unroll
  for (int m = 0; m < D / 64; ++m)
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) st[m][n][0] = st[m][n][1] = st[m][n][2] = st[m][n][3] = 0.f;

  float log2_decay = 0.f;  // sum of the chunks' cum_last: the segment's decay is 2^log2_decay
  const int c_begin = seg * seg_steps;
  for (int c0 = c_begin; c0 < c_begin + seg_steps; c0 += kC) {
    __syncthreads();  // the previous chunk's reads of KwT, VT and cum are done
    if (threadIdx.x < 32) scan_decays(hd, c0, sm.cum);
    __syncthreads();  // cum ready for the K~ weights
    if constexpr (kPairStaging<D>)
      stage_pairs<D, DV, false>(hd, c0, dv0, sm);
    else
      stage_chunk<D, DV, false>(hd, c0, dv0, sm);  // KwT and VT only

    __syncthreads();  // KwT and VT staged
    log2_decay += sm.cum[kC - 1];
    update_state<D, DV>(st, sm);
  }
  const int64_t at = int64_t(bh) * nlocal + seg;
  store_state<D, DV>(st, states + at * D * D, dv0);
  if (slice == 0 && threadIdx.x == 0) decays[at] = log2_decay;
}

/// Pass 2, in place: on entry states[bh][s] holds L_s, on exit the state entering segment s + 1.
/// Loads of kBatch segments are issued ahead of their chain of multiply-adds (they do not depend
/// on it), so a thread waits for memory once per kBatch segments, not once per segment.
constexpr int kScanThreads = 256;
__global__ void __launch_bounds__(kScanThreads) scan_segment_states(float* __restrict__ states,
                                                                    const float* __restrict__ decays,
                                                                    int64_t per_head, int64_t total, int nlocal) {
  const int64_t idx = int64_t(blockIdx.x) * kScanThreads + threadIdx.x;
  if (idx >= total) return;
  const int64_t bh = idx / per_head, e = idx % per_head;
  float* p = states + bh * nlocal * per_head + e;
  const float* g = decays + bh * nlocal;
  constexpr int kBatch = 8;
  float x = 0.f;
  for (int s0 = 0; s0 < nlocal; s0 += kBatch) {
    float l[kBatch], f[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      l[u] = 0.f, f[u] = 0.f;
      if (s0 + u < nlocal) l[u] = p[int64_t(s0 + u) * per_head], f[u] = exp2f(g[s0 + u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (s0 + u < nlocal) {
        x = fmaf(f[u], x, l[u]);
        p[int64_t(s0 + u) * per_head] = x;
      }
  }
}

/// Pass 3: the sequential kernel's loop over one segment's chunks, from the state entering it.
template <int D, int DV>
__global__ void __launch_bounds__(kThreads) segment_outputs(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, const __nv_bfloat16* __restrict__ v,
    const float* __restrict__ a, __nv_bfloat16* __restrict__ o, float* __restrict__ state,
    const float* __restrict__ states, int S, int H, int seg_steps, int nseg) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem<D, DV> sm(smem_raw);
  constexpr int kSplit = D / DV;
  const int slice = blockIdx.x % kSplit, rest = blockIdx.x / kSplit;
  const int seg = rest % nseg, bh = rest / nseg;
  const int b = bh / H, h = bh % H, dv0 = DV * slice;
  const int64_t first = (int64_t(b) * S * H + h) * D;
  const Head hd{q + first, k + first, v + first, a + int64_t(bh) * S, o + first, int64_t(H) * D, S};

  float st[D / 64][DV / 8][4];
  if (seg == 0) {
#pragma unroll
    for (int m = 0; m < D / 64; ++m)
#pragma unroll
      for (int n = 0; n < DV / 8; ++n) st[m][n][0] = st[m][n][1] = st[m][n][2] = st[m][n][3] = 0.f;
  } else {
    load_state<D, DV>(st, states + (int64_t(bh) * (nseg - 1) + seg - 1) * D * D, dv0);
  }

  const int c_begin = seg * seg_steps;
  const int c_end = int(int64_t(c_begin) + seg_steps < S ? int64_t(c_begin) + seg_steps : S);
  const bool last_seg = seg == nseg - 1;
  for (int c0 = c_begin; c0 < c_end; c0 += kC) {
    __syncthreads();  // the previous chunk's reads of every shared array are done
    publish_state<D, DV>(st, sm);
    if (threadIdx.x < 32) scan_decays(hd, c0, sm.cum);
    __syncthreads();  // cum ready for the K~ weights
    if constexpr (kPairStaging<D>)
      stage_pairs<D, DV, true>(hd, c0, dv0, sm);
    else
      stage_chunk<D, DV, true>(hd, c0, dv0, sm);

    __syncthreads();  // the chunk and bf16(S) staged
    chunk_output<D, DV>(hd, c0, dv0, sm);
    // The state leaving a segment other than the last is pass 2's; only the last one's is needed.
    if (last_seg || c0 + kC < c_end) update_state<D, DV>(st, sm);
  }
  if (last_seg) store_state<D, DV>(st, state + int64_t(bh) * D * D, dv0);
}

/// Value columns per CTA for head dimension D (CLA_DV, at most D).
constexpr int dv_of(int64_t D) { return CLA_DV < D ? CLA_DV : int(D); }

cla_segments::Plan segment_plan(const cla::Dims& d) {
  return cla_segments::plan(d.B * d.H, d.S, d.D, d.D / dv_of(d.D), CLA_SEG_CHUNKS);
}

/// The current device's SM count, queried once per device: d2k_run runs inside the timed window,
/// where an attribute query per call would add host time before the first launch.
int sm_count() {
  constexpr int kDevices = 64;
  static std::atomic<int> cache[kDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) throw std::runtime_error("expert: cannot read the current device");
  if (dev >= 0 && dev < kDevices)
    if (const int c = cache[dev].load(std::memory_order_relaxed); c > 0) return c;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    throw std::runtime_error("expert: cannot read the SM count");
  if (dev >= 0 && dev < kDevices) cache[dev].store(sms, std::memory_order_relaxed);
  return sms;
}

/// Whether the call takes the chunk-parallel form (CLA_CHUNK_PARALLEL). Automatic (2): where one
/// walk per head gives fewer CTAs (B*H*D/DV) than the GPU has SMs, some SMs idle for the whole
/// call, which costs more than the segments' extra traffic (1.5-1.8x the compulsory bytes).
/// H200, 2026-12-03, with stage_pairs: the segment form 1.30x the one walk at 2x16x8192x128 (128
/// CTAs on 132 SMs), 0.79x at 8x32x2048x64 (512 CTAs) and 0.85x at 1x64x32768x128 (256).
bool use_chunk_parallel(const cla::Dims& d) {
  if (CLA_CHUNK_PARALLEL != 2) return CLA_CHUNK_PARALLEL == 1;
  return d.B * d.H * (d.D / dv_of(d.D)) < int64_t(sm_count());
}

/// The workspace: the materialised segment states, then their log2 decays.
struct SegmentBuffers {
  float* states;  // [B*H][nseg - 1][D][D] fp32
  float* decays;  // [B*H][nseg - 1]
};
SegmentBuffers carve(d2k::Workspace& ws, const cla::Dims& d, const cla_segments::Plan& p) {
  return {ws.take<float>(uint64_t(p.state_floats(d.B * d.H, d.D))), ws.take<float>(uint64_t(p.decay_floats(d.B * d.H)))};
}

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("expert: ") + what + ": " + cudaGetErrorString(e));
}

template <int D>
void launch_chunk_parallel(const cla::Tensors& t, const SegmentBuffers& buf, const cla_segments::Plan& p,
                           cudaStream_t st) {
  constexpr int DV = CLA_DV < D ? CLA_DV : D;
  static_assert(DV % 8 == 0 && D % DV == 0, "CLA_DV must be 8, 16, 32 or 64 (a divisor of 64)");
  // Pass 1 has no Q K^T to repeat per slice but rebuilds K~ (all D rows) in each: 64 value columns
  // per CTA halve that at D = 128 (one CTA per head and segment at D = 64); its 64 fp32 state
  // registers per thread fit beside the staging (no Q, K or P there).
  constexpr int kDvLocal = 64 < D ? 64 : D;
  const int64_t heads = t.d.B * t.d.H, slices = heads * (D / DV);
  const int nseg = int(p.nseg), seg_steps = int(p.seg_chunks * kC);
  if (slices * p.nseg > int64_t(0x7fffffff)) throw d2k::abi_error("expert: B*H*D/DV*segments exceeds the grid limit");
  const auto* q = static_cast<const __nv_bfloat16*>(t.q);
  const auto* k = static_cast<const __nv_bfloat16*>(t.k);
  const auto* v = static_cast<const __nv_bfloat16*>(t.v);
  if (nseg > 1) {
    const int nlocal = nseg - 1;
    segment_local_states<D, kDvLocal><<<unsigned(heads * (D / kDvLocal) * nlocal), kThreads,
                                          smem_bytes_local(D, kDvLocal), st>>>(
        k, v, t.a, buf.states, buf.decays, int(t.d.S), int(t.d.H), seg_steps, nlocal);
    check_launch("local states launch");
    const int64_t total = heads * D * D;
    const int64_t blocks = (total + kScanThreads - 1) / kScanThreads;
    if (blocks > int64_t(0x7fffffff)) throw d2k::abi_error("expert: B*H*D*D exceeds the scan's grid limit");
    scan_segment_states<<<unsigned(blocks), kScanThreads, 0, st>>>(buf.states, buf.decays, int64_t(D) * D, total, nlocal);
    check_launch("scan launch");
  }
  const int bytes = smem_bytes(D, DV, kStages);  // kStages = 1: no prefetch buffers
  auto kernel = segment_outputs<D, DV>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) throw std::runtime_error(std::string("expert: smem attribute: ") + cudaGetErrorString(e));
  kernel<<<unsigned(slices * nseg), kThreads, bytes, st>>>(q, k, v, t.a, static_cast<__nv_bfloat16*>(t.o), t.state,
                                                          buf.states, int(t.d.S), int(t.d.H), seg_steps, nseg);
  check_launch("outputs launch");
}

template <int D>
void launch(const cla::Tensors& t, cudaStream_t st) {
  constexpr int DV = CLA_DV < D ? CLA_DV : D;
  static_assert(DV % 8 == 0 && D % DV == 0, "CLA_DV must be 8, 16, 32 or 64 (a divisor of 64)");
  const int bytes = smem_bytes(D, DV, kStages);
  auto kernel = chunked_linear_attention<D, DV>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) throw std::runtime_error(std::string("expert: smem attribute: ") + cudaGetErrorString(e));
  const int64_t ctas = t.d.B * t.d.H * (D / DV);
  if (ctas > int64_t(0x7fffffff)) throw d2k::abi_error("expert: B*H*D/DV exceeds the grid limit");
  kernel<<<unsigned(ctas), kThreads, bytes, st>>>(
      static_cast<const __nv_bfloat16*>(t.q), static_cast<const __nv_bfloat16*>(t.k),
      static_cast<const __nv_bfloat16*>(t.v), t.a, static_cast<__nv_bfloat16*>(t.o), t.state, int(t.d.S), int(t.d.H));
  e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("expert: launch: ") + cudaGetErrorString(e));
}

void run(const d2k_args* args) {
  const cla::Tensors t = cla::parse(args, "expert");
  for (const void* p : {t.q, t.k, t.v, static_cast<const void*>(t.o)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      throw d2k::abi_error("expert: q, k, v and o must be 16-byte aligned (16-byte vector accesses)");
  if (reinterpret_cast<uintptr_t>(t.state) % 8 != 0) throw d2k::abi_error("expert: final_state must be 8-byte aligned");
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  if (use_chunk_parallel(t.d)) {
    const cla_segments::Plan p = segment_plan(t.d);
    d2k::Workspace ws(args);
    const SegmentBuffers buf = carve(ws, t.d, p);
    if (t.d.D == 64)
      launch_chunk_parallel<64>(t, buf, p, st);
    else
      launch_chunk_parallel<128>(t, buf, p, st);
  } else if (t.d.D == 64) {
    launch<64>(t, st);
  } else {
    launch<128>(t, st);
  }
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const cla::Dims d = cla::parse_dims(args, "expert");
    d2k::Workspace ws;
    if (use_chunk_parallel(d)) carve(ws, d, segment_plan(d));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    run(args);
    return D2K_OK;
  });
}
