// w4a16_gemv — the row stream's chunk arithmetic on the tensor cores (W4A16_RS_MMA=1: the default
// and variant persist): the same loads, ring and lanes as w4a16_rowstream.cuh, ~1.9 lane
// instructions per weight instead of ~3.4 (the FFMA form is near the issue rate at 8192 x 8192).
//
// Diagonal mma: every lane of the warp holds 32 weights of ONE row (the row stream's 512-byte
// loads). mma.sync m16n8k16 gives column n of B to the lanes of group g = n (lane = 4g + t) and
// row m of A to the lanes of group g = m, so the diagonal D[g][g] sums exactly the products of
// lane group g's own B and A registers: each lane feeds B with its weight codes and A with the x
// values of the same k. The other 63 of D's 64 useful entries pair one group's x with another's
// weights and are ignored (the tensor cores are otherwise idle at B = 1; one HMMA per 128 weights
// is ~45% of the mma.sync rate at 75% of SOL). Rows 8..15 of A repeat rows 0..7 (a1 = a0, a3 = a2:
// no registers).
//
// Per lane and chunk a row's 32 weights (words u = 0..3, group 8c + g: lane group g of the row
// stream is exactly one quantisation group) become 8 mma steps: step (u, h) takes the bf16 code
// pairs (q_{2h} - 8, q_{2h+4} - 8) as b0 and (q_{2h+1} - 8, q_{2h+5} - 8) as b1 (magic number
// 0x4300 | q and one exact HFMA2, as expert.cu's code_pair), and x of the same k as a0 = (x_{2h},
// x_{2h+4}), a2 = (x_{2h+1}, x_{2h+5}) of the word's eight k, staged as bf16 pairs in shared memory
// (half the bytes of the FFMA form's fp32 x). The 8 steps accumulate an fp32 partial from zero;
// lane (g, g >> 1) holds D[g][g] (c0 for even g, c1 for odd) and applies the group's scale with
// one FFMA into its accumulator. At the end the other lanes' accumulators are zeroed and the
// row stream's xor-butterfly adds the 8 diagonal lanes (exact zeros elsewhere). Products exact,
// every sum fp32 (as the tensor-core path of expert.cu); tests/unit/tasks/w4a16_gemv emulates this
// order (RowstreamMmaLaneEmulationPasses).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace rowstream {

/// Shared memory per chunk: 1024 bf16 of x as A registers, 256 uint4: (lane l, word u, step h) at
/// (u·2 + h)·32 + l, each {a0, a0, a2, a2} (rows 8..15 of A repeat rows 0..7), so that one LDS.128
/// lands in the HMMA's four consecutive A registers with no register moves (one uint4 per step
/// without the repeats would cost four MOVs per HMMA; the smem is the FFMA form's 4 KB per chunk).
constexpr int kMmaXVecPerChunk = 256;

/// The bf16 pair (q_j - 8, q_{j+4} - 8) of word w, exact (0x4300 | q is 128 + q; v·1 - 136). The
/// mask and the magic in one LOP3 (magic in a register: written as C++ the compiler splits the two
/// immediates into an AND and an OR).
__device__ __forceinline__ uint32_t mma_code_pair(uint32_t w, int j, uint32_t magic) {
  uint32_t v, d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(v) : "r"(w >> (4 * j)), "n"(0x000F000Fu), "r"(magic));  // (a & b) | c
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(v), "r"(0x3F803F80u), "r"(0xC308C308u));
  return d;
}

/// The offset form's bf16 pair (128 + q_j, 128 + q_{j+4}) of word w: mask and magic in one LOP3.
__device__ __forceinline__ uint32_t mma_code_pair_offset(uint32_t w, int j, uint32_t magic) {
  uint32_t v;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(v) : "r"(w >> (4 * j)), "n"(0x000F000Fu), "r"(magic));  // (a & b) | c
  return v;
}

