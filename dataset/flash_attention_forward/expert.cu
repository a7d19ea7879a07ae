// flash_attention_forward — expert: causal GQA attention in one pass, the S x S scores never leave
// the chip. The default kernel is FlashAttention-3's structure on wgmma (fa_hopper.cuh, step 2);
// FA_WGMMA=0 builds the FlashAttention-2 form on mma.sync (step 1, the variants below). Both:
//
//   per CTA: one (b, h, 128-query tile); Q tile resident (wgmma: shared memory; mma.sync: registers);
//   K/V streamed in 128-key (mma.sync: 64-key) tiles, ascending, stopping at the diagonal;
//   per tile, per warp (16 query rows):  S = Q K^T (wgmma m64n128k16 per warpgroup, or mma.sync m16n8k16)
//                                          m' = max(m, rowmax S);  p = 2^(S*c - m'*c), c = scale*log2(e)
//                                          l = l * 2^((m - m')c) + rowsum p;  O = O * 2^((m - m')c) + bf16(p) V
//   epilogue: o = bf16(O / l), lse = (m*c + log2 l) * ln 2.
//
// Numerics (what the CPU tests in tests/unit/tasks/flash_attention_forward emulate): scores and
// statistics in fp32; p rounded to bf16 for the PV product while l sums the fp32 p (as
// FlashAttention does); mask = key > query or key >= S (-inf before the exponential). Ascending
// key order means the first tile always holds key 0 <= query, so the running maximum is finite
// after it and no -inf - -inf appears for a query whose later tiles are fully masked.
//
// Variants (step = the brief's plan; µs per bench workload and %SOL of the calibrated bf16 tensor
// rate, H200, 2026-12-02, docs/results/flash_attention_forward.md; torch_eager (SDPA) beside):
//   step | variant                                              | 1x8192x32x8  | 4x4096x32x8  | 16x1024x32x8
//   2    | wgmma (fa_hopper.cuh, the default): m64n128k16 QK^T, | 943.5 73.3%  | 1193.1 58.0% | 485.6 35.6%
//        | m64n64k16 PV, TMA K/V ring of 2 stages (128 keys),   |              |              |
//        | producer warpgroup + two consumer warpgroups         |              |              |
//   1    | mma_sync: mma.sync, ldmatrix, cp.async double buffer,| 2221.7 31.1% | 2313.7 29.9% | 832.7 20.8%
//        | Q in registers, 128x64 tiles, 8 warps                |              |              |
//   1    | q_smem: mma_sync with Q fragments re-read from shared| 2117.5 32.7% | 2193.6 31.5% | 773.7 22.4%
//        | memory per tile (fewer registers: two CTAs per SM)   |              |              |
//   1    | bn32: mma_sync with 32-key tiles                     | 2817.9 24.5% | 2924.6 23.7% | 893.2 19.4%
//   -    | torch_eager (SDPA, flash backend)                    | 1749.0 39.6% | 1735.8 39.9% | 682.2 25.4%
// ptxas (sm_90a, this build): wgmma 165 registers, no spills; mma_sync 215, no spills; q_smem 128
// with 56 B of spills; bn32 188, no spills. The wgmma kernel passed every check workload against
// the golden and compute-sanitizer memcheck on the H200 before it became the default.
// Designs considered:
//   a. (step 1, built) FlashAttention-2 on mma.sync: portable to sm_80, a CTA per (b, h, query
//      tile); one K/V read per CTA, so each K/V tile is read Hq/Hkv times (from L2: the grid puts
//      the heads of one group at consecutive block indices so the group's CTAs run together).
//      The FlashAttention-3 paper reports FlashAttention-2 (this design) at about 35% of the H100's
//      tensor rate, so this step is expected well under the 65% target.
//   b. (step 2, built, the default) FlashAttention-3's structure on wgmma: Q and K/V tiles in shared
//      memory read by wgmma descriptors, TMA loads into an mbarrier ring filled by a producer
//      warpgroup, two consumer warpgroups. Not yet done from FA3: the intra-warpgroup overlap of
//      one tile's softmax with the next tile's QK^T, ping-pong scheduling of the two consumer
//      warpgroups (named barriers), setmaxnreg, and the Hq/Hkv query heads of one K/V head on one
//      CTA or cluster (TMA multicast) so K/V leave L2 once per group. It meets the 65% target at
//      S = 8192 (73.3% of SOL); these are what remains for 4096 and 1024 (58.0%, 35.6%).
//   c. split-KV (flash-decoding) with an LSE merge: only useful when B*Hq*S/128 CTAs cannot fill
//      the GPU; every bench workload has >= 2048 query tiles, so rejected.
//
//   %VARIANT% mma_sync -DFA_WGMMA=0
//   %VARIANT% q_smem -DFA_WGMMA=0 -DFA_Q_IN_REGS=0
//   %VARIANT% bn32 -DFA_WGMMA=0 -DFA_BLOCK_N=32
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"
#include "fa_layout.h"

