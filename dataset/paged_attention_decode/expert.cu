// paged_attention_decode — expert: split-KV flash-decoding over the paged cache, GQA-shared loads,
// both products on the tensor cores.
//
// Design (design.json has the levels):
//   L1  split-KV: each (split, KV head g, sequence b) runs an online softmax in fp32 over its run
//       of token positions and leaves a partial (o / l, log2-sum-exp) per query head; an LSE merge
//       combines the splits. Splits come from B x the CTAs per sequence (2: 4 KV heads a CTA) against
//       the resident CTA slots (split_plan.h), so batch 8 (16 CTAs unsplit, 132 SMs) fills the GPU.
//   L2  a warp per (split, KV head, sequence) serves all Hq / Hkv = 4 query heads of its KV head, a
//       CTA holds 4 such warps (4 KV heads, 1 KB of each token's 2 KB row): a page of 16 tokens is
//       one tensor-core tile. S^T = Q . K^T (4 heads padded to 16 rows, 16 tokens) and
//       O^T += V^T . P^T (128 d x 4 heads), mma.sync m16n8k16 bf16 in, fp32 accumulate, P as a
//       bf16 high + low pair so the weights keep ~16 bits; a K or V row is loaded once for the 4
//       heads (the cache is read once in total). mma_layout.h holds the fragment layout.
//   L3  the fragments come straight from 16-byte streaming loads (LDG.E.EF.128, no shared memory):
//       16 x 16 B per lane and page issued before the page's first mma, the next page's id read a
//       page ahead; the scores scaled once by scale * log2(e) so the softmax is exp2; the splits
//       combined by a separate merge kernel (a CTA per (b, query head)).
//
// Variants, H200 2026-12-02 (median us and % of SOL, `d2k bench --task paged_attention_decode
// --targets expert,expert:merge_fused,expert:cp_async,expert:mma,expert:mma_prefetch
// --bench-rounds 1 --max-time 0.3`, the variants step of scripts/gpu/checks/t-paged.sh; every
// variant PASSED; that run's default was the CUDA-core form, its `mma` variant is the default now;
// docs/results/paged_attention_decode.md has the tables):
//   variant                                                     | B64 ctx4096  | B8 ctx32768  | B256 ctx1024
//   tensor cores (mma.sync, now the default)                    | 211.06 84.3% | 202.18 88.3% | 204.67 87.8%
//   mma_prefetch: as the default with the next page's rows      | 209.60       | 202.69       | 206.40
//     loaded while this one is consumed (212 registers, 2 CTAs  |              |              |
//     per SM instead of 3)                                      |              |              |
//   cuda_cores: the CUDA-core form (the default before)         | 277.34 64.1% | 276.70 64.5% | 289.83 62.0%
// The tensor-core form is the default: 1.31x / 1.37x / 1.42x faster than the CUDA-core form, and
// the only one at >= 80% of SOL on every row. mma_prefetch is within 1% of it (0.7% faster, 0.3%
// and 0.8% slower): 8 KB a warp in flight at 3 CTAs per SM appears to cover the latency already,
// so the simpler kernel stays the default. memcheck of the tensor-core form was clean (ragged
// check workload: 3 splits, partial pages); its SASS has HMMA.16816.F32.BF16 and LDG.E.EF.128.
//
// Why the CUDA-core form stops at ~65% of SOL (diagnosis from the SASS, no counters): it is issue-
// bound. Its loop body is ~950 SASS instructions per step of a warp, which takes 8 of the CTA's
// 32 tokens (two half-warp streams of 4: 32 FFMA for the 4 dot products and 32 for the 4
// accumulations per lane and token, 64 SHFL + 64 FADD per step for the 4-level butterflies of
// 4 heads x 4 tokens, bf16 widening, exp2, rescales): ~1,900 warp instructions per 16-token page
// of one KV head (8 KB). At the calibrated 4.28 TB/s an SM must take 16.4 B a cycle, so it has
// 500 cycles and 2,000 issue slots (4 schedulers) per 8 KB: at SOL the arithmetic would need ~95%
// of every issue slot. The tensor-core loop body is ~360 SASS instructions per 8 KB page (ptxas:
// 164 registers, no spills, 3 CTAs of 4 warps per SM), which leaves the issue slots to the loads.
// Earlier variants of the CUDA-core form (same command, an earlier run):
//   merge fused into the last CTA of each (b, g) (atomic counter): 1.03x / 1.06x / 1.05x slower
//     than the separate merge kernel (the last CTA of each (b, g) merges serially while the grid
//     drains): variant merge_fused.
//   splits_fixed16 (16 splits whatever the shape): slower on every row (309.4 / 311.2 / 317.2 us),
//     dropped.
//   cp_async: a cp.async double buffer of the next step's rows in shared memory, 276.4 / 291.6 /
//     295.6 us with the fused merge.
//   (a TMA pipeline was not built: a 256-byte row per (page slot, KV head) is too small a box to
//   pay for a descriptor-driven copy, and the page ids change the address every 16 tokens).
// merge_fused and cp_async exist only in the CUDA-core form (the tensor-core kernel has no staging
// buffer and takes the separate merge), so they build with PAGED_MMA=0.
// %VARIANT% cuda_cores -DPAGED_MMA=0
// %VARIANT% merge_fused -DPAGED_MMA=0 -DPAGED_MERGE_FUSED=1
// %VARIANT% cp_async -DPAGED_MMA=0 -DPAGED_CP_ASYNC=1
// %VARIANT% mma_prefetch -DPAGED_MMA_PREFETCH=1
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "d2k/solution.h"
#include "mma_layout.h"
#include "split_plan.h"

