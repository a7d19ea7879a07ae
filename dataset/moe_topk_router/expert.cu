// moe_topk_router — expert: a warp per token with the experts in registers, top-K by K rounds of
// a warp arg-max over packed (logit, id) keys, and a stable counting sort whose histogram and
// ranks are per-block bit masks in shared memory.
//
//   1. route    (a warp per token, kWarps warps per block, tokens_per_warp consecutive tokens per
//               warp; the next token's logits are loaded while this one is selected) expert e of
//               the token sits in lane e % 32, register e / 32. Selection: the K-th largest of the
//               32 lane maxima bounds the K-th largest logit from below, so only the logits at or
//               above it are candidates (typically K to 2K of E); they are compacted to one per
//               lane and K rounds of a warp arg-max over 64-bit keys (order-preserving bits of the
//               logit << 32 | ~id, reduced with two REDUX) pick the slots: the unsigned maximum is
//               the largest logit and, among equal logits, the lowest id, i.e. the task's tie
//               rule. More than 32 candidates (heavy ties) take K rounds over all E keys. Lane j
//               keeps slot j. The weights need only the selected logits: exp(x_j - x_0) / sum
//               over the K (the full softmax's sum cancels), K exponentials per token instead of
//               E. Lanes j < K store weight and id (coalesced) and set bit `token in block` of
//               expert id_j's mask word in shared memory (atomicOr; the K ids of a token are
//               distinct, so a warp's ORs never collide). Block count of expert e = popcount of
//               its mask words; written to block_counts[e][block].
//   2. scan     per expert, the exclusive prefix of its block counts over the blocks (the base of
//               each block in the expert's segment) and its total (expert_counts).
//   3. scatter  per block: offsets by a block scan of the counts; the block's masks rebuilt from
//               its ids; entry (t, j) of expert e goes to offsets[e] + base[e][block] + the
//               popcount of e's mask bits below t. Tokens before t in the same block come first,
//               tokens of earlier blocks before them: ascending flat index within each expert (a
//               token selects an expert at most once), the stable order the task defines, with
//               no atomics on global memory and no sort.
//   Small T (at most kFuseMaxBlocks blocks, T <= 512): one launch. Every block publishes its
//   masks and counts, then takes a ticket (threadfence + atomicAdd); the last block to finish
//   runs 2 and 3 for all blocks. No grid synchronisation, no cooperative launch: a CUDA graph
//   holds it as a memset (the ticket) and one kernel.
//
// DRAM: the logits once, the weights, ids and permutation once (definition.json's cost model);
// the block counts and bases (E ints per 8-64 tokens) and, at large T, the ids read back by the
// scatter (4TK bytes, L2-resident between the launches at these sizes) are the overhead.
//
// Variants considered:
//   a. full softmax + segmented sort + histogram + scan + argsort (naive.cu): the [T, E]
//      probabilities and the sorted [T, E] pairs materialised, 5 sorts' worth of traffic.
//   b. per-lane sorted lists merged across the warp: a sorting network of VPL keys per lane up
//      front, then K pops; more instructions than (c) for K <= 16.
//   c. K rounds of a 64-bit warp arg-max over all E packed keys (5 butterfly steps of two SHFL,
//      and VPL 64-bit compares and clears per lane per round): about 80 instructions per round,
//      ~650 per token at E = 256, K = 8, which at T = 65536 would take longer than reading the
//      logits (an estimate from the instruction count, not measured). Kept as the heavy-tie path.
//   d. counting-sort scatter with global atomics per expert (warp-aggregated): one atomic per
//      (token, slot), non-deterministic order inside a segment, which the exact comparison of
//      the permutation (stable order) rejects; the bit masks give the stable rank for free.
//   e. (chosen) (c) behind the candidate filter: ~200 instructions per token at E = 256, K = 8.
// Measured times: not yet measured on the H200 (docs/results/moe_topk_router.md gives the command).
// %VARIANT% nofilter -DROUTER_NO_FILTER=1
//   (variant c: K rounds over all E keys for every token; measures the candidate filter)
// %VARIANT% fused -DROUTER_FUSE=1
//   (one launch while T fits kFuseMaxBlocks blocks: the last block to finish scans and scatters;
//    the default until 2026-12-03, when the three launches measured 4.6x faster at T = 512)
// The fused tail at T = 512, E = 256, K = 8 (64 blocks of 8 tokens; the last block alone scans
// 256 x 64 block counts and places 4096 entries), from the code: thread e's scan stores base[e][b]
// before it loads count[e][b + 1] through another int32 pointer, so every load waits for the
// previous one: 64 dependent L2 round trips (~0.3-0.5 us each for lines another SM wrote: 20-30
// us), each warp's 32 lanes 256 bytes apart (32 sectors per load and per store). The scatter's
// 16 entries per thread: a batch of 8 id loads, then per entry a mask word and a base loaded after
// the previous entry's store to the permutation (same aliasing): 2 x (1 + 8) = 18 round trips
// (5-9 us), with 64-bit divisions per entry. Against that the route phase (a DRAM round trip for
// the logits, ~1200 cycles of selection, the fence and the ticket: 3-5 us) and the memset node
// and launch (2-3 us). The variants below remove the serial tail:
// %VARIANT% tailbatch -DROUTER_FUSE=1 -DROUTER_TAIL_BATCHED=1
//   (the last block scans block-major counts, 16 loads in flight per thread before any store, and
//    scatters in batches of 8 entries: the ids, then every mask word and base of the batch, loaded
//    before its stores: 4 + 4 round trips at T = 512 instead of 64 + 18, coalesced counts and
//    bases, 32-bit index arithmetic; the fused plans run their own kernel instance,
//    route_fused_kernel, so the large plans' route kernel carries no tail registers)
// %VARIANT% tailwide -DROUTER_FUSE=1 -DROUTER_TAIL_BATCHED=1 -DROUTER_SMALL_TPW=2
//   (tailbatch with two tokens per warp up to T = 1024: 32 blocks at T = 512, half the counts to
//    scan, a second token's selection per warp with its logits prefetched)
// %VARIANT% twokernel -DROUTER_FUSE=1 -DROUTER_TWO_KERNEL=1
//   (the kernel boundary instead of the ticket: no memset node, no fences; a second kernel of a
//    block per route block sums the block counts before it (the base) and of all blocks (the
//    totals) with 16 loads in flight per thread, scans the totals and places its own entries; the
//    serial work per block: nb / 16 round trips and 8 tokens' entries)
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "d2k/solution.h"
#include "router.cuh"

