// radix_sort_pairs — the expert's tile geometry, digit and look-back word encoding, shared with
// the host emulation in tests/unit/tasks/radix_sort_pairs/ so the CPU tests run this exact
// arithmetic: which input pair each (warp, item, lane) of a tile holds, the digit of a key in a
// pass, the 32-bit status word of the decoupled look-back, and the workspace layout.
// Plain C++ with __host__ __device__ under nvcc.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define RS_HD __host__ __device__ __forceinline__
#else
#define RS_HD inline
#endif

#ifndef RS_ITEMS
#define RS_ITEMS 24  ///< pairs per thread per tile (6144 per tile)
#endif

namespace rs {

constexpr int kDigitBits = 8;
constexpr int kDigits = 1 << kDigitBits;           ///< 256 buckets per pass
constexpr int kPasses = 32 / kDigitBits;           ///< 4 passes over 32-bit keys
constexpr int kThreads = kDigits;                  ///< one thread per digit in the per-digit steps
constexpr int kWarps = kThreads / 32;
constexpr int kItems = RS_ITEMS;
constexpr int kWarpSpan = 32 * kItems;             ///< consecutive pairs a warp ranks
constexpr int kTile = kThreads * kItems;           ///< pairs per tile (one CTA)
static_assert(kItems >= 1 && kItems <= 32, "RS_ITEMS: 1 .. 32 pairs per thread");

/// Input index of item `item` of `lane` in warp `warp` of the tile starting at `base`: a warp owns
/// kWarpSpan consecutive pairs, read item by item across the lanes (each load instruction is 32
/// consecutive words), so the order (warp, item, lane) is the input order: ranking in that order
/// is stable.
RS_HD int64_t item_index(int64_t base, int warp, int item, int lane) {
  return base + static_cast<int64_t>(warp) * kWarpSpan + item * 32 + lane;
}

RS_HD unsigned digit(uint32_t key, int pass) { return (key >> (pass * kDigitBits)) & (kDigits - 1); }

/// Key given to the items past N in the last tile: digit 255 in every pass, and last in the tile's
/// order, so after the tile-local sort they sit at positions [valid, kTile) and are never written.
constexpr uint32_t kPadKey = 0xFFFFFFFFu;

// Look-back status word of (tile, digit): two flag bits over a 30-bit count (N < 2^30).
constexpr uint32_t kFlagAggregate = 1u << 30;  ///< value = this tile's count of the digit
constexpr uint32_t kFlagInclusive = 2u << 30;  ///< value = the digit's count in tiles [0, tile]
constexpr uint32_t kValueMask = (1u << 30) - 1;
RS_HD uint32_t status_flag(uint32_t w) { return w & ~kValueMask; }
RS_HD uint32_t status_value(uint32_t w) { return w & kValueMask; }

RS_HD int64_t num_tiles(int64_t n) { return (n + kTile - 1) / kTile; }

#ifndef RS_LOOKBACK_WINDOW
#define RS_LOOKBACK_WINDOW 16  ///< predecessor words a look-back thread loads per round trip (1: one per round trip, the form before 2026-12-03)
#endif
constexpr int kLookbackWindow = RS_LOOKBACK_WINDOW;
static_assert(kLookbackWindow >= 1 && kLookbackWindow <= 32, "RS_LOOKBACK_WINDOW: 1 .. 32 words per round");

/// One round of a windowed look-back for one digit: w[u] is the status word of tile j - u (the
/// nearest predecessor first), all W loaded at once so one round trip covers W tiles. The words are
/// consumed in tile order, nearest first, exactly as the one-word walk would: each published word's
/// value is added; an INCLUSIVE word ends the walk (returns true); an unpublished word (flag 0)
/// ends the round before it (returns false), and the next round starts at tile j - taken, so that
/// word is polled again. Words of tiles below 0 (loaded clamped to tile 0) are never consumed: tile
/// 0's word is INCLUSIVE once published, so the walk ends at it or before it.
template <int W>
RS_HD bool lookback_round(const uint32_t (&w)[W], uint32_t& exclusive, int& taken) {
  bool open = true, done = false;
  taken = 0;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int u = 0; u < W; ++u) {
    const uint32_t f = status_flag(w[u]);
    open = open && f != 0;
    if (open) {
      exclusive += status_value(w[u]);
      ++taken;
    }
    done = done || (open && f == kFlagInclusive);
    open = open && f != kFlagInclusive;
  }
  return done;
}

/// Workspace words after the two N-word ping-pong buffers: the global digit counts of every pass,
/// the tile counter of every pass, then the look-back words of every pass, all zeroed by one
/// memset per call; the digit offsets of every pass (written by a kernel, not zeroed) come last.
struct Layout {
  int64_t counts;    ///< [kPasses][kDigits]
  int64_t counters;  ///< [kPasses]
  int64_t status;    ///< [kPasses][tiles][kDigits]
  int64_t zeroed;    ///< words from `counts` that the memset clears
  int64_t offsets;   ///< [kPasses][kDigits]
  int64_t words;     ///< all of it
};

RS_HD Layout layout(int64_t n) {
  Layout l{};
  l.counts = 0;
  l.counters = l.counts + kPasses * kDigits;
  l.status = l.counters + kPasses;
  l.zeroed = l.status + kPasses * num_tiles(n) * kDigits;
  l.offsets = l.zeroed;
  l.words = l.offsets + kPasses * kDigits;
  return l;
}

}  // namespace rs