#ifndef PAGED_MERGE_FUSED
#define PAGED_MERGE_FUSED 0
#endif
#ifndef PAGED_FIXED_SPLITS
#define PAGED_FIXED_SPLITS 0
#endif
#ifndef PAGED_CP_ASYNC
#define PAGED_CP_ASYNC 0
#endif
#ifndef PAGED_MMA  // the tensor-core form (default); 0: the CUDA-core form
#define PAGED_MMA 1
#endif
#ifndef PAGED_MMA_PREFETCH
#define PAGED_MMA_PREFETCH 0
#endif
#if PAGED_MMA && (PAGED_MERGE_FUSED || PAGED_CP_ASYNC || PAGED_FIXED_SPLITS)
#error "the tensor-core form (PAGED_MMA=1) takes the separate merge and occupancy splits only: add -DPAGED_MMA=0"
#endif
#if PAGED_MMA_PREFETCH && !PAGED_MMA
#error "PAGED_MMA_PREFETCH is a variant of the tensor-core form (PAGED_MMA=1)"
#endif

namespace {

constexpr int kHq = 32, kHkv = 8, kGroup = kHq / kHkv, kD = 128, kPage = 16;
constexpr int kThreads = 128;
constexpr int kLanesPerRow = 16;                               // 16 lanes x 8 bf16 = one D = 128 row
constexpr int kElems = kD / kLanesPerRow;                      // 8 elements per lane
constexpr int kStreams = kThreads / kLanesPerRow;              // 8 token streams per CTA
constexpr int kUnroll = paged_decode::kStepTokens / kStreams;  // 4 tokens per stream per step
[[maybe_unused]] constexpr int kMinCtasPerSm = 4;              // the CUDA-core form's launch bound
static_assert(kStreams * kUnroll == paged_decode::kStepTokens, "a CTA step is split_plan.h's");
static_assert(kThreads == kD, "the merge gives each thread one d");

struct Params {
  const __nv_bfloat16* q;
  const uint4* k_cache;  // rows of 8 x 16 B
  const uint4* v_cache;
  const int32_t* block_table;
  const int32_t* seq_lens;
  __nv_bfloat16* o;
  float* part_o;      // [B, Hq, splits, D]: o / l of each split
  float* part_lse;    // [B, Hq, splits]: log2(l) + m of each split, -inf when empty
  int32_t* counters;  // [B, Hkv]: splits done (fused merge)
  int64_t P;
  float scale_log2;  // scale * log2(e)
  int splits;
  int64_t split_tokens;
};

#if !PAGED_MMA
__device__ __forceinline__ void bf16x8_to_float(const uint4& r, float* f) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}
#endif

#if PAGED_CP_ASYNC
/// 16-byte asynchronous copy global -> shared, L1 bypassed (LDGSTS).
__device__ __forceinline__ void cp_async16(uint4* smem, const uint4* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}
#endif

/// Combines one query head's splits: o = sum_s w_s o_s / sum_s w_s, w_s = 2^(lse_s - max lse).
/// Thread d writes element d. Partials are read through L2 (__ldcg): other SMs wrote them.
__device__ void merge_head(const Params& p, int64_t bh, int d) {
  const float* lse = p.part_lse + bh * p.splits;
  float mx = -INFINITY;
  for (int s = 0; s < p.splits; ++s) mx = fmaxf(mx, __ldcg(lse + s));
  float num = 0.f, den = 0.f;
  if (mx != -INFINITY) {
    for (int s = 0; s < p.splits; ++s) {
      const float l = __ldcg(lse + s);
      if (l == -INFINITY) continue;
      const float w = exp2f(l - mx);
      den += w;
      num += w * __ldcg(p.part_o + (bh * p.splits + s) * kD + d);
    }
  }
  p.o[bh * kD + d] = __float2bfloat16_rn(den > 0.f ? num / den : 0.f);
}

