// stencil_3d_7pt — expert: 2.5D blocking (a CTA owns an XY tile and marches along Z, each thread's
// Z neighbours in a register queue, the current plane in shared memory for its XY neighbours) with
// temporal blocking (k = 1, 2 or 4 Jacobi steps per pass over memory on tiles overlapped by a halo of
// k cells, recomputed by both neighbours).
//
//   interior:  v = fmaf(c0, u, c1 * (((((u[z-1] + u[z+1]) + u[y-1]) + u[y+1]) + u[x-1]) + u[x+1]))
//   boundary:  v = u                                     (the fixed Dirichlet boundary)
//
// Cost model: 8ZYX bytes per call (u read once, out written once), whatever T. A pass of k steps
// reads its tile plus a halo of k cells and writes the tile once, so T steps cost
// floor(T/4) + popcount(T mod 4) passes over DRAM instead of T (T = 8: 2 passes).
//
// One pass, jacobi_block<K> (K = steps per pass):
//   - CTA = 64 x OY outer tile of cells (x, y) at the same position on every plane; it writes the
//     inner (64 - 2K) x (OY - 2K) cells (a level-j value is exact at distance >= j from the outer
//     edge), over one chunk of Z (kZChunk planes; the chunk's first K and last K steps warm and
//     drain the pipeline, recomputing K planes on each side).
//   - thread = one x (lanes of a warp consecutive in x: coalesced) and a column of P consecutive y;
//     its y neighbours inside the column are its own registers, only the column's two ends and the
//     x neighbours come from shared memory.
//   - level j = the grid after j steps. At march step s the CTA takes plane s of level 0 (the input,
//     loaded A steps earlier into a register ring: A = 3, 2, 1 planes in flight at K = 1, 2, 4, the
//     march unrolled by A so the ring's slots are registers) and computes plane s - j
//     of level j for j = 1..K, each from level j-1's planes s-j-1 (register queue), s-j (registers,
//     and shared memory for the neighbours) and s-j+1 (just loaded or computed by the same thread).
//     Level K's plane is stored. Each level's current plane lives in shared memory in two parities
//     (written at step s, read at step s+1), so a march step needs two barriers for any K.
//   - boundary cells copy their own previous level, which by induction is the input value; cells
//     outside the grid (halo beyond the edge) and planes outside [0, Z) hold garbage that only
//     boundary cells' neighbours could see, and boundary cells never read their neighbours (a
//     select, not an arithmetic blend, so a NaN or Inf there cannot leak). Threads without a
//     boundary cell (all but the grid's outer shell) run an instance without the select.
// T steps = floor(T/4) passes of K = 4, then K = 2 and K = 1 passes for the remainder; passes
// ping-pong between `out` and one grid-sized workspace buffer, the last one landing in `out`.
//
// Designs considered (times: not yet measured on the H200, docs/results/stencil_3d_7pt.md):
//   a. naive.cu: a thread per cell, seven global loads per cell, one launch per step: L1/L2 serve
//      the reuse, DRAM sees 8ZYX bytes per step.
//   b. 3D tiles in shared memory (a cube plus a halo of one on each side): 10^3 / 8^3 = 1.95x the
//      loads at 8^3 tiles and a barrier per tile for little reuse; 2.5D marching needs no Z halo.
//   c. (chosen for T = 1) 2.5D blocking, K = 1: each cell loaded once from DRAM, its XY halo from L2
//      (the neighbouring tiles march alongside); 64 x 16 tiles, 256 threads, 8 KB of shared memory.
//   d. (chosen for T > 1) the same march with K levels in flight (temporal blocking): DRAM traffic
//      divided by K, at the price of (64 x OY) / ((64 - 2K)(OY - 2K)) recomputation (1.52x at K = 4
//      with 64 x 32 tiles) and K times the shared-memory traffic per loaded cell.
//   e. vector (16-byte) halo loads: the outer tile starts K cells left of a multiple of the inner
//      width, so rows are not 16-byte aligned for K = 1 and 2; a warp's 128-byte row load spans 5
//      sectors instead of 4, served by L2. Not built: the compulsory DRAM traffic is unchanged.
// Why the measured times exceed the SOL times (H200, 2026-12-02, docs/results/stencil_3d_7pt.md):
//   T = 1 (431 us against 252 us at copy bandwidth; naive 493 us): jacobi_block<1> loads 64 x 16
//   for the 62 x 14 it writes (1.18x the L2->SM traffic, rows starting one cell left of a 128-byte
//   line: 5 sectors per warp row, partial-sector stores shared by two CTAs) and 66 planes per 64
//   (Z warm-up); two barriers per plane hold a CTA's 8 warps together, so a late load stalls all of
//   them; 4-byte loads, 3 planes x 4 cells x 4 B = 48 B per thread in flight. About 2.5 TB/s: bound
//   by its own access pattern and synchronisation, not by DRAM.
//   T = 8 (2324 us, two passes of K = 4): a K = 4 pass takes ~1160 us against ~270 us for its
//   ~8.5 bytes per cell at copy bandwidth. The SASS of a level is ~13 instructions per cell-level
//   (5 FADD, FMUL, FFMA, 2.25 LDS, STS, addressing): ~320 us per pass if issue-bound. 1760 CTAs x
//   72 march steps over 132 SMs x 2 CTAs is ~480 steps per SM per pass, ~2.4 us each: the SM
//   issues ~1.6 of 4 instructions per cycle. Suspects: the two barriers per step (16 warps per
//   SM, both CTAs can wait at once), the serial level chain (level j + 1's sum starts from level
//   j's result), and the one-plane ring (128 registers: plane s + 1 is loaded only one step
//   ahead, and a slow load holds the whole CTA at the next barrier).
//   f. (variants strip*) single-step passes as jacobi_stream: a warp owns an aligned 128 x kRows
//      strip (4 consecutive x per lane: 16-byte loads, 16-byte streaming stores of whole lines, no
//      overlap, no recomputation), x neighbours by shuffles, y neighbours in registers and the two
//      rows beyond the strip from L1/L2, z neighbours in registers; no shared memory, no barrier,
//      Z chunks sized to fill one wave. kRows = 4: 110-118 registers, 2 CTAs (16 warps) per SM;
//      kRows = 8: ~187, 1 CTA. Halo rows: (kRows + 2) / kRows of the L1 traffic (1.5x at 4,
//      1.25x at 8), DRAM traffic 8 bytes per cell plus 2 planes per chunk.
//   g. (STENCIL_STREAM_L2PF, STENCIL_BLOCK_L2PF) L2 prefetch of the input planes beyond the
//      register ring (cp.async.bulk.prefetch.L2 of a strip's rows; prefetch.global.L2 of a block
//      tile, one per thread per plane): bytes in flight without registers, so the ring's loads hit
//      L2; aimed at the exposed DRAM latency of both kernels. No change to any value computed.
//   h. (STENCIL_BLOCK_BUFS=3, variant block_1bar) three shared planes per level instead of two:
//      the plane a step writes was last read two steps before, so one barrier per march step
//      instead of two (96 KB of shared memory at K = 4, still 2 CTAs per SM); aimed at the barrier
//      stalls. The CPU replay tracks shared-memory hazards between barriers for both forms.
//   i. Not built: levels with 4 consecutive x per thread (shuffles for x, shared memory only for
//      the column ends) would cut a K = 4 level to ~9 instructions and 0.06 shared wavefronts per
//      cell, but its register queues (2 x K x 4P) leave P = 2 rows per thread, 16-row tiles and
//      2.1x recomputation at 8 warps; the T = 8 bar against strip-kernel single steps (~8 passes
//      at DRAM speed) needs that pass near its issue bound: worth building once the sweep shows
//      whether g and h remove the stalls that keep the current pass at ~1/4 of it.
// Variants for the sweep (each a full compile; `d2k bench --targets expert:<name>`):
//   %VARIANT% single -DSTENCIL_MAX_K=1
//   %VARIANT% k2 -DSTENCIL_MAX_K=2
//   %VARIANT% zchunk128 -DSTENCIL_ZCHUNK=128
//   %VARIANT% block -DSTENCIL_STREAM=0
//   %VARIANT% strip_l2pf -DSTENCIL_STREAM=1 -DSTENCIL_STREAM_L2PF=4
//   %VARIANT% strip_p8 -DSTENCIL_STREAM=1 -DSTENCIL_STREAM_ROWS=8 -DSTENCIL_STREAM_MINB=1 -DSTENCIL_STREAM_L2PF=4
//   %VARIANT% strip_single -DSTENCIL_STREAM=1 -DSTENCIL_STREAM_L2PF=4 -DSTENCIL_MAX_K=1
//   %VARIANT% block_l2pf -DSTENCIL_BLOCK_L2PF=4
//   %VARIANT% block_1bar -DSTENCIL_BLOCK_BUFS=3 -DSTENCIL_BLOCK_L2PF=4
//   %VARIANT% strip_block -DSTENCIL_STREAM=1 -DSTENCIL_STREAM_L2PF=4 -DSTENCIL_BLOCK_BUFS=3 -DSTENCIL_BLOCK_L2PF=4
// The default runs single steps as jacobi_stream's warp strips (the former `strip` variant: 89.4%
// of SOL at T = 1 on the H200 against 58.5% for jacobi_block<1>, docs/results/stencil_3d_7pt.md);
// `block` is the former default. `single` is T single-step passes of the default build (strips):
// the issue's bar for T = 8 is the expert at >= 3x that; `strip_single` the same with the L2
// prefetch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "d2k/solution.h"

