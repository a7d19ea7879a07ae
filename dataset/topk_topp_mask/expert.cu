// topk_topp_mask — expert: radix select on order-preserving float keys, no sort of the row.
//
// Per row of V fp32 logits the kept set is {x >= tau}; finding tau needs the k-th largest logit
// and, for top-p, the probability mass above each of the few values at the top. Neither needs the
// row sorted: a radix select on the 32-bit order-preserving key of each logit finds the bin that
// holds the k-th largest, and only the keys in and above that bin (a few dozen to a few hundred
// for language-model logits) are sorted, on chip.
//
//   1. stats    (S CTAs per row) one read of the row: online maximum and sum of exponentials (fp32
//               terms summed in fp64, with the weight of their argument errors), and a 4096-bin
//               shared-memory histogram of the keys' first 12 bits, warp-aggregated
//               (__match_any_sync) so that a warp adds once per distinct bin. The last CTA of the
//               row to finish merges the partial statistics and histograms and picks the bin
//               holding the k-th largest key (a warp scan over the bins from the top). Only when
//               that bin holds more than kCap keys (heavy ties, tightly clustered logits) does
//               that CTA read the row again for the next 10-bit digit, at most twice.
//   2. collect  a second read: the keys in and above the bin are appended (warp-aggregated
//               atomics) to the row's candidate list; the row's last CTA sorts the list in shared
//               memory (bitonic) and decides tau: the k-th largest candidate, then the tie groups
//               from the top while the mass above the group is < top_p * Z. Near top_p the fp32
//               statistics cannot decide exactly; such a row (about one in a thousand for these
//               logits; none of the 1312 bench rows in the CPU tests' host emulation) is flagged.
//   3. recheck  a fixed grid that decides the flagged rows in fp64 (Z re-summed from fp64
//               exponentials, split over the row); returns at once when none is flagged.
//   4. output   one write of the row: zeros, then the kept values stored by index from the sorted
//               candidates (no third read). Only a row whose kept set includes a tie group too
//               large to list reads the row again.
//
// DRAM: 2 reads + 1 write per element (definition.json's cost model); the select's later stages
// touch only the candidates.
//
// Variants considered:
//   a. full segmented sort + cumulative sum (naive.cu): log2(V)/8 radix passes of keys and values,
//      each reading and writing the row; 10-20x the traffic of (c).
//   b. three histogram passes (12+10+10 bits) to find the k-th largest exactly, then a pass to
//      collect the keys above it for top-p: 5 reads; rejected for (c)'s bounded candidate list,
//      which replaces passes 2-3 for every row of the bench data.
//   b'. (c) with the further digits as two launches over all rows' CTAs: two launches of CTAs
//      that return at once on the bench data (a few microseconds against the Gemma row's 24 us
//      SOL); the row's last CTA refines instead.
//   c. (chosen) one histogram pass, a collecting pass, on-chip sort of the candidates; further
//      digit passes only for rows whose bin overflows the candidate buffer.
//   d. one-pass streaming filter (a running threshold raised as candidates arrive): saves the
//      second read but needs a data-dependent buffer policy that must stay exact under ties;
//      left for later.
//   Several CTAs per row when B is small (S = ceil(1024 / B), slices of at least 4096 logits), so
//   the 32-row Gemma batch still fills the GPU; one CTA per row at B >= 1024.
//
// Histogram updates: one shared-memory atomic per logit. The warp-aggregated form (MATCH.ANY,
// one atomic per distinct bin in a warp) was the first choice, since logits crowd a few dozen
// bins; on the H200 it was slower on every bench row (2026-12-01, docs/results/topk_topp_mask.md:
// the plain atomics 1.36x / 1.76x / 1.07x faster), so it is the variant now.
// %VARIANT% matchany -DTOPK_WARP_AGGREGATED_ATOMICS -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (warp-aggregated histogram: MATCH.ANY + one ATOMS per distinct bin; measures the match)
//
// Why the default of 2026-12-01 missed 50% of SOL (330.85 / 751.58 us against 108.6 / 367.4 us; diagnosis from
// the code and ptxas, not a profile):
//   - stats_kernel holds 91 registers x 512 threads: ONE CTA per SM (25% occupancy). The row's
//     last CTA then runs its serial tail alone on the SM (the S histograms merged from L2, a
//     one-warp scan of 4096 bins, thread 0 merging S partial statistics with fp64 exp2): the SM
//     streams nothing meanwhile. At B = 256 (S = 4, 152 KB slices) a quarter of the CTAs carry
//     that tail over about 5 us of streaming each (152 KB at 1/132 of 4.27 TB/s), which is why the
//     Qwen row is the worst per byte.
//     collect_kernel (58 registers, 2 CTAs/SM) has the same shape with the bitonic sort and
//     thread 0's decision loop.
//   - per logit the statistics cost an exp2f (MUFU), two F2F.F64.F32 (quarter-rate conversions,
//     16/clk/SM) and a DADD + DFMA besides the histogram atomic; the rescale on a new maximum
//     (fp64 exp2) is inlined at each of the 16 unrolled logits (10k SASS lines for the kernel).
//     At 4.27 TB/s an SM must take about 4.6 logits per clock: the conversions alone allow 8.
//     The histogram atomic is not the suspect: atomicAdd(..., 1) compiles to ATOMS.POPC.INC,
//     which merges a warp's same-bin increments in hardware (why MATCH.ANY only added cost; the
//     matchany build has 56 registers, 2 CTAs/SM, and was still the slower).
//   - 12 B/logit of DRAM in four kernels and a memset: each boundary drains the GPU (tail) and
//     the output pass streams zeros alone.
// Measured on the H200 (2026-12-02, the variants step of scripts/gpu/checks/t-topk.sh: `d2k bench
// --targets expert,expert:<each> --bench-rounds 1 --max-time 0.3`, noise 0.4-3.7%; median us and
// % of SOL on Qwen 256 x 151936 / Llama 1024 x 128256 / Gemma 32 x 262144; every form PASSED):
//   one CTA per SM (TOPK_MIN_BLOCKS=1, the default before)  334.56 32.5% | 756.98 48.6% | 167.91 13.6%
//   occ2: 2 CTAs per SM (<= 64 registers), then the default 275.11 39.5% | 634.37 58.0% | 144.13 15.8%
//   occ2w32 (fp32 error weight)                              300.61 36.2% | 655.96 56.1% | 150.40 15.2%
//   occ2c32 (fp32 compensated statistics)                    307.26 35.4% |1106.05 33.2% | 152.32 15.0%
//   fused (no output pass, rows walked backwards)            271.55 40.0% |1049.97 35.0% | 142.72 16.0%
//   reread (persistent, second read from L2)                 411.55 26.4% |1220.36 30.1% | 110.43 20.7%
//   rereadc32                                                436.22 24.9% |1723.32 21.3% | 114.53 19.9%
//   reread256 (256 threads, 4 CTAs per SM)                   403.52 26.9% |1285.43 28.6% |  95.71 23.8%
// The second CTA per SM is what pays (1.22x / 1.19x / 1.16x): it streams while the row's last CTA
// runs its serial tail. The fp32 statistics and the fused output lose on the Llama row; the
// persistent reread form wins only on the small Gemma batch (its waits for a row's bin cost more
// than the L2 saves once the GPU is full). 50% of SOL: met on Llama, missed on Qwen (39.5%).
// %VARIANT% occ1 -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=1
//   (the former default: one 512-thread CTA per SM, 91 registers)
// %VARIANT% occ2w32 -DTOPK_W32 -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (the error weight w summed in fp32, the rescale out of line: one F2F per logit fewer;
//   40 B of spill in the rare refine path, none in the per-logit loop)
// %VARIANT% occ2c32 -DTOPK_C32 -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (the per-thread statistics all in fp32: z as a compensated TwoSum pair, w in fp32; no
//   fp64 operation or conversion per logit; the same 40 B of spill in the refine path)
// %VARIANT% fused -DTOPK_REVERSE_COLLECT -DTOPK_FUSED_OUTPUT -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (the collecting pass writes the zeros and stores the kept values: no output pass over
//   the row, three launches that stream; rows walked from the last so that the first collecting
//   CTAs hit what the statistics pass left in L2)
// %VARIANT% reread -DTOPK_L2_REREAD -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (one persistent kernel: each 64 KiB slice read twice within microseconds, the second read
//   from L2: 8 B/logit of DRAM instead of 12; a wait per row for its bin; zeros and kept values
//   written as in fused; 16 B of spill, stored and loaded once per work item, none per logit)
// %VARIANT% reread256 -DTOPK_THREADS=256 -DTOPK_MIN_BLOCKS=4 -DTOPK_L2_REREAD -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0
//   (reread with 256-thread CTAs, 4 per SM: the fastest form on the 32-row Gemma batch)
//
// Aimed at the Qwen row (39.6% of SOL, 275 us against <= 217 us for 50%; timed 2026-12-03, the
// table below; diagnosis from the SASS, not a profile). The previous default's statistics loop issues about 27
// instructions per logit (order key 5, bin address 3, ATOMS, the online maximum's compare and
// branch with a BSSY/BSYNC pair, a reload of c, exp2f's subnormal rescaling 4, MUFU, 2 F2F, DADD,
// DFMA): at 4 warp instructions per clock an SM then takes at most 4.7 logits per clock, where
// 4.27 TB/s needs 4.1, so the first read cannot overlap its loads with its arithmetic and runs
// well below the copy bandwidth. The Qwen row pays it most per byte, with its 4 CTAs per row
// whose last also sums 4 x 4096 histogram words from L2 and scans the 4096 bins with one warp.
//                     stats / collect registers (2 CTAs/SM unless noted), spill
// %VARIANT% lean -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (62 / 58, none. About 14 instructions per logit: the maximum once per 16-logit load round,
//   select.cuh accumulate_batch; exp2 as ex2.approx.ftz; w's round in fp32; first_digit in 4
//   instructions + address + ATOMS; the collecting pass's take as one FSETP against key_floor)
// %VARIANT% rowhist -DTOPK_LEAN=0 -DTOPK_MIN_BLOCKS=2
//   (64 / 58, none. The row's last statistics CTA works less alone: the row's CTAs add their
//   non-empty bins (a few hundred) to one row histogram in L2 instead of storing 4096 words
//   each, the last loads 4096 words instead of 4096 S; block_pick and a block tree for the S
//   partial statistics instead of one warp and thread 0. Rows of one CTA (Llama) unchanged)
// %VARIANT% leanrow -DTOPK_MIN_BLOCKS=2
//   (62 / 58, none. Both at 2 CTAs per SM: the default's code at the previous occupancy)
// Measured on the H200 (2026-12-03, step `next` of scripts/gpu/checks/t-topk.sh: one `d2k bench
// --targets expert,expert:lean,expert:rowhist,expert:leanrow,expert:leanrow3 --bench-rounds 1
// --max-time 0.3`, every target PASSED; median us (noise) % of SOL, speed-up over occ2_prev, the
// default then):
//                         Qwen 256 x 151936          Llama 1024 x 128256        Gemma 32 x 262144
//   occ2_prev (default)   275.20 (2.00%) 39.4%        634.21 (1.48%) 57.9%        144.03 (1.16%) 15.8%
//   lean                  218.08 (2.27%) 49.8% 1.26x  527.87 (1.86%) 69.5% 1.20x  125.89 (2.27%) 18.1% 1.14x
//   rowhist               253.03 (2.38%) 42.9% 1.09x  616.68 (1.42%) 59.5% 1.03x  107.36 (1.88%) 21.2% 1.34x
//   leanrow               196.83 (3.08%) 55.1% 1.40x  503.38 (1.89%) 72.9% 1.26x   89.25 (2.48%) 25.5% 1.61x
//   leanrow3              180.67 (3.09%) 60.1% 1.52x  473.38 (2.01%) 77.5% 1.34x   82.69 (2.67%) 27.5% 1.74x
// leanrow3 (TOPK_LEAN + TOPK_ROW_HIST at 3 CTAs per SM) is now the default: 60.1% / 77.5% of SOL
// on the two large rows, past the 50% bar. Its stats / collect kernels take 40 / 40 registers
// with 8 B of stack stored and loaded once per CTA, outside the per-logit loop. The variants
// above the Qwen-row ones (matchany to reread256) keep the previous default's base
// (-DTOPK_LEAN=0 -DTOPK_ROW_HIST=0, 2 CTAs per SM unless they set it), so each rebuilds the
// binary that was measured.
// %VARIANT% occ2_prev -DTOPK_LEAN=0 -DTOPK_ROW_HIST=0 -DTOPK_MIN_BLOCKS=2
//   (the default before 2026-12-03: per-logit maximum, per-CTA histograms merged by the row's
//   last CTA with one warp's pick, 2 CTAs per SM; 56 / 58 registers, none spilled)
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "d2k/solution.h"
#include "select.cuh"

