// hash_join — the partition plan of the expert's radix-partitioned join (the `partitioned`
// variant, HJ_PARTITIONED=1), shared with the host emulation in tests/unit/tasks/hash_join/ so
// the CPU tests run this exact arithmetic: how many partitions a key range gets, which partition
// and table slot a key falls in, the per-CTA shared-memory table a partition needs, and how the
// rows of one side are cut into chunks for the histogram / scatter passes, and how the partition
// id is split between the two scatter passes (first-level bins, then sub-bins).
// Plain C++ with __host__ __device__ under nvcc.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HJP_HD __host__ __device__ __forceinline__
#else
#define HJP_HD inline
#endif

#ifndef HJ_PART_BITS
#define HJ_PART_BITS 15  ///< log2 of the keys of domain per partition (its direct table's slots)
#endif
#ifndef HJ_PART_MAX_LOG2
#define HJ_PART_MAX_LOG2 15  ///< log2 of the most partitions (the histogram's shared memory)
#endif
#ifndef HJ_PART_MIN_ROWS
#define HJ_PART_MIN_ROWS (1 << 22)  ///< fewest build rows that take the partitioned path
#endif
#ifndef HJ_PART_TABLE_MAX
#define HJ_PART_TABLE_MAX (160 * 1024)  ///< bytes of shared memory a partition's table may take
#endif

