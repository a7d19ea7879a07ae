// radix_sort_pairs — expert: an LSD radix sort in onesweep form (Adinets & Merrill, "Onesweep: A
// Faster Least Significant Digit Radix Sort for GPUs", 2022): one upfront histogram pass for all
// four 8-bit digits, then per digit ONE pass over the pairs that ranks each tile in shared memory
// and finds the tile's output offsets with a decoupled look-back over tile-local digit counts.
//
//   1. rs_histogram: every key read once (16-byte loads), its four digits counted in a per-CTA
//      shared histogram of 4 x 256 counters, then added to the global counts. A warp whose 32 keys
//      share a digit (a low-entropy column's upper bytes, equal keys) adds 32 once instead of 32
//      same-address shared atomics.
//   2. rs_digit_offsets: per pass, the exclusive prefix of the 256 counts: each bucket's start.
//   3. rs_onesweep, once per digit (keys and values ping-pong between the outputs and a workspace
//      copy, so the last pass writes the outputs). Per tile of kTile = 256 x 24 pairs:
//      a. tile id from an atomic counter (arrival order: every lower tile is running, so the
//         look-back never waits on a tile that has not started);
//      b. keys loaded item by item across lanes (each warp load is 128 contiguous bytes; a warp
//         owns 768 consecutive pairs, so (warp, item, lane) is the input order);
//      c. warp multisplit: per item, __match_any_sync on the digit gives the lanes that share it;
//         a lane's rank is the warp's running count of the digit (a per-warp shared histogram,
//         updated by the lowest peer) plus its peers in lower lanes: stable by construction;
//      d. thread d (one per digit) turns the per-warp counts into each warp's first rank and the
//         tile's count, publishes the count (AGGREGATE; tile 0: INCLUSIVE) at once, and a block
//         scan gives the tile-local start of every digit;
//      e. keys staged in shared memory in the tile's digit order, then the values loaded (their
//         round trip overlaps f; keys and values never take registers together: 3 CTAs per SM)
//         and staged the same way;
//      f. decoupled look-back, thread d for digit d: predecessor tiles' words of the digit, 16
//         loaded per round trip and consumed from the nearest back, summed until an INCLUSIVE
//         one; then the tile's INCLUSIVE prefix.
//         Flag and count share one 32-bit word, so a relaxed load sees both or neither;
//      g. pairs written from shared memory by consecutive threads at consecutive tile positions:
//         a digit's run of the tile (24 pairs on average for uniform keys) goes to consecutive
//         output words.
// The digit counts, tile counters and look-back words are the workspace, zeroed by one memset per
// call (4 B per digit per tile per pass: 1 KB per 6144 pairs per pass, 1/96 of the pass's 96 KB).
//
// Where a tile's time went in the form before (prev24; issue #17; an estimate from the source and
// the SASS, no profile; the sweep below tested it). At 2.5e8 pairs a pass is 40,691 tiles over 264 resident CTAs (132 SMs x 2), 154 rounds. The
// tile's DRAM time, 6144 pairs x 16 B at ~3 TB/s shared by 264 CTAs, is ~8.6 us; the measured pass
// (~3.1 ms of the 12.9 ms call) gives ~20 us per tile. Per tile, on the CTA's critical path (SM
// cycles at 1.98 GHz; "wavefronts": shared-memory passes, ~1 per cycle per SM):
//   a. tile id (one returning global atomic) + barrier: one L2 round trip, ~0.5-1 us;
//   b. keys: one DRAM round trip with 24 KB in flight per CTA, ~1-1.5 us;
//   c. rank: per item a chain MATCH -> load of the warp's count -> lowest peer's store -> the next
//      item's load (the load cannot pass the possibly aliasing store): ~50-70 cycles x 24 items,
//      ~0.7 us; ~1.2k wavefronts (uniform digits: ~3-way bank conflicts on the counts);
//   d. counts published, block scan: 2 barriers, ~0.2 us;
//   e. staging: waits for the values (issued after c): ~0.5-1 us of their round trip exposed;
//      2 table loads + 2 stores per pair at random banks (~3-4-way): ~2.7k wavefronts, ~0.3 us;
//   f. look-back: one L2 round trip r per predecessor until an INCLUSIVE word. A tile turns its
//      word INCLUSIVE only after its own walk, and tiles start Delta = (tile time) / 264 ~ 75 ns
//      apart, so in steady state the walk is k ~ r / Delta words deep and costs
//      L ~ r^2 x 264 / (tile time): with r ~ 0.5-1 us under full DRAM load, k ~ 7-13, L ~ 3-13 us.
//      The largest suspect: the only phase that grows with the number of CTAs in flight;
//   g. scatter: 48 shared loads + 48 scattered 4-byte stores per thread, posted: ~0.3-0.5 us.
//   Outside the tiles: the look-back memset (166 MB at 2.5e8, ~55 us) and the histogram pass (one
//   key read, ~0.35 ms + shared atomics) are < 5% of the call.
// a-e + g sum to ~4-5 us, so about 3/4 of the 20 us is f or latency that scales like it. A second
// sign: 3 of zipf8's 4 passes have one digit per tile (no bank conflicts, contiguous stores) and
// run at ~1.6 ms (2.5 TB/s) against ~3.1 ms for a uniform pass, so the uniform-digit work (c, e,
// scattered stores, L2 queueing that lengthens r) is worth up to ~1.5 ms per pass too. CUB's
// onesweep (8832-pair tiles, values loaded after the keys are scattered, counts published before
// the match ranking) walks its look-back one word per round trip as well; with L ~ sqrt(264 r^2)
// once L dominates, throughput goes as tile size x sqrt(CTAs in flight), which predicts CUB
// (1.44x the pairs per tile, 3 CTAs per SM if it fits 85 registers) ~1.8x ahead: the ratio measured.
// The H200 sweep of 2026-12-03 (2.5e8 uniform, one d2k run: `D2K_CHECK_STEPS=variants
// scripts/gpu/checks/t-sort.sh`, docs/results/radix_sort_pairs.md), each variant removing one cost
// of the form before (24 pairs per thread, values loaded during the ranking, a one-word look-back,
// 2 CTAs per SM: 12898 us, CUB 6897 us, noise <= 0.5%):
//   - a 16-word look-back window (rs::lookback_round, a round trip covers 16 tiles): 1.03x;
//   - the look-back before the block scan and staging (overlapping the values' loads): 0.88x;
//   - the tile's digit starts folded into the per-warp first ranks (one table read per staged
//     pair): 1.02x;
//   - the values loaded after the keys are staged, ranks two to a register: 80 registers, 3 CTAs per
//     SM (1.5x the memory parallelism): 1.15x;
//   - the window, early look-back and folded starts together at 2 CTAs per SM: 0.97x;
//   - late values, 16-bit ranks, 3 CTAs per SM and the 16-word window (this kernel): 9665 us,
//     1.33x the form before, 0.71x CUB.
// So the look-back's depth was not the main cost at 2 CTAs per SM; memory parallelism was, and the
// window pays once a third CTA per SM shortens the tile time. The early look-back and the folded
// starts are not kept.
//
// Variants considered (register counts from ptxas for sm_90a; H200 medians as n1e6 /
// n2.5e8-uniform / n2.5e8-zipf8 us):
//   - this one: 8-bit digits, 24 pairs per thread (6144 per tile, near CUB's 384 x 23 on Hopper),
//     values loaded late, 16-bit ranks, 3 CTAs per SM, 16-word look-back window: 80 registers, no
//     spills, 58 KB of shared memory per CTA (the largest carveout asked for).
//     H200 (2026-12-03): 9665 us on n2.5e8-uniform (0.71x CUB);
//   - prev24 (the default until 2026-12-03): values loaded during the ranking, one-word look-back,
//     2 CTAs per SM: 127 registers. H200 (2026-12-02): 119.4 / 12865.0 / 8244.2 us (3.1% / 7.3% /
//     11.3% of SOL): 0.71x / 0.53x / 0.65x CUB;
//   - 16, 12 or 32 pairs per thread (RS_ITEMS): with the values loaded early they spilled (36-124
//     B) at the CTAs per SM they aimed for; not measured. With this kernel (values late) 28 and 32
//     still spill at 80 registers (36 and 148 B of spill stores: the keys and their ranks live
//     through the ranking), so a larger tile needs the keys out of registers then (async32 below);
//   - async, async32, early: measured on the H200 on 2026-12-03 on n2.5e8-uniform (this kernel
//     9612.93 us, CUB 6855.37 us: 0.71x CUB), all slower than this kernel, code removed. async
//     (keys and values copied global -> shared by cp.async at the tile's start, ranked from shared
//     memory, permuted in place): 10957.81 us, 0.88x, the extra barrier and shared traffic;
//     async32 (the same with 32 pairs per thread, 8192-pair tiles): 11001.75 us, 0.87x; early
//     (the tile's digit counts taken from the keys and published before the ranking, as CUB does):
//     10851.90 us, 0.89x, one barrier and one shared atomic per pair more;
//   - 11-bit digits (3 passes, 52 B per pair instead of 68): 2048 buckets per tile make the
//     per-digit steps 8 digits per thread and the per-warp histograms 64 KB per CTA; not built
//     (CUB also keeps 8 bits for 32-bit keys on Hopper);
//   - the running counts advanced by the lowest peer's returning shared atomic (its old value
//     shuffled to the peers) instead of load / store: built, dropped unmeasured: the shuffle of
//     item i waits for its atomic, and the next item's atomic sits behind that divergent branch,
//     so the chain stays one round trip per item, as in the load / store form;
//   - ballot (measured on the H200 on 2026-12-03, code removed): the peers of a lane's digit from
//     8 ballots (one per digit bit) instead of __match_any_sync. Nsight Compute (n2.5e8-uniform,
//     one pass each): this kernel 2.20 ms per pass with the ADU pipe (MATCH) at 88% of its peak
//     and short-scoreboard the first stall; CUB's onesweep 1.60 ms, ADU 5%, the same 4.0 GB
//     moved. The ballot form (80 registers, no MATCH) against this kernel in one d2k run: n1e6
//     1.10x, n2.5e8-uniform 0.99x, n1e9-uniform 1.085x, n2.5e8-zipf8 0.72x (against CUB: 0.82x /
//     0.71x / 0.79x / 0.55x, this kernel 0.75x / 0.71x / 0.73x / 0.77x): the ADU's load was not
//     what bounds the uniform 2.5e8 pass, and 8 ballots cost more than one MATCH
//     where a warp's digits are few (zipf8);
//   - CUB's DeviceRadixSort::SortPairs (library.cu), the same algorithm family tuned by NVIDIA.
//     H200: 85.0 / 6857.3 / 5335.6 us (4.4% / 13.6% / 17.5% of SOL);
//   - the textbook three kernels per digit (naive.cu): keys read twice per pass, a count array.
//     H200: 188.1 / 45514.3 / 14748.2 us.
// %VARIANT% prev24 -DRS_VALUES_LATE=0 -DRS_RANK16=0 -DRS_MIN_BLOCKS=2 -DRS_LOOKBACK_WINDOW=1
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "d2k/solution.h"
#include "rs_args.h"
#include "rs_core.h"

