// spmv_csr — expert: merge-path CSR (design D below; the default since 2026-12-02): the path of row
// ends and entries cut into equal tiles of 256 x 7 items, one CTA each, every load of a tile in
// flight at once (cp.async), x through the read-only path, the matrix streamed with an evict-first
// policy so that x keeps the L2. The previous default, rows binned by length on the fly (design C),
// builds as the variant `binned`.
//
// Variants considered (docs/results/spmv_csr.md has the commands and the numbers):
//   A. scalar CSR (naive.cu): a thread per row; uncoalesced, a dense row serialises one thread.
//   B. CSR-vector: a warp per row. Coalesced, but a road network's 2.4-entry rows leave 29 of 32
//      lanes idle, and a 1e6-entry row keeps one warp busy for milliseconds.
//   C. binned (the default until 2026-12-02; the variant binned, -DSPMV_MERGE_ITEMS=0): the bin of
//      each row is decided where it is read, with no pre-pass that writes row lists (a pre-pass
//      costs 8 B per row, a quarter of road_usa's compulsory bytes):
//        - a warp takes 32 consecutive rows; when their entries total at most kStreamMax (1024)
//          it streams them as one contiguous range, 32 entries per step (CSR-stream: every lane
//          busy whatever the row lengths) with a segmented warp reduction per step;
//        - otherwise the warp walks the 32 rows one by one: rows up to kLongRow entries with the
//          whole warp (CSR-vector, four independent loads in flight per lane), longer ones pushed
//          on a list (one atomic per long row; y[row] = 0);
//        - a second kernel splits each listed row into chunks of kChunk entries shared round-robin
//          by a persistent grid (one CTA per chunk, block reduction, one float atomicAdd per
//          chunk): a 1e6-entry row runs on every SM.
//      H200 (2026-12-02): 0.70-0.75x cuSPARSE on all four bench matrices (powerlaw 1401 us, 22.5%
//      of SOL; denserows 1321 us; road-usa 653 us; banded 425 us). The common cause, by count:
//      too few bytes in flight. spmv_rows holds 34 registers (40 allocated: 6 CTAs, 48 warps per
//      SM); a streaming warp has 2 entries per lane in flight (24 KB per SM) and a warp on a row
//      4, each followed by a dependent x gather and a shuffle reduction before the next loads,
//      against the ~40-50 KB per SM that Little's law asks of HBM3e at loaded latency.
//   D. merge-path CSR (Merrill and Garland, SC'16), this file's default (kItems 7) and the variant
//      merge_i9 (code below, namespace merge): the path of N row ends and NNZ entries cut into
//      equal tiles of 256 x kItems items, one CTA each; a search kernel finds every tile's (row, entry) start
//      once (guess d·N/(N+NNZ), gallop, bisect); the tile kernel copies its columns, values and
//      row ends to shared memory with cp.async (no register waits on the data, so every copy of
//      the tile is in flight at once: with plain loads ptxas put the first x gather, and its
//      stall, before the remaining loads), then issues its kItems x gathers back to back; each
//      thread merges its kItems items sequentially out of shared memory; a segmented warp
//      reduction and shared atomics join the threads' shares of a row; a row cut by a tile
//      boundary is zeroed by the search kernel and added with one global atomic per tile.
//      Balanced whatever the structure: no row bins, no long-row kernel, no per-step shuffles;
//      two memory latencies per tile.
//        default   kItems 7 (measured as the variant merge): 32 registers, 21,512 B shared,
//                  8 CTAs per SM (14.3 K entries in flight per SM), no spills.
//        merge_i9  kItems 9: 32 registers, 27,656 B shared, 8 CTAs per SM with the whole
//                  carveout as shared memory (18.4 K entries in flight, 22% fewer tiles, 28 KB
//                  of L1 left instead of 60 KB), no spills.
//                  (kItems 11 needs 40 registers for 6 CTAs and spills 16 B; 13: 48, 12 B.)
//      H200 (2026-12-02, one call): kItems 7 1.04x / 1.22x / 1.29x / 1.13x the binned design on
//      powerlaw / denserows / road-usa / banded (1350 / 1075 / 511 / 376 us), still 0.77-0.96x
//      cuSPARSE; kItems 9 slower than 7 everywhere (0.58x binned on powerlaw). Made the default.
//   E. merge path with 16-byte staging (variants merge_v16, kItems 7, and merge_v16_i9, kItems 9;
//      -DSPMV_MERGE_VEC=1, kernel spmv_merge_tile_v16): the same tiles, search, merge and sums as
//      D; only the copies differ. A tile starts at any entry, so it copies the 16-byte-aligned
//      chunks that cover its columns, values and row ends (at most 3 words of slack at each end,
//      in sectors the tile reads anyway; the chunk at an array's end cut by cp.async's src-size)
//      and finds its words at offset j0 & 3. Why: 4-byte cp.async exists only as .ca, which
//      allocates every streamed line in L1; 16-byte cp.async has .cg (L2 only). With .ca the L1
//      holds the tile's in-flight stream lines beside the x gathers' lines (their misses too),
//      so its size bounds what is in flight: merge_i9 (28 KB of L1 left) ran at 0.56x / 0.61x
//      merge on powerlaw / road-usa (the matrices whose random x gathers miss to DRAM) and 0.98x
//      on banded (x from L1/L2), although it asked for more bytes in flight. With .cg the stream
//      bypasses L1 (x keeps all of it) and a quarter of the copy instructions issue. Each thread gathers x for the chunks it copied (own copies,
//      no extra barrier): up to 4·ceil((kTile + 8) / 1024) gathers back to back. Arrays not
//      16-byte aligned (never from cudaMalloc) take D's kernel.
//        merge_v16     30 registers, 22,624 B shared (with the 1 KB reserved), 8 CTAs per SM,
//                      196 KB carveout (60 KB of L1 for x), no spills.
//        merge_v16_i9  32 registers, 28,768 B shared, 8 CTAs per SM, the whole carveout
//                      (28 KB of L1 for x only), no spills; 22% fewer tiles than merge_v16.
//      H200 (2026-12-03, one call): merge_v16 1.09x / 0.93x / 1.04x / 1.15x D on powerlaw /
//      denserows / road-usa / banded (0.84x / 0.86x / 0.99x / 0.91x cuSPARSE); merge_v16_i9 0.66x /
//      0.83x / 0.76x / 1.18x D. memcheck clean (the array's last partial chunk by plain loads).
//   F. E with one change each (docs/results/spmv_csr.md, "Variants for the next run (2026-12-04)";
//      measured below). The working explanation of merge_i9's loss: an L1 miss holds an L1 line
//      until its sector returns, so the L1's size, not the tile, bounds the x gathers in flight
//      where they miss to DRAM (60 KB: 480 lines per SM).
//        merge_v16_i5    kItems 5 (-DSPMV_MERGE_ITEMS=5 -DSPMV_MERGE_VEC=1): 16,480 B shared per
//                        CTA, still 8 CTAs per SM, 132 KB carveout: 124 KB of L1 for x instead of
//                        60 KB, 10.2 K entries in flight per SM instead of 14.3 K. 30 registers.
//        merge_v16_xfar  a gather outside the tile's diagonal block (rows [i0, i1] widened by 128
//                        columns) takes ld.global.nc.L1::no_allocate (LDG.E.NA.CONSTANT): it keeps
//                        no L1 line, so the L1 holds the block's reused lines and caps no far miss.
//                        28 registers.
//        merge_v16_auto  the 16-byte kernel when NNZ < 64 N, D's otherwise (a choice per call from
//                        the shapes alone; E lost to D only on denserows, 200 entries per row).
//                        31 registers (E's kernel), D's kernel as in the default.
//      H200 (2026-12-03, ninth session, one call; docs/results/spmv_csr.md "Round two measured"):
//      merge_v16_auto 1.08x / 1.00x / 1.03x / 1.15x D (0.84x / 0.92x / 1.03x / 0.91x cuSPARSE),
//      never below D: the default since (SPMV_MERGE_VEC=2, SASS identical to the timed variant's);
//      merge_v16_i5 1.15x / 0.94x / 1.04x / 0.94x D (the larger L1 helps powerlaw's far gathers and
//      costs banded its tile); merge_v16_xfar 0.74x / 0.90x / 0.80x / 1.09x D: its no-allocate
//      gathers lost every row but banded, code removed. The form before (D alone) is merge_d.
//   G. Three steps from merge_v16, each adding one change to the one before (docs/results/spmv_csr.md,
//      "Variants for the next run (2026-12-03, round three)"; not yet measured). Where the
//      default still loses to cuSPARSE (0.84x / 0.92x / 1.03x / 0.91x, 25.0% of SOL on powerlaw):
//      powerlaw and denserows lose in the x gathers, banded in the tile's bursts (x from L1 there).
//      The generator's rows are sorted runs: a near-diagonal window and columns spread over the
//      matrix (powerlaw 8 + 8 of 16 on average, denserows up to 65 in the window of ~180, plus
//      20 rows of every column; banded 27 consecutive columns). merge_v16's gathers follow the
//      chunk owners: one warp load takes word i of 32 consecutive 4-word chunks, spread over 128
//      entries, so on runs of near columns it touches up to 4x the L1 lines of a load of 32
//      consecutive entries (a dense row: 4 lines per load instead of 1); that is the one thing
//      merge_v16 changed in how denserows' x is read, where it lost 7% to D.
//        merge_v16_coal  (SPMV_GATHER_COALESCED=1) a barrier after the copies, then D's order:
//                        entry tid + 256 u, kItems gathers back to back; 31 registers, 22,624 B.
//        merge_v16_cp    and the tile packed (SPMV_MERGE_PACK=1, merge_pack.h): rows + nzs <= kTile,
//                        so row ends follow the columns and row sums the products in two arrays
//                        of kTile + 7 and kTile + 12 words, 8 B per item instead of 12: 15,440 B
//                        per CTA, 8 CTAs in the 132 KB carveout step, 124 KB of L1 for x (i5's L1)
//                        at the kItems 7 tile (i5 gained 1.06x on powerlaw over merge_v16 and lost
//                        banded with its smaller tile). 32 registers.
//        merge_v16_cppf  and a persistent grid (SPMV_MERGE_PREFETCH=1): CTA b takes tiles b, b + G,
//                        ... (G resident CTAs, queried once), and its thread 0 issues, after its
//                        own copies, three cp.async.bulk.prefetch.L2 (UBLKPF.L2, evict-first) of
//                        the next tile's columns, values and row ends: that tile's copies hit L2,
//                        and HBM streams while the SM's CTAs gather and merge. 32 registers, one
//                        barrier more per tile (the restaging of shared memory).
//      All three: no local memory; the summation order of merge_v16 (kItems 7).
//      Measured (H200, 2026-12-03, one call beside cuSPARSE, noise 0.1-2.1%; docs/results/spmv_csr.md):
//      vs the expert of that call (merge_v16 on powerlaw, road-usa, banded; D on denserows)
//        variant          powerlaw  denserows  road-usa  banded
//        merge_v16_coal   0.98x     0.93x      0.97x     1.03x
//        merge_v16_cp     1.08x     0.97x      1.03x     1.02x
//        merge_v16_cppf   0.89x     0.84x      0.82x     0.86x
//      So the default since is merge_v16_cp's kernel where rows are short (SPMV_MERGE_VEC 2 with
//      SPMV_GATHER_COALESCED 1 and SPMV_MERGE_PACK 1: per function the SASS of merge_v16_cp on the
//      16-byte path and of the previous default on D's path, so it was timed as those two) and D
//      where they are long: 0.90 / 0.92 / 1.04 / 0.93x cuSPARSE in that call. The previous default
//      is the variant `prev`; coal, cp and cppf are retired from the sweep (their flags build them:
//      -DSPMV_MERGE_VEC=1 with SPMV_GATHER_COALESCED / SPMV_MERGE_PACK / SPMV_MERGE_PREFETCH).
//
// Arithmetic: fp32 products and fp32 sums in a tree order (a per-step segmented scan and a
// sequential sum of steps; strided partial sums and a shuffle tree; chunk sums added by atomics
// in any order; merge: sequential runs of at most kItems entries per thread joined by a warp tree
// and atomics). The honest error is bounded per row by (log2-ish terms)·2^-24·sum|a·x|: spec.md.
//
// %VARIANT% binned -DSPMV_MERGE_ITEMS=0
// %VARIANT% merge_d -DSPMV_MERGE_VEC=0
// %VARIANT% prev -DSPMV_GATHER_COALESCED=0 -DSPMV_MERGE_PACK=0
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "merge_pack.h"
#include "spmv_args.h"