#ifndef STENCIL_MAX_K
#define STENCIL_MAX_K 4
#endif
#ifndef STENCIL_ZCHUNK
#define STENCIL_ZCHUNK 64
#endif
#ifndef STENCIL_BLOCK_L2PF
#define STENCIL_BLOCK_L2PF 0  // > 0: jacobi_block prefetches its input planes into L2 this many planes beyond its ring
#endif
#ifndef STENCIL_BLOCK_BUFS
#define STENCIL_BLOCK_BUFS 2  // shared planes per level in jacobi_block: 2 (two barriers per step) or 3 (one)
#endif
#ifndef STENCIL_STREAM
#define STENCIL_STREAM 1  // 1: single-step passes run jacobi_stream (warp strips, no shared memory); 0: jacobi_block<1>
#endif
#ifndef STENCIL_STREAM_ROWS
#define STENCIL_STREAM_ROWS 4
#endif
#ifndef STENCIL_STREAM_AHEAD
#define STENCIL_STREAM_AHEAD 1  // planes of loads in flight in registers (2: 206 registers, 1 CTA per SM)
#endif
#ifndef STENCIL_STREAM_L2PF
#define STENCIL_STREAM_L2PF 0  // > 0: bulk-prefetch the strip's rows into L2 this many planes beyond the loads
#endif
#ifndef STENCIL_STREAM_MINB
#define STENCIL_STREAM_MINB 2  // CTAs per SM the strip kernel's registers must allow
#endif
#ifndef STENCIL_STREAM_WAVES
#define STENCIL_STREAM_WAVES 1
#endif
static_assert(STENCIL_MAX_K == 1 || STENCIL_MAX_K == 2 || STENCIL_MAX_K == 4, "STENCIL_MAX_K is 1, 2 or 4");
static_assert(STENCIL_BLOCK_BUFS == 2 || STENCIL_BLOCK_BUFS == 3, "STENCIL_BLOCK_BUFS is 2 or 3");