#ifndef FA_BLOCK_N
#define FA_BLOCK_N 64
#endif
#ifndef FA_Q_IN_REGS
#define FA_Q_IN_REGS 1
#endif
#ifndef FA_WGMMA
#define FA_WGMMA 1  // 1: the Hopper kernel of fa_hopper.cuh (wgmma, TMA, producer/consumer warpgroups); 0: mma.sync
#endif
#if FA_WGMMA
#include <cuda.h>  // cuTensorMapEncodeTiled: called directly (d2k links the driver for it)
#endif

namespace {

constexpr int kD = 128;                 // head dimension
constexpr int kBM = 128;                // query rows per CTA
constexpr int kBN = FA_BLOCK_N;         // keys per tile
constexpr int kWarps = kBM / 16;        // one warp per 16 query rows
[[maybe_unused]] constexpr int kThreads = kWarps * 32;
[[maybe_unused]] constexpr int kChunks = kD / 8;         // 16-byte chunks per row
[[maybe_unused]] constexpr int kNB = kBN / 8;            // n-blocks of 8 keys in a score tile
[[maybe_unused]] constexpr int kDB = kD / 8;             // n-blocks of 8 columns in the output
constexpr int kSmemElems = kBM * kD + 4 * kBN * kD;  // Q, K[2], V[2]
[[maybe_unused]] constexpr int kSmemBytes = kSmemElems * 2;
constexpr float kLog2e = 1.4426950408889634f;
[[maybe_unused]] constexpr float kLn2 = 0.6931471805599453f;
static_assert(kBN % 16 == 0 && kBN <= 128, "key tile: a multiple of 16");

struct Params {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* o;
  float* lse;
  int S, Hq, Hkv;
  float c;  // scale * log2(e)
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

#if !FA_WGMMA  // the mma.sync kernel (step 1)
using fa_layout::swz;

/// 16-byte asynchronous copy; src_bytes = 0 zero-fills (rows past S).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

/// d += a * b, m16n8k16, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Copies rows [row0, row0 + rows) of a head (row stride `stride` elements) into a swizzled tile;
/// rows at or past S are zero-filled.
template <int kRows>
__device__ __forceinline__ void load_tile(__nv_bfloat16* tile, const __nv_bfloat16* head, int row0, int S,
                                          int64_t stride) {
  for (int i = threadIdx.x; i < kRows * kChunks; i += kThreads) {
    const int r = i / kChunks, ch = i % kChunks, g = row0 + r;
    const bool valid = g < S;
    const __nv_bfloat16* src = valid ? head + static_cast<int64_t>(g) * stride + ch * 8 : head;
    cp_async16(tile + swz(r, ch), src, valid);
  }
}

/// The A fragments (m16k16) of this warp's 16 query rows, k-step kk (columns 16kk .. 16kk+15).
__device__ __forceinline__ void load_q_frag(uint32_t (&a)[4], const __nv_bfloat16* sQ, int warp, int kk) {
  const int lane = threadIdx.x % 32;
  ldmatrix_x4(a, sQ + swz(fa_layout::q_row(warp, lane), fa_layout::q_chunk(kk, lane)));
}

/// Per-warp state: two query rows per thread (lane/4 and lane/4 + 8 of the warp's 16).
struct RowState {
  float m[2], l[2];
  float o[kDB][4];
};

/// S = Q K^T for this warp's 16 rows and the tile's kBN keys (raw dot products, unscaled).
__device__ __forceinline__ void scores(float (&s)[kNB][4], const uint32_t (&qf)[kD / 16][4],
                                       const __nv_bfloat16* sQ, const __nv_bfloat16* sK, int warp) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int nb = 0; nb < kNB; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
#if FA_Q_IN_REGS
    const uint32_t(&a)[4] = qf[kk];
#else
    uint32_t a[4];
    load_q_frag(a, sQ, warp, kk);
#endif
#pragma unroll
    for (int np = 0; np < kNB / 2; ++np) {
      uint32_t b[4];  // keys 16np .. 16np+15: b[0..1] for n-block 2np, b[2..3] for 2np+1
      ldmatrix_x4(b, sK + swz(fa_layout::k_row(np, lane), fa_layout::k_chunk(kk, lane)));
      mma_bf16(s[2 * np], a, b[0], b[1]);
      mma_bf16(s[2 * np + 1], a, b[2], b[3]);
    }
  }
}

