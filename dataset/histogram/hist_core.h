// histogram — the expert's shape-only plan and its counter arithmetic, shared with the host
// emulation in tests/unit/tasks/histogram/ so that the CPU tests run this exact code:
//   - plan_for: which shared-memory layout a bin count gets (32-bit counters in R interleaved
//     copies, or 16-bit counters packed two to a word when even one 32-bit copy does not fit),
//     the copies, the shared-memory bytes, the tiles and the rows of per-CTA partial histograms;
//   - the value -> (tile, thread, slot) assignment of the main loop;
//   - packed16_issue / packed16_settle: an increment of a 16-bit counter packed in a 32-bit word
//     with atomics only, whose carries out of either half are accounted exactly by the thread that
//     caused them, however late it settles them.
// Plain C++ with __host__ __device__ under nvcc; the atomics are a template parameter (the device
// passes shared-memory atomicAdd and a global atomicAdd into the CTA's partial row; the host test
// passes plain adds that interleave other increments between the two steps of a carry).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HIST_HD __host__ __device__ __forceinline__
#else
#define HIST_HD inline
#endif

#ifndef HIST_MAX_COPIES
// Upper bound on the 32-bit copies of the histogram per CTA (a power of two, at most 32): copy
// lane % R takes lane's increments, so lanes that hit one hot bin hit R different words.
#define HIST_MAX_COPIES 32
#endif