namespace {

constexpr int kOX = 64;  // outer tile width: two warps of consecutive x
constexpr int kZChunk = STENCIL_ZCHUNK;
constexpr int kBufs = STENCIL_BLOCK_BUFS;

/// Tile geometry of a pass of K steps: outer tile kOX x kOY, kPPT cells of y per thread. The CPU
/// tests replay these passes on the host with the same constants (a test compares the lines).
template <int K>
struct Tile {
  static constexpr int kOY = K == 1 ? 16 : 32;
  static constexpr int kPPT = K == 1 ? 4 : 8;
  static constexpr int kAhead = K == 1 ? 3 : K == 2 ? 2 : 1;  // input planes in flight (registers allowing)
  static constexpr int kIX = kOX - 2 * K, kIY = kOY - 2 * K;  // the cells a CTA writes
  static constexpr int kThreadRows = kOY / kPPT;
  static constexpr int kThreads = kOX * kThreadRows;
  static constexpr int kPlane = kOX * kOY;                     // floats of one level's plane
  static constexpr int kSmemBytes = kBufs * K * kPlane * 4;    // levels 0..K-1, kBufs planes each
  static_assert(kPPT <= 32 && kOY % kPPT == 0, "per-thread masks are 32-bit");
};

/// Plane z of the input at the thread's cells (0 outside the grid or outside [0, Z)).
template <int P>
__device__ __forceinline__ void load_plane(const float* __restrict__ src, int z, int Z, int64_t plane, int64_t col,
                                           int X, unsigned in_grid, float (&v)[P]) {
  const bool z_in = z >= 0 && z < Z;
#pragma unroll
  for (int i = 0; i < P; ++i)
    v[i] = (z_in && ((in_grid >> i) & 1u)) ? __ldg(src + z * plane + col + static_cast<int64_t>(i) * X) : 0.f;
}

/// Plane z's outer tile into L2 (prefetch.global.L2: no register held, so the planes beyond the
/// register ring are in flight too). Thread (tx, ty) takes row ly0 + tx % P, cells
/// (tx / P) * P .. + P - 1 of it: one instruction per thread covers the tile's P rows x 64.
template <int P>
__device__ __forceinline__ void prefetch_tile_l2(const float* src, int z, int z_last, int Z, int Y, int X,
                                                 int64_t plane, int gx0, int gy0) {
  const int tx = threadIdx.x, gy = gy0 + static_cast<int>(threadIdx.y) * P + tx % P, gx = gx0 + tx / P * P;
  if (z > z_last || z < 0 || z >= Z || gy < 0 || gy >= Y || gx < 0 || gx >= X) return;
  const float* p = src + static_cast<int64_t>(z) * plane + static_cast<int64_t>(gy) * X + gx;
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p) : "memory");
}

/// A thread's cells: one x and kPPT consecutive y of the outer tile, the same on every plane.
struct Cells {
  unsigned in_grid, fixed, owned;  ///< bit i: cell i is in the grid / a boundary cell / written by this CTA
  int64_t col;                     ///< offset of cell 0 within a plane (negative in the halo: used only in the grid)
  int tx, ly0;                     ///< local x, local y of cell 0
  int xm, xp, row_m, row_p;        ///< shared-memory neighbours, clamped at the outer tile's edge
};

