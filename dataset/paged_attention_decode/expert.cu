// paged_attention_decode — expert: split-KV flash-decoding over the paged cache, GQA-shared loads.
//
// Design (design.json has the levels):
//   L1  split-KV: CTA (split, kv head g, sequence b) runs an online softmax in fp32 over its run
//       of token positions and leaves a partial (o / l, log2-sum-exp) per query head; an LSE merge
//       combines the splits. Splits come from B * Hkv against the resident CTA slots
//       (split_plan.h), so batch 8 (64 work items, fewer than the 132 SMs) still fills the GPU.
//   L2  each CTA serves all Hq / Hkv = 4 query heads of its KV head: a K or V row is loaded once
//       and used by 4 dot products / 4 accumulations (the cache is read once in total). 8 token
//       streams per CTA (a half-warp each, 16 lanes x 8 elements = one 256-byte row) keep
//       independent softmax states, merged through shared memory at the end of the split.
//   L3  16-byte streaming loads (LDG.E.128, evict-first) of K and V rows, 4 tokens per stream
//       issued before any is used (8 x 16 B in flight per lane), the next step's two page ids
//       loaded a step ahead; q pre-scaled by scale * log2(e) so the softmax is exp2; the merge
//       fused into the last CTA of each (b, g), found with an atomic counter (no second kernel).
//
// Variants considered (H200, 2026-12-02: median us and % of SOL, `d2k bench --task
// paged_attention_decode --targets expert,expert:cp_async,expert:merge_separate,expert:splits_fixed16
// --bench-rounds 1 --max-time 0.3`, noise 0.4-1.0% (splits_fixed16 at 32768: 3.2%);
// docs/results/paged_attention_decode.md has the tables):
//   variant                                                     | B64 ctx4096  | B8 ctx32768  | B256 ctx1024
//   default: splits from occupancy, merge fused into the last   | 283.0 63.9%  | 292.6 62.1%  | 303.5 60.3%
//     CTA, rows loaded into registers 4 tokens ahead            |              |              |
//   splits_fixed16: 16 splits whatever the shape                | 309.4 58.5%  | 311.2 58.4%  | 317.2 57.6%
//   merge_separate: a separate merge kernel                     | 276.0 65.6%  | 276.1 65.8%  | 289.4 63.2%
//   cp_async: a cp.async double buffer in shared memory, the    | 276.4 65.5%  | 291.6 62.3%  | 295.6 61.9%
//     next step's rows in flight while this one computes        |              |              |
//   (a TMA pipeline was not built: a 256-byte row per (page slot, KV head) is too small a box to
//   pay for a descriptor-driven copy, and the page ids change the address every 16 tokens).
// Measured: the fused merge is slower than a separate merge kernel on every row (1.03x / 1.06x /
// 1.05x): merge_separate is the better default. Every form is short of the issue's 80% of SOL; the
// expert is 2.99x / 2.89x / 2.79x gather + SDPA (bar 2.5x: met).
// %VARIANT% merge_separate -DPAGED_MERGE_FUSED=0
// %VARIANT% splits_fixed16 -DPAGED_FIXED_SPLITS=16
// %VARIANT% cp_async -DPAGED_CP_ASYNC=1
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "d2k/solution.h"
#include "split_plan.h"

#ifndef PAGED_MERGE_FUSED
#define PAGED_MERGE_FUSED 1
#endif
#ifndef PAGED_FIXED_SPLITS
#define PAGED_FIXED_SPLITS 0
#endif
#ifndef PAGED_CP_ASYNC
#define PAGED_CP_ASYNC 0
#endif

namespace {

constexpr int kHq = 32, kHkv = 8, kGroup = kHq / kHkv, kD = 128, kPage = 16;
constexpr int kThreads = 128;
constexpr int kLanesPerRow = 16;                     // 16 lanes x 8 bf16 = one D = 128 row
constexpr int kElems = kD / kLanesPerRow;            // 8 elements per lane
constexpr int kStreams = kThreads / kLanesPerRow;    // 8 token streams per CTA
constexpr int kUnroll = paged_decode::kStepTokens / kStreams;  // 4 tokens per stream per step
constexpr int kMinCtasPerSm = 4;
static_assert(kStreams * kUnroll == paged_decode::kStepTokens, "a CTA step is split_plan.h's");
static_assert(kThreads == kD, "the merge gives each thread one d");

struct Params {
  const __nv_bfloat16* q;
  const uint4* k_cache;  // rows of 8 x 16 B
  const uint4* v_cache;
  const int32_t* block_table;
  const int32_t* seq_lens;
  __nv_bfloat16* o;
  float* part_o;    // [B, Hq, splits, D]: o / l of each split
  float* part_lse;  // [B, Hq, splits]: log2(l) + m of each split, -inf when empty
  int32_t* counters;  // [B, Hkv]: splits done (fused merge)
  int64_t P;
  float scale_log2;   // scale * log2(e)
  int splits;
  int64_t split_tokens;
};

__device__ __forceinline__ void bf16x8_to_float(const uint4& r, float* f) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

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
    if (mnew == -INFINITY) continue;  // nothing valid yet in this stream
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
    const uint4 raw = *reinterpret_cast<const uint4*>(p.q + (static_cast<int64_t>(b) * kHq + g * kGroup + h) * kD +
                                                      lane * kElems);
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
  auto* sm_m = reinterpret_cast<float(*)[kGroup]>(smem_pool);                  // [kStreams][kGroup]
  auto* sm_l = sm_m + kStreams;                                                 // [kStreams][kGroup]
  auto* sm_acc = reinterpret_cast<float(*)[kGroup][kD]>(sm_l + kStreams);      // [kStreams][kGroup][kD]
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

/// The separate merge (variant merge_separate): a CTA per (b, query head).
__global__ void __launch_bounds__(kThreads) merge_splits(Params p) { merge_head(p, blockIdx.x, threadIdx.x); }

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

/// Resident CTAs of split_kv_decode on the current device (SMs x CTAs per SM), asked once.
int64_t resident_ctas() {
  static const int64_t n = [] {
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, split_kv_decode, kThreads, 0) != cudaSuccess)
      return int64_t{132 * kMinCtasPerSm};
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
    p.splits = paged_decode::choose_splits(s.B, kHkv, s.P, kPage, resident_ctas(), PAGED_FIXED_SPLITS);
    p.split_tokens = paged_decode::split_tokens(s.P, kPage, p.splits);
    cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    if (p.splits > 1 && PAGED_MERGE_FUSED)
      D2K_CUDA_TRY(args, cudaMemsetAsync(p.counters, 0, sizeof(int32_t) * s.B * kHkv, stream));
    split_kv_decode<<<dim3(p.splits, kHkv, static_cast<unsigned>(s.B)), kThreads, 0, stream>>>(p);
    D2K_CUDA_TRY(args, cudaGetLastError());
    if (p.splits > 1 && !PAGED_MERGE_FUSED) {
      merge_splits<<<static_cast<unsigned>(s.B * kHq), kThreads, 0, stream>>>(p);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    return D2K_OK;
  });
}
