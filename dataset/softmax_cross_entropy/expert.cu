// softmax_cross_entropy — expert: each row staged once in the shared memory of a thread-block
// cluster; online softmax statistics merged over DSMEM; the gradient written from shared memory.
//
//   lse = m + log(sum_v exp(x_v - m));  loss = lse - x_y;  dlogits = bf16(g * (exp(x - lse) - [v == y]))
//
// Compulsory traffic is 4TV + 12T bytes (logits read once, dlogits written once, targets and loss).
// dlogits needs the row's final log-sum-exp, so every element is visited twice; the second visit
// reads shared memory, not DRAM. A row of V bf16 (256 KB for Llama 3, 512 KB for Gemma) is split
// over a cluster of C CTAs (C in {1, 2, 4, 8}, the smallest with a slice of at most 32768 elements,
// 64 KB; up to 48K elements at C = 8 for V <= 393216):
//   phase 1  each CTA loads its slice with 16-byte loads (four in flight per thread), stores it to
//            shared memory, and keeps a per-thread online (max, sum of exp2) pair, rescaled once per
//            32 elements; warp shuffles, then one shared-memory exchange, give the CTA's (m, s);
//   phase 2  cluster barrier; each CTA merges the C partial (m, s) pairs read over DSMEM into the
//            row's (m, log2 s); rank 0 writes the loss, reading x_y from the owning CTA's slice;
//   phase 3  each CTA writes its slice of dlogits from shared memory with 16-byte stores;
//            a second cluster barrier (arrive after the DSMEM reads, wait before exit) keeps every
//            CTA's shared memory alive while peers read it.
// Ignored rows (target == ignore_index) skip the loads: zeros and loss 0. exp is ex2.approx of
// (x - m) * log2e (the subtraction exact for bf16, so the max term is exactly 1), with the
// normaliser folded into the same FFMA in the gradient: ex2(fma(x - m, log2e, -log2 s)). Rows with V % 8 != 0 or a
// misaligned tensor take the same kernel with 2-byte accesses.
//
// Measured on the H200 (2026-12-01, one run, %SOL of the calibrated memory floor; the command in
// docs/results/softmax_cross_entropy.md), Llama 3 / Qwen 2.5 / Gemma bench rows, µs (%SOL):
//   register loads, 32K-element slices (the first expert)  630.4 (78.3)  1726.1 (67.7)  315.5 (79.9)
//   unroll8                                                  652.5 (75.6)  1673.9 (69.8)  303.6 (83.1)
//   tma, 32K-element slices                                  592.0 (83.4)  1724.9 (67.8)  309.6 (81.4)
//   tma, 40K-element slices (the default now)                592.1 (83.3)  1406.2 (83.1)  309.6 (81.4)
//   tma_persist, 20K-element slices                          721.7 (68.4)  1657.9 (70.5)  406.4 (62.1)
// Register loads were limited by bytes in flight (four 16-byte loads per thread, serial with the
// arithmetic); TMA puts the whole slice in flight. Qwen's V = 151936 at 32K-element slices takes
// clusters of 8 with 38 KB slices; at 40K it takes clusters of 4 (76 KB, still 3 CTAs per SM),
// halving the CTAs, the cluster barriers and the fixed cost per byte: 1.23x on that row. The
// persistent variant lost: its smaller slices and the loop's barriers cost more than the overlap
// of one row's reads with the last row's stores gained. Designs considered:
//   a. two-pass, a CTA per row, the second pass re-reading the row from global (L2 if it is still
//      resident): 6TV bytes unless L2 holds every row in flight (132 SMs x 256-512 KB exceeds the
//      50 MB L2 at two rows per SM); at most 2/3 of SOL when it misses.
//   b. split-V over independent CTAs with a global (m, s) workspace and a second launch for the
//      gradient: re-reads the logits (6TV) and adds a launch; good only where T is tiny.
//   c. (chosen) cluster-staged row in distributed shared memory: the row never leaves the chip
//      between the statistics and the gradient, so DRAM sees each byte once; the cluster size
//      adapts to V, keeping 3-4 CTAs per SM for latency hiding.
//   d. row staged in registers (512 threads x 64 registers of packed bf16 = 128 KB per SM): fits
//      only V <= ~64K per CTA and caps occupancy at one CTA per SM; rejected in favour of (c).
//   e. TMA bulk copies (cp.async.bulk) into shared memory: the whole slice in flight at once,
//      no registers holding loads; the variants tma, tma_slice40k and tma_persist below.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