namespace topk_expert {

using topk::Bucket;
using topk::kCap;
using topk::kLevels;
using topk::kMaxBins;
using topk::RowDecision;
using topk::Stats;

#ifndef TOPK_THREADS
#define TOPK_THREADS 512
#endif
constexpr int kThreads = TOPK_THREADS;  ///< threads per CTA (a multiple of 32, at least 64)
static_assert(kThreads % 32 == 0 && kThreads >= 64, "whole warps; the bin choice uses the first");
constexpr int kWarps = kThreads / 32;
constexpr int kCtaTarget = 1024;         ///< CTAs per launch the row split aims at
constexpr int64_t kMinSlice = 4096;      ///< logits per CTA at least
constexpr int kTickets = 4;              ///< per-row arrival counters, one per stage:
constexpr int kTicketStats = 0, kTicketCollect = 1, kTicketRecheck = 2;
constexpr int kRecheckCtas = 264;        ///< the recheck grid (two per SM of an H200)
constexpr int64_t kRecheckSlice = 8192;  ///< logits per recheck work item

// Variant switches (the `%VARIANT%` lines above). TOPK_LEAN and TOPK_ROW_HIST are on by default
// (-DTOPK_LEAN=0 / -DTOPK_ROW_HIST=0 turn them off), the others off.
#ifndef TOPK_MIN_BLOCKS
#define TOPK_MIN_BLOCKS 3
#endif
#ifndef TOPK_LEAN
#define TOPK_LEAN 1
#endif
#ifndef TOPK_ROW_HIST
#define TOPK_ROW_HIST 1
#endif
/// CTAs per SM the statistics and collecting kernels are compiled for (__launch_bounds__'s
/// second argument): 3 caps them at 40 registers (2 at 64), so that other CTAs stream while the
/// row's last CTA runs its serial merge, bin choice, sort and decision.
constexpr int kMinBlocks = TOPK_MIN_BLOCKS;
#ifdef TOPK_REVERSE_COLLECT
/// The collecting pass walks the rows from the last: its first CTAs re-read what the statistics
/// pass read last, still in L2 (whose loads then keep the default L2 policy, not evict-first).
constexpr bool kReverseCollect = true;
#else
constexpr bool kReverseCollect = false;
#endif
#ifdef TOPK_L2_REREAD
/// One persistent kernel reads each slice twice in a row (statistics and histogram, then, once
/// the row's bin is known, the candidates) so that the second read hits L2: 8 B of DRAM per
/// logit instead of 12. Implies kFusedOutput.
constexpr bool kL2Reread = true;
#else
constexpr bool kL2Reread = false;
#endif
/// kL2Reread's work item: 32 logits per thread (64 KiB for 512 threads), so that the slices of
/// all resident CTAs (about 17 MB for 2 x 512 or 4 x 256 threads per SM) stay well inside the
/// 50 MB L2 between a slice's two reads.
constexpr int64_t kRereadSlice = 32 * TOPK_THREADS;
constexpr int kRereadMaxSlices = 64;  ///< slices per row at most (longer slices beyond 2^20 / 64 logits)
static_assert(kRereadMaxSlices <= kThreads, "one partial statistic per thread in the merge");
#if defined(TOPK_FUSED_OUTPUT) || defined(TOPK_L2_REREAD)
/// The collecting pass writes the zeros of its slice and the row's last CTA stores the kept
/// values: no output pass over the row; the output kernel finishes only the rows decided in fp64
/// or whose kept set includes an unlisted tie group.
constexpr bool kFusedOutput = true;
#else
constexpr bool kFusedOutput = false;
#endif
#ifdef TOPK_W32
/// The error weight w summed in fp32 per thread (one fp64 conversion per logit instead of two).
constexpr bool kW32 = true;
#else
constexpr bool kW32 = false;
#endif
#ifdef TOPK_C32
/// The per-thread statistics in fp32 only: z as a compensated pair, w in fp32 (no fp64 operation
/// or conversion per logit). Wins over kW32.
constexpr bool kC32 = true;
#else
constexpr bool kC32 = false;
#endif

#if TOPK_LEAN
/// Fewer issue slots per logit in the two reads: the statistics take the maximum once per load
/// round of 16 logits (select.cuh accumulate_batch: no per-logit compare and branch, one inlined
/// fp64 rescale instead of sixteen, w's round in fp32, exp2 without the subnormal rescaling), the
/// first digit from a two-instruction key, and the collecting pass compares the logit as a float
/// with the listed range's lowest value instead of forming each key.
constexpr bool kLean = true;
#else
constexpr bool kLean = false;
#endif
#if TOPK_ROW_HIST
/// The row's last statistics CTA works less alone: the CTAs of a row add their non-empty bins to
/// one histogram of the row in L2 (zeroed by the call's memset) instead of each storing all 4096
/// bins for the last to sum S of (8 coalesced loads a thread instead of 8 S dependent ones); the
/// bin is picked by the whole block (block_pick: a block scan, not one warp's 128 serial loads a
/// lane) and the S partial statistics merged by a block tree instead of thread 0.
constexpr bool kRowHist = true;
#else
constexpr bool kRowHist = false;
#endif
static_assert(!(kRowHist && kL2Reread), "the persistent form has its own row histogram");

/// Everything a row carries between the stages.
struct RowState {
  Stats stats;
  Bucket bucket;
  RowDecision decision;
  std::uint32_t n_cand;
};

struct Params {
  const float* x;
  float* out;
  int64_t B, V;
  int S;          ///< CTAs per row
  int64_t chunk;  ///< logits per CTA (a multiple of 4)
  int64_t k_eff;
  double top_p, inv_t;
  float c;  ///< log2(e) / temperature
  RowState* rows;
  Stats* part;                 ///< [B * S] partial statistics
  std::uint32_t* slots;        ///< [B * S * kMaxBins] per-CTA histograms (S > 1, not kRowHist)
  unsigned long long* cand;    ///< [B * kCap] (key << 32 | index)
  std::uint32_t* counters;     ///< [B * kTickets] arrival tickets, then [B] candidate counts
  std::uint32_t* flagged;      ///< [B] rows to decide in fp64, then the count
  std::uint32_t* finish;       ///< kFusedOutput: [B] rows the output kernel writes, then the count
  std::uint32_t* ready;        ///< kL2Reread: [B] the row's bucket and statistics are published
  std::uint32_t* claim;        ///< kL2Reread: the next work item
  std::uint32_t* row_hist;     ///< kL2Reread, kRowHist (S > 1): [B * kMaxBins] the rows' first digits
  double* part64;              ///< [B * recheck slices] fp64 partial sums
  int64_t recheck_slices;
};

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__host__ __device__ inline int64_t lmin(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- slices of a row, with 16-byte accesses where the alignment allows ----------------------

/// Row loads: evict-first (the row's last read) or, with kKeep, cached in L2 only with the
/// default policy (a read the next pass repeats soon; L1 would not keep it that long).
template <bool kKeep>
__device__ __forceinline__ float4 load_row(const float4* p) {
  if constexpr (kKeep) return __ldcg(p);
  else return __ldcs(p);
}

/// f(x, i) on the four logits of q, the first of them logit i.
template <class F>
__device__ __forceinline__ void each_of4(const float4& q, int64_t i, F& f) {
  f(q.x, i);
  f(q.y, i + 1);
  f(q.z, i + 2);
  f(q.w, i + 3);
}

/// Calls f(x, i) for every logit i in [beg, end) of the row at `rowp` (unaligned head and tail
/// scalar, the body as float4, four loads in flight per thread): the row loads of every pass
/// that reads logits (statistics, refinement digits, candidates, and the persistent form's two
/// reads).
template <bool kKeep = false, class F>
__device__ __forceinline__ void for_slice(const float* rowp, int64_t beg, int64_t end, F&& f) {
  const float* p = rowp + beg;
  const int64_t n = end - beg;
  const int64_t head = lmin(n, (16 - (reinterpret_cast<uintptr_t>(p) & 15)) / 4 & 3);
  for (int64_t i = threadIdx.x; i < head; i += blockDim.x) f(p[i], beg + i);
  const int64_t nv = (n - head) / 4;
  const float4* pv = reinterpret_cast<const float4*>(p + head);
  constexpr int kUnroll = 4;
  int64_t v = threadIdx.x;
  for (; v + (kUnroll - 1) * kThreads < nv; v += kUnroll * kThreads) {
    float4 q[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) q[u] = load_row<kKeep>(pv + v + u * kThreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) each_of4(q[u], beg + head + 4 * (v + u * kThreads), f);
  }
  for (; v < nv; v += kThreads) each_of4(load_row<kKeep>(pv + v), beg + head + 4 * v, f);
  for (int64_t i = head + 4 * nv + threadIdx.x; i < n; i += blockDim.x) f(p[i], beg + i);
}

/// Adds one to bin `bin` of the shared histogram: one atomic per logit, or (the matchany
/// variant) once per distinct bin of a warp (MATCH + one ATOMS per distinct bin).
__device__ __forceinline__ void hist_add(std::uint32_t* h, std::uint32_t bin) {
#ifdef TOPK_WARP_AGGREGATED_ATOMICS
  const unsigned active = __activemask();
  const unsigned peers = __match_any_sync(active, bin);
  if ((threadIdx.x & 31) == static_cast<unsigned>(__ffs(peers) - 1)) atomicAdd(&h[bin], __popc(peers));
#else
  atomicAdd(&h[bin], 1u);
#endif
}

/// A thread's running statistics in the form the switches choose: fp32 terms summed in fp64
/// (select.cuh accumulate), the error weight in fp32 (kW32) or all in fp32 (kC32).
struct ThreadStats {
  Stats s;
  float wf = 0;
  topk::Part32 q;
  __device__ __forceinline__ void add(float x, float c) {
    if constexpr (kC32) topk::accumulate_c32(s, q, x, c);
    else if constexpr (kW32) topk::accumulate_w32(s, wf, x, c);
    else topk::accumulate(s, x, c);
  }
  __device__ __forceinline__ Stats done() {
    if constexpr (kC32) topk::fold_c32(s, q);
    else if constexpr (kW32) topk::flush_w(s, wf);
    return s;
  }
};

/// The first read of a slice: each logit's first key digit into the shared histogram h and the
/// logit into the thread's statistics (stats_kernel, and reread_kernel's first read).
template <bool kKeep>
__device__ __forceinline__ void stats_slice(const float* rowp, int64_t beg, int64_t end, std::uint32_t* h,
                                            ThreadStats& ts, float c) {
  for_slice<kKeep>(rowp, beg, end, [&](float x, int64_t) {
    hist_add(h, topk::digit(topk::order_key(x), 0));
    ts.add(x, c);
  });
}

/// stats_slice in TOPK_LEAN's form: the slice in load rounds of 16 logits a thread (4 float4, as
/// for_slice), each round's statistics by accumulate_batch; the unaligned head and tail and the
/// body's last float4s one batch each.
template <bool kKeep>
__device__ __forceinline__ void stats_slice_lean(const float* rowp, int64_t beg, int64_t end, std::uint32_t* h,
                                                 Stats& st, float c) {
  const float* p = rowp + beg;
  const int64_t n = end - beg;
  const int64_t head = lmin(n, (16 - (reinterpret_cast<uintptr_t>(p) & 15)) / 4 & 3);
  auto one = [&](float x) {
    hist_add(h, topk::first_digit(x));
    const float b[1] = {x};
    topk::accumulate_batch<1>(st, b, c);
  };
  for (int64_t i = threadIdx.x; i < head; i += blockDim.x) one(p[i]);
  const int64_t nv = (n - head) / 4;
  const float4* pv = reinterpret_cast<const float4*>(p + head);
  constexpr int kUnroll = 4;
  int64_t v = threadIdx.x;
  for (; v + (kUnroll - 1) * kThreads < nv; v += kUnroll * kThreads) {
    float4 q[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) q[u] = load_row<kKeep>(pv + v + u * kThreads);
    float b[4 * kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      b[4 * u] = q[u].x;
      b[4 * u + 1] = q[u].y;
      b[4 * u + 2] = q[u].z;
      b[4 * u + 3] = q[u].w;
    }
#pragma unroll
    for (int i = 0; i < 4 * kUnroll; ++i) hist_add(h, topk::first_digit(b[i]));
    topk::accumulate_batch<4 * kUnroll>(st, b, c);
  }
  for (; v < nv; v += kThreads) {
    const float4 q = load_row<kKeep>(pv + v);
    const float b[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) hist_add(h, topk::first_digit(b[i]));
    topk::accumulate_batch<4>(st, b, c);
  }
  for (int64_t i = head + 4 * nv + threadIdx.x; i < n; i += blockDim.x) one(p[i]);
}

/// Shared scratch of block_stats (plain arrays: a __shared__ object cannot have initialisers).
struct StatsScratch {
  float m[kWarps];
  double z[kWarps], w[kWarps];
};

/// Block-wide merge of per-thread statistics; the result in thread 0.
__device__ Stats block_stats(Stats s, float c, StatsScratch& scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    Stats t;
    t.m = __shfl_down_sync(0xFFFFFFFFu, s.m, o);
    t.z = __shfl_down_sync(0xFFFFFFFFu, s.z, o);
    t.w = __shfl_down_sync(0xFFFFFFFFu, s.w, o);
    s = topk::merge(s, t, c);
  }
  if ((threadIdx.x & 31) == 0) {
    scratch.m[threadIdx.x / 32] = s.m;
    scratch.z[threadIdx.x / 32] = s.z;
    scratch.w[threadIdx.x / 32] = s.w;
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < kWarps; ++w) {
      Stats t;
      t.m = scratch.m[w];
      t.z = scratch.z[w];
      t.w = scratch.w[w];
      s = topk::merge(s, t, c);
    }
  return s;
}

/// Whether this CTA is the last of the row's S to arrive at ticket `t` (all of them when S = 1).
/// Every thread fences its own global writes (histogram slots, candidates) before the count says
/// the CTA is done; the last CTA fences again before it reads the others'.
__device__ bool last_to_arrive(const Params& P, int64_t row, int t) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = P.S == 1 || atomicAdd(&P.counters[row * kTickets + t], 1u) == static_cast<unsigned>(P.S - 1);
    if (last) __threadfence();
  }
  __syncthreads();
  return last;
}