#if !PAGED_MMA  // the CUDA-core form (variants cuda_cores, merge_fused, cp_async)
/// One stream's running softmax for the 4 query heads over the 8 elements of its lane.
struct StreamState {
  float m[kGroup], l[kGroup], acc[kGroup][kElems];
};

/// Consumes kUnroll tokens (already loaded) into the stream's state.
__device__ __forceinline__ void consume(StreamState& st, const float (&qr)[kGroup][kElems], const uint4 (&kr)[kUnroll],
                                        const uint4 (&vr)[kUnroll], const bool (&valid)[kUnroll]) {
  float s[kUnroll][kGroup];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    float k[kElems];
    bf16x8_to_float(kr[u], k);
#pragma unroll
    for (int h = 0; h < kGroup; ++h) {
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < kElems; ++e) dot = fmaf(qr[h][e], k[e], dot);
      s[u][h] = dot;
    }
  }
  // Reduce the 16 lanes of the row (xor offsets below 16 stay inside the half-warp).
#pragma unroll
  for (int off = kLanesPerRow / 2; off > 0; off >>= 1)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int h = 0; h < kGroup; ++h) s[u][h] += __shfl_xor_sync(0xFFFFFFFFu, s[u][h], off);
  float v[kUnroll][kElems];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    bf16x8_to_float(vr[u], v[u]);
    if (!valid[u])
#pragma unroll
      for (int h = 0; h < kGroup; ++h) s[u][h] = -INFINITY;
  }
#pragma unroll
  for (int h = 0; h < kGroup; ++h) {
    float mnew = st.m[h];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) mnew = fmaxf(mnew, s[u][h]);
    if (mnew == -INFINITY) continue;           // nothing valid yet in this stream
    const float corr = exp2f(st.m[h] - mnew);  // 0 when m was -inf
    st.l[h] *= corr;
#pragma unroll
    for (int e = 0; e < kElems; ++e) st.acc[h][e] *= corr;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const float pr = exp2f(s[u][h] - mnew);  // 0 for an invalid token
      st.l[h] += pr;
#pragma unroll
      for (int e = 0; e < kElems; ++e) st.acc[h][e] = fmaf(pr, v[u][e], st.acc[h][e]);
    }
    st.m[h] = mnew;
  }
}

__global__ void __launch_bounds__(kThreads, kMinCtasPerSm) split_kv_decode(Params p) {
  const int split = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int lane = threadIdx.x % kLanesPerRow, stream = threadIdx.x / kLanesPerRow;
  const int64_t len = min(max(static_cast<int64_t>(p.seq_lens[b]), int64_t{0}), p.P * kPage);
  const int64_t t_begin = split * p.split_tokens;
  const int64_t t_end = min(len, t_begin + p.split_tokens);

  float qr[kGroup][kElems];
#pragma unroll
  for (int h = 0; h < kGroup; ++h) {
    const uint4 raw =
        *reinterpret_cast<const uint4*>(p.q + (static_cast<int64_t>(b) * kHq + g * kGroup + h) * kD + lane * kElems);
    bf16x8_to_float(raw, qr[h]);
#pragma unroll
    for (int e = 0; e < kElems; ++e) qr[h][e] *= p.scale_log2;
  }
  StreamState st;
#pragma unroll
  for (int h = 0; h < kGroup; ++h) {
    st.m[h] = -INFINITY;
    st.l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < kElems; ++e) st.acc[h][e] = 0.f;
  }

  // Shared memory: the merge's (m, l, acc) of every stream; with PAGED_CP_ASYNC the two staging
  // buffers of K/V rows first (the merge reuses them once the stream loop is done).
  constexpr int kMergeFloats = 2 * kStreams * kGroup + kStreams * kGroup * kD;
  constexpr int kStageVecs = PAGED_CP_ASYNC ? 2 * 2 * paged_decode::kStepTokens * kLanesPerRow : 0;
  constexpr int kPoolVecs = kStageVecs * 4 > kMergeFloats ? kStageVecs : (kMergeFloats + 3) / 4;
  __shared__ uint4 smem_pool[kPoolVecs];
  __shared__ int sm_last;

  // Phase 1: stream `stream` takes positions t0 + u * kStreams + stream of every 32-token step.
  // A step (t0 a multiple of 32: split_tokens is) covers two pages; their ids for the next step
  // are loaded while this one streams, so the block-table read is off the K/V loads' path.
  static_assert(paged_decode::kStepTokens == 2 * kPage, "a step spans two pages");
  const int32_t* pages = p.block_table + b * p.P;
  auto page_ids = [&](int64_t t0, int64_t& lo, int64_t& hi) {
    lo = t0 < t_end ? __ldg(pages + t0 / kPage) : 0;
    hi = t0 + kPage < t_end ? __ldg(pages + t0 / kPage + 1) : 0;  // never past the row's last used page
  };
  auto row_of = [&](int64_t lo, int64_t hi, int slot) {
    const int64_t page = slot < kPage ? lo : hi;
    return ((page * kPage + slot % kPage) * kHkv + g) * (kD / kElems) + lane;
  };
  int64_t page_lo, page_hi;
  page_ids(t_begin, page_lo, page_hi);