// Build-time knobs, one per variant line (docs/results/softmax_cross_entropy.md has the sweep):
//   %VARIANT% registers -DSCE_TMA=0 -DSCE_SLICE_TARGET=32768
//   %VARIANT% tma_slice32k -DSCE_SLICE_TARGET=32768
// The default is TMA with 40K-element slices: one thread issues the whole slice as kChunks bulk
//   copies into shared memory, each completing an mbarrier; every thread reduces chunk k as soon
//   as it lands, so the slice is in flight at once and no registers hold loads.
// registers: the first expert (16-byte register loads, SCE_UNROLL in flight per thread, 32K
//   slices), kept as the baseline of the sweep; tma_slice32k: TMA at the first slice size.
// SCE_PERSIST=1 (a resident wave of clusters looping over rows, two slice buffers) and
//   SCE_UNROLL=8 lost (table above) and are no longer built.
#ifndef SCE_UNROLL
#define SCE_UNROLL 4
#endif
#ifndef SCE_SLICE_TARGET
#define SCE_SLICE_TARGET 40960
#endif
#ifndef SCE_TMA
#define SCE_TMA 1
#endif
#ifndef SCE_PERSIST
#define SCE_PERSIST 0
#endif

namespace sce {

namespace cg = cooperative_groups;

constexpr int kThreads = 256;           ///< threads per CTA (8 warps)
constexpr int kWarps = kThreads / 32;
constexpr int kUnroll = SCE_UNROLL;     ///< 16-byte vectors per thread per batch (loads in flight)
constexpr int kMaxCluster = 8;          ///< portable cluster size limit
constexpr int64_t kSliceTarget = SCE_SLICE_TARGET;  ///< elements per CTA the cluster size aims for
constexpr int64_t kSliceMax = 49152;    ///< elements per CTA (96 KB) at the largest cluster
constexpr bool kTma = SCE_TMA != 0;     ///< slices arrive by cp.async.bulk (16-byte path only)
constexpr bool kPersist = SCE_PERSIST != 0;  ///< clusters loop over rows, two slice buffers
constexpr int kChunks = 4;              ///< bulk copies (and mbarriers) per slice buffer
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

/// Online softmax state: the max in natural units (an exact bf16 value) and s = sum_v 2^((x_v - m) * log2e).
/// x - m is exact in fp32 for bf16 inputs, so the largest term is exactly 1: folding m * log2e into
/// an FFMA (x * log2e - m * log2e) would instead scale every term by the rounding residual of
/// m * log2e (up to 5e-6 relative at m = 112), which shows as an error of that size in p - 1 of a
/// confidently predicted target, above the rule's atol.
struct MaxSum {
  float m;
  float s;
};

/// Merge of two partial states; empty states carry m = -inf, s = 0.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.s * ex2((a.m - m) * kLog2e) + b.s * ex2((b.m - m) * kLog2e)};
}

/// Rescales `st` to a new running max covering `batch_max`; returns the max.
__device__ __forceinline__ float raise_max(MaxSum& st, float batch_max) {
  const float m = fmaxf(st.m, batch_max);
  if (m != st.m) {
    st.s *= ex2((st.m - m) * kLog2e);  // st.m = -inf: s is 0 and stays 0
    st.m = m;
  }
  return m;
}

__device__ __forceinline__ float vec_max(const uint4& v) {
  const float a = fmaxf(fmaxf(bf16_lo(v.x), bf16_hi(v.x)), fmaxf(bf16_lo(v.y), bf16_hi(v.y)));
  const float b = fmaxf(fmaxf(bf16_lo(v.z), bf16_hi(v.z)), fmaxf(bf16_lo(v.w), bf16_hi(v.w)));
  return fmaxf(a, b);
}

/// 2^((x - m) * log2e): an exact FADD, then the FMUL feeding ex2.
__device__ __forceinline__ float exp_shifted(float x, float m) { return ex2((x - m) * kLog2e); }

__device__ __forceinline__ float vec_sum_exp(const uint4& v, float m) {
  float s = exp_shifted(bf16_lo(v.x), m) + exp_shifted(bf16_hi(v.x), m);
  s += exp_shifted(bf16_lo(v.y), m) + exp_shifted(bf16_hi(v.y), m);
  s += exp_shifted(bf16_lo(v.z), m) + exp_shifted(bf16_hi(v.z), m);
  s += exp_shifted(bf16_lo(v.w), m) + exp_shifted(bf16_hi(v.w), m);
  return s;
}