#ifndef SPMV_STREAM_MAX
#define SPMV_STREAM_MAX 1024
#endif
#ifndef SPMV_LONG_ROW
#define SPMV_LONG_ROW 4096
#endif
#ifndef SPMV_MERGE_ITEMS  // > 0: the merge-path design D (path items per thread); 0: the binned design C
#define SPMV_MERGE_ITEMS 7
#endif
#ifndef SPMV_MERGE_VEC  // 1: the merge tile stages its columns, values and row ends with 16-byte L1-bypassing copies;
#define SPMV_MERGE_VEC 2  // 2: the 16-byte staging when the average row is short (SPMV_VEC_MAX_AVG), else the 4-byte one
#endif
#ifndef SPMV_VEC_MAX_AVG  // SPMV_MERGE_VEC 2: the 16-byte staging when NNZ < SPMV_VEC_MAX_AVG * N
#define SPMV_VEC_MAX_AVG 64
#endif
#ifndef SPMV_GATHER_COALESCED  // 1: the 16-byte tile gathers x for entries tid + 256 u (a warp's 32 consecutive
#define SPMV_GATHER_COALESCED 1  // entries per load) after a barrier; 0: for the 4 words of each chunk it copied
#endif
#ifndef SPMV_MERGE_PREFETCH  // 1: the 16-byte tile kernel on a persistent grid, each CTA prefetching its next tile's
#define SPMV_MERGE_PREFETCH 0  // columns, values and row ends into L2 while it works on the current one
#endif
#ifndef SPMV_MERGE_PACK  // 1: the 16-byte tile in two arrays of 8 bytes per path item (merge_pack.h) instead of
#define SPMV_MERGE_PACK 1  // three of 12: 8 CTAs in a 132 KB carveout, 124 KB of L1 left for the gathers of x
#endif