#ifndef RS_VALUES_LATE
// 1: the values are loaded after the keys are staged (as CUB's onesweep does), so keys and values
// are never in registers together: 24 pairs per thread fit the 80 registers of 3 CTAs per SM.
#define RS_VALUES_LATE 1
#endif

#ifndef RS_RANK16
// 1: a thread's ranks are held two to a register (struct Ranks).
#define RS_RANK16 1
#endif

#ifndef RS_MIN_BLOCKS
// Resident CTAs per SM the register budget is cut for: 3 with the values loaded late and 16-bit
// ranks (80 registers, no spills); 2 with the values loaded early (127 registers; at 3 it spills).
#define RS_MIN_BLOCKS 3
#endif

namespace {

using rs::kDigits;
using rs::kItems;
using rs::kPasses;
using rs::kThreads;
using rs::kTile;
using rs::kWarps;

constexpr int kHistThreads = 256;
constexpr int64_t kHistMaxBlocks = 1024;     ///< enough CTAs to fill the H200 (132 SMs x 8)
constexpr int64_t kHistChunksPerThread = 8;  ///< at least 32 keys per thread: each CTA's flush of up
                                             ///< to 1024 global atomics serves >= 8192 keys

__device__ __forceinline__ uint32_t load_status(uint32_t* w) {
  return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*w).load(cuda::std::memory_order_relaxed);
}
__device__ __forceinline__ void store_status(uint32_t* w, uint32_t v) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*w).store(v, cuda::std::memory_order_relaxed);
}