#if PAGED_CP_ASYNC
  // Variant cp_async: the next step's rows are copied into shared memory (LDGSTS) while this step
  // computes; each thread copies exactly the 16-byte pieces it later reads, so only its own
  // wait_group orders them (no CTA barrier inside the loop).
  auto stage_at = [&](int buf, int kv, int slot) {
    return smem_pool + ((buf * 2 + kv) * paged_decode::kStepTokens + slot) * kLanesPerRow + lane;
  };
  auto issue = [&](int64_t t0, int64_t lo, int64_t hi, int buf) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int slot = u * kStreams + stream;
      if (t0 + slot < t_end) {
        const int64_t row = row_of(lo, hi, slot);
        cp_async16(stage_at(buf, 0, slot), p.k_cache + row);
        cp_async16(stage_at(buf, 1, slot), p.v_cache + row);
      }
    }
    cp_async_commit();  // an empty group past the end keeps the wait count uniform
  };
  issue(t_begin, page_lo, page_hi, 0);
  page_ids(t_begin + paged_decode::kStepTokens, page_lo, page_hi);
  int buf = 0;
  for (int64_t t0 = t_begin; t0 < t_end; t0 += paged_decode::kStepTokens, buf ^= 1) {
    issue(t0 + paged_decode::kStepTokens, page_lo, page_hi, buf ^ 1);
    page_ids(t0 + 2 * paged_decode::kStepTokens, page_lo, page_hi);
    cp_async_wait<1>();  // this step's group has landed
    uint4 kr[kUnroll], vr[kUnroll];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int slot = u * kStreams + stream;
      valid[u] = t0 + slot < t_end;
      kr[u] = valid[u] ? *stage_at(buf, 0, slot) : make_uint4(0u, 0u, 0u, 0u);
      vr[u] = valid[u] ? *stage_at(buf, 1, slot) : make_uint4(0u, 0u, 0u, 0u);
    }
    consume(st, qr, kr, vr, valid);
  }
  cp_async_wait<0>();
  __syncthreads();  // the merge below reuses the staging buffers
#else
  for (int64_t t0 = t_begin; t0 < t_end; t0 += paged_decode::kStepTokens) {
    int64_t next_lo, next_hi;
    page_ids(t0 + paged_decode::kStepTokens, next_lo, next_hi);
    uint4 kr[kUnroll], vr[kUnroll];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int slot = u * kStreams + stream;  // 0..31 within the step
      valid[u] = t0 + slot < t_end;
      kr[u] = vr[u] = make_uint4(0u, 0u, 0u, 0u);
      if (valid[u]) {
        const int64_t row = row_of(page_lo, page_hi, slot);
        kr[u] = __ldcs(p.k_cache + row);
        vr[u] = __ldcs(p.v_cache + row);
      }
    }
    consume(st, qr, kr, vr, valid);
    page_lo = next_lo;
    page_hi = next_hi;
  }
#endif

  // Phase 2: merge the 8 streams through shared memory; thread d owns element d of each head.
  auto* sm_m = reinterpret_cast<float(*)[kGroup]>(smem_pool);              // [kStreams][kGroup]
  auto* sm_l = sm_m + kStreams;                                            // [kStreams][kGroup]
  auto* sm_acc = reinterpret_cast<float(*)[kGroup][kD]>(sm_l + kStreams);  // [kStreams][kGroup][kD]