namespace {

constexpr unsigned kFull = 0xffffffffu;

/// x through the read-only (non-coherent) path: it is gathered many times and stays cached.
__device__ __forceinline__ float load_x(const float* x, int32_t c) { return __ldg(x + c); }

#if SPMV_MERGE_ITEMS == 0  // the binned design (C, variant binned); the default builds D alone
/// The matrix is read once: evict-first, so that its stream does not push x out of L2.
__device__ __forceinline__ float load_val(const float* v, int64_t j) { return __ldcs(v + j); }
__device__ __forceinline__ int32_t load_col(const int32_t* c, int64_t j) { return __ldcs(c + j); }
constexpr int kWarps = 8;                    // warps per CTA of the row kernel
constexpr int kRowsPerWarp = 32;             // rows per warp block
constexpr int kStreamMax = SPMV_STREAM_MAX;  // entries of a 32-row block streamed as one range
constexpr int kLongRow = SPMV_LONG_ROW;      // rows longer than this go to the split kernel
constexpr int kSplitThreads = 256;
constexpr int kChunk = kSplitThreads * 16;   // entries of one long-row chunk (one CTA)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

/// One row with the whole warp: lanes stride the row, four independent loads in flight each.
__device__ float row_by_warp(const int32_t* __restrict__ col_idx, const float* __restrict__ values,
                             const float* __restrict__ x, int64_t b, int64_t e, int lane) {
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
  int64_t j = b + lane;  // 64-bit: j + 128 may pass 2^31 near NNZ = 2^31 - 1
  for (; j + 96 < e; j += 128) {
    const float v0 = load_val(values, j), v1 = load_val(values, j + 32), v2 = load_val(values, j + 64),
                v3 = load_val(values, j + 96);
    const int32_t c0 = load_col(col_idx, j), c1 = load_col(col_idx, j + 32), c2 = load_col(col_idx, j + 64),
                  c3 = load_col(col_idx, j + 96);
    s0 += v0 * load_x(x, c0);
    s1 += v1 * load_x(x, c1);
    s2 += v2 * load_x(x, c2);
    s3 += v3 * load_x(x, c3);
  }
  for (; j < e; j += 32) s0 += load_val(values, j) * load_x(x, load_col(col_idx, j));
  return warp_sum((s0 + s1) + (s2 + s3));
}

/// Rows [r0, r0 + nr) as one contiguous entry range [rp[0], rp[nr]), 32 entries per step. Each
/// lane finds its entry's row by walking the block's row pointer forward (entries only grow);
/// a segmented inclusive scan over the lanes (keys = local rows, non-decreasing) leaves each
/// row's step sum in its last lane, which adds it to the row's accumulator.
/// One 32-entry step's products (v) and local rows (key, nr past the end) reduced: the segmented
/// inclusive scan leaves each row's step sum in the row's last lane, which adds it to acc.
__device__ __forceinline__ void stream_step(float v, int key, float* acc, int nr, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float u = __shfl_up_sync(kFull, v, o);
    const int k = __shfl_up_sync(kFull, key, o);
    if (lane >= o && k == key) v += u;
  }
  const int next = __shfl_down_sync(kFull, key, 1);
  if (key < nr && (lane == 31 || next != key)) acc[key] += v;
  __syncwarp();
}

__device__ void rows_by_stream(const int32_t* rp, float* acc, int nr, const int32_t* __restrict__ col_idx,
                               const float* __restrict__ values, const float* __restrict__ x, int lane) {
  const int64_t beg = rp[0], end = rp[nr];
  int row = 0;
  // Two steps per iteration: both steps' value, column and x loads are issued before either
  // step's reduction, so each lane keeps two gathers in flight.
  for (int64_t base = beg; base < end; base += 64) {
    const int64_t j0 = base + lane, j1 = j0 + 32;
    float a0 = 0.f, a1 = 0.f, x0 = 0.f, x1 = 0.f;
    if (j0 < end) {
      a0 = load_val(values, j0);
      x0 = load_x(x, load_col(col_idx, j0));
    }
    if (j1 < end) {
      a1 = load_val(values, j1);
      x1 = load_x(x, load_col(col_idx, j1));
    }
    int key0 = nr, key1 = nr;  // lanes past the end: a key of their own
    if (j0 < end) {
      while (rp[row + 1] <= j0) ++row;  // skips empty rows
      key0 = row;
    }
    stream_step(a0 * x0, key0, acc, nr, lane);
    if (base + 32 < end) {  // warp-uniform
      if (j1 < end) {
        while (rp[row + 1] <= j1) ++row;
        key1 = row;
      }
      stream_step(a1 * x1, key1, acc, nr, lane);
    }
  }
}

