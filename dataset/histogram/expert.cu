// histogram — expert: privatised per-CTA histograms in shared memory, one pass over the values with
// 16-byte loads, one write of a partial row per CTA, and a merge kernel that writes every count
// once.
//
//   1. hist_tiles (a persistent grid: as many CTAs of 384 threads as fit on the GPU at once, at
//      most one per tile): each CTA zeroes its shared-memory table, then walks tiles of 12288 values
//      (tile i, i + grid, ...); each thread issues its 8 16-byte loads of the tile (__ldcs: the
//      values are read once), then counts their 32 values. N % 4 trailing values are loaded one
//      by one by warp 0 of CTA 0; a value >= B is counted nowhere (the task's rule), and so is the
//      padding past the last chunk (0xFFFFFFFF).
//   2. The table (hist_core.h: plan_for picks it from B alone):
//      - kCopies32, when at least one 32-bit copy of the B counters fits the shared memory (B up to
//        56320): R = the largest power of two <= 32 copies that fit (32 at B = 256, 8 at
//        B = 4096, 1 from B = 28161), interleaved as word v * R + (lane % R). Lanes of a warp that
//        hit one hot bin hit R different words in R different banks, so skew costs R times fewer
//        serialised same-address updates; at R = 32 every lane has its own bank and even an input
//        of one repeated value is conflict-free. The increments are shared-memory atomics with no
//        return value (ATOMS.ADD: fire and forget, no wait on the result).
//      - kPacked16, when 32-bit counters do not fit (B = 65536 takes 256 KB; the SM has 228 KB):
//        16-bit counters packed two to a word (128 KB at B = 65536). A 16-bit counter wraps every
//        65536 increments of its bin in one CTA, so every increment is an atomic that returns the
//        old word, and the rare increment that wraps a half spills 65536 into the CTA's partial
//        row in global memory (a few thousand spills per 1e9 values); the carry a low half leaks
//        into the high half is taken back by a second atomic (hist_core.h: packed16_add, where the
//        accounting is exact under any interleaving; the CPU tests replay it with interleavings).
//   3. Each CTA writes its B partial counts to its row of the workspace (kCopies32: the sum of its
//      R copies; kPacked16: the spills plus the table), coalesced, no atomics.
//   4. hist_merge_rows: counts[b] = sum of the rows' b-th entries, a warp per 32 bins per row
//      slice, 32 warps per CTA; every count written exactly once (the output is never zeroed
//      first, so its last word is written when the call is done). Its traffic is rows x B x 4
//      bytes: 35 MB at B = 65536 (132 rows), under 1% of the 4 GB of values at N = 1e9.
//
// Variants considered (the H200 table is in docs/results/histogram.md; not yet measured):
//   - this one (R interleaved lane copies, no warp aggregation);
//   - match_any: warp-aggregated increments, __match_any_sync over the 32 lanes' values and one
//     atomic of popc(mask) by the lowest lane of each group: fewer atomics on skewed data, but a
//     MATCH.ANY per value, which costs more than it saves when the bins are spread out;
//   - copies1: one copy of the table per CTA (R = 1): what the lane copies buy against skew;
//   - a private 16-bit table per lane updated without atomics (load, add, store: no atomic unit,
//     but two shared-memory accesses per value and a read-after-write wait), flushed before any
//     counter can wrap: only B <= 256 fits 12 warps x 32 lanes, and R = 32 atomic copies gives the
//     same bank spread with one access per value;
//   - global-memory atomics for the bins that do not fit (partial privatisation): at B = 65536 a
//     quarter of the values would become L2 atomics, as many as the naive kernel's at 4096 bins;
//   - CUB's DeviceHistogram::HistogramEven (library.cu): shared-memory privatisation up to 256
//     bins only, a global-memory copy per CTA above that;
//   - one global atomic per value (naive.cu).
// %VARIANT% match_any -DHIST_MATCH=1
// %VARIANT% copies1 -DHIST_MAX_COPIES=1
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "hist_args.h"
#include "hist_core.h"

#ifndef HIST_MATCH
#define HIST_MATCH 0  // 1: warp-aggregated increments (__match_any_sync)
#endif