template <int K>
__device__ __forceinline__ Cells cells_of(int Y, int X) {
  using Tl = Tile<K>;
  Cells c;
  c.tx = threadIdx.x;
  c.ly0 = threadIdx.y * Tl::kPPT;
  const int gx = static_cast<int>(blockIdx.x) * Tl::kIX - K + c.tx;
  const int gy0 = static_cast<int>(blockIdx.y) * Tl::kIY - K + c.ly0;
  c.col = static_cast<int64_t>(gy0) * X + gx;
  c.in_grid = c.fixed = c.owned = 0;
  const bool x_in = gx >= 0 && gx < X, x_fixed = gx <= 0 || gx >= X - 1, x_owned = c.tx >= K && c.tx < kOX - K;
#pragma unroll
  for (int i = 0; i < Tl::kPPT; ++i) {
    const int gy = gy0 + i, ly = c.ly0 + i;
    if (x_in && gy >= 0 && gy < Y) c.in_grid |= 1u << i;
    if (x_fixed || gy <= 0 || gy >= Y - 1) c.fixed |= 1u << i;
    if (x_owned && ly >= K && ly < Tl::kOY - K) c.owned |= 1u << i;
  }
  c.owned &= c.in_grid;  // cells the tile owns beyond the grid's edge are not written
  // Cells at the outer tile's edge read a clamped (wrong) neighbour: they are never owned, and
  // their error moves inward one cell per level, which the halo of K absorbs.
  c.xm = max(c.tx - 1, 0);
  c.xp = min(c.tx + 1, kOX - 1);
  c.row_m = max(c.ly0 - 1, 0);
  c.row_p = min(c.ly0 + Tl::kPPT, Tl::kOY - 1);
  return c;
}

/// Plane s - j of level j at the thread's P cells, from level j-1's planes s-j-1 (q_prev), s-j (q_cur;
/// `c` in shared memory for the neighbours) and s-j+1 (`up`). kMasked: some cell is a boundary cell
/// (copies its own previous value: a select, so garbage beyond the grid cannot leak); the grid's
/// interior threads take the unmasked instance, without the per-cell predicates.
template <bool kMasked, int P>
__device__ __forceinline__ void level_plane(const Cells& cl, const float* c, bool z_fixed, float c0, float c1,
                                            const float (&q_prev)[P], const float (&q_cur)[P], const float (&up)[P],
                                            float (&res)[P]) {
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const float ctr = q_cur[i];
    const float ym = i == 0 ? c[cl.row_m * kOX + cl.tx] : q_cur[i - 1];
    const float yp = i == P - 1 ? c[cl.row_p * kOX + cl.tx] : q_cur[i + 1];
    const float* row = c + (cl.ly0 + i) * kOX;
    const float sum = ((((q_prev[i] + up[i]) + ym) + yp) + row[cl.xm]) + row[cl.xp];
    const float v = fmaf(c0, ctr, c1 * sum);
    res[i] = kMasked && (z_fixed || ((cl.fixed >> i) & 1u)) ? ctr : v;
  }
}

/// March step s, after the barrier that publishes level 0's plane s: plane s - j of level j for
/// j = 1..K, each level feeding the next through `up`; the queues shift by one plane. Level K's
/// plane is stored when it lies in the CTA's chunk.
template <int K>
__device__ __forceinline__ void advance_levels(const Cells& cl, int s, int wbuf, int rbuf, int Z, int z_begin, int z_end,
                                               int64_t plane, int X, float c0, float c1, float* smem,
                                               float (&q_prev)[K][Tile<K>::kPPT], float (&q_cur)[K][Tile<K>::kPPT],
                                               float (&up)[Tile<K>::kPPT], float* __restrict__ dst) {
  using Tl = Tile<K>;
  constexpr int P = Tl::kPPT;
#pragma unroll
  for (int j = 1; j <= K; ++j) {
    const float* c = smem + ((j - 1) * kBufs + rbuf) * Tl::kPlane;  // level j-1, plane s-j
    const int z = s - j;
    const bool z_fixed = z <= 0 || z >= Z - 1;
    float res[P];
    if (z_fixed || cl.fixed != 0)
      level_plane<true, P>(cl, c, z_fixed, c0, c1, q_prev[j - 1], q_cur[j - 1], up, res);
    else
      level_plane<false, P>(cl, c, z_fixed, c0, c1, q_prev[j - 1], q_cur[j - 1], up, res);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      q_prev[j - 1][i] = q_cur[j - 1][i];
      q_cur[j - 1][i] = up[i];
      up[i] = res[i];
    }
    if (j < K) {
#pragma unroll
      for (int i = 0; i < P; ++i) smem[(j * kBufs + wbuf) * Tl::kPlane + (cl.ly0 + i) * kOX + cl.tx] = res[i];
    } else if (z >= z_begin && z < z_end) {
#pragma unroll
      for (int i = 0; i < P; ++i)
        if ((cl.owned >> i) & 1u) dst[z * plane + cl.col + static_cast<int64_t>(i) * X] = res[i];
    }
  }
}