__global__ void __launch_bounds__(kWarps * 32)
spmv_rows(const int32_t* __restrict__ row_ptr, const int32_t* __restrict__ col_idx, const float* __restrict__ values,
          const float* __restrict__ x, float* __restrict__ y, int64_t n, int32_t* __restrict__ long_rows,
          int32_t* __restrict__ long_count) {
  __shared__ int32_t s_rp[kWarps][kRowsPerWarp + 1];
  __shared__ float s_acc[kWarps][kRowsPerWarp];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t r0 = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * kRowsPerWarp;
  if (r0 >= n) return;  // whole warps
  const int nr = static_cast<int>(n - r0 < kRowsPerWarp ? n - r0 : kRowsPerWarp);
  int32_t* rp = s_rp[warp];
  float* acc = s_acc[warp];
  if (lane < nr) rp[lane] = row_ptr[r0 + lane];
  if (lane == 0) rp[nr] = row_ptr[r0 + nr];
  acc[lane] = 0.f;
  __syncwarp();
  if (rp[nr] - rp[0] <= kStreamMax) {
    rows_by_stream(rp, acc, nr, col_idx, values, x, lane);
    if (lane < nr) y[r0 + lane] = acc[lane];
    return;
  }
  for (int i = 0; i < nr; ++i) {  // a heavy block: each row on its own
    const int32_t b = rp[i], e = rp[i + 1];
    if (e - b > kLongRow) {
      if (lane == 0) {
        y[r0 + i] = 0.f;  // the split kernel adds its chunks
        long_rows[atomicAdd(long_count, 1)] = static_cast<int32_t>(r0 + i);
      }
      continue;
    }
    const float s = row_by_warp(col_idx, values, x, b, e, lane);
    if (lane == 0) y[r0 + i] = s;
  }
}

/// Long rows: chunk c of listed row i belongs to CTA (i + c) mod grid, so rows of a few chunks
/// still spread over the whole grid. One block reduction and one atomicAdd per chunk.
__global__ void __launch_bounds__(kSplitThreads)
spmv_long_rows(const int32_t* __restrict__ row_ptr, const int32_t* __restrict__ col_idx,
               const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y,
               const int32_t* __restrict__ long_rows, const int32_t* __restrict__ long_count) {
  __shared__ float s_part[kSplitThreads / 32];
  const int count = *long_count;
  const int grid = static_cast<int>(gridDim.x), me = static_cast<int>(blockIdx.x);
  for (int i = 0; i < count; ++i) {
    const int32_t row = long_rows[i];
    const int64_t b = row_ptr[row], e = row_ptr[row + 1];
    const int64_t chunks = (e - b + kChunk - 1) / kChunk;
    for (int64_t c = ((me - i) % grid + grid) % grid; c < chunks; c += grid) {
      const int64_t cb = b + c * kChunk, ce = cb + kChunk < e ? cb + kChunk : e;
      float s = 0.f;
#pragma unroll 4
      for (int64_t j = cb + threadIdx.x; j < ce; j += kSplitThreads)
        s += load_val(values, j) * load_x(x, load_col(col_idx, j));
      s = warp_sum(s);
      if (threadIdx.x % 32 == 0) s_part[threadIdx.x / 32] = s;
      __syncthreads();
      if (threadIdx.x < 32) {
        float t = threadIdx.x < kSplitThreads / 32 ? s_part[threadIdx.x] : 0.f;
        t = warp_sum(t);
        if (threadIdx.x == 0) atomicAdd(y + row, t);
      }
      __syncthreads();
    }
  }
}

struct Buffers {
  int32_t* long_count;
  int32_t* long_rows;
};

/// The long-row list holds at most NNZ / (kLongRow + 1) rows.
Buffers carve(d2k::Workspace& ws, const spmv::Params& p) {
  Buffers b{};
  b.long_count = ws.take<int32_t>(1);
  b.long_rows = ws.take<int32_t>(static_cast<uint64_t>(p.nnz / (kLongRow + 1) + 1));
  return b;
}

/// Persistent grid of the split kernel: a few CTAs per SM (queried once per process).
int split_grid() {
  static const int grid = [] {
    int dev = 0, sms = 132;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    return 4 * sms;
  }();
  return grid;
}

/// The binned design (C): a zeroed counter, the row kernel, then the long-row kernel.
cudaError_t launch(const spmv::Params& p, const spmv::Tensors& t, const Buffers& b, cudaStream_t st) {
  cudaError_t e = cudaMemsetAsync(b.long_count, 0, sizeof(int32_t), st);
  if (e != cudaSuccess) return e;
  const int64_t rows_per_cta = static_cast<int64_t>(kWarps) * kRowsPerWarp;
  const unsigned blocks = static_cast<unsigned>((p.n + rows_per_cta - 1) / rows_per_cta);
  spmv_rows<<<blocks, kWarps * 32, 0, st>>>(t.row_ptr, t.col_idx, t.values, t.x, t.y, p.n, b.long_rows,
                                            b.long_count);
  e = cudaGetLastError();
  if (e != cudaSuccess || p.nnz <= kLongRow) return e;  // otherwise no row can be long
  spmv_long_rows<<<split_grid(), kSplitThreads, 0, st>>>(t.row_ptr, t.col_idx, t.values, t.x, t.y, b.long_rows,
                                                         b.long_count);
  return cudaGetLastError();
}