/// f. Decoupled look-back for digit d of tile `tile` (whose own count of it is `mine`, already
/// published): the digit's count in tiles [0, tile), from the predecessors' words nearest first
/// until an INCLUSIVE one; then the tile's own INCLUSIVE word. One word per round trip
/// (kLookbackWindow = 1), or kLookbackWindow words of consecutive predecessors loaded together and
/// consumed in the same order by rs::lookback_round.
__device__ __forceinline__ uint32_t look_back(uint32_t* status, int64_t tile, int d, uint32_t mine) {
  uint32_t exclusive = 0;
  if (tile == 0) return exclusive;
  if constexpr (rs::kLookbackWindow == 1) {
    for (int64_t j = tile - 1;; --j) {
      uint32_t w;
      do {
        w = load_status(status + j * kDigits + d);
      } while (rs::status_flag(w) == 0);
      exclusive += rs::status_value(w);
      if (rs::status_flag(w) == rs::kFlagInclusive) break;
    }
  } else {
    for (int64_t j = tile - 1;;) {
      uint32_t w[rs::kLookbackWindow];
#pragma unroll
      for (int u = 0; u < rs::kLookbackWindow; ++u)
        w[u] = load_status(status + max(j - u, int64_t{0}) * kDigits + d);  // all in flight at once
      int taken;
      if (rs::lookback_round(w, exclusive, taken)) break;
      j -= taken;
    }
  }
  store_status(status + tile * kDigits + d, rs::kFlagInclusive | (exclusive + mine));
  return exclusive;
}