namespace hist {

constexpr int kThreads = 384;                       ///< 12 warps per CTA
constexpr int kUnroll = 8;                          ///< 16-byte loads in flight per thread
constexpr int64_t kTileChunks = int64_t{kThreads} * kUnroll;  ///< uint4 chunks per tile
constexpr int64_t kTileValues = kTileChunks * 4;   ///< 12288 values per tile
/// Dynamic shared memory a CTA may take for its counters: the H200's opt-in per-block maximum
/// (227 KB) less room for the reduction scratch, so a table plan is valid on any Hopper GPU.
constexpr int64_t kSmemBudget = 220 * 1024;
/// Shared memory of one SM (228 KB on Hopper) and the most SMs a Hopper part has with margin:
/// they bound the grid from the shape alone, so the workspace (the partial rows) is sized
/// without asking the device.
constexpr int64_t kSmemPerSm = 228 * 1024;
constexpr int64_t kMaxSms = 256;
constexpr int kMaxBlocksPerSm = 2048 / kThreads;  ///< 5: the thread limit of an SM

enum class Layout : int {
  kCopies32 = 0,  ///< R copies of 32-bit counters, word b * R + (lane % R); no overflow below 2^32
  kPacked16 = 1,  ///< one table of 16-bit counters, bins 2k and 2k + 1 in word k; carries flushed
};

struct Plan {
  Layout layout;
  int copies;            ///< R (kCopies32), 1 (kPacked16)
  int64_t smem_bytes;    ///< dynamic shared memory of the main kernel
  int64_t chunks;        ///< whole uint4 chunks: values [0, 4 * chunks) go through 16-byte loads
  int64_t tail;          ///< the last n % 4 values, loaded one by one
  int64_t tiles;         ///< tiles of kTileChunks chunks (the last one partial)
  int64_t max_grid;      ///< most CTAs any Hopper GPU runs at once for this plan: the partial rows
};

HIST_HD int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
HIST_HD int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/// The plan for n values into b bins (shape only).
HIST_HD Plan plan_for(int64_t n, int64_t b) {
  Plan p{};
  int copies = HIST_MAX_COPIES;
  while (copies > 1 && b * 4 * copies > kSmemBudget) copies /= 2;
  if (b * 4 * copies <= kSmemBudget) {
    p.layout = Layout::kCopies32;
    p.copies = copies;
    p.smem_bytes = b * 4 * copies;
  } else {
    p.layout = Layout::kPacked16;
    p.copies = 1;
    p.smem_bytes = (b + 1) / 2 * 4;
  }
  p.chunks = n / 4;
  p.tail = n % 4;
  p.tiles = (p.chunks + kTileChunks - 1) / kTileChunks;
  const int64_t per_sm = min64(kMaxBlocksPerSm, max64(1, kSmemPerSm / (p.smem_bytes + 1024)));
  p.max_grid = max64(1, min64(p.tiles, kMaxSms * per_sm));
  return p;
}

/// Chunk (uint4 index) that thread t loads in slot u of tile `tile`: consecutive threads read
/// consecutive 16-byte chunks, so each of a warp's kUnroll loads is 512 contiguous bytes.
HIST_HD int64_t chunk_of(int64_t tile, int u, int t) { return tile * kTileChunks + int64_t{u} * kThreads + t; }

/// Word of bin v in copy `copy` of a kCopies32 table: copies interleaved, so the R copies of a bin
/// sit in R consecutive words (R different banks).
HIST_HD uint32_t copies32_word(uint32_t v, int copies, int copy) { return v * static_cast<uint32_t>(copies) + static_cast<uint32_t>(copy); }

/// Value of bin v in a kPacked16 table.
HIST_HD uint32_t packed16_field(const uint32_t* table, uint32_t v) { return (table[v >> 1] >> ((v & 1u) * 16)) & 0xFFFFu; }

/// Adds c (1 <= c <= 65535) to bin v's 16-bit counter in `table` (bins 2k, 2k + 1 in the low and
/// high half of word k) in two steps: packed16_issue does the increment's atomic and returns the
/// old word; packed16_settle, called with that old word at any later time, accounts for a wrap.
/// `add(word_ptr, x)` is an atomic add returning the old word; `spill(bin, x)` adds x (mod 2^32)
/// to the bin's 32-bit partial count outside the table. Invariant: for every bin, field + spilled
/// = increments (mod 2^32) once every issued increment is settled, whatever other increments and
/// settlements interleave:
///   - a high-half add that wraps the field (old + c > 0xFFFF) spills 65536; its carry out of bit 31
///     is lost, as it should be;
///   - a low-half add that wraps spills 65536 to its bin and has carried 1 into the high half: the
///     thread takes it back with a second atomic (-0x10000). Both the carry and the take-back move
///     the high field by one, so each spills +65536 or -65536 to the high bin when it crosses the
///     field's 0xFFFF / 0 boundary, as seen in the old word its own atomic returned. The high bin of
///     the last word of an odd B does not exist: its field is kept consistent, nothing is spilled.
/// Splitting issue from settle lets a thread issue the atomics of several values before it waits
/// on any old word (a take-back deferred behind the thread's own later increments is one more
/// interleaving the invariant covers).
template <class AtomicAdd>
HIST_HD uint32_t packed16_issue(uint32_t* table, uint32_t v, uint32_t c, AtomicAdd&& add) {
  return add(table + (v >> 1), (v & 1u) ? c << 16 : c);
}

template <class AtomicAdd, class Spill>
HIST_HD void packed16_settle(uint32_t* table, uint32_t v, uint32_t c, uint32_t old, uint32_t bins, AtomicAdd&& add,
                             Spill&& spill) {
  if (v & 1u) {
    if ((old >> 16) + c > 0xFFFFu) spill(v, 0x10000u);
    return;
  }
  if ((old & 0xFFFFu) + c <= 0xFFFFu) return;  // the common case: no carry
  spill(v, 0x10000u);
  const bool high_exists = v + 1 < bins;
  if ((old >> 16) == 0xFFFFu && high_exists) spill(v + 1, 0x10000u);  // the carry wrapped the high field
  const uint32_t back = add(table + (v >> 1), 0xFFFF0000u);             // high field - 1
  if ((back >> 16) == 0u && high_exists) spill(v + 1, 0xFFFF0000u);     // ... across 0: -65536
}

/// Both steps at once.
template <class AtomicAdd, class Spill>
HIST_HD void packed16_add(uint32_t* table, uint32_t v, uint32_t c, uint32_t bins, AtomicAdd&& add, Spill&& spill) {
  const uint32_t old = packed16_issue(table, v, c, add);
  packed16_settle(table, v, c, old, bins, add, spill);
}

}  // namespace hist