#endif
#if SPMV_MERGE_ITEMS > 0
// ---- D. merge-path CSR (the default, and the %VARIANT% merge_i9 line) ----
// The work is the merge of two sorted lists: the N row ends (row_ptr[1..N]) and the NNZ entry
// indices 0..NNZ-1; every CTA takes kTile consecutive items of that path, whatever mix of rows
// and entries they are. A search kernel finds each tile's start (row, entry) once; the tile
// kernel stages its row ends and its products in shared memory with every load of the tile
// issued at once (kItems independent gathers per thread), then each thread merges its kItems
// items sequentially out of shared memory.
namespace merge {

constexpr int kThreads = 256;
constexpr int kItems = SPMV_MERGE_ITEMS;  // odd: the threads' shared-memory strides miss bank conflicts
constexpr int kTile = kThreads * kItems;
constexpr int kSearchThreads = 256;
/// CTAs per SM the tile kernel is compiled for: as many as the SM's 228 KB of shared memory hold
/// (12 B per item and 1 KB reserved per CTA), at most 8 (2048 threads); the register budget
/// follows (8 CTAs: 32 registers).
constexpr int kSmemPerCta = 12 * kTile + (SPMV_MERGE_VEC ? 96 : 8) + 1024;  // 16-byte staging: 8 words of slack per array
constexpr int kMinBlocks = 228 * 1024 / kSmemPerCta < 8 ? 228 * 1024 / kSmemPerCta : 8;

/// The matrix is read once: an L2 evict-first policy for its asynchronous copies.
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
/// 4 bytes global -> shared without a register (cp.async, sm_80+): the thread does not wait for
/// the data, so every copy of the tile is in flight at once; complete at copy_async_wait.
__device__ __forceinline__ void copy_async4(void* smem, const void* gmem, uint64_t policy) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/// Where a path diagonal crosses the two lists: rows ends consumed and entries consumed.
struct Coord {
  int32_t row;
  int32_t nz;
};

/// Path order: row i's end comes before entry e when row_ptr[i + 1] <= e (a row's end after its
/// last entry, an empty row's end before the next entry). On diagonal d, with i row ends taken,
/// the competing entry is d - i - 1.
__device__ __forceinline__ bool end_before(const int32_t* __restrict__ row_ptr, int64_t d, int64_t i) {
  return static_cast<int64_t>(__ldg(row_ptr + i + 1)) <= d - i - 1;
}

/// Tile boundary t (t = 0 .. tiles): the smallest i in [max(0, d - NNZ), min(d, N)] with
/// !end_before(d, i). Starts at the guess d·N / (N + NNZ) (exact for equal rows), gallops to a
/// bracket and bisects it: a few dependent loads for regular matrices, about 2·log2(distance) for
/// skewed ones. A boundary inside a row (entries of row i on both sides) zeroes y[i]: the tiles
/// on either side add their shares of that row with atomics.
__global__ void __launch_bounds__(kSearchThreads)
spmv_merge_search(const int32_t* __restrict__ row_ptr, int64_t n, int64_t nnz, int64_t tiles, Coord* __restrict__ coord,
                  float* __restrict__ y) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kSearchThreads + threadIdx.x;
  if (t > tiles) return;
  const int64_t total = n + nnz;
  const int64_t d = t * kTile < total ? t * kTile : total;
  const int64_t lo0 = d - nnz > 0 ? d - nnz : 0, hi0 = d < n ? d : n;
  int64_t g = d * n / total;  // d < 2^32, n < 2^31: no overflow
  g = g < lo0 ? lo0 : (g > hi0 ? hi0 : g);
  int64_t lo, hi;
  if (g < hi0 && end_before(row_ptr, d, g)) {  // the answer is above g
    lo = g + 1;
    int64_t step = 1;
    while (g + step < hi0 && end_before(row_ptr, d, g + step)) {
      lo = g + step + 1;
      step *= 2;
    }
    hi = g + step < hi0 ? g + step : hi0;
  } else {  // the answer is at most g
    hi = g;
    int64_t step = 1;
    while (g - step >= lo0 && !end_before(row_ptr, d, g - step)) {
      hi = g - step;
      step *= 2;
    }
    lo = g - step >= lo0 ? g - step + 1 : lo0;
  }
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (end_before(row_ptr, d, mid)) lo = mid + 1;
    else hi = mid;
  }
  const int64_t j = d - lo;
  coord[t] = Coord{static_cast<int32_t>(lo), static_cast<int32_t>(j)};
  if (j > __ldg(row_ptr + lo)) y[lo] = 0.f;  // lo < N here: j <= NNZ = row_ptr[N]
}

/// The tile's second half, once its row ends (s_end, sentinel at s_end[rows]) and products
/// (s_prod) are staged and every thread has passed its own copies' wait: each thread merges its
/// kItems path items sequentially, the threads' shares of a row are joined, the rows are written.
__device__ __forceinline__ void merge_rows(const int32_t* s_end, const float* s_prod, float* s_y, float* __restrict__ y,
                                           int32_t i0, int32_t j0, int rows, int nzs, bool first_shared,
                                           bool last_shared, int32_t i1, int tid) {
  __syncthreads();
  if (tid == 0) s_y[rows] = 0.f;  // after the barrier: s_y held the columns until then

  // This thread's kItems path items: its start by bisection of the tile's row ends.
  const int path = rows + nzs;
  const int d0 = tid * kItems < path ? tid * kItems : path;
  const int d1 = d0 + kItems < path ? d0 + kItems : path;
  int lo = d0 - nzs > 0 ? d0 - nzs : 0, hi = d0 < rows ? d0 : rows;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (s_end[mid] <= j0 + (d0 - mid - 1)) lo = mid + 1;
    else hi = mid;
  }
  int r = lo, k = d0 - lo;
  int32_t end = s_end[r];
  float acc = 0.f;
#pragma unroll
  for (int u = 0; u < kItems; ++u) {
    if (d0 + u < d1) {
      if (j0 + k < end) {  // an entry of row r
        acc += s_prod[k];
        ++k;
      } else {  // row r ends: this thread's share of it (earlier threads' shares come below)
        s_y[r] = acc;
        acc = 0.f;
        ++r;
        end = s_end[r];
      }
    }
  }
  __syncthreads();  // every completed row stored before the carries add to it

  // Each thread's unfinished share belongs to row r (completed by a later thread, or the tile's
  // unfinished row). Keys r are non-decreasing over the threads: a segmented warp reduction
  // leaves each key's sum in its first lane, which adds it with one shared atomic.
  const int lane = tid & 31;
  float v = acc;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float w = __shfl_down_sync(kFull, v, o);
    const int key = __shfl_down_sync(kFull, r, o);
    if (lane + o < 32 && key == r) v += w;
  }
  const int prev = __shfl_up_sync(kFull, r, 1);
  if (lane == 0 || prev != r) atomicAdd(s_y + r, v);
  __syncthreads();

  // y is written once and never read here: streaming stores, so that y (40 MB at N = 1e7) does not
  // take the L2 from x.
  for (int q = tid; q < rows; q += kThreads) {
    if (q == 0 && first_shared) atomicAdd(y + i0, s_y[0]);
    else __stcs(y + i0 + q, s_y[q]);
  }
  if (tid == 0 && last_shared) atomicAdd(y + i1, s_y[rows]);
}

