// tpch_q6 — expert: one pass over the columns, nothing materialised, later columns loaded only
// where an earlier predicate kept a row (late materialisation at sector granularity).
//
// Each thread takes 4 consecutive rows per step: one 16-byte load of l_shipdate (4 x int32). The
// four rows' int64 values of a later column are one 32-byte sector (two 16-byte loads), loaded
// only when one of the four rows passed every earlier predicate: discount, then quantity, then
// extendedprice (the cheapest order at Q6's selectivities; shipdate keeps ~15 % of the rows, so
// most discount sectors and nearly all price sectors are never fetched; docs/results/tpch_q6.md
// measures 13.3 DRAM bytes a row against 28 for a full scan). The products are summed in a
// per-thread int64, then a warp shuffle tree, a shared-memory step across warps, and one
// atomicAdd per block into revenue (cleared by a memset first). Integer addition is associative,
// so the result is exact and the same on every run whatever order the blocks finish in. Rows past
// the last whole group of 4 (and any misaligned start) go through a scalar path. Grid: enough
// blocks to fill every SM at full occupancy, striding over the rows.
//
// The L2 fetch granularity limit is lowered to 32 bytes (once per process, cudaDeviceSetLimit):
// at the default 64 every skipped sector comes along with a kept neighbour.
//
// Variants, H200 2026-12-01 (docs/results/tpch_q6.md; SF10 / SF100 medians, % of the least-work SOL):
//   ordered + 32-byte fetch (this file, measured as expert:fetch32): 182.1 / 1795.8 us, 71.9 / 72.8 %
//   fetch64 (-DQ6_FETCH32=0): ordered at the default granularity: 204.9 / 2015.0 us, 63.8 / 64.9 %
//   full (-DQ6_FULL_READ=1 -DQ6_FETCH32=0): all seven 16-byte loads issued before any predicate,
//     branch-free (the expert before late materialisation): 375.5 / 4038.5 us, 34.8 / 32.4 %
//   scalar (-DQ6_SCALAR_LOADS=1 -DQ6_FETCH32=0): one row per thread per step, full read.
// %VARIANT% fetch64 -DQ6_FETCH32=0
// %VARIANT% full -DQ6_FULL_READ=1 -DQ6_FETCH32=0
// %VARIANT% scalar -DQ6_SCALAR_LOADS=1 -DQ6_FETCH32=0
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "q6_args.h"

#ifndef Q6_SCALAR_LOADS
#define Q6_SCALAR_LOADS 0
#endif
#ifndef Q6_FULL_READ
#define Q6_FULL_READ 0
#endif
#ifndef Q6_FETCH32
#define Q6_FETCH32 1
#endif

