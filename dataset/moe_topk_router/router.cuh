// moe_topk_router — the expert's decision code shared with the host tests: the packed selection
// key, the launch plan (tokens per block, fused or three launches) and the stable rank of a token
// inside its block from the per-expert bit masks. Everything here is __host__ __device__ so the
// CPU tests run the same arithmetic as the kernels (tests/unit/tasks/moe_topk_router/).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define ROUTER_HD __host__ __device__ __forceinline__
#else
#define ROUTER_HD inline
#endif

namespace router {

constexpr int kWarps = 8;                 // warps per block of the selection kernel (a warp per token)
constexpr int kThreads = kWarps * 32;
constexpr int kMaxE = 512;                // 16 logits per lane
constexpr int kMaxK = 16;
constexpr int kFuseMaxBlocks = 64;        // up to here the last block scans and scatters (one launch)
constexpr int kScatterPerThread = 4;      // entries of a block held per thread by the scatter kernel

ROUTER_HD int popc(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}

/// Order-preserving unsigned image of a float (larger float, larger key); -0 maps as +0 so the two
/// zeros are one value, as the task's tie rule says.
ROUTER_HD uint32_t order_key(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
ROUTER_HD float order_value(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// One 64-bit key per (logit, expert): the unsigned maximum is the largest logit and, among equal
/// logits, the lowest expert id (the low word is ~id). A valid key is never 0, so 0 marks "taken"
/// and "no expert" (lanes past E).
ROUTER_HD uint64_t pack_key(float x, int e) {
  return (static_cast<uint64_t>(order_key(x)) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(e));
}
ROUTER_HD int key_id(uint64_t k) { return static_cast<int>(~static_cast<uint32_t>(k)); }
ROUTER_HD float key_value(uint64_t k) { return order_value(static_cast<uint32_t>(k >> 32)); }

/// Logits per lane for E experts (expert e lives in lane e % 32, register e / 32): 1, 2, 4, 8, 16.
ROUTER_HD int values_per_lane(int64_t E) {
  int v = 1;
  while (v * 32 < E) v *= 2;
  return v;
}

/// How a call is split. A block of kWarps warps owns tokens_per_block consecutive tokens (warp w
/// the tokens_per_warp tokens from w * tokens_per_warp); each expert has mask_words 32-bit words of
/// "token selected me" bits per block.
struct Plan {
  int tokens_per_warp = 1;
  int tokens_per_block = kWarps;
  int mask_words = 1;
  int64_t blocks = 0;
  bool fused = true;  // one launch: the last block to finish scans and scatters
};

/// small_tokens_per_warp: tokens per warp while the call fits kFuseMaxBlocks blocks with it (1: the
/// default plan; 2: half the blocks at T <= 512, so half the block counts for the fused tail to scan).
ROUTER_HD Plan plan_for(int64_t T, int small_tokens_per_warp = 1) {
  Plan p;
  // Small T: a token per warp, as many warps in flight as there are tokens. Large T: several
  // tokens per warp so the counts to scan (E per block) stay small against the logits.
  p.tokens_per_warp = T <= static_cast<int64_t>(kFuseMaxBlocks) * kWarps * small_tokens_per_warp ? small_tokens_per_warp
                      : T <= 4096                                                                 ? 1
                      : T <= 32768                                                                ? 4
                                                                                                  : 8;
  p.tokens_per_block = p.tokens_per_warp * kWarps;
  p.mask_words = (p.tokens_per_block + 31) / 32;
  p.blocks = (T + p.tokens_per_block - 1) / p.tokens_per_block;
  p.fused = p.blocks <= kFuseMaxBlocks;
  return p;
}

/// Exclusive prefix over n values in chunks of Chunk: every load of a chunk is issued before any of
/// its stores, so a chunk costs one memory round trip (a store may alias a later load, so a loop
/// that stores before each next load waits a round trip per value). load(i) gives value i;
/// store(i, s) receives the sum of values [0, i). Returns the sum of all n.
template <int Chunk, class Load, class Store>
ROUTER_HD int chunked_exclusive_prefix(int64_t n, Load load, Store store) {
  int run = 0;
  for (int64_t i0 = 0; i0 < n; i0 += Chunk) {
    int v[Chunk];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int u = 0; u < Chunk; ++u) v[u] = i0 + u < n ? load(i0 + u) : 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int u = 0; u < Chunk; ++u) {
      if (i0 + u < n) store(i0 + u, run);
      run += v[u];
    }
  }
  return run;
}

/// Rank of token `local` among the block's tokens that selected this expert (the tokens before
/// it): the stable counting sort's position inside the block. `words` = the expert's mask words.
ROUTER_HD int mask_rank(const uint32_t* words, int local) {
  int r = 0;
  for (int w = 0; w < local / 32; ++w) r += popc(words[w]);
  const uint32_t below = (1u << (local % 32)) - 1u;
  return r + popc(words[local / 32] & below);
}

}  // namespace router