/// p = e^(x - lse) = 2^((x - m) * log2e - log2 s): the exact FADD, then one FFMA with log2(e) and
/// the normaliser folded, then ex2.
__device__ __forceinline__ float softmax_at(float x, float m, float neg_log2_s) {
  return ex2(fmaf(x - m, kLog2e, neg_log2_s));
}

/// Phase 1, 16-byte path: slice -> shared memory, per-thread online (m, s). len % 8 == 0.
__device__ MaxSum stage_slice_vec(const uint4* __restrict__ src, uint4* dst, int nvec) {
  MaxSum st{-INFINITY, 0.f};
  int i = threadIdx.x;
  for (; i + (kUnroll - 1) * kThreads < nvec; i += kUnroll * kThreads) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(src + i + u * kThreads);  // all loads issued first
    float bm = vec_max(v[0]);
#pragma unroll
    for (int u = 1; u < kUnroll; ++u) bm = fmaxf(bm, vec_max(v[u]));
    const float m = raise_max(st, bm);  // one rescale per 32 elements
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      dst[i + u * kThreads] = v[u];
      st.s += vec_sum_exp(v[u], m);
    }
  }
  for (; i < nvec; i += kThreads) {
    const uint4 v = __ldg(src + i);
    const float m = raise_max(st, vec_max(v));
    dst[i] = v;
    st.s += vec_sum_exp(v, m);
  }
  return st;
}

// Bulk copies (TMA, cp.async.bulk) into shared memory, each completing a transaction-count mbarrier.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
}
/// Makes the initialised mbarriers visible to the async proxy that completes them.
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
/// Orders this CTA's earlier generic-proxy reads of a buffer before the bulk copies that overwrite it.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred P1;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

/// Vectors per chunk: a multiple of the CTA size, so every thread has the same share of a chunk.
__device__ __forceinline__ int chunk_vectors(int nvec) {
  const int per = (nvec + kChunks - 1) / kChunks;
  return (per + kThreads - 1) / kThreads * kThreads;
}

/// Issued by one thread: the slice's bulk copies, one per non-empty chunk.
__device__ void issue_slice(const uint4* src, uint4* dst, int nvec, uint64_t* bars) {
  const int cv = chunk_vectors(nvec);
  for (int k = 0; k < kChunks; ++k) {
    const int lo = k * cv, hi = min(nvec, lo + cv);
    if (lo >= hi) break;
    bulk_load(dst + lo, src + lo, static_cast<uint32_t>(hi - lo) * 16u, &bars[k]);
  }
}

/// Phase 1, bulk-copy path: each chunk reduced from shared memory as soon as its mbarrier flips.
__device__ MaxSum reduce_slice_tma(const uint4* staged, int nvec, uint64_t* bars, uint32_t parity) {
  MaxSum st{-INFINITY, 0.f};
  const int cv = chunk_vectors(nvec);
  for (int k = 0; k < kChunks; ++k) {
    const int lo = k * cv, hi = min(nvec, lo + cv);
    if (lo >= hi) break;
    mbar_wait(&bars[k], parity);
    int i = lo + threadIdx.x;
    for (; i + (kUnroll - 1) * kThreads < hi; i += kUnroll * kThreads) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = staged[i + u * kThreads];
      float bm = vec_max(v[0]);
#pragma unroll
      for (int u = 1; u < kUnroll; ++u) bm = fmaxf(bm, vec_max(v[u]));
      const float m = raise_max(st, bm);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) st.s += vec_sum_exp(v[u], m);
    }
    for (; i < hi; i += kThreads) {
      const uint4 v = staged[i];
      st.s += vec_sum_exp(v, raise_max(st, vec_max(v)));
    }
  }
  return st;
}

/// Phase 1, 2-byte path (V % 8 != 0 or misaligned tensors).
__device__ MaxSum stage_slice_scalar(const __nv_bfloat16* __restrict__ src, __nv_bfloat16* dst, int len) {
  MaxSum st{-INFINITY, 0.f};
  for (int i = threadIdx.x; i < len; i += kThreads) {
    const __nv_bfloat16 b = src[i];
    dst[i] = b;
    const float x = __bfloat162float(b);
    st.s += exp_shifted(x, raise_max(st, x));
  }
  return st;
}

