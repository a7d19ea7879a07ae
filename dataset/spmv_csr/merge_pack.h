// spmv_csr — the packed shared-memory layout of the merge tile's 16-byte staging (expert.cu,
// SPMV_MERGE_PACK=1), in one place for the kernel and for the CPU test that checks it
// (tests/unit/tasks/spmv_csr/test_merge_pack.cpp).
//
// A tile of the merge path holds `rows` row ends and `nzs` entries with rows + nzs <= tile, so
// four arrays of at most rows + nzs words in all share two arrays of tile + slack words (8 bytes
// per path item instead of the 12 of three full-size arrays):
//   A: values (then products) from word off = j0 & 3; the row sums from word after(off, nzs)
//   B: columns from word off; the row ends from word after(off, nzs) + offr, offr = (i0 + 1) & 3,
//      then the sentinel (the word after the last row end)
// Each staged range is copied as the 16-byte chunks that cover it (stage16: words [b, e) of an
// array land from the range's 16-byte-aligned base, ceil(((b & 3) + e - b) / 4) chunks), so the
// row ends start at a 16-byte boundary after the columns' last chunk.
#pragma once

namespace spmv_pack {

/// Words of array A (values / products, then row sums) and B (columns, then row ends) for a tile
/// of `tile` path items: the entries and rows start at most 3 words into their chunks, the base
/// after the entries rounds their end up by at most 3 words, the row ends' last chunk by at most
/// 3 more. A: base + rows + 1 <= tile + 7; B: base + 4 ceil((offr + rows) / 4) <= tile + 12.
constexpr int a_words(int tile) { return tile + 7; }
constexpr int b_words(int tile) { return tile + 12; }

/// Shared memory of one CTA: both arrays (B 16-byte aligned after A) and the 1 KB the runtime
/// reserves per CTA.
constexpr int smem_per_cta(int tile) { return 4 * (((a_words(tile) + 3) & ~3) + b_words(tile)) + 1024; }

/// The carveout preference for `blocks` CTAs of `smem` bytes each: percent of the SM's 228 KB,
/// rounded up (the hardware then takes the next of its steps: 132, 164, 196, 228 KB ...), at most
/// 100. What is not shared memory stays L1 for the gathers of x.
constexpr int carveout_percent(int blocks, int smem) {
  const int p = (blocks * smem * 100 + 228 * 1024 - 1) / (228 * 1024);
  return p < 100 ? p : 100;
}

/// Words a range of `count` words starting `lead` words into its first chunk takes when staged
/// as whole 16-byte chunks (0 for an empty range: nothing is copied).
constexpr int chunk_words(int lead, int count) { return count > 0 ? 4 * ((lead + count + 3) >> 2) : 0; }

/// The first 16-byte-aligned word after the tile's entries (staged from word off): the base of
/// the row ends in B and of the row sums in A.
constexpr int after(int off, int nzs) { return (off + nzs + 3) & ~3; }

}  // namespace spmv_pack