/// Publishes this CTA's histogram (S > 1) and, in the last CTA, sums the row's histograms into h.
__device__ bool merge_hist(const Params& P, int64_t row, int slice, int nbins, std::uint32_t* h) {
  if (kRowHist) {
    if (P.S > 1) {
      // Only the non-empty bins (a few hundred for language-model logits), as fire-and-forget
      // reductions into the row's histogram in L2.
      std::uint32_t* rh = P.row_hist + row * kMaxBins;
      for (int i = threadIdx.x; i < nbins; i += kThreads)
        if (h[i]) atomicAdd(rh + i, h[i]);
    }
    if (!last_to_arrive(P, row, kTicketStats)) return false;
    if (P.S > 1)
      for (int i = threadIdx.x; i < nbins; i += kThreads) h[i] = __ldcg(P.row_hist + row * kMaxBins + i);
    __syncthreads();
    return true;
  }
  if (P.S > 1) {
    std::uint32_t* mine = P.slots + (row * P.S + slice) * kMaxBins;
    for (int i = threadIdx.x; i < nbins; i += kThreads) mine[i] = h[i];
  }
  if (!last_to_arrive(P, row, kTicketStats)) return false;
  if (P.S > 1)
    for (int i = threadIdx.x; i < nbins; i += kThreads) {
      std::uint32_t s = 0;
      for (int q = 0; q < P.S; ++q) s += __ldcg(P.slots + (row * P.S + q) * kMaxBins + i);
      h[i] = s;
    }
  __syncthreads();
  return true;
}