/// Exclusive prefix of v over the CTA's threads in thread order (kThreads threads, one call per
/// kernel: warp_totals is not reused, so no second barrier).
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* warp_totals) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t up = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += up;
  }
  if (lane == 31) warp_totals[warp] = incl;
  __syncthreads();
  uint32_t before = 0;
  for (int w = 0; w < warp; ++w) before += warp_totals[w];
  return before + incl - v;
}

/// One more key in bin d of a shared histogram (all 32 lanes call it); when the whole warp holds
/// valid keys of one digit, one atomic adds 32.
__device__ __forceinline__ void count_digit(uint32_t* h, unsigned d, bool valid, int lane) {
  const unsigned d0 = __shfl_sync(0xffffffffu, d, 0);
  if (__all_sync(0xffffffffu, valid && d == d0)) {
    if (lane == 0) atomicAdd(h + d0, 32u);
  } else if (valid) {
    atomicAdd(h + d, 1u);
  }
}

/// 1. The digit counts of all passes, one read of the keys.
__global__ void __launch_bounds__(kHistThreads)
    rs_histogram(const uint32_t* __restrict__ keys, int64_t n, uint32_t* __restrict__ counts) {
  __shared__ uint32_t h[kPasses * kDigits];
  for (int i = threadIdx.x; i < kPasses * kDigits; i += kHistThreads) h[i] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t chunks = n / 4;  // whole uint4 chunks
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kHistThreads;
  // The bound is the warp's, not the lane's: every lane runs every iteration (count_digit votes).
  for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * kHistThreads + (threadIdx.x & ~31); c0 < chunks; c0 += stride) {
    const int64_t c = c0 + lane;
    const bool valid = c < chunks;
    const uint4 v = valid ? __ldcs(reinterpret_cast<const uint4*>(keys) + c) : make_uint4(0, 0, 0, 0);
    const uint32_t k[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
      for (int p = 0; p < kPasses; ++p) count_digit(h + p * kDigits, rs::digit(k[e], p), valid, lane);
  }
  if (blockIdx.x == 0 && threadIdx.x < 32) {  // the last n % 4 keys
    const int64_t i = chunks * 4 + lane;
    const bool valid = i < n;
    const uint32_t key = valid ? keys[i] : 0u;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) count_digit(h + p * kDigits, rs::digit(key, p), valid, lane);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kPasses * kDigits; i += kHistThreads)
    if (h[i]) atomicAdd(counts + i, h[i]);
}