namespace {

using router::kThreads;
using router::kWarps;
using router::Plan;

// Block counts and bases of the fused plans stored block-major ([blocks][E]: a warp's loads and
// stores coalesced) by the batched tail and the two-kernel tail.
#if defined(ROUTER_TAIL_BATCHED) || defined(ROUTER_TWO_KERNEL)
constexpr bool kBlockMajor = true;
#else
constexpr bool kBlockMajor = false;
#endif
#if defined(ROUTER_TWO_KERNEL)
constexpr bool kTwoKernel = true;
#else
constexpr bool kTwoKernel = false;
#endif
#if !defined(ROUTER_SMALL_TPW)
#define ROUTER_SMALL_TPW 1
#endif
// Loads in flight per thread in the batched tails (the scan's chunk, the scatter's batch of
// entries); the macros let a build try others (route_fused_kernel holds 16 and 8 without local
// memory; inside the one route kernel of every plan even 8 and 4 spilled).
#if !defined(ROUTER_TAIL_CHUNK)
#define ROUTER_TAIL_CHUNK 16
#endif
#if !defined(ROUTER_SCATTER_BATCH)
#define ROUTER_SCATTER_BATCH 8
#endif
[[maybe_unused]] constexpr int kTailChunk = ROUTER_TAIL_CHUNK;
// twokernel's tail is a kernel of its own (no route registers beside it): 16 loads in flight.
#if !defined(ROUTER_TWO_KERNEL_CHUNK)
#define ROUTER_TWO_KERNEL_CHUNK 16
#endif
[[maybe_unused]] constexpr int kTwoKernelChunk = ROUTER_TWO_KERNEL_CHUNK;

struct Sizes {
  int64_t T;
  int E, K;
};

struct Outputs {
  float* w;
  int32_t* ids;
  int32_t* counts;
  int32_t* offsets;
  int32_t* perm;
};

struct Work {
  unsigned* done;          ///< fused: blocks finished (the ticket)
  uint32_t* masks;         ///< fused: [blocks][E][mask_words]
  int32_t* block_counts;   ///< [E][blocks] ([blocks][E] in the batched tails' fused plans: count_index)
  int32_t* block_base;     ///< as block_counts: the expert's entries in earlier blocks
};

// Three launches at every T: measured on the H200 (2026-12-03) the fused plan's one launch lost to
// them at T = 512 (49.0 us against 10.7 us eager, 8.1 us in a CUDA graph) and tied at T = 65536;
// the fused tail and its variants stay opt-in (ROUTER_FUSE).
Plan plan_of(int64_t T) {
  Plan p = router::plan_for(T, ROUTER_SMALL_TPW);
#if !defined(ROUTER_FUSE)
  p.fused = false;
#endif
  return p;
}

Work carve(d2k::Workspace& ws, const Sizes& s, const Plan& p) {
  Work w;
  w.done = ws.take<unsigned>(1);
  w.masks = ws.take<uint32_t>(p.fused && !kTwoKernel ? static_cast<uint64_t>(p.blocks) * s.E * p.mask_words : 0);
  w.block_counts = ws.take<int32_t>(static_cast<uint64_t>(p.blocks) * s.E);
  w.block_base = ws.take<int32_t>(static_cast<uint64_t>(p.blocks) * s.E);
  return w;
}

/// Index of block b's count (and base) of expert e: expert-major for the three-launch scan (a warp
/// per expert), block-major in the fused plans of the batched tails.
__host__ __device__ __forceinline__ int64_t count_index(const Plan& p, int E, int e, int64_t b) {
  return kBlockMajor && p.fused ? b * E + e : e * p.blocks + b;
}

// ---- selection (a warp per token) ------------------------------------------------------------

template <int VPL>
__device__ __forceinline__ void load_row(const float* __restrict__ row, int E, int lane, float (&x)[VPL]) {
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    const int e = lane + 32 * j;
    x[j] = e < E ? __ldcs(row + e) : 0.f;  // read once: evict first
  }
}