/// d = A·B + c (c the same in all four accumulators: only the lane's diagonal entry is kept).
__device__ __forceinline__ void mma_diag_from(float (&d)[4], const uint4& a, uint32_t b0, uint32_t b1, float c) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1), "f"(c));
}

/// d = A·B + d, A 16x16 from one uint4 {a0, a1, a2, a3}, B 16x8, bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_diag(float (&d)[4], const uint4& a, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

/// Phase 1 (tensor-core form): x (bf16, row 0) to shared memory as the A registers of each lane,
/// word and step: {a0, a0, a2, a2} of step h at ((c·4 + u)·2 + h)·32 + l, zero beyond K. Same units,
/// batching and conflict-free stores as stage_x.
__device__ __forceinline__ void stage_x_pairs(uint4* xs, const __nv_bfloat16* __restrict__ x, int K, int chunks) {
  constexpr int kBatch = 8;
  const int units = chunks * 128;
  for (int i0 = threadIdx.x; i0 < units; i0 += kBatch * blockDim.x) {
    uint4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = i0 + b * blockDim.x;
      const int k0 = (i >> 7) * 1024 + 32 * (i & 31) + 8 * ((i >> 5) & 3);
      v[b] = i < units && k0 < K ? __ldg(reinterpret_cast<const uint4*>(x + k0)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = i0 + b * blockDim.x;
      if (i >= units) break;
      // (x0 x1) (x2 x3) (x4 x5) (x6 x7) -> step 0: a0 = (x0 x4), a2 = (x1 x5); step 1: (x2 x6), (x3 x7)
      const uint32_t a00 = __byte_perm(v[b].x, v[b].z, 0x5410), a20 = __byte_perm(v[b].x, v[b].z, 0x7632);
      const uint32_t a01 = __byte_perm(v[b].y, v[b].w, 0x5410), a21 = __byte_perm(v[b].y, v[b].w, 0x7632);
      const int l = i & 31, cu = i >> 5;  // cu = c·4 + u
      xs[(cu * 2 + 0) * 32 + l] = make_uint4(a00, a00, a20, a20);
      xs[(cu * 2 + 1) * 32 + l] = make_uint4(a01, a01, a21, a21);
    }
  }
}

/// Phase 2 (tensor-core form, per chunk): for each of the warp's R rows, 8 diagonal mma steps into
/// an fp32 partial, then the lane's diagonal entry times its group's scale into acc. xc points at
/// the chunk's A registers for this lane (chunk base + lane); magic is 0x43004300. kOffset: the
/// codes 128 + q with the lane group's -136 · sum(x) (xsum_c) as the first step's C (the offset
/// form, below); else the codes q - 8 from a zero partial (xsum_c unused).
template <bool kOffset, int R, class StageT>
__device__ __forceinline__ void chunk_mma(float (&acc)[R], const StageT& st, const uint4* xc, float xsum_c,
                                          bool odd_group, uint32_t magic) {
  const auto pair = [magic](uint32_t w, int j) {
    return kOffset ? mma_code_pair_offset(w, j, magic) : mma_code_pair(w, j, magic);
  };
  float d[R][4];
  if constexpr (!kOffset) {
#pragma unroll
    for (int r = 0; r < R; ++r) d[r][0] = d[r][1] = d[r][2] = d[r][3] = 0.f;
  }
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const uint4 xa0 = xc[(u * 2 + 0) * 32], xa1 = xc[(u * 2 + 1) * 32];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint32_t w = u == 0 ? st.w[r].x : u == 1 ? st.w[r].y : u == 2 ? st.w[r].z : st.w[r].w;
      if (kOffset && u == 0)
        mma_diag_from(d[r], xa0, pair(w, 0), pair(w, 1), xsum_c);  // step h = 0
      else
        mma_diag(d[r], xa0, pair(w, 0), pair(w, 1));  // step h = 0
      mma_diag(d[r], xa1, pair(w, 2), pair(w, 3));    // step h = 1
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
    acc[r] = fmaf(__uint_as_float(st.s[r] << 16), odd_group ? d[r][1] : d[r][0], acc[r]);
}