/// The warp form of topk::pick_bin over h[0, nbins) (the first warp; result in warp lane 0's
/// out[0..2]): each lane sums nbins/32 bins from the top, a warp scan finds the lane where the
/// running count reaches `need`, that lane walks its bins.
__device__ void warp_pick(const std::uint32_t* h, int nbins, std::uint32_t need, std::uint32_t* out) {
  const int lane = threadIdx.x & 31, per = nbins / 32;
  const int top = nbins - 1 - lane * per;  // this lane's bins: top, top-1, ..., top-per+1
  std::uint32_t sum = 0;
  for (int i = 0; i < per; ++i) sum += h[top - i];
  std::uint32_t incl = sum;
  for (int o = 1; o < 32; o <<= 1) {
    const std::uint32_t t = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += t;
  }
  const std::uint32_t excl = incl - sum;
  const unsigned reach = __ballot_sync(0xFFFFFFFFu, incl >= need);
  if (lane == __ffs(reach) - 1) {
    std::uint32_t a = excl;
    for (int i = 0; i < per; ++i) {
      const std::uint32_t c = h[top - i];
      if (a + c >= need) {
        out[0] = static_cast<std::uint32_t>(top - i);
        out[1] = a;
        out[2] = c;
        break;
      }
      a += c;
    }
  }
}