namespace {

using hist::Layout;

struct TileArgs {
  const uint4* values4;
  const uint32_t* values;
  int64_t chunks, tiles;
  int tail;
  uint32_t bins;
  int copies;
  uint32_t table_words;
  uint32_t* partials;  ///< [grid][bins]
};

/// How much this lane adds for value v: 1, or under HIST_MATCH the size of its group of equal
/// values for the group's lowest lane and 0 for the others; 0 for a value >= B (the task's rule;
/// also the 0xFFFFFFFF padding). Every lane of the warp calls it (__match_any_sync).
__device__ __forceinline__ uint32_t increment_of(uint32_t v, int lane, uint32_t bins) {
  uint32_t c = 1;
#if HIST_MATCH
  const unsigned group = __match_any_sync(0xffffffffu, v);
  c = lane == __ffs(group) - 1 ? static_cast<uint32_t>(__popc(group)) : 0u;
#endif
  return v < bins ? c : 0u;
}

/// The four values of one 16-byte chunk: kCopies32 adds to the lane's copy of each bin with
/// atomics whose result is unused; kPacked16 issues the four atomics first and settles their old
/// words after, so a thread waits on one shared-memory round trip per chunk, not per value.
template <Layout L>
__device__ __forceinline__ void count_chunk(uint32_t* table, uint32_t* row, const TileArgs& a, int lane, const uint4& x) {
  const uint32_t v[4] = {x.x, x.y, x.z, x.w};
  uint32_t c[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) c[e] = increment_of(v[e], lane, a.bins);
  if constexpr (L == Layout::kCopies32) {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (c[e]) atomicAdd(table + hist::copies32_word(v[e], a.copies, lane & (a.copies - 1)), c[e]);
  } else {
    auto add = [](uint32_t* w, uint32_t d) { return atomicAdd(w, d); };
    auto spill = [row](uint32_t bin, uint32_t d) { atomicAdd(row + bin, d); };
    uint32_t old[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) old[e] = c[e] ? hist::packed16_issue(table, v[e], c[e], add) : 0u;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (c[e]) hist::packed16_settle(table, v[e], c[e], old[e], a.bins, add, spill);
  }
}

template <Layout L>
__global__ void __launch_bounds__(hist::kThreads) hist_tiles(TileArgs a) {
  extern __shared__ uint32_t table[];
  const int t = threadIdx.x, lane = t & 31;
  uint32_t* row = a.partials + static_cast<int64_t>(blockIdx.x) * a.bins;
  for (uint32_t i = t; i < a.table_words; i += hist::kThreads) table[i] = 0;
  if constexpr (L == Layout::kPacked16)
    for (uint32_t b = t; b < a.bins; b += hist::kThreads) row[b] = 0;  // the spills land here
  __syncthreads();

  // 1-2. Tiles: all loads of the tile first, then the increments.
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    uint4 x[hist::kUnroll];
#pragma unroll
    for (int u = 0; u < hist::kUnroll; ++u) {
      const int64_t c = hist::chunk_of(tile, u, t);
      x[u] = c < a.chunks ? __ldcs(a.values4 + c) : make_uint4(~0u, ~0u, ~0u, ~0u);
    }
#pragma unroll
    for (int u = 0; u < hist::kUnroll; ++u) count_chunk<L>(table, row, a, lane, x[u]);
  }
  if (blockIdx.x == 0 && t < 32) {  // the n % 4 trailing values: lane 0's chunk, a whole warp calls (match_any)
    uint4 x = make_uint4(~0u, ~0u, ~0u, ~0u);
    const uint32_t* tail = a.values + a.chunks * 4;
    if (lane == 0) {
      if (a.tail > 0) x.x = tail[0];
      if (a.tail > 1) x.y = tail[1];
      if (a.tail > 2) x.z = tail[2];
    }
    count_chunk<L>(table, row, a, lane, x);
  }
  __syncthreads();

  // 3. The CTA's partial row.
  for (uint32_t b = t; b < a.bins; b += hist::kThreads) {
    if constexpr (L == Layout::kCopies32) {
      uint32_t s = 0;
      for (int r = 0; r < a.copies; ++r)  // rotated start: the lanes of a warp read different banks
        s += table[hist::copies32_word(b, a.copies, (r + lane) & (a.copies - 1))];
      row[b] = s;
    } else {
      row[b] = __ldcg(row + b) + hist::packed16_field(table, b);  // L2 holds the spills
    }
  }
}