/// Causal and sequence-end mask: -inf where key > query or key >= S.
__device__ __forceinline__ void mask_scores(float (&s)[kNB][4], int q_row0, int key0, int S) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int nb = 0; nb < kNB; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = q_row0 + fa_layout::acc_row(lane, e);
      const int key = key0 + nb * 8 + fa_layout::acc_col(lane, e);
      if (key > row || key >= S) s[nb][e] = -INFINITY;
    }
}

/// Online softmax: raises the running max, rescales l and O, turns s into p (fp32, in place).
__device__ __forceinline__ void online_softmax(float (&s)[kNB][4], RowState& st, float c) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 lanes of a row
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(st.m[r], mx);  // finite: the first tile holds key 0
    const float corr = ex2((st.m[r] - m_new) * c);
    const float mc = m_new * c;
    float sum = 0.f;
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb) {
      s[nb][2 * r] = ex2(fmaf(s[nb][2 * r], c, -mc));
      s[nb][2 * r + 1] = ex2(fmaf(s[nb][2 * r + 1], c, -mc));
      sum += s[nb][2 * r] + s[nb][2 * r + 1];
    }
    st.l[r] = st.l[r] * corr + sum;  // this lane's partial row sum; lanes are merged at the end
    st.m[r] = m_new;
#pragma unroll
    for (int db = 0; db < kDB; ++db) {
      st.o[db][2 * r] *= corr;
      st.o[db][2 * r + 1] *= corr;
    }
  }
}