/// K rounds of a warp arg-max over all E packed keys (the general path: heavy ties); lane j < K
/// returns slot j's key. hk[j] = the order key of expert lane + 32 j, 0 past E.
template <int VPL>
__device__ __forceinline__ uint64_t select_topk_rounds(const uint32_t (&hk)[VPL], int K, int lane) {
  uint64_t key[VPL];
#pragma unroll
  for (int j = 0; j < VPL; ++j)
    key[j] = hk[j] ? (static_cast<uint64_t>(hk[j]) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(lane + 32 * j))
                   : 0ull;
  uint64_t mine = 0;
  for (int r = 0; r < K; ++r) {
    uint64_t best = key[0];
#pragma unroll
    for (int j = 1; j < VPL; ++j) best = key[j] > best ? key[j] : best;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const uint64_t y = __shfl_xor_sync(0xFFFFFFFFu, best, o);
      best = y > best ? y : best;
    }
    if (lane == r) mine = best;
#pragma unroll
    for (int j = 0; j < VPL; ++j) key[j] = key[j] == best ? 0ull : key[j];  // keys are unique: the owner only
  }
  return mine;
}

/// Top-K of one token's logits held by a warp; lane j < K returns slot j's packed key.
///  1. threshold: L = the K-th largest of the 32 lane maxima (with multiplicity). K lane maxima
///     are >= L, so the K-th largest logit is >= L: only logits >= L can be selected.
///  2. compaction: the candidates (typically K to 2K of the E logits) go to the warp's 32-slot
///     buffer, one per lane; more than 32 (heavy ties) takes the general path.
///  3. K rounds of a 64-bit arg-max over one key per lane, each two REDUX (the high word: the
///     logit's order key; among equal ones the low word ~id: the lowest id).
/// Without the filter every round scans all VPL keys of every lane (variant c of the header).
template <int VPL>
__device__ __forceinline__ uint64_t select_topk(const float (&x)[VPL], int E, int K, int lane, uint64_t* buf) {
  uint32_t hk[VPL];
  uint32_t lmax = 0;
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    hk[j] = lane + 32 * j < E ? router::order_key(x[j]) : 0u;  // a finite logit's key is never 0
    lmax = hk[j] > lmax ? hk[j] : lmax;
  }
#if defined(ROUTER_NO_FILTER)
  return select_topk_rounds<VPL>(hk, K, lane);
#else
  uint32_t cur = lmax, L = 0;
  for (int seen = 0; seen < K;) {  // warp-uniform; at most K rounds
    L = __reduce_max_sync(0xFFFFFFFFu, cur);
    seen += __popc(__ballot_sync(0xFFFFFFFFu, cur == L));
    cur = cur == L ? 0u : cur;
  }
  int c = 0;
#pragma unroll
  for (int j = 0; j < VPL; ++j) c += hk[j] >= L;
  int incl = c;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += y;
  }
  const int total = __shfl_sync(0xFFFFFFFFu, incl, 31);
  if (total > 32) return select_topk_rounds<VPL>(hk, K, lane);
  int pos = incl - c;