#pragma unroll
  for (int h = 0; h < kGroup; ++h) {
    if (lane == 0) {
      sm_m[stream][h] = st.m[h];
      sm_l[stream][h] = st.l[h];
    }
#pragma unroll
    for (int e = 0; e < kElems; ++e) sm_acc[stream][h][lane * kElems + e] = st.acc[h][e];
  }
  __syncthreads();
  const int d = threadIdx.x;
  for (int h = 0; h < kGroup; ++h) {
    float mx = -INFINITY;
    for (int s = 0; s < kStreams; ++s) mx = fmaxf(mx, sm_m[s][h]);
    float l = 0.f, a = 0.f;
    if (mx != -INFINITY)
      for (int s = 0; s < kStreams; ++s) {
        if (sm_m[s][h] == -INFINITY) continue;
        const float w = exp2f(sm_m[s][h] - mx);
        l += w * sm_l[s][h];
        a += w * sm_acc[s][h][d];
      }
    const int64_t bh = static_cast<int64_t>(b) * kHq + g * kGroup + h;
    if (p.splits == 1) {
      p.o[bh * kD + d] = __float2bfloat16_rn(l > 0.f ? a / l : 0.f);
    } else {
      p.part_o[(bh * p.splits + split) * kD + d] = l > 0.f ? a / l : 0.f;
      if (d == 0) p.part_lse[bh * p.splits + split] = l > 0.f ? mx + log2f(l) : -INFINITY;
    }
  }
  if (p.splits == 1 || !PAGED_MERGE_FUSED) return;

  // Phase 3 (fused merge): the last CTA of (b, g) to finish combines the splits.
  __threadfence();  // this CTA's partials are visible device-wide before it is counted
  __syncthreads();
  if (threadIdx.x == 0) sm_last = atomicAdd(p.counters + b * kHkv + g, 1) == p.splits - 1;
  __syncthreads();
  if (!sm_last) return;
  __threadfence();
  for (int h = 0; h < kGroup; ++h) merge_head(p, static_cast<int64_t>(b) * kHq + g * kGroup + h, d);
}
#endif  // !PAGED_MMA

/// The separate merge (variant merge_fused merges in the CUDA-core decode kernel instead): a CTA
/// per (b, query head).
__global__ void __launch_bounds__(kThreads) merge_splits(Params p) { merge_head(p, blockIdx.x, threadIdx.x); }

#if PAGED_MMA
// The default (and variant mma_prefetch): both products on the tensor cores (mma.sync m16n8k16, bf16 in,
// fp32 accumulate), one warp per (split, KV head, sequence), a CTA per (split, 4 KV heads,
// sequence), so a CTA reads 1 KB of each token's K (and V) row of 2 KB whole. Per 16-token page:
//   S^T (16 rows: 4 heads, the rest zero; 16 tokens) = Q . K^T: 2 n-tiles x 8 k-steps;
//   O^T (128 d x 8 columns: 4 heads) += V^T . P^T: 8 m-tiles x 1 k-step, P split into a bf16 high
//   and low part (two products), so the weights keep about 16 bits, not bf16's 8.
// No shared memory: the fragments come from 16-byte global loads. A dot product may take d in any
// order, so lane (r = lane / 4, j = lane % 4) loads chunks 4i + j (8 d each) of K tokens r and
// 8 + r and the same chunks of q: each chunk's 4 words are the (b0, b1) or (a0, a2) of two
// k-steps. O^T's rows (d) may be placed anywhere too: m-tile e, row r is d = 8r + e and row r + 8
// is d = 64 + 8r + e, so lane (r, j) loads chunks r and r + 8 of V tokens 2j, 2j + 1, 2j + 8,
// 2j + 9 and pairs their bf16 with byte permutes (PRMT) into A fragments. The C fragment of S^T
// (head r; tokens 2j, 2j + 1 of each n-tile) is the B fragment of P^T as it stands. Lane (r, j)
// keeps head r's softmax state and O^T's columns 2j, 2j + 1 (heads 2j, 2j + 1; lanes j >= 2 hold
// the zero columns 4-7), so the rescale factors cross lanes by two shuffles a page.
constexpr int kMmaWarps = 4;  // KV heads per CTA
constexpr int kMmaThreads = 32 * kMmaWarps;
constexpr int kMmaMinCtasPerSm = PAGED_MMA_PREFETCH ? 2 : 3;
constexpr int kRowVecs = kHkv * kD / kElems;  // uint4 from a token's row of a head to the next token's

/// c += a . b on the tensor cores (m16n8k16, row.col, bf16 in, fp32 accumulate).
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

/// One page of one KV head as lane (r, j) holds it: K tokens r, 8 + r (chunks 4i + j) and V tokens
/// 2j, 2j + 1, 2j + 8, 2j + 9 (chunks r, r + 8). Rows at or past the split's end (the page's first
/// `rem` tokens are in it) are zeros and never read.
struct PageFrag {
  uint4 k[2][4];
  uint4 v[4][2];
};

/// Offsets (uint4, KV head 0) of lane (r, j)'s first K and V row in a page: the other rows differ
/// by compile-time steps, so a page costs two 64-bit addresses, not 16.
struct LaneRows {
  int k, v;
  __device__ explicit LaneRows(int lane)
      : k(paged_mma::k_token(lane, 0) * kRowVecs + paged_mma::k_chunk(lane, 0)),
        v(paged_mma::v_token(lane, 0) * kRowVecs + paged_mma::v_chunk(lane, 0)) {}
};