/// A copy of *p read from L2 (bypassing L1, which may hold a stale line: the rows' states share
/// cache lines and are published while the kernel runs).
template <class T>
__device__ T load_cg(const T* p) {
  static_assert(sizeof(T) % 4 == 0, "whole 32-bit words");
  T v;
  const unsigned* src = reinterpret_cast<const unsigned*>(p);
  unsigned* dst = reinterpret_cast<unsigned*>(&v);
  for (unsigned i = 0; i < sizeof(T) / 4; ++i) dst[i] = __ldcg(src + i);
  return v;
}

/// The block form of topk::pick_bin over h[0, kMaxBins) (every thread calls it; the result in
/// out[0..2] after it returns): thread t owns kMaxBins / kThreads bins from the top, a block scan of
/// their sums finds the one thread whose range holds the `need`-th key from the top, and that
/// thread walks its bins. A few barriers instead of warp_pick's 128 serial loads per lane: the
/// row's other CTAs wait on it (kL2Reread), the row's tail is shorter (kRowHist).
__device__ void block_pick(const std::uint32_t* h, std::uint32_t need, std::uint32_t* out) {
  __shared__ std::uint32_t warp_sums[kWarps];
  constexpr int per = kMaxBins / kThreads;
  static_assert(per * kThreads == kMaxBins, "whole bins per thread");
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int top = kMaxBins - 1 - static_cast<int>(threadIdx.x) * per;  // bins top, top-1, ..., top-per+1
  std::uint32_t sum = 0;
  for (int i = 0; i < per; ++i) sum += h[top - i];
  std::uint32_t incl = sum;
  for (int o = 1; o < 32; o <<= 1) {
    const std::uint32_t t = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += t;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  for (int w = 0; w < warp; ++w) incl += warp_sums[w];
  const std::uint32_t excl = incl - sum;
  if (excl < need && incl >= need) {
    std::uint32_t a = excl;
    for (int i = 0; i < per; ++i) {
      const std::uint32_t c = h[top - i];
      if (a + c >= need) {
        out[0] = static_cast<std::uint32_t>(top - i);
        out[1] = a;
        out[2] = c;
        break;
      }
      a += c;
    }
  }
  __syncthreads();
}

/// Further digits for a row whose bin of the k-th largest key holds more than kCap keys (heavy
/// ties, tightly clustered logits): this CTA alone reads the whole row once per digit and
/// histograms the next 10 bits of the keys in the bin. The bench data never needs it, so the rare
/// rows that do pay it on one CTA instead of every row paying two more launches.
__device__ void refine_row(const Params& P, int64_t row, std::uint32_t* h, std::uint32_t* pick, Bucket& bucket) {
  for (int level = 1; level < kLevels; ++level) {
    if (bucket.next_level != level) return;  // uniform: `bucket` is shared, written before a barrier
    const Bucket b = bucket;
    const int nbins = 1 << topk::level_bits(level);
    for (int i = threadIdx.x; i < nbins; i += kThreads) h[i] = 0;
    __syncthreads();
    for_slice(P.x + row * P.V, 0, P.V, [&](float x, int64_t) {
      const std::uint32_t key = topk::order_key(x);
      if (topk::in_bucket(key, b.lo, b.hi)) hist_add(h, topk::digit(key, level));
    });
    __syncthreads();
    if (threadIdx.x < 32) warp_pick(h, nbins, static_cast<std::uint32_t>(P.k_eff) - b.above, pick);
    __syncthreads();
    if (threadIdx.x == 0) topk::advance(bucket, level, pick[0], pick[1], pick[2]);
    __syncthreads();
  }
}

// ---- 1. statistics and the first digit -------------------------------------------------------

__global__ void __launch_bounds__(kThreads, kMinBlocks) stats_kernel(Params P) {
  __shared__ std::uint32_t h[kMaxBins];
  __shared__ StatsScratch scratch;
  __shared__ std::uint32_t pick[3];
  const int64_t row = blockIdx.x / P.S;
  const int slice = static_cast<int>(blockIdx.x % P.S);
  for (int i = threadIdx.x; i < kMaxBins; i += kThreads) h[i] = 0;
  __syncthreads();
  const int64_t beg = slice * P.chunk, end = lmin(P.V, beg + P.chunk);
  const float c = P.c;
  Stats s;
  if constexpr (kLean) {
    stats_slice_lean<kReverseCollect>(P.x + row * P.V, beg, end, h, s, c);
    s = block_stats(s, c, scratch);
  } else {
    ThreadStats ts;
    stats_slice<kReverseCollect>(P.x + row * P.V, beg, end, h, ts, c);
    s = block_stats(ts.done(), c, scratch);
  }
  if (threadIdx.x == 0) P.part[row * P.S + slice] = s;
  if (!merge_hist(P, row, slice, kMaxBins, h)) return;
  // The row's last CTA: its statistics, then the bin of the k-th largest key. (Raw storage: a
  // __shared__ object cannot have initialisers.)
  __shared__ alignas(Bucket) unsigned char bucket_raw[sizeof(Bucket)];
  Bucket& bucket = *reinterpret_cast<Bucket*>(bucket_raw);
  if constexpr (kRowHist) {
    // The S partial statistics by a block tree (each thread first merges its strided share, in a
    // fixed order: the same sums every call), the bin by a block scan.
    Stats mine;
    for (int q = threadIdx.x; q < P.S; q += kThreads) mine = topk::merge(mine, load_cg(P.part + row * P.S + q), c);
    const Stats all = block_stats(mine, c, scratch);
    block_pick(h, static_cast<std::uint32_t>(P.k_eff), pick);
    if (threadIdx.x == 0) {
      P.rows[row].stats = all;
      Bucket b;
      topk::advance(b, 0, pick[0], pick[1], pick[2]);
      bucket = b;
    }
    __syncthreads();
    refine_row(P, row, h, pick, bucket);
    if (threadIdx.x == 0) P.rows[row].bucket = bucket;
    return;
  }
  if (threadIdx.x < 32) warp_pick(h, kMaxBins, static_cast<std::uint32_t>(P.k_eff), pick);
  __syncthreads();
  if (threadIdx.x == 0) {
    Stats all;
    for (int q = 0; q < P.S; ++q) {
      Stats pq;
      pq.m = __ldcg(&P.part[row * P.S + q].m);
      pq.z = __ldcg(&P.part[row * P.S + q].z);
      pq.w = __ldcg(&P.part[row * P.S + q].w);
      all = topk::merge(all, pq, c);
    }
    P.rows[row].stats = all;
    Bucket b;
    topk::advance(b, 0, pick[0], pick[1], pick[2]);
    bucket = b;
  }
  __syncthreads();
  refine_row(P, row, h, pick, bucket);
  if (threadIdx.x == 0) P.rows[row].bucket = bucket;
}

// ---- 2. candidates, their sort and the threshold ---------------------------------------------

/// Sorts s[0, n2) descending (n2 a power of two) with the whole block.
__device__ void bitonic_sort_desc(unsigned long long* s, int n2) {
  for (int k = 2; k <= n2; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < n2; i += kThreads) {
        const int ixj = i ^ j;
        if (ixj > i) {
          const unsigned long long a = s[i], b = s[ixj];
          const bool desc = (i & k) == 0;
          if (desc ? a < b : a > b) {
            s[i] = b;
            s[ixj] = a;
          }
        }
      }
      __syncthreads();
    }
}