/// The tile's products in place: entry k = tid + kThreads u (a warp's load takes 32 consecutive
/// entries), kItems gathers of x back to back, then s_prod[k] *= x[s_col[k]].
__device__ __forceinline__ void gather_products(const int32_t* s_col, float* s_prod, int nzs, const float* x,
                                                int tid) {
  float xv[kItems];
#pragma unroll
  for (int u = 0; u < kItems; ++u) {
    const int k = tid + u * kThreads;
    xv[u] = k < nzs ? load_x(x, s_col[k]) : 0.f;
  }
#pragma unroll
  for (int u = 0; u < kItems; ++u) {
    const int k = tid + u * kThreads;
    if (k < nzs) s_prod[k] *= xv[u];
  }
}

/// One tile of the path. Rows completed in the tile are summed in s_y and written coalesced; the
/// tile's first row, when it began in an earlier tile, and its last, unfinished row are added to y
/// with one atomic each (the search kernel zeroed them).
__global__ void __launch_bounds__(kThreads, kMinBlocks)
spmv_merge_tile(const int32_t* __restrict__ row_ptr, const int32_t* __restrict__ col_idx,
                const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y,
                const Coord* __restrict__ coord) {
  __shared__ int32_t s_end[kTile + 1];  // the tile's row ends (global entry offsets), then a sentinel
  __shared__ float s_prod[kTile];       // values[j], then values[j] * x[col_idx[j]], of the tile's entries
  __shared__ float s_y[kTile + 1];      // completed rows' sums, then the unfinished row's share
  int32_t* s_col = reinterpret_cast<int32_t*>(s_y);  // the entries' columns, until the first barrier
  const int tid = static_cast<int>(threadIdx.x);
  const Coord c0 = coord[blockIdx.x], c1 = coord[blockIdx.x + 1];
  const int32_t i0 = c0.row, j0 = c0.nz;
  const int rows = c1.row - c0.row, nzs = c1.nz - c0.nz;  // rows + nzs <= kTile
  // Every load of the tile at once, as asynchronous copies to shared memory: kItems columns and
  // values and up to kItems row ends per thread (a load into registers followed by its use lets
  // the compiler put a dependent gather, and its stall, before the remaining loads); then the
  // gathers of x, kItems per thread back to back: two memory latencies per tile.
  const uint64_t policy = evict_first_policy();
#pragma unroll
  for (int u = 0; u < kItems; ++u) {
    const int k = tid + u * kThreads;
    if (k < nzs) {
      copy_async4(s_col + k, col_idx + j0 + k, policy);
      copy_async4(s_prod + k, values + j0 + k, policy);
    }
  }
#pragma unroll
  for (int u = 0; u < kItems; ++u) {
    const int k = tid + u * kThreads;
    if (k < rows) copy_async4(s_end + k, row_ptr + i0 + 1 + k, policy);
  }
  const bool first_shared = j0 > __ldg(row_ptr + i0);      // row i0 began in an earlier tile
  const bool last_shared = c1.nz > __ldg(row_ptr + c1.row);  // row i1 continues in a later tile
  copy_async_wait();  // this thread's copies: it reads back its own entries before the barrier
  gather_products(s_col, s_prod, nzs, x, tid);
  if (tid == 0) s_end[rows] = 0x7fffffff;  // past the last row end: only entries remain
  merge_rows(s_end, s_prod, s_y, y, i0, j0, rows, nzs, first_shared, last_shared, c1.row, tid);
}

#if SPMV_MERGE_VEC
// ---- the 16-byte staging of the tile (variants merge_v16, merge_v16_i5, and design G: coal, cp, cppf) ----
// A tile's columns and values start at any entry j0, so they are copied as the 16-byte-aligned
// chunks that cover [j0, j0 + nzs): word g of the array lands in shared word g - (j0 & ~3), and
// the tile's entry k at (j0 & 3) + k. The same for the row ends. 16-byte cp.async has the .cg
// form (L2 only): the matrix stream no longer passes through L1, which stays for x; the 4-byte
// copies of the default exist only as .ca and allocate every streamed line in L1. A quarter of
// the copy instructions. The chunk that holds an array's last word is copied by plain loads up to
// that word (the rest zero), so nothing is read past an array.
constexpr int kPad = 8;                                  // words of slack: 3 before the first, up to 3 after the last
constexpr int kVecWords = kTile + kPad;                  // each staging array, in words
constexpr int kChunkIters = (kVecWords / 4 + kThreads - 1) / kThreads;  // 16-byte chunks per thread

__device__ __forceinline__ void copy_async16(void* smem, const void* gmem, int bytes, uint64_t policy) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(gmem), "r"(bytes),
               "l"(policy)
               : "memory");
}

#if SPMV_MERGE_PREFETCH
/// Words [b, e) of src (an array of `limit` words) into L2 ahead of their copies: the whole 16-byte
/// chunks of the range that lie inside the array, one bulk prefetch (TMA unit, sm_90), with the
/// stream's evict-first policy. Nothing is read into the SM and nothing waits on it.
template <typename T>
__device__ __forceinline__ void prefetch_l2(const T* src, int64_t b, int64_t e, int64_t limit, uint64_t policy) {
  const int64_t a = b & ~int64_t{3};
  int64_t end = (e + 3) & ~int64_t{3};
  if (end > (limit & ~int64_t{3})) end = limit & ~int64_t{3};
  if (e <= b || end <= a) return;
  const unsigned bytes = static_cast<unsigned>(4 * (end - a));
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;\n" ::"l"(src + a), "r"(bytes), "l"(policy)
               : "memory");
}
#endif