template <int K>
__global__ void __launch_bounds__(Tile<K>::kThreads, K == 1 ? 4 : 2)
    jacobi_block(const float* __restrict__ src, float* __restrict__ dst, int Z, int Y, int X, float c0, float c1) {
  using Tl = Tile<K>;
  constexpr int P = Tl::kPPT, A = Tl::kAhead;
  extern __shared__ float smem[];  // [level 0..K-1][parity 0..1][kOY][kOX]
  const Cells cl = cells_of<K>(Y, X);
  const int z_begin = static_cast<int>(blockIdx.z) * kZChunk;
  const int z_end = min(Z, z_begin + kZChunk);
  const int64_t plane = static_cast<int64_t>(Y) * X;

  // No read sees uninitialised shared memory (the first march step reads the other parity).
  for (int i = cl.ly0 / P * kOX + cl.tx; i < kBufs * K * Tl::kPlane; i += Tl::kThreads) smem[i] = 0.f;
  if constexpr (kBufs == 3) __syncthreads();  // the first step's stores come before its only barrier

  float q_prev[K][P], q_cur[K][P];  // level j's planes s-j-2 and s-j-1 at the thread's cells, entering step s
#pragma unroll
  for (int j = 0; j < K; ++j)
#pragma unroll
    for (int i = 0; i < P; ++i) q_prev[j][i] = q_cur[j][i] = 0.f;

  // The march: the chunk's planes plus K warm-up planes below and K drain planes above. Input
  // planes in flight: slot k holds plane s_first + k + m * A, so the march is unrolled by A (slot
  // indices known at compile time: the ring stays in registers).
  const int s_first = z_begin - K, s_last = z_end - 1 + K;
  float ahead[A][P];
#pragma unroll
  for (int k = 0; k < A; ++k)
    if (s_first + k <= s_last) load_plane<P>(src, s_first + k, Z, plane, cl.col, X, cl.in_grid, ahead[k]);
  constexpr int kPf = STENCIL_BLOCK_L2PF;
  const int gx0 = static_cast<int>(blockIdx.x) * Tl::kIX - K, gy0 = static_cast<int>(blockIdx.y) * Tl::kIY - K;
  if constexpr (kPf > 0)
    for (int z = s_first + A; z < s_first + A + kPf; ++z) prefetch_tile_l2<P>(src, z, s_last, Z, Y, X, plane, gx0, gy0);
  for (int s0 = s_first; s0 <= s_last; s0 += A) {
#pragma unroll
    for (int k = 0; k < A; ++k) {
      const int s = s0 + k;
      if (s > s_last) break;  // uniform across the CTA: no thread skips a barrier another reaches
      if constexpr (kPf > 0) prefetch_tile_l2<P>(src, s + A + kPf, s_last, Z, Y, X, plane, gx0, gy0);
      float up[P];            // level j-1's plane s-j+1 for j = 1..K in turn: first the input's plane s
#pragma unroll
      for (int i = 0; i < P; ++i) up[i] = ahead[k][i];
      if (s + A <= s_last) load_plane<P>(src, s + A, Z, plane, cl.col, X, cl.in_grid, ahead[k]);
      // Step s writes buffer wbuf of every level and reads rbuf (what step s-1 wrote). Two
      // buffers: wbuf is what step s-1 read, so a first barrier waits for those reads. Three: wbuf
      // was last read at step s-2, before every thread passed step s-1's barrier.
      const int wbuf = kBufs == 2 ? (s & 1) : (s - s_first) % kBufs;
      const int rbuf = kBufs == 2 ? (wbuf ^ 1) : (wbuf + kBufs - 1) % kBufs;
      if constexpr (kBufs == 2) __syncthreads();  // step s-1's reads of this parity are done
#pragma unroll
      for (int i = 0; i < P; ++i) smem[wbuf * Tl::kPlane + (cl.ly0 + i) * kOX + cl.tx] = up[i];
      __syncthreads();  // level 0's plane s and every level's plane of step s-1 are visible
      advance_levels<K>(cl, s, wbuf, rbuf, Z, z_begin, z_end, plane, X, c0, c1, smem, q_prev, q_cur, up, dst);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Single-step passes as warp strips (STENCIL_STREAM): a warp owns 128 consecutive x (4 per lane:
// 16-byte loads and stores of whole 128-byte lines, tiles aligned to them, none overlapped) by kRows
// rows and marches its strip along one Z chunk with the planes z-1, z, z+1 in registers. Its x
// neighbours come from the lanes beside it (shuffles; the two cells beyond the strip from one
// scalar load per row), its y neighbours inside the strip from its own registers and the two rows
// beyond the strip from L1/L2 (the warps above and below load them as their own rows). No shared
// memory and no barrier: each warp streams on its own, kAhead planes of loads in flight.
#if STENCIL_STREAM
namespace strip {

constexpr int kSX = 128;  // strip width: 32 lanes x 4 consecutive x
constexpr int kWarps = 8;  // warps of a CTA, stacked in y
constexpr int kRows = STENCIL_STREAM_ROWS;
constexpr int kAhead = STENCIL_STREAM_AHEAD;
constexpr int kL2Ahead = STENCIL_STREAM_L2PF;
constexpr int kThreads = 32 * kWarps;
constexpr int kCTARows = kWarps * kRows;
constexpr unsigned kFull = 0xffffffffu;
static_assert(kRows >= 1 && kRows <= 8 && kAhead >= 1, "4 * kRows cells per thread fit a 32-bit mask; one slot at least");

/// One plane at a lane's cells: its kRows x 4 cells, the rows just below and above the strip at its
/// x, and `xh`: lane i < kRows holds (y0 + i, x0 - 1), lane 16 + i holds (y0 + i, x0 + 128).
struct Plane {
  float c[kRows][4], hm[4], hp[4], xh;
};

struct Lane {
  int64_t col;     ///< offset of (y0, x) within a plane (used only where in the grid)
  int x, x0, y0, lane;
  unsigned fixed;  ///< bit 4i + e: cell (y0 + i, x + e) is a boundary cell of the grid
  bool warp_fixed;  ///< some lane of the warp has a boundary cell (warp-uniform: the shuffles stay converged)
};

__device__ __forceinline__ Lane lane_of(int Y, int X) {
  Lane l;
  l.lane = threadIdx.x;
  l.x0 = static_cast<int>(blockIdx.x) * kSX;
  l.x = l.x0 + 4 * l.lane;
  l.y0 = (static_cast<int>(blockIdx.y) * kWarps + static_cast<int>(threadIdx.y)) * kRows;
  l.col = static_cast<int64_t>(l.y0) * X + l.x;
  l.fixed = 0;
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int gx = l.x + e, gy = l.y0 + i;
      if (gx < X && gy < Y && (gx == 0 || gx == X - 1 || gy == 0 || gy == Y - 1)) l.fixed |= 1u << (4 * i + e);
    }
  l.warp_fixed = __any_sync(kFull, l.fixed != 0);
  return l;
}

/// Four cells of row y at x.. x+3 (0 outside the grid). kVec: X % 4 == 0 and 16-byte aligned
/// pointers, so the four are all in or all out and one 16-byte load reads them.
template <bool kVec>
__device__ __forceinline__ void load_row(const float* __restrict__ p, bool row_in, int x, int X, float (&v)[4]) {
  if constexpr (kVec) {
    float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row_in && x < X) q = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = row_in && x + e < X ? __ldg(p + e) : 0.f;
  }
}

/// Plane z at the lane's cells and halo (all 0 for z outside [0, Z)).
template <bool kVec>
__device__ __forceinline__ void load_plane(const float* __restrict__ src, int z, int Z, int Y, int X, int64_t plane,
                                           const Lane& l, Plane& p) {
  const bool z_in = z >= 0 && z < Z;
  const float* base = src + (z_in ? static_cast<int64_t>(z) * plane + l.col : 0);
#pragma unroll
  for (int i = 0; i < kRows; ++i)
    load_row<kVec>(base + static_cast<int64_t>(i) * X, z_in && l.y0 + i < Y, l.x, X, p.c[i]);
  load_row<kVec>(base - X, z_in && l.y0 >= 1 && l.y0 - 1 < Y, l.x, X, p.hm);
  load_row<kVec>(base + static_cast<int64_t>(kRows) * X, z_in && l.y0 + kRows < Y, l.x, X, p.hp);
  const int r = l.lane & 15, hx = l.lane < 16 ? l.x0 - 1 : l.x0 + kSX;
  const bool h_in = z_in && r < kRows && l.y0 + r < Y && hx >= 0 && hx < X;
  p.xh = h_in ? __ldg(src + static_cast<int64_t>(z) * plane + static_cast<int64_t>(l.y0 + r) * X + hx) : 0.f;
}

/// Plane z's rows of the strip into L2 (cp.async.bulk.prefetch: no registers held, so the planes
/// beyond the register ring are in flight too): lane i < kRows prefetches row y0 + i, 16-byte
/// aligned whole (the vector path only). The rows just outside the strip are other warps' own.
__device__ __forceinline__ void prefetch_plane_l2(const float* src, int z, int z_last, int Y, int X, int64_t plane,
                                                  const Lane& l) {
  if (z > z_last || l.lane >= kRows || l.y0 + l.lane >= Y) return;
  const float* p = src + static_cast<int64_t>(z) * plane + static_cast<int64_t>(l.y0 + l.lane) * X + l.x0;
  const unsigned bytes = static_cast<unsigned>(min(kSX, X - l.x0)) * 4u;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

/// Plane z of the next level from planes z-1 (prev), z (cur) and z+1 (next) at the lane's cells, in
/// naive's order. kMasked: boundary cells copy their value (a select: garbage cannot leak).
template <bool kMasked>
__device__ __forceinline__ void step_plane(const Lane& l, const float (&prev)[kRows][4], const Plane& cur,
                                           const float (&next)[kRows][4], bool z_fixed, float c0, float c1,
                                           float (&res)[kRows][4]) {
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const float from_left = __shfl_up_sync(kFull, cur.c[i][3], 1);
    const float from_right = __shfl_down_sync(kFull, cur.c[i][0], 1);
    const float halo_left = __shfl_sync(kFull, cur.xh, i);
    const float halo_right = __shfl_sync(kFull, cur.xh, 16 + i);
    const float left = l.lane == 0 ? halo_left : from_left;
    const float right = l.lane == 31 ? halo_right : from_right;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float ctr = cur.c[i][e];
      const float xm = e == 0 ? left : cur.c[i][e - 1];
      const float xp = e == 3 ? right : cur.c[i][e + 1];
      const float ym = i == 0 ? cur.hm[e] : cur.c[i - 1][e];
      const float yp = i == kRows - 1 ? cur.hp[e] : cur.c[i + 1][e];
      const float sum = ((((prev[i][e] + next[i][e]) + ym) + yp) + xm) + xp;
      const float v = fmaf(c0, ctr, c1 * sum);
      res[i][e] = kMasked && (z_fixed || ((l.fixed >> (4 * i + e)) & 1u)) ? ctr : v;
    }
  }
}

template <bool kVec>
__device__ __forceinline__ void store_plane(float* __restrict__ dst, int z, int Y, int X, int64_t plane, const Lane& l,
                                            const float (&res)[kRows][4]) {
  float* base = dst + static_cast<int64_t>(z) * plane + l.col;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    if (l.y0 + i >= Y) break;
    float* p = base + static_cast<int64_t>(i) * X;
    if constexpr (kVec) {
      if (l.x < X) __stcs(reinterpret_cast<float4*>(p), make_float4(res[i][0], res[i][1], res[i][2], res[i][3]));
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (l.x + e < X) p[e] = res[i][e];
    }
  }
}

/// One Jacobi step over the planes [z_begin, z_end) of the CTA's chunk. ring[k] holds plane
/// s + 1 at step s = z_begin + m * kAhead + k (the march is unrolled by kAhead so the slots are
/// registers); the load of plane s + 1 + kAhead goes into the slot step s has just consumed.
template <bool kVec>
__global__ void __launch_bounds__(kThreads, STENCIL_STREAM_MINB)
    jacobi_stream(const float* __restrict__ src, float* __restrict__ dst, int Z, int Y, int X, int zchunk, float c0,
                  float c1) {
  const Lane l = lane_of(Y, X);
  const int z_begin = static_cast<int>(blockIdx.z) * zchunk;
  const int z_end = min(Z, z_begin + zchunk);
  const int64_t plane = static_cast<int64_t>(Y) * X;

  float prev[kRows][4];
  Plane cur, ring[kAhead];
  load_plane<kVec>(src, z_begin - 1, Z, Y, X, plane, l, cur);
#pragma unroll
  for (int i = 0; i < kRows; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) prev[i][e] = cur.c[i][e];
  load_plane<kVec>(src, z_begin, Z, Y, X, plane, l, cur);
#pragma unroll
  for (int k = 0; k < kAhead; ++k)
    if (z_begin + 1 + k <= z_end) load_plane<kVec>(src, z_begin + 1 + k, Z, Y, X, plane, l, ring[k]);

  const int pf_last = min(z_end, Z - 1);  // the last plane the march loads
  if constexpr (kVec && kL2Ahead > 0)
    for (int z = z_begin + 1 + kAhead; z <= z_begin + kAhead + kL2Ahead; ++z) prefetch_plane_l2(src, z, pf_last, Y, X, plane, l);

  for (int s0 = z_begin; s0 < z_end; s0 += kAhead) {
#pragma unroll
    for (int k = 0; k < kAhead; ++k) {
      const int s = s0 + k;
      if (s >= z_end) break;  // warp-uniform
      if constexpr (kVec && kL2Ahead > 0) prefetch_plane_l2(src, s + 1 + kAhead + kL2Ahead, pf_last, Y, X, plane, l);
      const bool z_fixed = s == 0 || s == Z - 1;
      float res[kRows][4];
      if (z_fixed || l.warp_fixed)
        step_plane<true>(l, prev, cur, ring[k].c, z_fixed, c0, c1, res);
      else
        step_plane<false>(l, prev, cur, ring[k].c, z_fixed, c0, c1, res);
      store_plane<kVec>(dst, s, Y, X, plane, l, res);
#pragma unroll
      for (int i = 0; i < kRows; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) prev[i][e] = cur.c[i][e];
      cur = ring[k];
      if (s + 1 + kAhead <= z_end) load_plane<kVec>(src, s + 1 + kAhead, Z, Y, X, plane, l, ring[k]);
    }
  }
}

}  // namespace strip
#endif