namespace {

constexpr int kThreads = 256;

struct Pred {
  uint32_t date_lo, date_span;   ///< keep (uint32)(d - date_lo) < date_span
  uint64_t disc_lo, disc_span;   ///< keep (uint64)(x - disc_lo) <= disc_span
  int64_t quantity_lt;
};

/// price * discount when the row is kept, else 0; no branch (the compares become predicates and
/// the select a multiply by 0/1).
__device__ __forceinline__ int64_t kept_product(const Pred& q, int32_t d, int64_t disc, int64_t qty, int64_t price) {
  const bool keep = (static_cast<uint32_t>(d) - q.date_lo < q.date_span) &
                    (static_cast<uint64_t>(disc) - q.disc_lo <= q.disc_span) & (qty < q.quantity_lt);
  return static_cast<int64_t>(keep) * (price * disc);
}

#if !Q6_FULL_READ
/// The row's predicates one column at a time, for the predicate-ordered loads.
__device__ __forceinline__ bool date_ok(const Pred& q, int32_t d) { return static_cast<uint32_t>(d) - q.date_lo < q.date_span; }
__device__ __forceinline__ bool disc_ok(const Pred& q, int64_t x) {
  return static_cast<uint64_t>(x) - q.disc_lo <= q.disc_span;
}

/// Four consecutive rows (one 16-byte shipdate load, one 32-byte sector per int64 column): each
/// later column's sector is loaded only when a row of the four is still kept.
__device__ __forceinline__ int64_t ordered_group(const Pred& q, int4 d, const longlong2* x2, const longlong2* q2,
                                                 const longlong2* p2, int64_t g) {
  bool k0 = date_ok(q, d.x), k1 = date_ok(q, d.y), k2 = date_ok(q, d.z), k3 = date_ok(q, d.w);
  if (!(k0 | k1 | k2 | k3)) return 0;
  const longlong2 xa = __ldg(x2 + 2 * g), xb = __ldg(x2 + 2 * g + 1);
  k0 &= disc_ok(q, xa.x), k1 &= disc_ok(q, xa.y), k2 &= disc_ok(q, xb.x), k3 &= disc_ok(q, xb.y);
  if (!(k0 | k1 | k2 | k3)) return 0;
  const longlong2 qa = __ldg(q2 + 2 * g), qb = __ldg(q2 + 2 * g + 1);
  k0 &= qa.x < q.quantity_lt, k1 &= qa.y < q.quantity_lt, k2 &= qb.x < q.quantity_lt, k3 &= qb.y < q.quantity_lt;
  if (!(k0 | k1 | k2 | k3)) return 0;
  const longlong2 pa = __ldg(p2 + 2 * g), pb = __ldg(p2 + 2 * g + 1);
  return static_cast<int64_t>(k0) * (pa.x * xa.x) + static_cast<int64_t>(k1) * (pa.y * xa.y) +
         static_cast<int64_t>(k2) * (pb.x * xb.x) + static_cast<int64_t>(k3) * (pb.y * xb.y);
}
#endif

__device__ __forceinline__ int64_t block_sum(int64_t v) {
  __shared__ int64_t warp_sums[kThreads / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = 0;
  if (warp == 0) {
    v = lane < kThreads / 32 ? warp_sums[lane] : 0;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  }
  return v;  // valid in thread 0
}

/// Rows [vec_begin, vec_begin + 4 * groups) with 16-byte loads, the others one by one.
__global__ void __launch_bounds__(kThreads) q6_fused(const int32_t* __restrict__ shipdate,
                                                     const int64_t* __restrict__ discount,
                                                     const int64_t* __restrict__ quantity,
                                                     const int64_t* __restrict__ price, int64_t n,
                                                     int64_t vec_begin, int64_t groups, Pred q,
                                                     unsigned long long* revenue) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t acc = 0;
  const int4* d4 = reinterpret_cast<const int4*>(shipdate + vec_begin);
  const longlong2* x2 = reinterpret_cast<const longlong2*>(discount + vec_begin);
  const longlong2* q2 = reinterpret_cast<const longlong2*>(quantity + vec_begin);
  const longlong2* p2 = reinterpret_cast<const longlong2*>(price + vec_begin);
  for (int64_t g = tid; g < groups; g += stride) {
    const int4 d = __ldg(d4 + g);
#if Q6_FULL_READ
    const longlong2 xa = __ldg(x2 + 2 * g), xb = __ldg(x2 + 2 * g + 1);
    const longlong2 qa = __ldg(q2 + 2 * g), qb = __ldg(q2 + 2 * g + 1);
    const longlong2 pa = __ldg(p2 + 2 * g), pb = __ldg(p2 + 2 * g + 1);
    acc += kept_product(q, d.x, xa.x, qa.x, pa.x);
    acc += kept_product(q, d.y, xa.y, qa.y, pa.y);
    acc += kept_product(q, d.z, xb.x, qb.x, pb.x);
    acc += kept_product(q, d.w, xb.y, qb.y, pb.y);
#else
    acc += ordered_group(q, d, x2, q2, p2, g);
#endif
  }
  // Scalar rows: the head before vec_begin and the tail after the last whole group.
  const int64_t tail = vec_begin + 4 * groups;
  for (int64_t i = tid; i < vec_begin + (n - tail); i += stride) {
    const int64_t r = i < vec_begin ? i : tail + (i - vec_begin);
    acc += kept_product(q, shipdate[r], discount[r], quantity[r], price[r]);
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0 && acc != 0) atomicAdd(revenue, static_cast<unsigned long long>(acc));
}

/// First row from which all four columns are 16-byte aligned (0 for the harness's allocations);
/// n when no such row exists within 4 rows, which sends every row down the scalar path.
int64_t aligned_begin(const q6::Columns& c, int64_t n) {
  for (int64_t r = 0; r < 4 && r < n; ++r) {
    auto al = [&](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (al(c.shipdate + r) && al(c.discount + r) && al(c.quantity + r) && al(c.price + r)) return r;
  }
  return n;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)q6::read_params(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const q6::Params p = q6::read_params(args);
    const q6::Columns c = q6::read_columns(args, p, kDLCUDA);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(c.revenue, 0, sizeof(int64_t), st));
    if (p.n == 0) return D2K_OK;
    Pred q{};
    // Empty ranges (hi <= lo) keep nothing: a span of 0 under < and a wrapped span never hit.
    q.date_lo = static_cast<uint32_t>(p.date_lo);
    q.date_span = p.date_hi > p.date_lo ? static_cast<uint32_t>(static_cast<int64_t>(p.date_hi) - p.date_lo) : 0u;
    const bool disc_empty = p.discount_hi < p.discount_lo;
    q.disc_lo = static_cast<uint64_t>(p.discount_lo);
    q.disc_span = static_cast<uint64_t>(p.discount_hi) - static_cast<uint64_t>(p.discount_lo);
    q.quantity_lt = disc_empty ? INT64_MIN : p.quantity_lt;  // INT64_MIN: no quantity is below it
#if Q6_FETCH32
    // Once per worker: a skipped sector is not fetched along with a kept neighbour.
    static const cudaError_t limit = cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 32);
    D2K_CUDA_TRY(args, limit);
#endif
    const int64_t begin = Q6_SCALAR_LOADS ? p.n : aligned_begin(c, p.n);
    const int64_t groups = (p.n - begin) / 4;
    int dev = 0, sms = 0, per_sm = 0;
    D2K_CUDA_TRY(args, cudaGetDevice(&dev));
    D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, q6_fused, kThreads, 0));
    const int64_t work = groups + (p.n - 4 * groups);
    const int64_t want = (work + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms) * (per_sm > 0 ? per_sm : 1);
    const unsigned grid = static_cast<unsigned>(want < cap ? want : cap);
    q6_fused<<<grid, kThreads, 0, st>>>(c.shipdate, c.discount, c.quantity, c.price, p.n, begin, groups, q,
                                        reinterpret_cast<unsigned long long*>(c.revenue));
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