/// Words [b, e) of src (an array of `limit` words) into s_raw, word g at s_raw[g - (b & ~3)];
/// chunk q of the range is copied by thread q mod kThreads.
template <typename T>
__device__ __forceinline__ void stage16(T* s_raw, const T* __restrict__ src, int64_t b, int64_t e, int64_t limit,
                                        uint64_t policy, int tid) {
  const int64_t a = b & ~int64_t{3};
  const int chunks = e > b ? static_cast<int>((e - a + 3) >> 2) : 0;  // a + 4 (chunks - 1) < e <= limit
#pragma unroll
  for (int u = 0; u < kChunkIters; ++u) {
    const int q = tid + u * kThreads;
    if (q < chunks) {
      const int64_t g = a + 4 * static_cast<int64_t>(q);
      const int words = limit - g < 4 ? static_cast<int>(limit - g) : 4;  // >= 1
      if (words == 4) {
        copy_async16(s_raw + 4 * q, src + g, 16, policy);
      } else {
        // The array's last partial chunk by plain loads (visible after the caller's barrier): a
        // 16-byte cp.async with a shorter src-size reads only src-size bytes, but compute-
        // sanitizer checks all 16 (11 errors per variant on the H200).
#pragma unroll
        for (int i = 0; i < 4; ++i) s_raw[4 * q + i] = i < words ? src[g + i] : T{};
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads, kMinBlocks)
spmv_merge_tile_v16(const int32_t* __restrict__ row_ptr, const int32_t* __restrict__ col_idx,
                    const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y,
                    const Coord* __restrict__ coord, int64_t n, int64_t nnz
#if SPMV_MERGE_PREFETCH
                    , unsigned tiles
#endif
) {
  const int tid = static_cast<int>(threadIdx.x);
#if SPMV_MERGE_PREFETCH
  // A persistent grid (every CTA resident): CTA b takes tiles b, b + G, b + 2G ..., so it knows
  // its next tile and prefetches that tile's matrix bytes into L2 while this one waits on its
  // gathers and merges: its next copies come from L2 instead of HBM, and HBM keeps streaming
  // while the SM's CTAs are between load phases (the tile kernel's loads come in bursts).
  for (unsigned tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
  if (tile != blockIdx.x) __syncthreads();  // the previous tile's last reads of s_y before its restaging
#else
  {
  const unsigned tile = blockIdx.x;
#endif
  const Coord c0 = coord[tile], c1 = coord[tile + 1];
  const int32_t i0 = c0.row, j0 = c0.nz;
  const int rows = c1.row - c0.row, nzs = c1.nz - c0.nz;  // rows + nzs <= kTile
  const int off = j0 & 3, offr = (i0 + 1) & 3;
#if SPMV_MERGE_PACK
  // rows + nzs <= kTile: the row ends follow the columns and the row sums follow the products
  // (merge_pack.h), 8 bytes per path item; the smaller footprint is L1 for the gathers of x.
  __shared__ __align__(16) float s_a[spmv_pack::a_words(kTile)];    // values, then products, from word off
  __shared__ __align__(16) int32_t s_b[spmv_pack::b_words(kTile)];  // columns from word off
  const int base = spmv_pack::after(off, nzs);
  float* s_prod_raw = s_a;
  float* s_y = s_a + base;               // the row sums: written after merge_rows' first barrier
  int32_t* s_col_raw = s_b;
  int32_t* s_end_raw = s_b + base;       // row ends from word offr, then the sentinel
#else
  __shared__ __align__(16) int32_t s_end_raw[kVecWords];  // row ends from word (i0 + 1) & 3, then a sentinel
  __shared__ __align__(16) float s_prod_raw[kVecWords];   // values, then products, from word j0 & 3
  __shared__ __align__(16) float s_y[kVecWords];          // the columns (from word j0 & 3) until the first barrier
  int32_t* s_col_raw = reinterpret_cast<int32_t*>(s_y);
#endif
  const uint64_t policy = evict_first_policy();
  stage16(s_col_raw, col_idx, j0, static_cast<int64_t>(j0) + nzs, nnz, policy, tid);
  stage16(s_prod_raw, values, j0, static_cast<int64_t>(j0) + nzs, nnz, policy, tid);
  stage16(s_end_raw, row_ptr, static_cast<int64_t>(i0) + 1, static_cast<int64_t>(i0) + 1 + rows, n + 1, policy, tid);
#if SPMV_MERGE_PREFETCH
  if (tid == 0 && tile + gridDim.x < tiles) {  // after this thread's own copies are issued
    const Coord n0 = coord[tile + gridDim.x], n1 = coord[tile + gridDim.x + 1];
    prefetch_l2(col_idx, n0.nz, n1.nz, nnz, policy);
    prefetch_l2(values, n0.nz, n1.nz, nnz, policy);
    prefetch_l2(row_ptr, static_cast<int64_t>(n0.row) + 1, static_cast<int64_t>(n1.row) + 1, n + 1, policy);
  }
#endif
  const bool first_shared = j0 > __ldg(row_ptr + i0);
  const bool last_shared = c1.nz > __ldg(row_ptr + c1.row);
  copy_async_wait();  // this thread's chunks: it gathers x for its own chunks before the barrier
  // The sentinel's word may lie in a copied chunk (the word after the last row end): written by
  // the thread that copies that chunk, after its wait, so the two writes are ordered.
  if (tid == ((offr + rows) >> 2) % kThreads) s_end_raw[offr + rows] = 0x7fffffff;
#if SPMV_GATHER_COALESCED
  // Entry k = tid + 256 u, as in D's kernel: a warp's load takes 32 consecutive entries, whose
  // columns are one row's sorted run (a dense row's 32 columns: one 128-byte line) or a few rows'
  // windows, so it touches as few L1 lines as the matrix allows; the chunk-owner order below
  // spreads each load over 128 entries (up to 4x the lines per load on runs of near columns).
  // The entries were copied by other threads: one barrier first.
  __syncthreads();
  gather_products(s_col_raw + off, s_prod_raw + off, nzs, x, tid);
#else
  // This thread's chunks' entries of the tile (not the words before j0 or after the last entry):
  // up to 4 kChunkIters gathers of x back to back, then the products in place.
  const int chunks = nzs > 0 ? (off + nzs + 3) >> 2 : 0;
  float xv[kChunkIters][4];
#pragma unroll
  for (int u = 0; u < kChunkIters; ++u) {
    const int q = tid + u * kThreads;
    int4 c = make_int4(0, 0, 0, 0);
    if (q < chunks) c = *reinterpret_cast<const int4*>(s_col_raw + 4 * q);
    const int k = 4 * q - off;  // tile entry of the chunk's first word
    xv[u][0] = q < chunks && k >= 0 && k < nzs ? load_x(x, c.x) : 0.f;
    xv[u][1] = q < chunks && k + 1 >= 0 && k + 1 < nzs ? load_x(x, c.y) : 0.f;
    xv[u][2] = q < chunks && k + 2 >= 0 && k + 2 < nzs ? load_x(x, c.z) : 0.f;
    xv[u][3] = q < chunks && k + 3 < nzs ? load_x(x, c.w) : 0.f;
  }
#pragma unroll
  for (int u = 0; u < kChunkIters; ++u) {
    const int q = tid + u * kThreads;
    if (q < chunks) {  // words outside the tile's entries become 0 and are never read
      float4* p = reinterpret_cast<float4*>(s_prod_raw + 4 * q);
      float4 v = *p;
      v.x *= xv[u][0];
      v.y *= xv[u][1];
      v.z *= xv[u][2];
      v.w *= xv[u][3];
      *p = v;
    }
  }
#endif
  merge_rows(s_end_raw + offr, s_prod_raw + off, s_y, y, i0, j0, rows, nzs, first_shared, last_shared, c1.row, tid);
  }
}

/// The 16-byte chunks need 16-byte-aligned arrays (cudaMalloc's are; a view at an offset may not be).
bool aligned16(const spmv::Tensors& t) {
  return ((reinterpret_cast<uintptr_t>(t.row_ptr) | reinterpret_cast<uintptr_t>(t.col_idx) |
           reinterpret_cast<uintptr_t>(t.values)) & 15u) == 0;
}
#endif

struct Buffers {
  Coord* coord;  // tiles + 1 boundaries
};

int64_t tiles_of(const spmv::Params& p) { return (p.n + p.nnz + kTile - 1) / kTile; }

Buffers carve(d2k::Workspace& ws, const spmv::Params& p) {
  return Buffers{ws.take<Coord>(static_cast<uint64_t>(tiles_of(p) + 1))};
}

/// Shared memory for kMinBlocks CTAs (kSmemPerCta each, the 1 KB reserved per CTA included) as
/// the carveout preference, in percent of the SM's 228 KB, rounded up: the rest stays L1 for the
/// gathers of x (merge: 196 KB shared, 60 KB L1; merge_i9: all 228 KB). A preference, set once
/// per process (a function attribute, legal during stream capture); its failure is not the
/// call's, so its error is cleared and the launch goes ahead.
constexpr int kCarveoutPercent =
    (kMinBlocks * kSmemPerCta * 100 + 228 * 1024 - 1) / (228 * 1024) < 100
        ? (kMinBlocks * kSmemPerCta * 100 + 228 * 1024 - 1) / (228 * 1024)
        : 100;
#if SPMV_MERGE_VEC && SPMV_MERGE_PACK
/// The packed 16-byte tile asks only for its own 8 CTAs' shared memory (merge_pack.h): kItems 7,
/// 123.5 KB, rounded up by the hardware to its 132 KB step (124 KB of L1 for x); kItems 9, 156 KB
/// (the 164 KB step, 92 KB of L1).
constexpr int kCarveoutPercentV16 = spmv_pack::carveout_percent(kMinBlocks, spmv_pack::smem_per_cta(kTile));
#elif SPMV_MERGE_VEC
constexpr int kCarveoutPercentV16 = kCarveoutPercent;
#endif
template <typename Kernel>
void prefer_shared(Kernel kernel, int percent) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent) != cudaSuccess)
    (void)cudaGetLastError();
}
void prefer_shared() {
  static const bool once = [] {
    prefer_shared(spmv_merge_tile, kCarveoutPercent);
#if SPMV_MERGE_VEC
    prefer_shared(spmv_merge_tile_v16, kCarveoutPercentV16);
#endif
    return true;
  }();
  (void)once;
}

#if SPMV_MERGE_VEC && SPMV_MERGE_PREFETCH
/// The persistent grid: as many CTAs of the 16-byte tile kernel as are resident at once (after the
/// carveout preference), queried once per process; a CTA that waited for a slot would leave its
/// tiles to the end. kMinBlocks per SM if the query fails.
unsigned resident_v16() {
  static const unsigned grid = [] {
    int dev = 0, sms = 132, per_sm = 0;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spmv_merge_tile_v16, kThreads, 0) != cudaSuccess ||
        per_sm < 1) {
      (void)cudaGetLastError();
      per_sm = kMinBlocks;
    }
    return static_cast<unsigned>(per_sm * sms);
  }();
  return grid;
}
#endif