/// O += bf16(P) V: P's accumulator layout is the A fragment layout of the next product.
__device__ __forceinline__ void accumulate_pv(RowState& st, const float (&p)[kNB][4], const __nv_bfloat16* sV) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < kBN / 16; ++kk) {
    const uint32_t a[4] = {pack_bf16(p[2 * kk][0], p[2 * kk][1]), pack_bf16(p[2 * kk][2], p[2 * kk][3]),
                           pack_bf16(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                           pack_bf16(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int dp = 0; dp < kDB / 2; ++dp) {
      uint32_t b[4];  // V rows 16kk.., columns 16dp..: b[0..1] for n-block 2dp, b[2..3] for 2dp+1
      ldmatrix_x4_trans(b, sV + swz(fa_layout::v_row(kk, lane), fa_layout::v_chunk(dp, lane)));
      mma_bf16(st.o[2 * dp], a, b[0], b[1]);
      mma_bf16(st.o[2 * dp + 1], a, b[2], b[3]);
    }
  }
}

/// o = bf16(O / l) and lse = (m c + log2 l) ln 2 for the rows below S.
__device__ __forceinline__ void write_rows(const Params& p, RowState& st, int b, int h, int q_row0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = st.l[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = q_row0 + lane / 4 + 8 * r;
    if (row >= p.S) continue;
    const float inv = 1.f / l;
    __nv_bfloat16* orow = p.o + ((static_cast<int64_t>(b) * p.S + row) * p.Hq + h) * kD;
#pragma unroll
    for (int db = 0; db < kDB; ++db) {
      const __nv_bfloat162 v = __floats2bfloat162_rn(st.o[db][2 * r] * inv, st.o[db][2 * r + 1] * inv);
      *reinterpret_cast<__nv_bfloat162*>(orow + db * 8 + (lane % 4) * 2) = v;
    }
    if (lane % 4 == 0)
      p.lse[(static_cast<int64_t>(b) * p.Hq + h) * p.S + row] = (st.m[r] * p.c + log2f(l)) * kLn2;
  }
}

/// grid (Hq, query tiles, B): the heads of a K/V group are adjacent block indices, so the CTAs that
/// read the same K/V tiles run together and share them through L2; query tiles run last-first
/// (the longest rows start first, the short ones fill the tail).
__global__ void __launch_bounds__(kThreads, FA_Q_IN_REGS ? 1 : 2) flash_fwd_causal(const Params p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto* sQ = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  // K buffers at sQ + kBM*kD + buf*kBN*kD, V buffers after them (pointer arithmetic, not an array
  // of pointers: a dynamically indexed local array would live on the stack)
  __nv_bfloat16* const sK0 = sQ + kBM * kD;
  __nv_bfloat16* const sV0 = sK0 + 2 * kBN * kD;

  const int h = blockIdx.x, b = blockIdx.z;
  const int m0 = (gridDim.y - 1 - blockIdx.y) * kBM;
  const int g = h / (p.Hq / p.Hkv);
  const int warp = threadIdx.x / 32;
  const int64_t q_stride = static_cast<int64_t>(p.Hq) * kD, kv_stride = static_cast<int64_t>(p.Hkv) * kD;
  const __nv_bfloat16* qh = p.q + (static_cast<int64_t>(b) * p.S * p.Hq + h) * kD;
  const __nv_bfloat16* kh = p.k + (static_cast<int64_t>(b) * p.S * p.Hkv + g) * kD;
  const __nv_bfloat16* vh = p.v + (static_cast<int64_t>(b) * p.S * p.Hkv + g) * kD;

  const int key_end = min(p.S, m0 + kBM);  // keys past the tile's last query are all masked
  const int n_tiles = (key_end + kBN - 1) / kBN;

  load_tile<kBM>(sQ, qh, m0, p.S, q_stride);
  load_tile<kBN>(sK0, kh, 0, p.S, kv_stride);
  load_tile<kBN>(sV0, vh, 0, p.S, kv_stride);
  cp_async_commit();

  RowState st;
  st.m[0] = st.m[1] = -INFINITY;
  st.l[0] = st.l[1] = 0.f;
#pragma unroll
  for (int db = 0; db < kDB; ++db) st.o[db][0] = st.o[db][1] = st.o[db][2] = st.o[db][3] = 0.f;
  uint32_t qf[kD / 16][4];

  for (int j = 0; j < n_tiles; ++j) {
    const int cur = (j & 1) * kBN * kD, nxt = kBN * kD - cur;
    if (j + 1 < n_tiles) {  // prefetch the next K/V tile into the other buffer
      load_tile<kBN>(sK0 + nxt, kh, (j + 1) * kBN, p.S, kv_stride);
      load_tile<kBN>(sV0 + nxt, vh, (j + 1) * kBN, p.S, kv_stride);
    }
    cp_async_commit();
    cp_async_wait<1>();  // everything but the prefetch just issued has landed
    __syncthreads();
#if FA_Q_IN_REGS
    if (j == 0)
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) load_q_frag(qf[kk], sQ, warp, kk);
#endif
    float s[kNB][4];
    scores(s, qf, sQ, sK0 + cur, warp);
    const int key0 = j * kBN;
    if (key0 + kBN > m0 || key0 + kBN > p.S) mask_scores(s, m0 + warp * 16, key0, p.S);
    online_softmax(s, st, p.c);
    accumulate_pv(st, s, sV0 + cur);
    __syncthreads();  // the next iteration's prefetch overwrites this buffer
  }
  write_rows(p, st, b, h, m0 + warp * 16);
}
#endif

}  // namespace

#if FA_WGMMA
namespace {
#include "fa_hopper.cuh"
}  // namespace
#endif