__device__ __forceinline__ void load_page(PageFrag& f, const Params& p, int64_t page, int rem, int g, int lane,
                                          const LaneRows& lr) {
  using namespace paged_mma;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  const int64_t base = (page * kPage * kHkv + g) * (kD / kElems);
  const uint4* kp = p.k_cache + base + lr.k;  // the lane's first K row and chunk
  const uint4* vp = p.v_cache + base + lr.v;  // its first V row and chunk
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const bool ok = k_token(lane, nt) < rem;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      f.k[nt][i] =
          ok ? __ldcs(kp + (k_token(lane, nt) - k_token(lane, 0)) * kRowVecs + k_chunk(lane, i) - k_chunk(lane, 0))
             : zero;
  }
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const bool ok = v_token(lane, u) < rem;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      f.v[u][h] =
          ok ? __ldcs(vp + (v_token(lane, u) - v_token(lane, 0)) * kRowVecs + v_chunk(lane, h) - v_chunk(lane, 0))
             : zero;
  }
}

/// The warp's running softmax: m (log2 units) of head r, equal across the quad; the lane's share of
/// head r's l; O^T's accumulators (acc[e] = d 8r + e and 64 + 8r + e, heads 2j and 2j + 1).
struct MmaState {
  float m, l, acc[8][4];
};

__device__ __forceinline__ void consume_page(MmaState& st, const PageFrag& f, const uint4 (&qa)[4], float scale_log2,
                                             int rem, int lane) {
  using namespace paged_mma;
  // S^T = Q K^T; two accumulators per n-tile halve the dependent chain of 8 k-steps.
  float s[2][2][4] = {};
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf)
        mma_bf16(s[nt][i & 1], word(qa[i], 2 * hf), 0u, word(qa[i], 2 * hf + 1), 0u, word(f.k[nt][i], 2 * hf),
                 word(f.k[nt][i], 2 * hf + 1));
  float sc[2][2];
  float mx = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const bool ok = s_token(lane, nt, c) < rem;
      sc[nt][c] = ok ? (s[nt][0][c] + s[nt][1][c]) * scale_log2 : -INFINITY;
      mx = fmaxf(mx, sc[nt][c]);
    }
  mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
  const float mnew = fmaxf(st.m, mx);     // finite: token 0 of every page consumed is in the split
  const float corr = exp2f(st.m - mnew);  // 0 on the first page (m = -inf)
  st.m = mnew;
  uint32_t ph[2], pl[2];
  float psum = 0.f;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const float p0 = exp2f(sc[nt][0] - mnew), p1 = exp2f(sc[nt][1] - mnew);
    psum += p0 + p1;
    ph[nt] = pack_bf16(p0, p1);
    const float2 back = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&ph[nt]));
    pl[nt] = pack_bf16(p0 - back.x, p1 - back.y);
  }
  st.l = st.l * corr + psum;
  // The factors of O^T's columns 2j, 2j + 1 live in the lanes of heads 2j, 2j + 1.
  const float corr0 = __shfl_sync(0xFFFFFFFFu, corr, 4 * o_head(lane, 0));
  const float corr1 = __shfl_sync(0xFFFFFFFFu, corr, 4 * o_head(lane, 1));
  // O^T += V^T P^T: m-tile e; A rows r and r + 8 are d 8r + e and 64 + 8r + e.
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    uint32_t a[4];
    v_frag(f.v, e, a);  // byte permutes (PRMT) pairing two tokens' bf16
    st.acc[e][0] *= corr0;
    st.acc[e][1] *= corr1;
    st.acc[e][2] *= corr0;
    st.acc[e][3] *= corr1;
    mma_bf16(st.acc[e], a[0], a[1], a[2], a[3], ph[0], ph[1]);
    mma_bf16(st.acc[e], a[0], a[1], a[2], a[3], pl[0], pl[1]);
  }
}