#pragma unroll
  for (int j = 0; j < VPL; ++j)
    if (hk[j] >= L)
      buf[pos++] = (static_cast<uint64_t>(hk[j]) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(lane + 32 * j));
  __syncwarp();
  uint32_t hi = 0, lo = 0;
  if (lane < total) {
    const uint64_t k = buf[lane];
    hi = static_cast<uint32_t>(k >> 32);
    lo = static_cast<uint32_t>(k);
  }
  __syncwarp();  // the buffer is the next token's
  uint64_t mine = 0;
  for (int r = 0; r < K; ++r) {
    const uint32_t m = __reduce_max_sync(0xFFFFFFFFu, hi);
    const uint32_t l = __reduce_max_sync(0xFFFFFFFFu, hi == m ? lo : 0u);
    if (lane == r) mine = (static_cast<uint64_t>(m) << 32) | l;
    if (hi == m && lo == l) hi = lo = 0;  // the winner (keys are unique)
  }
  return mine;
#endif
}

/// Weights of one token from its selected keys (lane j: slot j), stored with the ids; the token's
/// bit set in each selected expert's mask word.
__device__ __forceinline__ void emit_token(uint64_t mine, int64_t t, int local, int K, int lane, int mask_words,
                                           const Outputs& out, uint32_t* mask) {
  const float m = router::key_value(__shfl_sync(0xFFFFFFFFu, mine, 0));
  const float e = lane < K ? expf(router::key_value(mine) - m) : 0.f;
  float s = e;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);  // every lane: the same sum
  if (lane < K) {
    const int id = router::key_id(mine);
    out.w[t * K + lane] = e / s;
    out.ids[t * K + lane] = id;
    atomicOr(&mask[id * mask_words + local / 32], 1u << (local % 32));
  }
}

// ---- scan and scatter helpers -----------------------------------------------------------------

/// In place over shared memory: off[0, E) holds the counts; leaves the exclusive prefix sums in
/// off[0, E] (off[E] = the total). E <= 2 * kThreads.
__device__ void exclusive_scan_experts(int32_t* off, int E) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __syncthreads();
  const int e0 = 2 * static_cast<int>(threadIdx.x);
  const int c0 = e0 < E ? off[e0] : 0, c1 = e0 + 1 < E ? off[e0 + 1] : 0;
  int excl = 0, total = 0;
  Scan(tmp).ExclusiveSum(c0 + c1, excl, total);
  if (e0 < E) off[e0] = excl;
  if (e0 + 1 < E) off[e0 + 1] = excl + c0;
  if (threadIdx.x == 0) off[E] = total;
  __syncthreads();
}

struct RouteArgs {
  const float* x;
  Sizes s;
  Plan p;
  Outputs out;
  Work work;
};

#if !defined(ROUTER_TAIL_BATCHED) && !defined(ROUTER_TWO_KERNEL)
/// Fused path, run by the last block: bases and counts of every expert, the offsets, and the
/// permutation of all T*K entries (ids and masks read back through L2: written by other blocks).
__device__ void scan_and_scatter_all(const RouteArgs& a, int32_t* off) {
  const int E = a.s.E, K = a.s.K, MW = a.p.mask_words;
  const int64_t nb = a.p.blocks;
  for (int e = threadIdx.x; e < E; e += kThreads) {
    int run = 0;
#pragma unroll 8
    for (int64_t b = 0; b < nb; ++b) {
      a.work.block_base[e * nb + b] = run;
      run += __ldcg(a.work.block_counts + e * nb + b);
    }
    off[e] = run;
    a.out.counts[e] = run;
  }
  exclusive_scan_experts(off, E);
  for (int e = threadIdx.x; e <= E; e += kThreads) a.out.offsets[e] = off[e];
  const int64_t TK = a.s.T * K;
  constexpr int kBatch = 8;  // independent loads in flight per thread
  for (int64_t i0 = threadIdx.x; i0 < TK; i0 += static_cast<int64_t>(kThreads) * kBatch) {
    int e[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t i = i0 + static_cast<int64_t>(u) * kThreads;
      e[u] = i < TK ? __ldcg(a.out.ids + i) : -1;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (e[u] < 0) continue;
      const int64_t i = i0 + static_cast<int64_t>(u) * kThreads;
      const int64_t t = i / K, b = t / a.p.tokens_per_block;
      const int local = static_cast<int>(t - b * a.p.tokens_per_block);
      const uint32_t* words = a.work.masks + (b * E + e[u]) * MW;
      int rank = __popc(__ldcg(words + local / 32) & ((1u << (local % 32)) - 1u));
      for (int w = 0; w < local / 32; ++w) rank += __popc(__ldcg(words + w));
      a.out.perm[off[e[u]] + __ldcg(a.work.block_base + e[u] * nb + b) + rank] = static_cast<int32_t>(i);
    }
  }
}
#endif