/// 2. Each pass's bucket starts: the exclusive prefix of its digit counts (CTA = pass, thread = digit).
__global__ void __launch_bounds__(kDigits) rs_digit_offsets(const uint32_t* __restrict__ counts, uint32_t* __restrict__ offsets) {
  __shared__ uint32_t warp_totals[kWarps];
  const int i = blockIdx.x * kDigits + threadIdx.x;
  offsets[i] = block_exclusive_scan(counts[i], warp_totals);
}

/// A thread's ranks of its kItems pairs (tile-local, < kTile): one register each, or with
/// RS_RANK16 two to a register (16 bits each), which frees kItems / 2 registers. Indexed by
/// compile-time item numbers only (unrolled loops), so the words stay in registers.
struct Ranks {
#if RS_RANK16
  static_assert(kTile <= 65536, "RS_RANK16: tile positions must fit 16 bits");
  uint32_t w[(kItems + 1) / 2] = {};
  __device__ __forceinline__ uint32_t get(int i) const { return (w[i >> 1] >> (16 * (i & 1))) & 0xffffu; }
  __device__ __forceinline__ void set(int i, uint32_t r) {
    const int sh = 16 * (i & 1);
    w[i >> 1] = (w[i >> 1] & ~(0xffffu << sh)) | (r << sh);
  }
#else
  uint32_t w[kItems];
  __device__ __forceinline__ uint32_t get(int i) const { return w[i]; }
  __device__ __forceinline__ void set(int i, uint32_t r) { w[i] = r; }
#endif
};

/// The onesweep CTA's shared memory: 2 x 4 x kTile bytes of staging (48 KB at 6144 pairs) plus
/// 10 KB: over the 48 KB a static allocation may take, so it is dynamic (opted in at launch).
struct OnesweepShared {
  uint32_t stage_keys[kTile];           ///< the tile's keys in digit order
  uint32_t stage_values[kTile];         ///< their values, at the same positions
  uint32_t warp_hist[kWarps][kDigits];  ///< per warp: its count of each digit, then its first rank in it
  uint32_t tile_start[kDigits];         ///< tile position of each digit's first pair
  int32_t out_shift[kDigits];           ///< output index of tile position j (digit d) = out_shift[d] + j
  uint32_t warp_totals[kWarps];
  uint32_t tile;
};