struct Shape {
  int64_t Z, Y, X, T;
};

Shape shape_of(const d2k_args* args) {
  const Shape s{d2k::scalar_i(args, "Z"), d2k::scalar_i(args, "Y"), d2k::scalar_i(args, "X"), d2k::scalar_i(args, "T")};
  if (s.Z < 1 || s.Y < 1 || s.X < 1 || s.T < 1) throw d2k::abi_error("expert: need Z, Y, X, T >= 1");
  if (s.Z * s.Y * s.X > (int64_t{1} << 31) || s.Y > int64_t{65535} * 14 || s.Z > 65535 * int64_t{kZChunk})
    throw d2k::abi_error("expert: more than 2^31 cells or an axis beyond its launch grid");
  return s;
}

/// Steps per pass: as many passes of STENCIL_MAX_K as fit, then 2 and 1 for the remainder.
std::vector<int> passes_for(int64_t T) {
  std::vector<int> p;
  for (int k = STENCIL_MAX_K; k >= 1; k /= 2)
    for (; T >= k; T -= k) p.push_back(k);
  return p;
}

/// The ping-pong buffer: one grid, needed once there are two passes or more.
float* carve(d2k::Workspace& ws, const Shape& s) {
  return passes_for(s.T).size() >= 2 ? ws.take<float>(static_cast<uint64_t>(s.Z * s.Y * s.X)) : nullptr;
}