constexpr int kMergeWarps = 32;

/// 4. counts[b] = sum over the rows of partials[row][b]: lane = bin within the CTA's 32, warp = a
/// slice of the rows; the slices' sums meet in shared memory.
__global__ void __launch_bounds__(kMergeWarps * 32)
    hist_merge_rows(const uint32_t* __restrict__ partials, int64_t rows, uint32_t bins, uint32_t* __restrict__ counts) {
  __shared__ uint32_t slice[kMergeWarps][33];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t b = blockIdx.x * 32u + lane;
  uint32_t s = 0;
  if (b < bins) {
#pragma unroll 4
    for (int64_t r = warp; r < rows; r += kMergeWarps) s += __ldcs(partials + r * bins + b);
  }
  slice[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && b < bins) {
    uint32_t total = 0;
#pragma unroll
    for (int w = 0; w < kMergeWarps; ++w) total += slice[w][lane];
    counts[b] = total;
  }
}

struct Buffers {
  uint32_t* partials;  ///< [plan.max_grid][B]
};

Buffers carve(d2k::Workspace& ws, const hist::Params& p, const hist::Plan& plan) {
  return {ws.take<uint32_t>(static_cast<uint64_t>(plan.max_grid) * static_cast<uint64_t>(p.b))};
}

/// CTAs of `kernel` that run at once on this GPU, bounded by the plan's rows, into *grid.
int32_t grid_for(const void* kernel, const hist::Plan& plan, const d2k_args* args, int64_t* grid) {
  int dev = 0, sms = 0, per_sm = 0;
  D2K_CUDA_TRY(args, cudaGetDevice(&dev));
  D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  D2K_CUDA_TRY(args, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(plan.smem_bytes)));
  D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, hist::kThreads,
                                                                   static_cast<size_t>(plan.smem_bytes)));
  const int64_t g = static_cast<int64_t>(sms) * (per_sm < 1 ? 1 : per_sm);
  *grid = g < plan.max_grid ? g : plan.max_grid;
  return D2K_OK;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const hist::Params p = hist::read_params(args);
    d2k::Workspace ws;
    carve(ws, p, hist::plan_for(p.n, p.b));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const hist::Params p = hist::read_params(args);
    const hist::Tensors t = hist::read_tensors(args, p, kDLCUDA);
    if (reinterpret_cast<uintptr_t>(t.values) % 16 != 0)
      throw d2k::abi_error("histogram expert: values must be 16-byte aligned (uint4 loads)");
    const hist::Plan plan = hist::plan_for(p.n, p.b);
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, p, plan);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);

    TileArgs a{};
    a.values4 = reinterpret_cast<const uint4*>(t.values);
    a.values = t.values;
    a.chunks = plan.chunks;
    a.tiles = plan.tiles;
    a.tail = static_cast<int>(plan.tail);
    a.bins = static_cast<uint32_t>(p.b);
    a.copies = plan.copies;
    a.table_words = static_cast<uint32_t>(plan.smem_bytes / 4);
    a.partials = buf.partials;
    const void* kernel = plan.layout == Layout::kCopies32 ? reinterpret_cast<const void*>(hist_tiles<Layout::kCopies32>)
                                                          : reinterpret_cast<const void*>(hist_tiles<Layout::kPacked16>);
    int64_t grid = 1;
    if (const int32_t rc = grid_for(kernel, plan, args, &grid); rc != D2K_OK) return rc;
    if (plan.layout == Layout::kCopies32)
      hist_tiles<Layout::kCopies32><<<static_cast<unsigned>(grid), hist::kThreads, plan.smem_bytes, st>>>(a);
    else
      hist_tiles<Layout::kPacked16><<<static_cast<unsigned>(grid), hist::kThreads, plan.smem_bytes, st>>>(a);
    D2K_CUDA_TRY(args, cudaGetLastError());
    hist_merge_rows<<<static_cast<unsigned>((p.b + 31) / 32), kMergeWarps * 32, 0, st>>>(buf.partials, grid,
                                                                                        static_cast<uint32_t>(p.b), t.counts);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