/// Zeros o[beg, end) with 16-byte streaming stores where aligned.
__device__ __forceinline__ void zero_slice(float* o, int64_t beg, int64_t end) {
  float* p = o + beg;
  const int64_t n = end - beg;
  const int64_t head = lmin(n, (16 - (reinterpret_cast<uintptr_t>(p) & 15)) / 4 & 3);
  for (int64_t i = threadIdx.x; i < head; i += kThreads) p[i] = 0.f;
  const int64_t nv = (n - head) / 4;
  float4* pv = reinterpret_cast<float4*>(p + head);
  for (int64_t v = threadIdx.x; v < nv; v += kThreads) __stcs(pv + v, make_float4(0.f, 0.f, 0.f, 0.f));
  for (int64_t i = head + 4 * nv + threadIdx.x; i < n; i += kThreads) p[i] = 0.f;
}

/// Stores the kept values of the listed candidates `list` (sorted, key << 32 | index) whose index
/// lies in [beg, end); the zeros are already there.
__device__ __forceinline__ void scatter_kept(float* o, const unsigned long long* list, const RowDecision& d, float m,
                                             float c, int64_t beg, int64_t end) {
  for (int q = threadIdx.x; q < d.n_keep; q += kThreads) {
    const unsigned long long e = list[q];
    const int64_t i = static_cast<std::uint32_t>(e);
    if (i >= beg && i < end) o[i] = topk::term(static_cast<std::uint32_t>(e >> 32), m, c) * d.inv_s;
  }
}

/// Appends the keys >= `from` of slice [beg, end) of `row` to the row's candidate list
/// (warp-aggregated atomics on the row's count); a list past kCap keeps its count only.
template <bool kKeep = false>
__device__ __forceinline__ void collect_slice(const Params& P, int64_t row, int64_t beg, int64_t end, std::uint32_t from) {
  std::uint32_t* count = P.counters + P.B * kTickets + row;
  unsigned long long* list = P.cand + row * kCap;
  // kLean: key(x) >= from as one float compare (select.cuh key_floor).
  const float from_value = topk::key_floor(from);
  for_slice<kKeep>(P.x + row * P.V, beg, end, [&](float x, int64_t i) {
    const bool take = kLean ? x >= from_value : topk::order_key(x) >= from;
    const unsigned active = __activemask();
    const unsigned want = __ballot_sync(active, take);
    if (!want) return;
    const int lane = threadIdx.x & 31, leader = __ffs(want) - 1;
    std::uint32_t base = 0;
    if (lane == leader) base = atomicAdd(count, static_cast<unsigned>(__popc(want)));
    base = __shfl_sync(active, base, leader);
    if (take) {
      const std::uint32_t pos = base + __popc(want & ((1u << lane) - 1u));
      if (pos < static_cast<std::uint32_t>(kCap))
        list[pos] = (static_cast<unsigned long long>(topk::order_key(x)) << 32) | static_cast<std::uint32_t>(i);
    }
  });
}

/// Shared scratch of finish_row.
struct FinishScratch {
  unsigned long long cs[kCap];
  std::uint32_t keys[kCap];
  alignas(RowDecision) unsigned char dec_raw[sizeof(RowDecision)];  // no initialisers in __shared__
};

/// The row's last collecting CTA: sorts the candidates, decides tau (flagging the row for the
/// fp64 recheck near top_p) and, with kFusedOutput, stores the kept values over the zeros the
/// row's CTAs wrote (or lists the row for the output kernel when it cannot).
__device__ void finish_row(const Params& P, int64_t row, const Bucket& b, const Stats& st, FinishScratch& f) {
  unsigned long long* cs = f.cs;
  std::uint32_t* keys = f.keys;
  RowDecision& dec = *reinterpret_cast<RowDecision*>(f.dec_raw);
  const std::uint32_t* count = P.counters + P.B * kTickets + row;
  unsigned long long* list = P.cand + row * kCap;
  const int n = static_cast<int>(lmin(__ldcg(count), kCap));
  int n2 = 1;
  while (n2 < n) n2 <<= 1;
  for (int i = threadIdx.x; i < n2; i += kThreads) cs[i] = i < n ? __ldcg(list + i) : 0ull;
  __syncthreads();
  bitonic_sort_desc(cs, n2);
  for (int i = threadIdx.x; i < n; i += kThreads) {
    list[i] = cs[i];
    keys[i] = static_cast<std::uint32_t>(cs[i] >> 32);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const topk::RowInput in{P.k_eff, P.top_p, st.m, P.c, st.z, st.w, b};
    const RowDecision d = topk::decide(in, keys, n, false, 0.0, P.inv_t);
    P.rows[row].decision = d;
    P.rows[row].n_cand = static_cast<std::uint32_t>(n);
    if (d.uncertain) P.flagged[atomicAdd(P.flagged + P.B, 1u)] = static_cast<std::uint32_t>(row);
    // The output kernel finishes the rows this CTA cannot: decided again in fp64, or a kept tie
    // group that is not listed (the row is read again).
    if (kFusedOutput && (d.uncertain || d.tie_kept))
      P.finish[atomicAdd(P.finish + P.B, 1u)] = static_cast<std::uint32_t>(row);
    dec = d;
  }
  if constexpr (kFusedOutput) {
    __syncthreads();
    if (!dec.uncertain && !dec.tie_kept) scatter_kept(P.out + row * P.V, cs, dec, st.m, P.c, 0, P.V);
  }
}

__global__ void __launch_bounds__(kThreads, kMinBlocks) collect_kernel(Params P) {
  __shared__ FinishScratch scratch;
  const int64_t by_launch = blockIdx.x / P.S;
  const int64_t row = kReverseCollect ? P.B - 1 - by_launch : by_launch;
  const int slice = static_cast<int>(blockIdx.x % P.S);
  const Bucket b = P.rows[row].bucket;
  const std::uint32_t from = b.listed ? b.lo : b.hi + 1u;  // keys >= from are listed
  const int64_t beg = slice * P.chunk, end = lmin(P.V, beg + P.chunk);
  if constexpr (kFusedOutput) zero_slice(P.out + row * P.V, beg, end);
  collect_slice(P, row, beg, end, from);
  // With kFusedOutput the fences of the arrival also order this CTA's zeros before the last
  // CTA's stores of the kept values (same addresses).
  if (!last_to_arrive(P, row, kTicketCollect)) return;
  finish_row(P, row, b, P.rows[row].stats, scratch);
}

// ---- 1+2 as one persistent kernel (kL2Reread) ---------------------------------------------------
#ifdef TOPK_L2_REREAD