/// CTA-wide merge of the per-thread states: shuffles, then one exchange through shared memory.
/// The result is valid in thread 0.
__device__ MaxSum reduce_cta(MaxSum st, MaxSum* warp_partials) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, st.m, o), __shfl_xor_sync(0xffffffffu, st.s, o)};
    st = merge(st, other);
  }
  if ((threadIdx.x & 31) == 0) warp_partials[threadIdx.x >> 5] = st;
  __syncthreads();
  if (threadIdx.x < 32) {
    st = threadIdx.x < kWarps ? warp_partials[threadIdx.x] : MaxSum{-INFINITY, 0.f};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      MaxSum other{__shfl_xor_sync(0xffffffffu, st.m, o), __shfl_xor_sync(0xffffffffu, st.s, o)};
      st = merge(st, other);
    }
  }
  return st;
}

/// Phase 3, 16-byte path: dlogits slice = g * (softmax - onehot) from shared memory.
__device__ void write_grad_vec(const uint4* src, uint4* __restrict__ dst, int nvec, float m, float neg_log2_s,
                               float g, int y_local) {
  for (int i = threadIdx.x; i < nvec; i += kThreads) {
    const uint4 v = src[i];
    float p[8] = {bf16_lo(v.x), bf16_hi(v.x), bf16_lo(v.y), bf16_hi(v.y),
                  bf16_lo(v.z), bf16_hi(v.z), bf16_lo(v.w), bf16_hi(v.w)};
#pragma unroll
    for (int k = 0; k < 8; ++k) p[k] = softmax_at(p[k], m, neg_log2_s);
    const int off = y_local - i * 8;  // the target inside this vector, if any
    if (off >= 0 && off < 8) {
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (k == off) p[k] -= 1.f;
    }
    uint4 o;
    o.x = pack_bf16x2(p[0] * g, p[1] * g);
    o.y = pack_bf16x2(p[2] * g, p[3] * g);
    o.z = pack_bf16x2(p[4] * g, p[5] * g);
    o.w = pack_bf16x2(p[6] * g, p[7] * g);
    dst[i] = o;
  }
}

__device__ void write_grad_scalar(const __nv_bfloat16* src, __nv_bfloat16* __restrict__ dst, int len, float m,
                                  float neg_log2_s, float g, int y_local) {
  for (int i = threadIdx.x; i < len; i += kThreads) {
    float p = softmax_at(__bfloat162float(src[i]), m, neg_log2_s);
    if (i == y_local) p -= 1.f;
    dst[i] = __float2bfloat16_rn(p * g);
  }
}

__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/// One row in the cluster's CTAs: phases 1-3 of the header. `staged` holds the slice (already in
/// flight when bulk copies are used: the wait is on `bars` with `parity`).
template <bool kVec>
__device__ void process_row(const __nv_bfloat16* __restrict__ src, __nv_bfloat16* __restrict__ dst,
                            __nv_bfloat16* staged, uint64_t* bars, uint32_t parity, float* __restrict__ loss,
                            int64_t row, int64_t y, int64_t V, int slice, int64_t begin, int len, float grad_scale,
                            cg::cluster_group& cluster, int C, int rank, MaxSum* warp_partials, MaxSum* cta_partial,
                            float* row_stats) {
  // Phase 1: stage the slice and reduce its statistics.
  MaxSum st;
  if constexpr (kVec && kTma)
    st = reduce_slice_tma(reinterpret_cast<const uint4*>(staged), len / 8, bars, parity);
  else if constexpr (kVec)
    st = stage_slice_vec(reinterpret_cast<const uint4*>(src), reinterpret_cast<uint4*>(staged), len / 8);
  else
    st = stage_slice_scalar(src, staged, len);
  st = reduce_cta(st, warp_partials);
  if (threadIdx.x == 0) *cta_partial = st;
  cluster.sync();  // every slice and partial is visible cluster-wide

  // Phase 2: merge the C partials over DSMEM; rank 0 writes the loss.
  if (threadIdx.x < 32) {
    MaxSum p = threadIdx.x < static_cast<unsigned>(C) ? *cluster.map_shared_rank(cta_partial, threadIdx.x)
                                                      : MaxSum{-INFINITY, 0.f};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      MaxSum other{__shfl_xor_sync(0xffffffffu, p.m, o), __shfl_xor_sync(0xffffffffu, p.s, o)};
      p = merge(p, other);
    }
    if (threadIdx.x == 0) {
      // Accurate log2 (not lg2.approx): near s = 1, a confident row, its absolute error lands
      // directly in p - 1 of the target.
      const float log2_s = log2f(p.s);
      row_stats[0] = p.m;
      row_stats[1] = -log2_s;
      if (rank == 0 && (y < 0 || y >= V)) {
        loss[row] = __int_as_float(0x7fc00000);  // a target outside [0, V): NaN, as a failed assert would
      } else if (rank == 0) {
        const int owner = static_cast<int>(y / slice);
        const __nv_bfloat16* owner_slice = cluster.map_shared_rank(staged, owner);
        const float x_y = __bfloat162float(owner_slice[y - static_cast<int64_t>(owner) * slice]);
        // s = sum_v e^(x_v - m), so lse = m + ln s; (m - x_y) is exact for bf16 inputs and only
        // ln s carries rounding.
        loss[row] = (p.m - x_y) + logf(p.s);
      }
    }
  }
  __syncthreads();
  cluster_arrive_release();  // done reading peers' shared memory

  // Phase 3: the gradient of the slice from shared memory.
  const int64_t y_rel = y - begin;
  const int y_local = (y_rel >= 0 && y_rel < len) ? static_cast<int>(y_rel) : -1;
  if (kVec)
    write_grad_vec(reinterpret_cast<const uint4*>(staged), reinterpret_cast<uint4*>(dst), len / 8, row_stats[0],
                   row_stats[1], grad_scale, y_local);
  else
    write_grad_scalar(staged, dst, len, row_stats[0], row_stats[1], grad_scale, y_local);
  cluster_wait_acquire();  // peers may still read this CTA's partial or slice until here
}

