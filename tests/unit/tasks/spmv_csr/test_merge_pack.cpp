// spmv_csr: the packed shared-memory layout of the merge tile's 16-byte staging
// (dataset/spmv_csr/merge_pack.h, the functions the kernel uses under SPMV_MERGE_PACK=1) replayed
// for every tile shape: each staged range (whole 16-byte chunks from its aligned base, as expert.cu's
// stage16 copies them), the sentinel after the row ends and the row sums written by merge_rows
// must lie inside their array and never on a word another range still needs. Also the carveout
// arithmetic: the packed tile's 8 CTAs fit a smaller carveout step than the three-array tile's,
// which is the L1 the variant gives to the gathers of x.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "merge_pack.h"

namespace {

using namespace spmv_pack;

/// A half-open range of words of one shared array.
struct Span {
  int b = 0, e = 0;
  bool empty() const { return e <= b; }
};

bool overlap(Span u, Span v) { return !u.empty() && !v.empty() && u.b < v.e && v.b < u.e; }

/// Every range the kernel writes for a tile of `rows` row ends and `nzs` entries whose first entry
/// and first row end lie `off` and `offr` words into their 16-byte chunks. Returns the first
/// violation, or an empty string.
/// a_size and b_size: the arrays' words (merge_pack.h's a_words / b_words, or fewer to see a
/// short layout fail).
std::string check_tile(int tile, int a_size, int b_size, int rows, int nzs, int off, int offr) {
  const int base = after(off, nzs);
  // Array A: the values' chunks (the products are written in place, chunk by chunk), then the row
  // sums s_y[0 .. rows] (merge_rows: s_y[r] for completed rows and s_y[rows] for the carry).
  const Span vals{0, chunk_words(off, nzs)};
  const Span sums{base, base + rows + 1};
  // Array B: the columns' chunks, the row ends' chunks from base, the sentinel after the last end.
  const Span cols{0, chunk_words(off, nzs)};
  const Span ends{base, base + chunk_words(offr, rows)};
  const int sentinel = base + offr + rows;
  const std::string at = " (tile " + std::to_string(tile) + ", rows " + std::to_string(rows) + ", nzs " +
                         std::to_string(nzs) + ", off " + std::to_string(off) + ", offr " + std::to_string(offr) + ")";
  if (base % 4 != 0) return "row ends' base not 16-byte aligned" + at;
  if (nzs > 0 && vals.e < off + nzs) return "entries not covered by their chunks" + at;
  if (rows > 0 && ends.e < base + offr + rows) return "row ends not covered by their chunks" + at;
  if (vals.e > a_size) return "values' chunks past array A" + at;
  if (sums.e > a_size) return "row sums past array A" + at;
  if (overlap(vals, sums)) return "row sums on the products" + at;
  if (cols.e > b_size) return "columns' chunks past array B" + at;
  if (ends.e > b_size) return "row ends' chunks past array B" + at;
  if (sentinel >= b_size) return "sentinel past array B" + at;
  if (overlap(cols, ends)) return "row ends on the columns" + at;
  if (sentinel < cols.e) return "sentinel on the columns" + at;
  if (sentinel < base + offr + rows) return "sentinel on a row end" + at;
  return {};
}

/// Every shape of a tile of `tile` path items: rows + nzs <= tile, both offsets; the arrays one
/// word short of merge_pack.h's sizes by `a_short` / `b_short`.
std::string check_every_shape(int tile, int a_short = 0, int b_short = 0) {
  for (int rows = 0; rows <= tile; ++rows)
    for (int nzs = 0; rows + nzs <= tile; ++nzs)
      for (int off = 0; off < 4; ++off)
        for (int offr = 0; offr < 4; ++offr) {
          std::string err =
              check_tile(tile, a_words(tile) - a_short, b_words(tile) - b_short, rows, nzs, off, offr);
          if (!err.empty()) return err;
        }
  return {};
}

TEST(SpmvMergePack, EveryTileShapeFitsWithoutOverlap) {
  // The kernel's tiles (256 threads x 5, 7, 9 items) and small tiles of every residue mod 4,
  // where the slack words are the tightest.
  for (int tile : {256 * 5, 256 * 7, 256 * 9}) EXPECT_EQ(check_every_shape(tile), "");
  for (int tile = 1; tile <= 41; ++tile) EXPECT_EQ(check_every_shape(tile), "");
}

TEST(SpmvMergePack, AWordLessFails) {
  // The slack is needed: with either array one word shorter some tile shape writes past it (so the
  // replay above can fail, and the sizes are not looser than the kernel's writes ask).
  bool a_fails = false, b_fails = false;
  for (int tile = 1; tile <= 41; ++tile) {
    a_fails = a_fails || !check_every_shape(tile, 1, 0).empty();
    b_fails = b_fails || !check_every_shape(tile, 0, 1).empty();
  }
  EXPECT_TRUE(a_fails);
  EXPECT_TRUE(b_fails);
}

TEST(SpmvMergePack, CarveoutLeavesMoreL1ThanThreeArrays) {
  const int kib = 1024, sm = 228 * kib;
  for (int items : {7, 9}) {
    const int tile = 256 * items;
    const int packed = smem_per_cta(tile), three = 12 * tile + 96 + 1024;  // expert.cu's kSmemPerCta
    const int p = carveout_percent(8, packed);
    // The preference covers the 8 CTAs, and one percent less would not.
    EXPECT_GE(static_cast<int64_t>(p) * sm, 100LL * 8 * packed) << items;
    EXPECT_LT(static_cast<int64_t>(p - 1) * sm, 100LL * 8 * packed) << items;
    // 8 bytes per item (two arrays) against the three-array tile's 12.
    EXPECT_LT(8 * packed, 8 * three - 8 * 4 * tile + 8 * 1024) << items;
  }
  // kItems 7: 8 CTAs in the 132 KB step (124 KB of L1 left of the SM's 256 KB); the three-array
  // tile needs the 196 KB step (60 KB of L1).
  EXPECT_LE(8 * smem_per_cta(256 * 7), 132 * kib);
  EXPECT_GT(8 * (12 * 256 * 7 + 96 + 1024), 164 * kib);
  // kItems 9: the 164 KB step (92 KB of L1).
  EXPECT_GT(8 * smem_per_cta(256 * 9), 132 * kib);
  EXPECT_LE(8 * smem_per_cta(256 * 9), 164 * kib);
  EXPECT_EQ(carveout_percent(8, 100 * kib), 100);  // capped
}

}  // namespace