#if defined(ROUTER_TAIL_BATCHED)
/// The batched form of scan_and_scatter_all (variants tailbatch, tailwide): block-major counts
/// and bases, every load of a chunk or batch issued before its stores (router.cuh
/// chunked_exclusive_prefix), 32-bit indices (T * K fits int32).
__device__ void scan_and_scatter_all_batched(const RouteArgs& a, int32_t* off) {
  const int E = a.s.E, K = a.s.K, MW = a.p.mask_words, tpb = a.p.tokens_per_block;
  const int nb = static_cast<int>(a.p.blocks);
  const int32_t* counts = a.work.block_counts;
  int32_t* base = a.work.block_base;
  // 1. Bases: thread e walks its expert's counts over the blocks, kTailChunk loads in flight.
  for (int e = threadIdx.x; e < E; e += kThreads) {  // captures by value: no address taken, no stack
    const int total = router::chunked_exclusive_prefix<kTailChunk>(
        nb, [=](int64_t b) { return __ldcg(counts + b * E + e); }, [=](int64_t b, int s) { base[b * E + e] = s; });
    off[e] = total;
    a.out.counts[e] = total;
  }
  exclusive_scan_experts(off, E);
  for (int e = threadIdx.x; e <= E; e += kThreads) a.out.offsets[e] = off[e];
  // 2. Scatter: per batch the ids, then every entry's mask word and base, then the stores.
  const int TK = static_cast<int>(a.s.T) * K;
  constexpr int kBatch = ROUTER_SCATTER_BATCH;
  for (int i0 = threadIdx.x; i0 < TK; i0 += kThreads * kBatch) {
    int e[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = i0 + u * kThreads;
      e[u] = i < TK ? __ldcg(a.out.ids + i) : -1;
    }
    uint32_t word[kBatch];
    int bs[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      word[u] = 0;
      bs[u] = 0;
      if (e[u] < 0) continue;
      const int t = (i0 + u * kThreads) / K, b = t / tpb, local = t - b * tpb;
      word[u] = __ldcg(a.work.masks + (b * E + e[u]) * MW + local / 32);
      bs[u] = __ldcg(base + b * E + e[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (e[u] < 0) continue;
      const int i = i0 + u * kThreads, t = i / K, b = t / tpb, local = t - b * tpb;
      int rank = __popc(word[u] & ((1u << (local % 32)) - 1u));
      const uint32_t* words = a.work.masks + (b * E + e[u]) * MW;
      for (int w = 0; w < local / 32; ++w) rank += __popc(__ldcg(words + w));  // blocks over 32 tokens only
      a.out.perm[off[e[u]] + bs[u] + rank] = i;
    }
  }
}
#endif

// ---- kernels ----------------------------------------------------------------------------------

#if !defined(ROUTER_TWO_KERNEL)
/// The fused plans' end of route_kernel: publish the block's masks, take a ticket; the block
/// holding the last ticket scans and scatters for all blocks.
__device__ __forceinline__ void fused_tail(const RouteArgs& a, uint32_t* smem) {
  const int E = a.s.E, MW = a.p.mask_words;
  const int64_t nb = a.p.blocks, b = blockIdx.x;
  uint32_t* mask = smem;
  for (int i = threadIdx.x; i < E * MW; i += kThreads) a.work.masks[b * E * MW + i] = mask[i];
  // Last-block-done: publish, take a ticket; the block holding the last ticket sees every write.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(a.work.done, 1u) == static_cast<unsigned>(nb - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
#if defined(ROUTER_TAIL_BATCHED)
  scan_and_scatter_all_batched(a, reinterpret_cast<int32_t*>(smem + E * MW));
#else
  scan_and_scatter_all(a, reinterpret_cast<int32_t*>(smem + E * MW));
#endif
}
#endif

/// Selection, weights, block masks and counts; with kTail and p.fused, the last block also scans
/// and scatters. Dynamic shared memory: masks [E][mask_words] words, then offsets [E + 1].
template <int VPL, bool kTail>
__device__ __forceinline__ void route_body(const RouteArgs& a, uint32_t* smem) {
  const int E = a.s.E, K = a.s.K, MW = a.p.mask_words;
  uint32_t* mask = smem;
  for (int i = threadIdx.x; i < E * MW; i += kThreads) mask[i] = 0;
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __shared__ uint64_t candidates[kWarps][32];
  int local = warp * a.p.tokens_per_warp;
  int64_t t = static_cast<int64_t>(blockIdx.x) * a.p.tokens_per_block + local;
  float cur[VPL];
  if (t < a.s.T) load_row<VPL>(a.x + t * E, E, lane, cur);
  for (int i = 0; i < a.p.tokens_per_warp && t < a.s.T; ++i, ++local, ++t) {  // t is warp-uniform
    // The next token's logits are in flight while this one is selected (the rounds are latency-
    // bound shuffles and reductions).
    const bool more = i + 1 < a.p.tokens_per_warp && t + 1 < a.s.T;
    float nxt[VPL];
    if (more) load_row<VPL>(a.x + (t + 1) * E, E, lane, nxt);
    const uint64_t mine = select_topk<VPL>(cur, E, K, lane, candidates[warp]);
    emit_token(mine, t, local, K, lane, MW, a.out, mask);
    if (more) {
#pragma unroll
      for (int j = 0; j < VPL; ++j) cur[j] = nxt[j];
    }
  }
  __syncthreads();
  const int64_t b = blockIdx.x;
  for (int e = threadIdx.x; e < E; e += kThreads) {
    int c = 0;
    for (int w = 0; w < MW; ++w) c += __popc(mask[e * MW + w]);
    a.work.block_counts[count_index(a.p, E, e, b)] = c;
  }
#if !defined(ROUTER_TWO_KERNEL)
  if (kTail && a.p.fused) fused_tail(a, smem);
#endif
}

/// The default's one route kernel for every plan (the fused tail inside). The batched tails keep
/// the tail out of it: ptxas (sm_90a) sizes a kernel's registers for occupancy, and with the tail
/// beside the selection it capped the fused instances at 64 / 48 / 40 registers and spilled.
template <int VPL>
__global__ void __launch_bounds__(kThreads) route_kernel(RouteArgs a) {
  extern __shared__ uint32_t smem[];
#if defined(ROUTER_TAIL_BATCHED)
  route_body<VPL, false>(a, smem);
#else
  route_body<VPL, true>(a, smem);
#endif
}

#if defined(ROUTER_TAIL_BATCHED)
/// The fused plans of the batched tails (at most kFuseMaxBlocks blocks, one per SM): a block per
/// SM is all they run, so the kernel asks for no more occupancy and gets the tail's registers.
template <int VPL>
__global__ void __launch_bounds__(kThreads, 1) route_fused_kernel(RouteArgs a) {
  extern __shared__ uint32_t smem[];
  route_body<VPL, true>(a, smem);
}
#endif

/// A warp per expert: exclusive prefix of its block counts (the bases) and its total.
__global__ void __launch_bounds__(kThreads) scan_kernel(const int32_t* __restrict__ block_counts,
                                                        int32_t* __restrict__ block_base, int32_t* __restrict__ counts,
                                                        int E, int64_t nb) {
  const int e = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (e >= E) return;
  const int32_t* c = block_counts + e * nb;
  int32_t* base = block_base + e * nb;
  const int64_t per = (nb + 31) / 32, lo = lane * per, hi = lo + per < nb ? lo + per : nb;
  int sum = 0;
#pragma unroll 8
  for (int64_t b = lo; b < hi; ++b) sum += c[b];
  int incl = sum;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += y;
  }
  int run = incl - sum;
  for (int64_t b = lo; b < hi; ++b) {
    base[b] = run;
    run += c[b];
  }
  if (lane == 31) counts[e] = incl;
}

struct ScatterArgs {
  const int32_t* ids;
  const int32_t* counts;
  const int32_t* block_base;
  int32_t* offsets;
  int32_t* perm;
  Sizes s;
  Plan p;
};

/// A block per route block: offsets (a block scan of the counts; block 0 stores them), the
/// block's masks rebuilt from its ids, each entry to offsets + base + rank.
__global__ void __launch_bounds__(kThreads) scatter_kernel(ScatterArgs a) {
  extern __shared__ uint32_t smem[];
  const int E = a.s.E, K = a.s.K, MW = a.p.mask_words;
  uint32_t* mask = smem;
  int32_t* off = reinterpret_cast<int32_t*>(smem + E * MW);
  for (int i = threadIdx.x; i < E * MW; i += kThreads) mask[i] = 0;
  for (int e = threadIdx.x; e < E; e += kThreads) off[e] = __ldg(a.counts + e);
  const int64_t b = blockIdx.x, nb = a.p.blocks;
  const int64_t first_token = b * a.p.tokens_per_block;
  const int64_t tokens = a.s.T - first_token < a.p.tokens_per_block ? a.s.T - first_token : a.p.tokens_per_block;
  const int n = static_cast<int>(tokens) * K;
  const int64_t first = first_token * K;
  int e[router::kScatterPerThread];
  __syncthreads();
#pragma unroll
  for (int u = 0; u < router::kScatterPerThread; ++u) {
    const int q = threadIdx.x + u * kThreads;
    e[u] = q < n ? __ldg(a.ids + first + q) : -1;
    if (e[u] >= 0) atomicOr(&mask[e[u] * MW + (q / K) / 32], 1u << ((q / K) % 32));
  }
  exclusive_scan_experts(off, E);  // its barriers also order the ORs before the ranks
  if (b == 0)
    for (int x = threadIdx.x; x <= E; x += kThreads) a.offsets[x] = off[x];
#pragma unroll
  for (int u = 0; u < router::kScatterPerThread; ++u) {
    if (e[u] < 0) continue;
    const int q = threadIdx.x + u * kThreads;
    const int rank = router::mask_rank(mask + e[u] * MW, q / K);
    a.perm[off[e[u]] + __ldg(a.block_base + e[u] * nb + b) + rank] = static_cast<int32_t>(first + q);
  }
}

#if defined(ROUTER_TWO_KERNEL)
/// Variant twokernel, the second launch of a fused plan (a block per route block; the kernel
/// boundary orders the route kernel's counts and ids before it): this block's base of every expert
/// (its counts of the blocks before it) and every expert's total, kTwoKernelChunk loads in flight per
/// thread; offsets by a block scan of the totals (block 0 stores counts and offsets); the block's
/// masks rebuilt from its ids; each entry to offsets + base + rank. Dynamic shared memory: masks
/// [E][mask_words], offsets [E + 1], bases [E].
__global__ void __launch_bounds__(kThreads) tail_kernel(ScatterArgs a, const int32_t* __restrict__ block_counts,
                                                        int32_t* __restrict__ counts_out) {
  extern __shared__ uint32_t smem[];
  const int E = a.s.E, K = a.s.K, MW = a.p.mask_words;
  uint32_t* mask = smem;
  int32_t* off = reinterpret_cast<int32_t*>(smem + E * MW);
  int32_t* base = off + E + 1;
  const int b = blockIdx.x, nb = static_cast<int>(a.p.blocks);
  for (int i = threadIdx.x; i < E * MW; i += kThreads) mask[i] = 0;
  for (int e = threadIdx.x; e < E; e += kThreads) {  // captures by value: no address taken, no stack
    const int total = router::chunked_exclusive_prefix<kTwoKernelChunk>(
        nb, [=](int64_t c) { return __ldg(block_counts + c * E + e); },
        [=](int64_t c, int s) {
          if (c == b) base[e] = s;
        });
    off[e] = total;
    if (b == 0) counts_out[e] = total;
  }
  const int first_token = b * a.p.tokens_per_block;
  const int tokens = min(static_cast<int>(a.s.T) - first_token, a.p.tokens_per_block);
  const int n = tokens * K, first = first_token * K;
  int e[router::kScatterPerThread];
  __syncthreads();  // the masks zeroed before the ORs
#pragma unroll
  for (int u = 0; u < router::kScatterPerThread; ++u) {
    const int q = threadIdx.x + u * kThreads;
    e[u] = q < n ? __ldg(a.ids + first + q) : -1;
    if (e[u] >= 0) atomicOr(&mask[e[u] * MW + (q / K) / 32], 1u << ((q / K) % 32));
  }
  exclusive_scan_experts(off, E);  // its barriers also order the ORs and the bases before the ranks
  if (b == 0)
    for (int x = threadIdx.x; x <= E; x += kThreads) a.offsets[x] = off[x];
#pragma unroll
  for (int u = 0; u < router::kScatterPerThread; ++u) {
    if (e[u] < 0) continue;
    const int q = threadIdx.x + u * kThreads;
    const int rank = router::mask_rank(mask + e[u] * MW, q / K);
    a.perm[off[e[u]] + base[e[u]] + rank] = first + q;
  }
}
#endif

// ---- host side --------------------------------------------------------------------------------

template <int VPL>
void launch_route(const RouteArgs& a, size_t smem, cudaStream_t stream) {
#if defined(ROUTER_TAIL_BATCHED)
  if (a.p.fused) {
    route_fused_kernel<VPL><<<static_cast<unsigned>(a.p.blocks), kThreads, smem, stream>>>(a);
    return;
  }
#endif
  route_kernel<VPL><<<static_cast<unsigned>(a.p.blocks), kThreads, smem, stream>>>(a);
}

void check_sizes(const Sizes& s) {
  if (s.T < 0 || s.E < 1 || s.K < 1 || s.K > s.E)
    throw d2k::abi_error("expert: need T >= 0 and 1 <= K <= E");
  if (s.E > router::kMaxE || s.K > router::kMaxK)
    throw d2k::abi_error("expert: E <= " + std::to_string(router::kMaxE) + " and K <= " +
                         std::to_string(router::kMaxK) + " (the registers of a warp per token)");
  if (s.T * s.K > INT32_MAX) throw d2k::abi_error("expert: T * K must fit int32 (the permutation's entries)");
  const Plan p = plan_of(s.T);
  if (p.tokens_per_block * s.K > kThreads * router::kScatterPerThread)
    throw d2k::abi_error("expert: a block's entries exceed the scatter's registers");
}

Sizes sizes_of(const d2k_args* args) {
  const int64_t E = d2k::scalar_i(args, "E"), K = d2k::scalar_i(args, "K");
  if (E < 1 || E > router::kMaxE || K < 1 || K > router::kMaxK)
    throw d2k::abi_error("expert: E = " + std::to_string(E) + ", K = " + std::to_string(K) +
                         " outside 1 <= K <= 16, E <= 512");
  Sizes s{d2k::scalar_i(args, "T"), static_cast<int>(E), static_cast<int>(K)};
  check_sizes(s);
  return s;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Sizes s = sizes_of(args);
    d2k::Workspace ws;
    carve(ws, s, plan_of(s.T));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Sizes s = sizes_of(args);
    const Plan p = plan_of(s.T);
    const DLTensor& logits = d2k::input(args, "logits", kDLCUDA, d2k::dl::f32, {s.T, s.E});
    Outputs out;
    out.w = d2k::data<float>(d2k::output(args, "topk_weights", kDLCUDA, d2k::dl::f32, {s.T, s.K}));
    out.ids = d2k::data<int32_t>(d2k::output(args, "topk_ids", kDLCUDA, d2k::dl::i32, {s.T, s.K}));
    out.counts = d2k::data<int32_t>(d2k::output(args, "expert_counts", kDLCUDA, d2k::dl::i32, {s.E}));
    out.offsets = d2k::data<int32_t>(d2k::output(args, "expert_offsets", kDLCUDA, d2k::dl::i32, {s.E + 1}));
    out.perm = d2k::data<int32_t>(d2k::output(args, "permutation", kDLCUDA, d2k::dl::i32, {s.T * s.K}));
    auto stream = static_cast<cudaStream_t>(args->stream);
    if (s.T == 0) {  // no tokens: empty segments
      D2K_CUDA_TRY(args, cudaMemsetAsync(out.counts, 0, sizeof(int32_t) * s.E, stream));
      D2K_CUDA_TRY(args, cudaMemsetAsync(out.offsets, 0, sizeof(int32_t) * (s.E + 1), stream));
      return D2K_OK;
    }
    d2k::Workspace ws(args);
    const Work work = carve(ws, s, p);
    const RouteArgs ra{d2k::data<const float>(logits), s, p, out, work};
    const size_t smem = sizeof(uint32_t) * (static_cast<size_t>(s.E) * p.mask_words + s.E + 1);
    if (p.fused && !kTwoKernel) D2K_CUDA_TRY(args, cudaMemsetAsync(work.done, 0, sizeof(unsigned), stream));
    switch (router::values_per_lane(s.E)) {
      case 1: launch_route<1>(ra, smem, stream); break;
      case 2: launch_route<2>(ra, smem, stream); break;
      case 4: launch_route<4>(ra, smem, stream); break;
      case 8: launch_route<8>(ra, smem, stream); break;
      default: launch_route<16>(ra, smem, stream); break;
    }
    if (!p.fused) {
      scan_kernel<<<static_cast<unsigned>((s.E + kWarps - 1) / kWarps), kThreads, 0, stream>>>(
          work.block_counts, work.block_base, out.counts, s.E, p.blocks);
      const ScatterArgs sa{out.ids, out.counts, work.block_base, out.offsets, out.perm, s, p};
      scatter_kernel<<<static_cast<unsigned>(p.blocks), kThreads, smem, stream>>>(sa);
    }
#if defined(ROUTER_TWO_KERNEL)
    if (p.fused) {
      const ScatterArgs sa{out.ids, out.counts, work.block_base, out.offsets, out.perm, s, p};
      tail_kernel<<<static_cast<unsigned>(p.blocks), kThreads, smem + sizeof(int32_t) * s.E, stream>>>(
          sa, work.block_counts, out.counts);
    }
#endif
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