/// 3. One digit pass: rank each tile in shared memory, look back for its offsets, scatter.
__global__ void __launch_bounds__(kThreads, RS_MIN_BLOCKS)
    rs_onesweep(const uint32_t* __restrict__ keys_in, const uint32_t* __restrict__ values_in,
                uint32_t* __restrict__ keys_out, uint32_t* __restrict__ values_out, int64_t n, int pass,
                const uint32_t* __restrict__ digit_offsets, uint32_t* __restrict__ status,
                uint32_t* __restrict__ tile_counter) {
  extern __shared__ __align__(16) unsigned char smem[];
  OnesweepShared& s = *reinterpret_cast<OnesweepShared*>(smem);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;

  // a. Tile id in arrival order; the warp histograms start at zero.
  if (t == 0) s.tile = atomicAdd(tile_counter, 1u);
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s.warp_hist[w][t] = 0;
  __syncthreads();
  const int64_t tile = s.tile;
  const int64_t base = tile * kTile;
  const int valid = static_cast<int>(min(static_cast<int64_t>(kTile), n - base));

  // b. Keys; the items past N get the pad key (digit 255, last in the tile). Item i of the lane is
  //    at first + 32 i (rs::item_index).
  const int64_t first = rs::item_index(base, warp, 0, lane);
  const int64_t left = n - first;  // items i with 32 i < left exist
  uint32_t key[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) key[i] = 32 * i < left ? __ldcs(keys_in + first + 32 * i) : rs::kPadKey;

  // c. Warp multisplit: rank[i] = pairs of the warp before item i (in input order) with its digit.
  const unsigned lower_lanes = (1u << lane) - 1u;
  uint32_t* hist = s.warp_hist[warp];
  Ranks rank;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const unsigned d = rs::digit(key[i], pass);
    const unsigned peers = __match_any_sync(0xffffffffu, d);
    const uint32_t before = hist[d];
    __syncwarp();
    if ((peers & lower_lanes) == 0) hist[d] = before + __popc(peers);  // the lowest peer
    __syncwarp();
    rank.set(i, before + __popc(peers & lower_lanes));
  }
#if !RS_VALUES_LATE
  // The values are needed only from step e: loaded here, their latency overlaps steps d-e, and
  // they take no registers during the ranking.
  uint32_t val[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) val[i] = 32 * i < left ? __ldcs(values_in + first + 32 * i) : 0u;
#endif
  __syncthreads();

  // d. Thread t is digit t: each warp's first rank in the digit, the tile's count, published.
  const int d = t;
  uint32_t count = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const uint32_t c = s.warp_hist[w][d];
    s.warp_hist[w][d] = count;
    count += c;
  }
  const uint32_t mine = count - (d == kDigits - 1 ? static_cast<uint32_t>(kTile - valid) : 0u);  // pads excluded
  store_status(status + tile * kDigits + d, (tile == 0 ? rs::kFlagInclusive : rs::kFlagAggregate) | mine);
  const uint32_t start = block_exclusive_scan(count, s.warp_totals);  // its barrier also publishes warp_hist
  s.tile_start[d] = start;
  __syncthreads();

  // e. Keys and values into shared memory at their tile position.
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const unsigned dk = rs::digit(key[i], pass);
    const uint32_t at = rank.get(i) + s.tile_start[dk] + hist[dk];
    s.stage_keys[at] = key[i];
#if RS_VALUES_LATE
    rank.set(i, at);
#else
    s.stage_values[at] = val[i];
#endif
  }
#if RS_VALUES_LATE
  // The values, loaded once the keys are staged (their registers free): the look-back's round
  // trips overlap their latency.
  uint32_t val[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) val[i] = 32 * i < left ? __ldcs(values_in + first + 32 * i) : 0u;
#endif

  // f. Decoupled look-back for digit d: this tile's first output index of the digit.
  const uint32_t exclusive = look_back(status, tile, d, mine);
  s.out_shift[d] = static_cast<int32_t>(digit_offsets[d] + exclusive) - static_cast<int32_t>(s.tile_start[d]);
#if RS_VALUES_LATE
#pragma unroll
  for (int i = 0; i < kItems; ++i) s.stage_values[rank.get(i)] = val[i];