/// Slice buffers per CTA: two when clusters loop over rows (the next row's copies land in the other).
constexpr int kBuffers = kPersist ? 2 : 1;

/// Clusters of C CTAs; cluster g handles rows g, g + G, ... (G clusters in the grid: G = T unless
/// persistent). CTA rank r owns elements [r*slice, min(V, (r+1)*slice)) of each row.
template <bool kVec>
__global__ void __launch_bounds__(kThreads, 3)
    cross_entropy_cluster_staged(const __nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                                 float* __restrict__ loss, __nv_bfloat16* __restrict__ dlogits, int64_t T, int64_t V,
                                 int slice, int64_t ignore_index, float grad_scale) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ MaxSum warp_partials[kWarps];
  __shared__ MaxSum cta_partial;  // read by the cluster's peers over DSMEM
  __shared__ float row_stats[2];  // the row's max and -log2(sum 2^((x - m) log2e))
  __shared__ __align__(8) uint64_t bars[kBuffers][kChunks];
  constexpr bool kBulk = kVec && kTma;
  constexpr int kToggle = kBulk ? kBuffers - 1 : 0;  // the 2-byte path stages into one buffer

  cg::cluster_group cluster = cg::this_cluster();
  const int C = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int64_t first = blockIdx.x / C, stride = gridDim.x / C;
  const int64_t begin = static_cast<int64_t>(rank) * slice;
  const int len = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(V - begin, slice)));
  auto* buffers = reinterpret_cast<__nv_bfloat16*>(smem_raw);

  if constexpr (kBulk) {
    if (threadIdx.x == 0) {
      for (int b = 0; b < kBuffers; ++b)
        for (int k = 0; k < kChunks; ++k) mbar_init(&bars[b][k]);
      fence_mbar_init();
      if (first < T && targets[first] != ignore_index)
        issue_slice(reinterpret_cast<const uint4*>(logits + first * V + begin), reinterpret_cast<uint4*>(buffers),
                    len / 8, bars[0]);
    }
    __syncthreads();
  }

  uint32_t phases = 0;  // bit b: the parity buffer b's mbarriers complete next
  int buf = 0;
  for (int64_t row = first; row < T; row += stride, buf ^= kToggle) {
    const int64_t next = row + stride;
    // A buffer is reused two rows on (one row on with a single buffer): peers finished reading it
    // before that row's closing cluster barrier, this CTA's threads (phase 3 runs past the
    // arrive) by this barrier.
    if constexpr (kPersist) __syncthreads();
    if constexpr (kBulk && kPersist) {
      if (threadIdx.x == 0 && next < T && targets[next] != ignore_index) {
        fence_proxy_async();
        issue_slice(reinterpret_cast<const uint4*>(logits + next * V + begin),
                    reinterpret_cast<uint4*>(buffers + static_cast<int64_t>(buf ^ 1) * slice), len / 8, bars[buf ^ 1]);
      }
    }
    __nv_bfloat16* dst = dlogits + row * V + begin;
    const int64_t y = targets[row];
    if (y == ignore_index) {  // uniform across the cluster: no barrier is skipped by only some CTAs
      if (kVec) {
        for (int i = threadIdx.x; i < len / 8; i += kThreads) reinterpret_cast<uint4*>(dst)[i] = make_uint4(0, 0, 0, 0);
      } else {
        for (int i = threadIdx.x; i < len; i += kThreads) dst[i] = __float2bfloat16_rn(0.f);
      }
      if (rank == 0 && threadIdx.x == 0) loss[row] = 0.f;
      continue;
    }
    const uint32_t parity = (phases >> buf) & 1u;
    phases ^= 1u << buf;
    process_row<kVec>(logits + row * V + begin, dst, buffers + static_cast<int64_t>(buf) * slice, bars[buf], parity,
                      loss, row, y, V, slice, begin, len, grad_scale, cluster, C, rank, warp_partials, &cta_partial,
                      row_stats);
  }
}