namespace {

struct Dims {
  int64_t B, S, Hq, Hkv;
};

Dims parse(const d2k_args* args) {
  const Dims d{d2k::scalar_i(args, "B"), d2k::scalar_i(args, "S"), d2k::scalar_i(args, "Hq"),
               d2k::scalar_i(args, "Hkv")};
  if (d2k::scalar_i(args, "D") != kD) throw d2k::abi_error("expert: D must be 128");
  if (d.B < 1 || d.S < 1 || d.Hq < 1 || d.Hkv < 1 || d.Hq % d.Hkv != 0)
    throw d2k::abi_error("expert: need B, S, Hq, Hkv >= 1 and Hq % Hkv == 0");
  if (d.B > 65535 || d.Hq > 65535 || (d.S + kBM - 1) / kBM > 65535 || d.S > (int64_t(1) << 30))
    throw d2k::abi_error("expert: B, Hq or S beyond the grid's limits");
  return d;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

#if FA_WGMMA
/// A [B, S, H, 128] bf16 tensor as a 4-d tensor map (innermost first: D, H, S, B) with boxes of
/// 64 columns x 1 head x `rows` rows, 128-byte swizzle; rows past S read as zeros.
CUtensorMap tensor_map(const void* base, int64_t B, int64_t S, int64_t H, int rows) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {cuuint64_t(kD), cuuint64_t(H), cuuint64_t(S), cuuint64_t(B)};
  const cuuint64_t strides[3] = {cuuint64_t(kD) * 2, cuuint64_t(H * kD) * 2, cuuint64_t(S * H * kD) * 2};
  const cuuint32_t box[4] = {64, 1, cuuint32_t(rows), 1};
  const cuuint32_t elem[4] = {1, 1, 1, 1};
  // A direct call of the driver's encoder, which a solution may import (docs/isolation.md,
  // "The driver's tensor-map encoders"); a run-time look-up (cudaGetDriverEntryPoint) may not.
  const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(base), dims,
                                            strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw std::runtime_error("expert: cuTensorMapEncodeTiled failed (" + std::to_string(int(r)) + ")");
  return m;
}

void launch_wgmma(const d2k_args* args, const Dims& d, const Params& p) {
  namespace fh = fa_hopper;
  const CUtensorMap tq = tensor_map(p.q, d.B, d.S, d.Hq, fh::kBM);
  const CUtensorMap tk = tensor_map(p.k, d.B, d.S, d.Hkv, fh::kBN);
  const CUtensorMap tv = tensor_map(p.v, d.B, d.S, d.Hkv, fh::kBN);
  const fh::Params hp{p.o, p.lse, p.S, p.Hq, p.Hkv, p.c};
  if (cudaFuncSetAttribute(fh::flash_fwd_causal_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           fh::kSmemBytes) != cudaSuccess)
    throw std::runtime_error("expert: cannot reserve the wgmma kernel's shared memory");
  const dim3 grid(static_cast<unsigned>(d.Hq), static_cast<unsigned>((d.S + fh::kBM - 1) / fh::kBM),
                  static_cast<unsigned>(d.B));
  fh::flash_fwd_causal_wgmma<<<grid, fh::kThreads, fh::kSmemBytes, static_cast<cudaStream_t>(args->stream)>>>(
      tq, tk, tv, hp);
}
#endif

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    parse(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Dims d = parse(args);
    const DLTensor& q = d2k::input(args, "q", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.Hq, kD});
    const DLTensor& k = d2k::input(args, "k", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.Hkv, kD});
    const DLTensor& v = d2k::input(args, "v", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.Hkv, kD});
    const DLTensor& o = d2k::output(args, "o", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.Hq, kD});
    const DLTensor& lse = d2k::output(args, "lse", kDLCUDA, d2k::dl::f32, {d.B, d.Hq, d.S});
    Params p{d2k::data<const __nv_bfloat16>(q),
             d2k::data<const __nv_bfloat16>(k),
             d2k::data<const __nv_bfloat16>(v),
             d2k::data<__nv_bfloat16>(o),
             d2k::data<float>(lse),
             static_cast<int>(d.S),
             static_cast<int>(d.Hq),
             static_cast<int>(d.Hkv),
             static_cast<float>(d2k::scalar_f(args, "scale")) * kLog2e};
    if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
      throw d2k::abi_error("expert: q, k, v and o must be 16-byte aligned");
#if FA_WGMMA
    launch_wgmma(args, d, p);
#else
    D2K_CUDA_TRY(args, cudaFuncSetAttribute(flash_fwd_causal, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    const dim3 grid(static_cast<unsigned>(d.Hq), static_cast<unsigned>((d.S + kBM - 1) / kBM),
                    static_cast<unsigned>(d.B));
    flash_fwd_causal<<<grid, kThreads, kSmemBytes, static_cast<cudaStream_t>(args->stream)>>>(p);
#endif
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