#endif
  __syncthreads();

  // g. Pairs out: consecutive threads, consecutive tile positions, so a digit's run of the tile
  //    goes to consecutive output words. (Unrolled by 4, not fully: fully unrolled, ptxas hoists
  //    the shared loads ahead of the stores: 118 registers unbounded at 16 pairs per thread
  //    against 110.)
#pragma unroll 4
  for (int k = 0; k < kItems; ++k) {
    const int j = k * kThreads + t;
    if (j < valid) {
      const uint32_t kv = s.stage_keys[j];
      const int32_t at = s.out_shift[rs::digit(kv, pass)] + j;
      keys_out[at] = kv;
      values_out[at] = s.stage_values[j];
    }
  }
}

struct Buffers {
  uint32_t* alt_keys;    ///< [N] the ping-pong copy of the keys
  uint32_t* alt_values;  ///< [N]
  uint32_t* words;       ///< rs::Layout
  rs::Layout l;
  int64_t tiles;
};

Buffers carve(d2k::Workspace& ws, const rs::Params& p) {
  Buffers b{};
  b.alt_keys = ws.take<uint32_t>(static_cast<uint64_t>(p.n));
  b.alt_values = ws.take<uint32_t>(static_cast<uint64_t>(p.n));
  b.l = rs::layout(p.n);
  b.tiles = rs::num_tiles(p.n);
  b.words = ws.take<uint32_t>(static_cast<uint64_t>(b.l.words));
  return b;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, rs::read_params(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const rs::Params p = rs::read_params(args);
    const rs::Pairs io = rs::read_pairs(args, p, kDLCUDA);
    if (!aligned16(io.keys)) throw d2k::abi_error("radix_sort_pairs expert: keys must be 16-byte aligned (uint4 loads)");
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, p);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    uint32_t* counts = b.words + b.l.counts;
    uint32_t* offsets = b.words + b.l.offsets;
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.words, 0, static_cast<size_t>(b.l.zeroed) * sizeof(uint32_t), st));
    const int64_t hist_blocks =
        std::clamp<int64_t>((p.n / 4 + kHistThreads * kHistChunksPerThread - 1) / (kHistThreads * kHistChunksPerThread), 1,
                            kHistMaxBlocks);
    rs_histogram<<<static_cast<unsigned>(hist_blocks), kHistThreads, 0, st>>>(io.keys, p.n, counts);
    rs_digit_offsets<<<kPasses, kDigits, 0, st>>>(counts, offsets);
    // Ping-pong: in -> alt -> out -> alt -> out, so the fourth pass writes the outputs.
    constexpr int kSmem = sizeof(OnesweepShared);
    D2K_CUDA_TRY(args, cudaFuncSetAttribute(rs_onesweep, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
#if RS_MIN_BLOCKS > 2
    // More than two CTAs of ~58 KB per SM need the largest shared-memory carveout: ask for it.
    D2K_CUDA_TRY(args, cudaFuncSetAttribute(rs_onesweep, cudaFuncAttributePreferredSharedMemoryCarveout,
                                            cudaSharedmemCarveoutMaxShared));
#endif
    const uint32_t* src_k = io.keys;
    const uint32_t* src_v = io.values;
    for (int pass = 0; pass < kPasses; ++pass) {
      uint32_t* dst_k = pass % 2 == 0 ? b.alt_keys : io.keys_out;
      uint32_t* dst_v = pass % 2 == 0 ? b.alt_values : io.values_out;
      rs_onesweep<<<static_cast<unsigned>(b.tiles), kThreads, kSmem, st>>>(
          src_k, src_v, dst_k, dst_v, p.n, pass, offsets + pass * kDigits,
          b.words + b.l.status + static_cast<int64_t>(pass) * b.tiles * kDigits, b.words + b.l.counters + pass);
      src_k = dst_k;
      src_v = dst_v;
    }
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