template <int K>
void launch_pass(const float* src, float* dst, const Shape& s, float c0, float c1,
                 cudaStream_t stream) {
  using Tl = Tile<K>;
  if constexpr (Tl::kSmemBytes > 48 * 1024) {
    static const cudaError_t attr = cudaFuncSetAttribute(jacobi_block<K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                          Tl::kSmemBytes);
    if (attr != cudaSuccess) throw d2k::abi_error(std::string("expert: shared memory attribute: ") + cudaGetErrorString(attr));
  }
  const dim3 grid(static_cast<unsigned>((s.X + Tl::kIX - 1) / Tl::kIX), static_cast<unsigned>((s.Y + Tl::kIY - 1) / Tl::kIY),
                  static_cast<unsigned>((s.Z + kZChunk - 1) / kZChunk));
  const dim3 block(kOX, Tl::kThreadRows);
  jacobi_block<K><<<grid, block, Tl::kSmemBytes, stream>>>(src, dst, static_cast<int>(s.Z), static_cast<int>(s.Y),
                                                            static_cast<int>(s.X), c0, c1);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw d2k::abi_error(std::string("expert: launch: ") + cudaGetErrorString(e));
}

#if STENCIL_STREAM
/// Planes per Z chunk of jacobi_stream: enough chunks that the CTAs fill STENCIL_STREAM_WAVES
/// waves of the device's resident CTAs (a single wave has no tail of a half-empty last wave), at
/// least 4 planes each (a chunk re-reads 2 planes: the first step's z-1 and the last one's z+1).
int64_t strip_zchunk(const Shape& s, int64_t ctas_per_layer, const void* kernel) {
  int dev = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, strip::kThreads, 0) != cudaSuccess)
    throw d2k::abi_error("expert: device attributes for the strip kernel's launch");
  const int64_t slots = static_cast<int64_t>(std::max(1, sms * per_sm)) * STENCIL_STREAM_WAVES;
  int64_t layers = std::max<int64_t>(1, slots / ctas_per_layer);
  layers = std::min<int64_t>({layers, (s.Z + 3) / 4, 65535});
  return (s.Z + layers - 1) / layers;
}