__global__ void __launch_bounds__(kMmaThreads, kMmaMinCtasPerSm) split_kv_decode_mma(Params p) {
  const int split = blockIdx.x, b = blockIdx.z;
  const int g = blockIdx.y * kMmaWarps + threadIdx.x / 32, lane = threadIdx.x % 32, r = lane / 4, j = lane % 4;
  const int64_t len = min(max(static_cast<int64_t>(p.seq_lens[b]), int64_t{0}), p.P * kPage);
  const int64_t t_begin = split * p.split_tokens;
  const int64_t t_end = min(len, t_begin + p.split_tokens);

  // q of head r (rows 4-7 zero): chunk i holds d 8 (4i + j) .. + 7, the k-steps 2i and 2i + 1.
  const int64_t bh0 = static_cast<int64_t>(b) * kHq + g * kGroup;  // the group's first query head
  uint4 qa[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    qa[i] = r < kGroup ? *reinterpret_cast<const uint4*>(p.q + (bh0 + r) * kD + kElems * paged_mma::k_chunk(lane, i))
                       : make_uint4(0u, 0u, 0u, 0u);
  MmaState st;
  st.m = -INFINITY;
  st.l = 0.f;
#pragma unroll
  for (int e = 0; e < 8; ++e)
#pragma unroll
    for (int c = 0; c < 4; ++c) st.acc[e][c] = 0.f;

  // Pages [t_begin / 16, ceil(t_end / 16)): t_begin is a multiple of 32, so pages are whole; the
  // next page's id is read a page ahead, off the path of the K/V loads. rem_of: the page's tokens
  // inside the split (16 but on the last page).
  const int32_t* pages = p.block_table + b * p.P;
  const LaneRows lr(lane);
  const int64_t pg_end = (t_end + kPage - 1) / kPage;
  int64_t pg = t_begin / kPage;
  auto rem_of = [&](int64_t q) { return static_cast<int>(min(t_end - q * kPage, int64_t{kPage})); };
  int64_t page = pg < pg_end ? __ldg(pages + pg) : 0;
#if PAGED_MMA_PREFETCH
  // Variant mma_prefetch: the next page's rows are in flight while this one is consumed; past the
  // last page the next fragment is zeros (rem <= 0: nothing read).
  PageFrag cur;
  load_page(cur, p, page, pg < pg_end ? rem_of(pg) : 0, g, lane, lr);
  int64_t next = pg + 1 < pg_end ? __ldg(pages + pg + 1) : 0;
  for (; pg < pg_end; ++pg) {
    const int64_t after = pg + 2 < pg_end ? __ldg(pages + pg + 2) : 0;
    PageFrag nxt;
    load_page(nxt, p, next, pg + 1 < pg_end ? rem_of(pg + 1) : 0, g, lane, lr);
    consume_page(st, cur, qa, p.scale_log2, rem_of(pg), lane);
    cur = nxt;
    next = after;
  }
#else
  for (; pg < pg_end; ++pg) {
    const int64_t next = pg + 1 < pg_end ? __ldg(pages + pg + 1) : 0;
    PageFrag f;
    load_page(f, p, page, rem_of(pg), g, lane, lr);
    consume_page(st, f, qa, p.scale_log2, rem_of(pg), lane);
    page = next;
  }
#endif

  // The split's partial. Head r's l summed over its quad, its lse written by lane (r, 0); lane
  // (r, j < 2) writes heads 2j, 2j + 1 at d 8r .. 8r + 7 and 64 + 8r .. 64 + 8r + 7.
  st.l += __shfl_xor_sync(0xFFFFFFFFu, st.l, 1);
  st.l += __shfl_xor_sync(0xFFFFFFFFu, st.l, 2);
  const float l0 = __shfl_sync(0xFFFFFFFFu, st.l, 4 * paged_mma::o_head(lane, 0));
  const float l1 = __shfl_sync(0xFFFFFFFFu, st.l, 4 * paged_mma::o_head(lane, 1));
  if (p.splits > 1 && r < kGroup && j == 0)
    p.part_lse[(bh0 + r) * p.splits + split] = st.l > 0.f ? st.m + log2f(st.l) : -INFINITY;
  if (paged_mma::o_head(lane, 1) >= kGroup) return;  // lanes j >= 2: the zero columns
#pragma unroll
  for (int c = 0; c < 4; ++c) {  // c: head 2j + c % 2, d from 64 (c / 2) + 8r
    const float l = c % 2 ? l1 : l0;
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int64_t bh = bh0 + paged_mma::o_head(lane, c);
    const int d0 = paged_mma::o_dim(lane, c, 0);  // o_dim(lane, c, e) = d0 + e
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = st.acc[e][c] * inv;
    if (p.splits == 1) {
      *reinterpret_cast<uint4*>(p.o + bh * kD + d0) =
          make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7]));
    } else {
      float4* dst = reinterpret_cast<float4*>(p.part_o + (bh * p.splits + split) * kD + d0);
      dst[0] = make_float4(v[0], v[1], v[2], v[3]);
      dst[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
  }
}
#endif  // PAGED_MMA

struct Shape {
  int64_t B, P, N;
};