/// Work items (row, slice) claimed in order from a counter. Each item: (1) reads its slice for the
/// statistics and the first digit's histogram (default L2 policy), adds its non-empty bins to the
/// row's histogram; the row's last arrival picks the bin (and refines it if needed) and publishes
/// the bucket; the others wait for it. (2) re-reads the slice, now from L2, for the candidates and
/// writes its zeros; the row's last arrival sorts, decides and stores the kept values.
/// Progress: an item's first phase never waits, and items are claimed in order, so only the
/// newest row can have unclaimed items; the wait needs as many resident CTAs as slices per row
/// (at most 64; an H200 holds 264 of these CTAs).
__global__ void __launch_bounds__(kThreads, kMinBlocks) reread_kernel(Params P) {
  __shared__ std::uint32_t h[kMaxBins];
  __shared__ StatsScratch scratch;
  __shared__ std::uint32_t pick[3];
  __shared__ FinishScratch fin;
  __shared__ long long item_s;
  // Raw storage: __shared__ objects cannot have initialisers.
  __shared__ alignas(Bucket) unsigned char bucket_raw[sizeof(Bucket)];
  __shared__ alignas(Stats) unsigned char stats_raw[sizeof(Stats)];
  Bucket& bucket = *reinterpret_cast<Bucket*>(bucket_raw);
  Stats& row_stats = *reinterpret_cast<Stats*>(stats_raw);
  const int64_t items = P.B * P.S;
  const float c = P.c;
  for (;;) {
    if (threadIdx.x == 0) item_s = atomicAdd(P.claim, 1u);
    for (int i = threadIdx.x; i < kMaxBins; i += kThreads) h[i] = 0;
    __syncthreads();
    const int64_t item = item_s;
    if (item >= items) return;
    const int64_t row = item / P.S;
    const int slice = static_cast<int>(item % P.S);
    const int64_t beg = slice * P.chunk, end = lmin(P.V, beg + P.chunk);
    // (1) statistics and the first digit; the L2 keeps the slice for (2)
    ThreadStats ts;
    stats_slice<true>(P.x + row * P.V, beg, end, h, ts, c);
    const Stats s = block_stats(ts.done(), c, scratch);  // its barrier also ends the histogram's updates
    if (threadIdx.x == 0) P.part[row * P.S + slice] = s;
    std::uint32_t* rh = P.row_hist + row * kMaxBins;
    for (int i = threadIdx.x; i < kMaxBins; i += kThreads)
      if (h[i]) atomicAdd(rh + i, h[i]);
    if (last_to_arrive(P, row, kTicketStats)) {
      // The row's last arrival: its histogram and statistics, merged by the whole block (a fixed
      // tree: the same sums every call), then the bin; the others wait for it.
      for (int i = threadIdx.x; i < kMaxBins; i += kThreads) h[i] = __ldcg(rh + i);
      Stats mine;
      if (static_cast<int>(threadIdx.x) < P.S) mine = load_cg(P.part + row * P.S + threadIdx.x);
      const Stats all = block_stats(mine, c, scratch);  // its barrier also ends the loads of h
      block_pick(h, static_cast<std::uint32_t>(P.k_eff), pick);
      if (threadIdx.x == 0) {
        row_stats = all;
        P.rows[row].stats = all;
        Bucket b;
        topk::advance(b, 0, pick[0], pick[1], pick[2]);
        bucket = b;
      }
      __syncthreads();
      refine_row(P, row, h, pick, bucket);
      if (threadIdx.x == 0) {
        P.rows[row].bucket = bucket;
        __threadfence();
        atomicExch(P.ready + row, 1u);
      }
    } else if (threadIdx.x == 0) {
      while (*static_cast<volatile std::uint32_t*>(P.ready + row) == 0) __nanosleep(128);
      __threadfence();
      bucket = load_cg(&P.rows[row].bucket);
      row_stats = load_cg(&P.rows[row].stats);
    }
    __syncthreads();
    const Bucket b = bucket;
    const Stats st = row_stats;
    // (2) the candidates and the zeros; the slice's last read (evict-first)
    zero_slice(P.out + row * P.V, beg, end);
    collect_slice(P, row, beg, end, b.listed ? b.lo : b.hi + 1u);
    if (last_to_arrive(P, row, kTicketCollect)) finish_row(P, row, b, st, fin);
    __syncthreads();  // shared state free for the next item
  }
}
#endif  // TOPK_L2_REREAD

// ---- 3. fp64 decision of the rows near top_p -------------------------------------------------

__global__ void __launch_bounds__(kThreads) recheck_kernel(Params P) {
  __shared__ double scratch[kWarps];
  __shared__ std::uint32_t keys[kCap];
  const std::uint32_t nflag = P.flagged[P.B];
  const int64_t items = static_cast<int64_t>(nflag) * P.recheck_slices;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    const int64_t f = w / P.recheck_slices, r = w % P.recheck_slices;
    const int64_t row = P.flagged[f];
    const float m = P.rows[row].stats.m;
    const int64_t beg = r * kRecheckSlice, end = lmin(P.V, beg + kRecheckSlice);
    const float* rowp = P.x + row * P.V;
    double z = 0;
    for (int64_t i = beg + threadIdx.x; i < end; i += kThreads) z += exp((static_cast<double>(rowp[i]) - m) * P.inv_t);
    for (int o = 16; o > 0; o >>= 1) z += __shfl_down_sync(0xFFFFFFFFu, z, o);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = z;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int q = 1; q < kWarps; ++q) z += scratch[q];
      P.part64[f * P.recheck_slices + r] = z;
    }
    __syncthreads();
    __shared__ bool last;
    if (threadIdx.x == 0) {
      __threadfence();
      last = atomicAdd(&P.counters[row * kTickets + kTicketRecheck], 1u) == static_cast<unsigned>(P.recheck_slices - 1);
      if (last) __threadfence();
    }
    __syncthreads();
    if (!last) continue;
    const int n = static_cast<int>(P.rows[row].n_cand);
    for (int i = threadIdx.x; i < n; i += kThreads) keys[i] = static_cast<std::uint32_t>(P.cand[row * kCap + i] >> 32);
    __syncthreads();
    if (threadIdx.x == 0) {
      double z64 = 0;  // the fixed order of the slices: the same sum every call
      for (int64_t q = 0; q < P.recheck_slices; ++q) z64 += __ldcg(P.part64 + f * P.recheck_slices + q);
      const Stats st = P.rows[row].stats;
      const topk::RowInput in{P.k_eff, P.top_p, st.m, P.c, st.z, st.w, P.rows[row].bucket};
      P.rows[row].decision = topk::decide(in, keys, n, true, z64, P.inv_t);
    }
    __syncthreads();
  }
}

// ---- 4. the output row -------------------------------------------------------------------------

/// Writes the output of slice [beg, end) of `row` from its decision: the masked row when the kept
/// set includes an unlisted tie group, else (with `zero`) zeros, then the kept candidates.
__device__ void write_slice(const Params& P, int64_t row, int64_t beg, int64_t end, bool zero) {
  const RowDecision d = P.rows[row].decision;
  const float m = P.rows[row].stats.m, c = P.c, inv_s = d.inv_s;
  float* o = P.out + row * P.V;
  if (d.tie_kept) {  // the kept set is not all listed: read the row and mask it
    const float* rowp = P.x + row * P.V;
    for (int64_t i = beg + threadIdx.x; i < end; i += kThreads) {
      const std::uint32_t key = topk::order_key(rowp[i]);
      o[i] = key >= d.tau_key ? topk::term(key, m, c) * inv_s : 0.f;
    }
    return;
  }
  if (zero) {
    zero_slice(o, beg, end);
    __syncthreads();  // the zeros before the kept values (same addresses, other threads)
  }
  scatter_kept(o, P.cand + row * kCap, d, m, c, beg, end);
}