/// One step as jacobi_stream: 16-byte loads and stores where X % 4 == 0 and both grids are 16-byte
/// aligned, four scalar ones per lane and row otherwise.
void launch_strip(const float* src, float* dst, const Shape& s, float c0, float c1, cudaStream_t stream) {
  const bool vec = s.X % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const void* kernel = vec ? reinterpret_cast<const void*>(strip::jacobi_stream<true>)
                           : reinterpret_cast<const void*>(strip::jacobi_stream<false>);
  const int64_t bx = (s.X + strip::kSX - 1) / strip::kSX, by = (s.Y + strip::kCTARows - 1) / strip::kCTARows;
  const int64_t zchunk = strip_zchunk(s, bx * by, kernel);
  const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(by), static_cast<unsigned>((s.Z + zchunk - 1) / zchunk));
  const dim3 block(32, strip::kWarps);
  const int Z = static_cast<int>(s.Z), Y = static_cast<int>(s.Y), X = static_cast<int>(s.X), zc = static_cast<int>(zchunk);
  if (vec)
    strip::jacobi_stream<true><<<grid, block, 0, stream>>>(src, dst, Z, Y, X, zc, c0, c1);
  else
    strip::jacobi_stream<false><<<grid, block, 0, stream>>>(src, dst, Z, Y, X, zc, c0, c1);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw d2k::abi_error(std::string("expert: launch: ") + cudaGetErrorString(e));
}
#endif

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    d2k::Workspace ws;
    carve(ws, s);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    const DLTensor& u = d2k::input(args, "u", kDLCUDA, d2k::dl::f32, {s.Z, s.Y, s.X});
    const DLTensor& out = d2k::output(args, "out", kDLCUDA, d2k::dl::f32, {s.Z, s.Y, s.X});
    d2k::Workspace ws(args);
    float* tmp = carve(ws, s);
    const float c0 = static_cast<float>(d2k::scalar_f(args, "c0"));
    const float c1 = static_cast<float>(d2k::scalar_f(args, "c1"));
    auto stream = static_cast<cudaStream_t>(args->stream);

    const std::vector<int> passes = passes_for(s.T);
    const float* src = d2k::data<const float>(u);
    const std::size_t n = passes.size();
    for (std::size_t p = 0; p < n; ++p) {
      float* dst = (n - 1 - p) % 2 == 0 ? d2k::data<float>(out) : tmp;  // the last pass writes `out`
      switch (passes[p]) {
#if STENCIL_STREAM
        case 1: launch_strip(src, dst, s, c0, c1, stream); break;
#else
        case 1: launch_pass<1>(src, dst, s, c0, c1, stream); break;
#endif
#if STENCIL_MAX_K >= 2
        case 2: launch_pass<2>(src, dst, s, c0, c1, stream); break;
#endif
#if STENCIL_MAX_K >= 4
        case 4: launch_pass<4>(src, dst, s, c0, c1, stream); break;
#endif
        default: throw d2k::abi_error("expert: no kernel for this pass depth");
      }
      src = dst;
    }
    return D2K_OK;
  });
}