cudaError_t launch(const spmv::Params& p, const spmv::Tensors& t, const Buffers& b, cudaStream_t st) {
  prefer_shared();
  const int64_t tiles = tiles_of(p);  // >= 1: NNZ >= 1
  const unsigned search_blocks = static_cast<unsigned>((tiles + 1 + kSearchThreads - 1) / kSearchThreads);
  spmv_merge_search<<<search_blocks, kSearchThreads, 0, st>>>(t.row_ptr, p.n, p.nnz, tiles, b.coord, t.y);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
#if SPMV_MERGE_VEC
  // SPMV_MERGE_VEC 2: a choice per call from the shapes alone (no pass over the matrix): the
  // 16-byte staging where rows are short on average (H200: 1.04-1.15x the 4-byte one at 2.4, 16
  // and 27 entries per row), the 4-byte one where they are long (0.93x at 200).
  const bool short_rows = SPMV_MERGE_VEC == 1 || p.nnz < static_cast<int64_t>(SPMV_VEC_MAX_AVG) * p.n;
  if (short_rows && aligned16(t)) {
#if SPMV_MERGE_PREFETCH
    const unsigned grid = tiles < resident_v16() ? static_cast<unsigned>(tiles) : resident_v16();
    spmv_merge_tile_v16<<<grid, kThreads, 0, st>>>(t.row_ptr, t.col_idx, t.values, t.x, t.y, b.coord, p.n, p.nnz,
                                                   static_cast<unsigned>(tiles));
#else
    spmv_merge_tile_v16<<<static_cast<unsigned>(tiles), kThreads, 0, st>>>(t.row_ptr, t.col_idx, t.values, t.x, t.y,
                                                                          b.coord, p.n, p.nnz);
#endif
    return cudaGetLastError();
  }
#endif
  spmv_merge_tile<<<static_cast<unsigned>(tiles), kThreads, 0, st>>>(t.row_ptr, t.col_idx, t.values, t.x, t.y,
                                                                    b.coord);
  return cudaGetLastError();
}

}  // namespace merge
#endif

#if SPMV_MERGE_ITEMS > 0
namespace design = merge;
#else
namespace design {
using ::Buffers;
using ::carve;
using ::launch;
}  // namespace design
#endif

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    design::carve(ws, spmv::read_params(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const spmv::Params p = spmv::read_params(args);
    const spmv::Tensors t = spmv::read_tensors(args, p, kDLCUDA);
    d2k::Workspace ws(args);
    const design::Buffers b = design::carve(ws, p);
    D2K_CUDA_TRY(args, design::launch(p, t, b, static_cast<cudaStream_t>(args->stream)));
    return D2K_OK;
  });
}