/// Cluster size and slice length for a row of V elements.
struct Plan {
  int cluster;
  int slice;  ///< elements per CTA, a multiple of 8
};

inline bool plan_for(int64_t V, Plan* plan) {
  for (int c = 1; c <= kMaxCluster; c *= 2) {
    const int64_t slice = ((V + c - 1) / c + 7) / 8 * 8;
    if (slice <= kSliceTarget || (c == kMaxCluster && slice <= kSliceMax)) {
      *plan = Plan{c, static_cast<int>(slice)};
      return true;
    }
  }
  return false;
}

/// Clusters resident at once for this launch shape (0 if the query fails): the persistent grid.
inline int resident_clusters(const void* kernel, const cudaLaunchConfig_t& cfg) {
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

template <bool kVec>
cudaError_t launch(const Plan& plan, int64_t T, const __nv_bfloat16* logits, const int64_t* targets, float* loss,
                   __nv_bfloat16* dlogits, int64_t V, int64_t ignore_index, float grad_scale, cudaStream_t stream) {
  auto kernel = &cross_entropy_cluster_staged<kVec>;
  const int buffers = (kVec && kTma) ? kBuffers : 1;
  const size_t smem = static_cast<size_t>(buffers) * plan.slice * sizeof(__nv_bfloat16);
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(T * plan.cluster), 1, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(plan.cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (kPersist) {
    const int resident = resident_clusters(reinterpret_cast<const void*>(kernel), cfg);
    if (resident <= 0) return cudaErrorInvalidConfiguration;  // the slice buffers do not fit an SM
    cfg.gridDim.x = static_cast<unsigned>(std::min<int64_t>(T, resident) * plan.cluster);
  }
  e = cudaLaunchKernelEx(&cfg, kernel, logits, targets, loss, dlogits, T, V, plan.slice, ignore_index, grad_scale);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace sce

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t ignore_index = d2k::scalar_i(args, "ignore_index");
    const float grad_scale = static_cast<float>(d2k::scalar_f(args, "grad_scale"));
    if (T < 0 || V < 1) throw d2k::abi_error("expert: need T >= 0 and V >= 1");
    const DLTensor& logits = d2k::input(args, "logits", kDLCUDA, d2k::dl::bf16, {T, V});
    const DLTensor& targets = d2k::input(args, "targets", kDLCUDA, d2k::dl::i64, {T});
    const DLTensor& loss = d2k::output(args, "loss", kDLCUDA, d2k::dl::f32, {T});
    const DLTensor& dlogits = d2k::output(args, "dlogits", kDLCUDA, d2k::dl::bf16, {T, V});
    if (T == 0) return D2K_OK;
    sce::Plan plan{};
    if (!sce::plan_for(V, &plan))
      throw d2k::abi_error("expert: V = " + std::to_string(V) + " exceeds what one cluster can stage (393216)");
    if (T * plan.cluster > 2147483647) throw d2k::abi_error("expert: T * cluster size exceeds the grid limit");

    const auto* xp = d2k::data<const __nv_bfloat16>(logits);
    const auto* yp = d2k::data<const int64_t>(targets);
    auto* lp = d2k::data<float>(loss);
    auto* dp = d2k::data<__nv_bfloat16>(dlogits);
    auto stream = static_cast<cudaStream_t>(args->stream);
    const bool vec = V % 8 == 0 && sce::aligned16(xp) && sce::aligned16(dp);
    if (vec)
      D2K_CUDA_TRY(args, sce::launch<true>(plan, T, xp, yp, lp, dp, V, ignore_index, grad_scale, stream));
    else
      D2K_CUDA_TRY(args, sce::launch<false>(plan, T, xp, yp, lp, dp, V, ignore_index, grad_scale, stream));
    return D2K_OK;
  });
}