namespace hjp {

constexpr uint32_t kPartBits = HJ_PART_BITS;
constexpr uint32_t kSlots = 1u << kPartBits;     ///< direct-table slots (domain keys) per partition
constexpr uint32_t kBitmapWords = kSlots / 32;   ///< presence bitmap words per partition
constexpr uint32_t kMaxPartsLog2 = HJ_PART_MAX_LOG2;
constexpr uint32_t kMaxParts = 1u << kMaxPartsLog2;
/// The widest key range the plan partitions (2^30 with the defaults); wider ranges keep the
/// existing global-table paths.
constexpr uint64_t kMaxRange = static_cast<uint64_t>(kMaxParts) << kPartBits;
/// A partition's shared-memory table: 4-byte payloads indexed by slot plus a presence bitmap
/// (the bitmap, not an all-ones "empty" payload, says a slot is taken, so the tuple
/// (key -1, payload -1) needs no special case).
constexpr uint64_t kTableBytes = static_cast<uint64_t>(kSlots) * 4 + kBitmapWords * 4;
constexpr uint64_t kTableBudget = HJ_PART_TABLE_MAX;
/// Build sides from this many rows take the partitioned path (below it the build side's table is
/// small enough for L2 and today's paths are cheaper than two extra passes over the probe side).
constexpr int64_t kMinRows = HJ_PART_MIN_ROWS;
constexpr int64_t kChunkMin = int64_t{1} << 16;  ///< fewest rows per histogram / scatter chunk
constexpr int64_t kChunksTarget = 256;           ///< about this many chunks per side
constexpr int64_t kChunkAlign = 4096;
static_assert(kPartBits >= 5 && kPartBits <= 16, "HJ_PART_BITS out of range");
static_assert(kMaxPartsLog2 + kPartBits <= 31, "partitions x slots must stay within 2^31");
static_assert(kTableBytes <= kTableBudget, "a partition's table exceeds HJ_PART_TABLE_MAX");

struct PartPlan {
  uint32_t lo;     ///< min build key, as uint32
  uint64_t range;  ///< max - min + 1 (1 .. 2^32)
  uint32_t parts;  ///< partitions covering [0, range) in slices of kSlots keys (when ok)
  bool ok;         ///< the range is narrow enough for at most kMaxParts partitions
};

/// The plan from the min and max build key (the on-device min/max reduction's result).
HJP_HD PartPlan part_plan(int32_t mn, int32_t mx) {
  PartPlan p;
  p.lo = static_cast<uint32_t>(mn);
  p.range = static_cast<uint64_t>(static_cast<int64_t>(mx) - mn + 1);
  const uint64_t parts = (p.range + kSlots - 1) >> kPartBits;
  p.ok = p.range <= kMaxRange;
  p.parts = p.ok ? static_cast<uint32_t>(parts) : 0u;
  return p;
}

/// Whether a call takes the partitioned path: a large build side and a narrow enough range.
HJP_HD bool use_partitioned(const PartPlan& p, int64_t r) { return r >= kMinRows && p.ok; }

/// Offset of a key in the range; false when the key is outside it (such a probe row cannot match
/// and is dropped while partitioning).
HJP_HD bool key_offset(const PartPlan& p, int32_t key, uint32_t& d) {
  d = static_cast<uint32_t>(key) - p.lo;  // mod 2^32: keys below lo wrap far above range
  return d < p.range;
}
HJP_HD uint32_t part_of(uint32_t d) { return d >> kPartBits; }
HJP_HD uint32_t slot_of(uint32_t d) { return d & (kSlots - 1); }
/// The key held by slot 0 of partition `part` (as uint32): partition `part` covers the keys
/// [part_base, part_base + kSlots) of the range.
HJP_HD uint32_t part_base(const PartPlan& p, uint32_t part) { return p.lo + (part << kPartBits); }

/// Rows per histogram / scatter chunk of a side of n rows (one CTA per chunk): about
/// kChunksTarget chunks, at least kChunkMin rows each, so the per-chunk partition counts stay a
/// few MB while every SM gets chunks.
HJP_HD int64_t chunk_rows(int64_t n) {
  int64_t c = (n + kChunksTarget - 1) / kChunksTarget;
  c = (c + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  return c < kChunkMin ? kChunkMin : c;
}
HJP_HD int64_t num_chunks(int64_t n) {
  const int64_t c = chunk_rows(n);
  return n <= 0 ? 0 : (n + c - 1) / c;
}

/// Two-pass scatter (hj_part_pass1 / hj_part_pass2). A one-pass scatter to 2^13 partitions with
/// one 8-byte store per row leaves partly written sectors that the L2 evicts and the DRAM
/// read-modify-writes (measured: 3.6x the compulsory bytes both ways). Two passes of fan-out
/// ~sqrt(parts) each give runs of tile / fan-out rows per bin, whole sectors: pass 1 bins rows by
/// the high bits of the partition id (part >> sub_bits), pass 2 each first-level bin's rows by the
/// low sub_bits bits. The final partitions, their order (first-level bin major, sub-bin minor is
/// the partition id itself) and the bases are those of the one-pass scatter.
constexpr uint32_t kMaxSubBits = kMaxPartsLog2 / 2;
constexpr uint32_t kMaxSubBins = 1u << kMaxSubBits;                      ///< pass 2's fan-out
constexpr uint32_t kMaxFirstBins = 1u << (kMaxPartsLog2 - kMaxSubBits);  ///< pass 1's fan-out
/// Rows one CTA ranks and stages per tile in both passes (the staging tile's pairs).
constexpr uint32_t kPassTile = 4096;

HJP_HD uint32_t ceil_log2_parts(uint32_t parts) {
  uint32_t l = 0;
  while ((1u << l) < parts) ++l;
  return l;
}
/// Bits of the partition id that pass 2 sorts by: the lower half (6 of 13 at 2^13 partitions).
HJP_HD uint32_t sub_bits(uint32_t parts) { return ceil_log2_parts(parts) / 2; }
/// First-level bins: partitions [b << sub_bits, (b + 1) << sub_bits) form bin b (128 at 2^13).
HJP_HD uint32_t first_bins(uint32_t parts) {
  const uint32_t sb = sub_bits(parts);
  return (parts + (1u << sb) - 1) >> sb;
}
HJP_HD uint32_t first_bin_of(uint32_t part, uint32_t sb) { return part >> sb; }
HJP_HD uint32_t sub_bin_of(uint32_t part, uint32_t sb) { return part & ((1u << sb) - 1); }

/// Pass 2's walk over one chunk's slices (their lengths len[0 .. nbins), in bin order): a tile
/// takes up to kPassTile rows, the rest of slice a from row ta and, when slice a ends inside the
/// tile, the first rows of the next non-empty slice b. A tile is full unless it ends the chunk or
/// holds the whole of slice b (two slices at most). One slice per tile left tiles part-empty at
/// the bench row: a probe slice of ~8K rows took two full tiles and often a nearly empty third, a
/// build slice of ~2K rows half a tile. The rows of a and b are ranked in two halves of the bins,
/// 2 x 2^sub_bits <= kMaxFirstBins.
struct Pass2Tile {
  uint32_t a, ta, na;       ///< slice a's rows [ta, ta + na)
  uint32_t b, nbr;          ///< slice b's rows [0, nbr) (nbr == 0: none, b unused)
  uint32_t next_a, next_t;  ///< the next tile's start (next_a == nbins: done)
  uint32_t steps;           ///< slices from a to next_a (0, 1 or 2): the bin halves alternate per slice
};
HJP_HD uint32_t next_nonempty(const uint32_t* len, uint32_t nbins, uint32_t i) {
  while (i < nbins && len[i] == 0) ++i;
  return i;
}
/// The tile starting at row ta of slice a (a < nbins, ta < len[a]).
HJP_HD Pass2Tile pass2_tile(const uint32_t* len, uint32_t nbins, uint32_t a, uint32_t ta) {
  Pass2Tile s;
  s.a = a;
  s.ta = ta;
  const uint32_t rest = len[a] - ta;
  s.na = rest < kPassTile ? rest : kPassTile;
  s.b = nbins;
  s.nbr = 0;
  s.next_a = a;
  s.next_t = ta + s.na;
  s.steps = 0;
  if (s.na == rest) {  // slice a ends in this tile
    const uint32_t b = next_nonempty(len, nbins, a + 1);
    s.next_a = b;
    s.next_t = 0;
    s.steps = 1;
    if (b < nbins && s.na < kPassTile) {  // the tile's rest from the start of slice b
      s.b = b;
      s.nbr = len[b] < kPassTile - s.na ? len[b] : kPassTile - s.na;
      if (s.nbr == len[b]) {
        s.next_a = next_nonempty(len, nbins, b + 1);
        s.steps = 2;
      } else {
        s.next_t = s.nbr;
      }
    }
  }
  return s;
}

/// Where pass 2's next tile starts (has: there is one). Variant `partitioned_async` keeps only
/// this for the tile in flight and recomputes its Pass2Tile when it needs it.
struct Pass2Next {
  uint32_t a, t;
  bool has;
};
HJP_HD Pass2Next pass2_after(const Pass2Tile& s, uint32_t nbins) {
  return Pass2Next{s.next_a, s.next_t, s.next_a < nbins};
}

}  // namespace hjp