Shape read_shape(const d2k_args* a) {
  Shape s{d2k::scalar_i(a, "B"), d2k::scalar_i(a, "P"), d2k::scalar_i(a, "N")};
  if (d2k::scalar_i(a, "Hq") != kHq || d2k::scalar_i(a, "Hkv") != kHkv || d2k::scalar_i(a, "D") != kD ||
      d2k::scalar_i(a, "PAGE") != kPage)
    throw d2k::abi_error("expert: built for Hq = 32, Hkv = 8, D = 128, PAGE = 16");
  if (s.B < 1 || s.B > 65535 || s.P < 1 || s.N != s.B * s.P)
    throw d2k::abi_error("expert: need 1 <= B <= 65535, P >= 1 and N = B * P");
  return s;
}

struct Buffers {
  float* part_o;
  float* part_lse;
  int32_t* counters;
};
Buffers carve(d2k::Workspace& ws, const Shape& s) {
  const uint64_t heads = static_cast<uint64_t>(s.B) * kHq;
  const uint64_t splits = static_cast<uint64_t>(paged_decode::max_splits(s.P, kPage));
  Buffers b;
  b.part_o = ws.take<float>(heads * splits * kD);
  b.part_lse = ws.take<float>(heads * splits);
  b.counters = ws.take<int32_t>(static_cast<uint64_t>(s.B) * kHkv);
  return b;
}

#if PAGED_MMA
constexpr auto kDecodeKernel = split_kv_decode_mma;
constexpr int kDecodeThreads = kMmaThreads, kDecodeMinCtasPerSm = kMmaMinCtasPerSm;
constexpr int kKvHeadsPerCta = kMmaWarps;
#else
constexpr auto kDecodeKernel = split_kv_decode;
constexpr int kDecodeThreads = kThreads, kDecodeMinCtasPerSm = kMinCtasPerSm;
constexpr int kKvHeadsPerCta = 1;
#endif

/// Resident CTAs of the decode kernel on the current device (SMs x CTAs per SM), asked once.
int64_t resident_ctas() {
  static const int64_t n = [] {
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kDecodeKernel, kDecodeThreads, 0) != cudaSuccess)
      return int64_t{132 * kDecodeMinCtasPerSm};
    return static_cast<int64_t>(sms) * per_sm;
  }();
  return n;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Shape s = read_shape(args);
    d2k::Workspace ws;
    carve(ws, s);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = read_shape(args);
    Params p{};
    p.q = d2k::data<const __nv_bfloat16>(d2k::input(args, "q", kDLCUDA, d2k::dl::bf16, {s.B, kHq, kD}));
    p.k_cache = d2k::data<const uint4>(d2k::input(args, "k_cache", kDLCUDA, d2k::dl::bf16, {s.N, kPage, kHkv, kD}));
    p.v_cache = d2k::data<const uint4>(d2k::input(args, "v_cache", kDLCUDA, d2k::dl::bf16, {s.N, kPage, kHkv, kD}));
    p.block_table = d2k::data<const int32_t>(d2k::input(args, "block_table", kDLCUDA, d2k::dl::i32, {s.B, s.P}));
    p.seq_lens = d2k::data<const int32_t>(d2k::input(args, "seq_lens", kDLCUDA, d2k::dl::i32, {s.B}));
    p.o = d2k::data<__nv_bfloat16>(d2k::output(args, "o", kDLCUDA, d2k::dl::bf16, {s.B, kHq, kD}));
    d2k::Workspace ws(args);
    const Buffers w = carve(ws, s);
    p.part_o = w.part_o;
    p.part_lse = w.part_lse;
    p.counters = w.counters;
    p.P = s.P;
    p.scale_log2 = static_cast<float>(d2k::scalar_f(args, "scale") * 1.4426950408889634);
    // A CTA serves kKvHeadsPerCta KV heads: the split rule counts CTAs per sequence.
    p.splits = paged_decode::choose_splits(s.B, kHkv / kKvHeadsPerCta, s.P, kPage, resident_ctas(), PAGED_FIXED_SPLITS);
    p.split_tokens = paged_decode::split_tokens(s.P, kPage, p.splits);
    cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    if (p.splits > 1 && PAGED_MERGE_FUSED)
      D2K_CUDA_TRY(args, cudaMemsetAsync(p.counters, 0, sizeof(int32_t) * s.B * kHkv, stream));
#if PAGED_MMA
    split_kv_decode_mma<<<dim3(p.splits, kHkv / kMmaWarps, static_cast<unsigned>(s.B)), kMmaThreads, 0, stream>>>(p);
#else
    split_kv_decode<<<dim3(p.splits, kHkv, static_cast<unsigned>(s.B)), kThreads, 0, stream>>>(p);
#endif
    D2K_CUDA_TRY(args, cudaGetLastError());
    if (p.splits > 1 && !PAGED_MERGE_FUSED) {
      merge_splits<<<static_cast<unsigned>(s.B * kHq), kThreads, 0, stream>>>(p);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    return D2K_OK;
  });
}