__global__ void __launch_bounds__(kThreads) output_kernel(Params P) {
  if constexpr (kFusedOutput) {
    // Only the rows the collecting pass could not finish, in slices over a fixed grid; returns
    // at once when there are none (every bench row).
    const int64_t items = static_cast<int64_t>(P.finish[P.B]) * P.recheck_slices;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
      const int64_t row = P.finish[w / P.recheck_slices], r = w % P.recheck_slices;
      write_slice(P, row, r * kRecheckSlice, lmin(P.V, (r + 1) * kRecheckSlice), false);
    }
  } else {
    const int64_t row = blockIdx.x / P.S;
    const int slice = static_cast<int>(blockIdx.x % P.S);
    const int64_t beg = slice * P.chunk;
    write_slice(P, row, beg, lmin(P.V, beg + P.chunk), true);
  }
}

// ---- host side ----------------------------------------------------------------------------------

struct Layout {
  int S;
  int64_t chunk, recheck_slices;
};
inline Layout layout(int64_t B, int64_t V) {
  Layout L;
  const int64_t by_rows = ceil_div(kCtaTarget, B > 0 ? B : 1);
  const int64_t by_len = V / kMinSlice > 1 ? V / kMinSlice : 1;
  const int64_t S0 = kL2Reread ? lmin(ceil_div(V, kRereadSlice), kRereadMaxSlices) : lmin(by_rows, by_len);
  L.chunk = ceil_div(ceil_div(V, S0), 4) * 4;
  L.S = static_cast<int>(ceil_div(V, L.chunk));  // every slice non-empty
  L.recheck_slices = ceil_div(V, kRecheckSlice);
  return L;
}

/// Tickets, candidate counts, the flagged rows and their count, the rows to finish and their count.
/// With kL2Reread, the row-ready flags and the work-item counter.
inline int64_t counter_words(int64_t B) { return B * kTickets + B + (B + 1) + (B + 1) + (kL2Reread ? B + 1 : 0); }
/// The rows' first-digit histograms (kL2Reread; kRowHist when a row has several CTAs).
inline int64_t row_hist_words(int64_t B, const Layout& L) {
  return kL2Reread || (kRowHist && L.S > 1) ? B * kMaxBins : 0;
}

struct Buffers {
  RowState* rows;
  Stats* part;
  std::uint32_t* slots;
  unsigned long long* cand;
  std::uint32_t* counters;  ///< counter_words(B) words, then row_hist: zeroed per call (one memset)
  std::uint32_t* row_hist;  ///< kL2Reread, kRowHist with S > 1: [B * kMaxBins]
  double* part64;
  /// Bytes from counters to the end of row_hist: what the call zeroes.
  std::size_t zeroed_bytes(int64_t B, const Layout& L) const {
    const std::uint32_t* end = row_hist + row_hist_words(B, L);
    return static_cast<std::size_t>(reinterpret_cast<const char*>(end) - reinterpret_cast<const char*>(counters));
  }
};
inline Buffers carve(d2k::Workspace& ws, int64_t B, const Layout& L) {
  Buffers b;
  b.rows = ws.take<RowState>(B);
  b.part = ws.take<Stats>(B * L.S);
  b.slots = ws.take<std::uint32_t>(!kL2Reread && !kRowHist && L.S > 1 ? B * L.S * kMaxBins : 0);
  b.cand = ws.take<unsigned long long>(B * kCap);
  b.counters = ws.take<std::uint32_t>(counter_words(B));
  b.row_hist = ws.take<std::uint32_t>(row_hist_words(B, L));  // right after counters: one memset
  b.part64 = ws.take<double>(B * L.recheck_slices);
  return b;
}

}  // namespace topk_expert

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t V = d2k::scalar_i(args, "V");
    if (B < 0 || V < 1) throw d2k::abi_error("expert: need B >= 0 and V >= 1");
    d2k::Workspace ws;
    topk_expert::carve(ws, B, topk_expert::layout(B, V));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  using namespace topk_expert;
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t k = d2k::scalar_i(args, "k");
    const double top_p = d2k::scalar_f(args, "top_p");
    const double temperature = d2k::scalar_f(args, "temperature");
    if (B < 0 || V < 1) throw d2k::abi_error("expert: need B >= 0 and V >= 1");
    if (V > 0xFFFFFFFFll) throw d2k::abi_error("expert: V must fit 32-bit indices");
    if (k < 1 || k > topk::kMaxK) throw d2k::abi_error("expert: k must be in [1, 1024]");
    if (!(top_p > 0.0 && top_p <= 1.0)) throw d2k::abi_error("expert: top_p must be in (0, 1]");
    if (!(temperature > 0.0)) throw d2k::abi_error("expert: temperature must be > 0");
    const DLTensor& logits = d2k::input(args, "logits", kDLCUDA, d2k::dl::f32, {B, V});
    const DLTensor& probs = d2k::output(args, "probs", kDLCUDA, d2k::dl::f32, {B, V});
    if (B == 0) return D2K_OK;
    const Layout L = layout(B, V);
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, B, L);
    Params P{};
    P.x = d2k::data<const float>(logits);
    P.out = d2k::data<float>(probs);
    P.B = B;
    P.V = V;
    P.S = L.S;
    P.chunk = L.chunk;
    P.k_eff = k < V ? k : V;
    P.top_p = top_p;
    P.inv_t = 1.0 / temperature;
    P.c = static_cast<float>(1.4426950408889634 / temperature);
    P.rows = buf.rows;
    P.part = buf.part;
    P.slots = buf.slots;
    P.cand = buf.cand;
    P.counters = buf.counters;
    P.flagged = buf.counters + B * kTickets + B;
    P.finish = P.flagged + B + 1;
    P.ready = P.finish + B + 1;
    P.claim = P.ready + B;
    P.row_hist = buf.row_hist;
    P.part64 = buf.part64;
    P.recheck_slices = L.recheck_slices;
    if (B * L.S > 2147483647) throw d2k::abi_error("expert: B * CTAs per row exceeds the grid limit");
    const unsigned grid = static_cast<unsigned>(B * L.S);
    auto stream = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(buf.counters, 0, buf.zeroed_bytes(B, L), stream));
#ifdef TOPK_L2_REREAD
    {
      // As many CTAs as are resident at once: each claims items until none is left.
      int dev = 0, sms = 0, per_sm = 0;
      D2K_CUDA_TRY(args, cudaGetDevice(&dev));
      D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reread_kernel, kThreads, 0));
      if (per_sm < 1) throw d2k::abi_error("expert: the persistent kernel does not fit an SM");
      const int64_t items = B * L.S;
      const int64_t resident = static_cast<int64_t>(per_sm) * sms;
      reread_kernel<<<static_cast<unsigned>(lmin(items, resident)), kThreads, 0, stream>>>(P);
    }
#else
    stats_kernel<<<grid, kThreads, 0, stream>>>(P);
    collect_kernel<<<grid, kThreads, 0, stream>>>(P);
#endif
    recheck_kernel<<<kRecheckCtas, kThreads, 0, stream>>>(P);
    output_kernel<<<kFusedOutput ? kRecheckCtas : grid, kThreads, 0, stream>>>(P);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