#if W4A16_RS_OFFSET
// ---- the offset form (W4A16_RS_OFFSET, the default since 2026-12-03; `prev` is the q - 8 form) --
// B holds the codes 128 + q (0x4300 | q as a bf16 pair: one SHF and one LOP3 per pair, no HFMA2),
// and the group's correction -136 · sum(x) enters as the first step's C: D = -136 · sum(x) +
// sum x · (128 + q) = sum x · (q - 8). The products stay exact (128 + q <= 143 has 8 significant
// bits); the partial carries terms ~17x larger than the plain form's, so its fp32 rounding is
// ~17x coarser (relative 1e-5 of a group's partial: far inside the rule's atol of 0.02 sigma_y).
// Removes the 64 HFMA2 of a 4-row chunk (of ~269 instructions). The group sums are made once per
// CTA while x is staged (x is shared by all of the CTA's rows): kXSumsPerChunk floats per chunk
// after the x vectors (896 bytes at K = 28672: two CTAs still fit one SM's shared memory).
constexpr int kXSumsPerChunk = 8;

/// Phase 1 of the offset form: the {a0, a0, a2, a2} vectors of stage_x_pairs, and per group of 128
/// the fp32 -136 · sum(x). Thread p takes lane l = p & 31 of chunk c = p >> 5 (its 32 k, the four
/// words u = 0..3): its loads are 64 contiguous bytes, its stores (per u and step) the lanes'
/// consecutive vectors as in stage_x_pairs; it sums its 32 values in k order, the 4 lanes of a
/// group add theirs by xor-butterfly (offsets 1, 2), and the group's first lane stores the
/// correction. A warp's 32 threads are one chunk (units and the stride are multiples of 32), so
/// the shuffles run on whole warps.
__device__ __forceinline__ void stage_x_pairs_sums(uint4* xs, float* xsum, const __nv_bfloat16* __restrict__ x, int K,
                                                   int chunks) {
  constexpr int kBatch = 2;  // units per batch: 8 loads of 16 bytes, the FFMA form's batch
  const int units = chunks * 32;
  for (int p0 = threadIdx.x; p0 < units; p0 += kBatch * blockDim.x) {
    uint4 v[kBatch][4];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int p = p0 + b * blockDim.x;
      const int k0 = (p >> 5) * 1024 + 32 * (p & 31);  // the lane's 32 k lie in one group: all in or all out
      const bool in = p < units && k0 < K;
#pragma unroll
      for (int u = 0; u < 4; ++u)
        v[b][u] = in ? __ldg(reinterpret_cast<const uint4*>(x + k0) + u) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int p = p0 + b * blockDim.x;
      if (p >= units) break;  // warp-uniform
      const int l = p & 31, c = p >> 5;
      float sum = 0.f;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint4 w = v[b][u];
        const uint32_t a00 = __byte_perm(w.x, w.z, 0x5410), a20 = __byte_perm(w.x, w.z, 0x7632);
        const uint32_t a01 = __byte_perm(w.y, w.w, 0x5410), a21 = __byte_perm(w.y, w.w, 0x7632);
        xs[((c * 4 + u) * 2 + 0) * 32 + l] = make_uint4(a00, a00, a20, a20);
        xs[((c * 4 + u) * 2 + 1) * 32 + l] = make_uint4(a01, a01, a21, a21);
        const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {  // k order: x_{8u+2e}, x_{8u+2e+1}
          sum += __uint_as_float(words[e] << 16);
          sum += __uint_as_float(words[e] & 0xFFFF0000u);
        }
      }
      sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
      sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
      if ((l & 3) == 0) xsum[c * kXSumsPerChunk + (l >> 2)] = -136.f * sum;
    }
  }
}

#endif  // W4A16_RS_OFFSET

}  // namespace rowstream
