// stream_compaction — expert: one pass over the rows, a tile per CTA, the tile's output position
// from a decoupled look-back, the kept rows staged in shared memory and written out coalesced.
//
// Per tile of kTile = 3072 rows (256 threads x SC_GROUPS = 3 groups of 4 consecutive rows):
//   1. the tile id is blockIdx.x: the hardware starts a grid's CTAs in increasing index order, so
//      every lower tile has started when a tile's look-back waits on it (CUB's single-pass scan and
//      select, the library target, rest on the same order); the l_shipdate loads go out at once,
//      with no claim round trip before them (SC_CLAIM=1: an atomic counter in arrival order);
//   2. l_shipdate read as int4 (16-byte loads, a warp reads 512 contiguous bytes per load), the
//      predicate evaluated into a 4-bit mask per group;
//   3. late materialisation: l_extendedprice and l_partkey are loaded (int4) only for groups that
//      keep a row, so at low selectivity most of their sectors are never fetched;
//   4. ranks: __popc of each group's mask, a warp inclusive scan (shuffles), the warps' totals in
//      shared memory, one barrier: every kept row's position inside the tile, and the tile's count;
//   5. decoupled look-back (Merrill & Garland 2016) by warp 0: the tile publishes its count
//      (AGGREGATE), then reads 64 predecessors' status words at a time (SC_LB_WORDS = 2 per lane)
//      until it meets an INCLUSIVE prefix, and publishes its own inclusive prefix. Flag and value
//      share one 64-bit word, so a relaxed load sees both or neither (no fence);
//   6. once the tile's first output row `exclusive` is known (a barrier after the look-back), the
//      kept values scattered into shared memory at their tile rank + exclusive mod 32, then
//      written by consecutive threads as aligned 16-byte evict-first stores: a warp store covers
//      four whole 128-byte lines of a column whatever the selection pattern, partial quads only
//      at the tile's two ends (SC_VEC_STORE);
//   7. a one-thread kernel after it writes the count from the last tile's inclusive prefix: the
//      count is the call's last write (stream order), so a reader that sees it written sees every
//      row written. (The last CTA to finish could write it instead, but that needs a fence behind
//      every CTA's stores, which lengthens every CTA; the extra launch costs about a microsecond.)
// The status words and the tile counter are the workspace, zeroed by one memset per call
// (8 bytes per tile: 3.9 MB at 1e9 rows, about 1 us).
//
// Variants considered (the H200 table is in docs/results/stream_compaction.md):
//   - this one (measured as tile3k_all, 2026-12-02; the default since): 3072-row tiles, 16-byte
//     staged stores, blockIdx tile ids, a 64-predecessor look-back. 64 registers, 37.4 KB static
//     shared memory, no spills, 4 CTAs per SM. 1.14x / 1.15x / 1.18x the previous default at 1e8
//     rows, 1% / 50% / 99% (612 us at 50%, 68.8% of SOL), 1.63x CUB at 50%;
//   - tile2k_prev (the default until 2026-12-02; SC_GROUPS=2 SC_MIN_BLOCKS=5 SC_VEC_STORE=0
//     SC_CLAIM=1 SC_LB_WORDS=1: one 2048-row tile per CTA claimed from an atomic counter, 4-byte
//     staged stores, a 32-predecessor look-back; 48 registers, 25,680 B static shared memory, no
//     spills, 5 CTAs per SM): 690 us at 1e8 rows,
//     50% (60.7% of SOL). Diagnosis: it moves the cost model's bytes (18 B per row at 50%) at
//     2.6 TB/s against 4.29 TB/s of calibrated copy, as CUB's DeviceSelect does (2.6 TB/s on its
//     26 B per row), so the traffic is right and the time between loads is the loss. 48,829 CTAs
//     over 660 resident slots (5 per SM) is 74 waves; 690 us / 74 = 9.3 us per CTA, for 37 KB
//     moved. Each CTA runs a chain of dependent round trips with its loads in flight during only
//     part of it: tile claim (L2 atomic), l_shipdate (DRAM), the payload (DRAM, after the
//     predicate), the look-back (one or more L2 round trips of 32 status words, after a barrier),
//     the stores, then the CTA ends and the next one starts from the claim. 1% shows the same
//     (121 tiles per us, 404 us against 111 us of SOL), so the per-tile chain, not the bytes, sets
//     the time. The measured variants below moved none of it: more CTAs (blocks6) or the payload
//     loads issued earlier inside the same chain (eager_payload) did not shorten a tile's chain;
//   - persistent, persistent_g4, persistent_eager (SC_PIPE=1; measured 2026-12-02: 1963-4367 us
//     at 1e8 rows, 2.8-7.5x slower, 10-14% noise): one CTA per resident slot looping over tiles
//     claimed one ahead. A claimed tile's count is published only after its holder has finished
//     the tile before (look-back, stores), so every later tile's look-back waits on it: a convoy
//     through all resident CTAs. Code removed (2026-12-03);
// The variants measured on 2026-12-02 (fifth session) kept tile2k_prev's one-tile-per-CTA chain and
// shortened it or widened it; each was tile2k_prev's flags plus the ones named (their %VARIANT%
// lines are gone: the default holds all three):
//   - vec_store (SC_VEC_STORE=1; measured 1.05x at 50%, 0.97x at 1%): the stores. The tile's first
//     output row `exclusive` is waited
//     for (one more barrier) before staging, the kept rows are staged at rank + exclusive mod 32,
//     and consecutive threads write aligned 16-byte quads with the evict-first hint: a warp store
//     covers 4 whole 128-byte lines per column where the default's 4-byte stores start anywhere
//     and touch 2 lines per 128 bytes; a quarter of the store instructions and half the L2 write
//     requests, and no partial sector except at the tile's two ends. Hypothesis: the store phase
//     (12 STG per thread at 50%, the end of every CTA's chain) is a large part of the 9.3 us, as
//     direct_store's loss (1.47x at 50%, scattered 4-byte stores) suggests. 48 registers, 25.0 KB
//     of static shared memory, no spills, 5 CTAs per SM (sm_90a ptxas);
//   - tile3k (SC_GROUPS=3, SC_MIN_BLOCKS=4; measured 1.11x at 50%, most of the gain): 3072-row
//     tiles (12 rows per thread). Hypothesis: the
//     per-tile fixed chain (CTA start, claim atomic, barriers, a look-back of one or more L2 round
//     trips, which scans more windows the more tiles start per microsecond) is the loss; 1.5x the
//     rows per chain, 2/3 of the tiles (and look-backs) per row, and 4 CTAs x 36 KB of loads per SM
//     against 5 x 24 KB. 64 registers, 37.0 KB static shared memory, no spills, 4 CTAs per SM;
//   - round_trips (SC_CLAIM=0, SC_LB_WORDS=2; measured within noise alone): fewer L2 round trips
//     on the chain. The tile id is
//     blockIdx.x instead of an atomic claim, so a CTA issues its l_shipdate loads at once instead
//     of after an L2 atomic and a barrier (the look-back's progress then rests on CTAs starting in
//     index order, as CUB's single-pass scan and select, the library target, rest on it); and a
//     look-back round reads 64 predecessors (2 words per lane) instead of 32. A round returns
//     when its predecessors have published something, and it ends the look-back if one of them
//     has its inclusive prefix; a tile whose look-back began a round trip ago has, so the round
//     needs to reach back (tiles started per us) x (round trip) / 2 tiles: about 30-45 at 50%
//     and 1% (70-120 tiles per us, 0.5-1 us), at the edge of 32, well inside 64. Hypothesis: the
//     claim and a second look-back round are 1-2 us of the 9.3 us chain (and most of the 1%
//     row's 5.5 us) with nothing in flight. 48 registers, 24.6 KB, no spills, 5 CTAs per SM
//     (4 words per lane spill in the 48-register budget);
//   - tile3k_all: the three together, now the default (above);
//   - direct_store (SC_STAGE=0; measured 1012 us at 50%): each thread writes its kept values
//     straight to global memory at their rank: a warp's stores scatter over the run of its kept
//     rows, 1-4 values per lane, more L2 write transactions for the same bytes;
//   - eager_payload (SC_LATE=0; measured 717 us at 50%, 505 us at 1%): all three columns loaded
//     before the predicate is known, in the one-tile-per-CTA form;
//   - blocks6 (SC_MIN_BLOCKS=6; measured 715 us at 50%): registers cut for 6 resident CTAs per SM
//     instead of 5 (24 bytes spilled);
//   - CUB's three-call composition (library.cu): reads l_shipdate three times;
//   - the flag / scan / scatter chain (naive.cu): materialises a mask and positions.
// direct_store, eager_payload and blocks6 lost to tile2k_prev on the H200 (2026-12-01) and are no
// longer swept; their flags, on top of tile2k_prev's, still build them (the measurements above
// are of that form), as were the persistent kernels (SC_PIPE=1).
// Variants for the next run (2026-12-03; not measured yet), for the 80%-of-SOL bar at 50% (<= 523.7
// us against this default's 612 us). The default holds each tile twice: in registers from its load
// to the staging (36 of its 64 registers: 4 CTAs per SM, 12,288 rows) and in the staging. The
// SC_ASYNC_PAYLOAD form copies the payload with cp.async (LDGSTS, zero-filled past n) straight into
// the staging arrays at row 32 + tile row, stores the predicate column's kept groups there too, and
// compacts in place group by group after the look-back (a kept row i lands at shift + rank <= 31 +
// i, below its own slot; one barrier per group between reading back and writing): no column is
// held in registers through a load or the look-back, so only the shared memory (12 bytes per row)
// bounds the rows an SM holds. Two readings of the measurements, which the three tell apart:
//   (a) the time past SOL falls with the rows resident per SM (tile2k 10,240 -> tile3k 12,288 gave
//       1.11x; fitted: SOL + N x 3.1-3.9 us / (132 x rows per SM));
//   (b) it falls with the number of tiles (the per-tile look-back, barriers and CTA turnover):
//       blocks6 (12,288 rows per SM in 6 CTAs of 2048, 24 bytes spilled) lost where tile3k (12,288
//       in 4 of 3072) won.
//   - async6 (-DSC_ASYNC_PAYLOAD=1 -DSC_MIN_BLOCKS=6): 3072-row tiles, 6 CTAs per SM (18,432 rows),
//     40 registers, 37,360 B static shared memory (38,384 with the reserved KB; 6 fit the 228 KB),
//     no spills; 5 barriers. Wins under (a): about 548 us (76% of SOL); even under (b);
//   - async4k (-DSC_ASYNC_PAYLOAD=1 -DSC_GROUPS=4 -DSC_MIN_BLOCKS=4): 4096-row tiles, 4 CTAs per SM
//     (16,384 rows), 54 registers, 49,536 B of dynamic staging, no spills; 6 barriers. 3/4 of the
//     tiles: about 564 us under either reading;
//   - async6k (-DSC_ASYNC_PAYLOAD=1 -DSC_GROUPS=6 -DSC_MIN_BLOCKS=3): 6144-row tiles, 3 CTAs per SM
//     (18,432 rows), 74 registers, 74,112 B of dynamic staging (3 x 75.3 KB fit the 228 KB), no
//     spills; 8 barriers. Half the tiles and 1.5x the rows per SM: about 548 us under (a), 516 us
//     (81% of SOL) under (b); the candidate for the bar.
//   All three keep the default's look-back, blockIdx tile ids and evict-first 16-byte stores; at 1%
//   the copies are issued per kept group as the register form's loads are (late materialisation).
// Measured (H200, 2026-12-03; docs/results/stream_compaction.md, "Seventh session"): async6
// 1.19x / 1.11x / 1.08x the register form at 1% / 50% / 99% (77.2% of SOL at 50%), async4k and
// async6k between the two: async6 is the default since (SC_ASYNC_PAYLOAD=1, SC_MIN_BLOCKS=6); the
// register form it replaced is the variant tile3k_regs, tile2k_prev the one before that.
// Variants for the next run (2026-12-04; not measured yet), for the 2.8 points still missing at 50%
// (542 us against <= 523.7). 32,553 tiles over 792 slots: each CTA resident about 13.2 us for
// 55 KB, 60 tiles started per us. The estimate of the ~19 us (docs/results/stream_compaction.md):
// the memset and the count kernel 3-4 us, the first wave's ramp and the tail 4-5 us, the rest in
// the steady state, where each tile waits on two dependent DRAM round trips (l_shipdate, then the
// payload of its kept groups, issued only after the predicate although at 50% 94% of the groups
// hold a kept row), the look-back overlapping the second:
//   - eager_async (-DSC_LATE=0): every group's payload below n copied by cp.async with the
//     predicate column's loads in flight (one round trip per tile); the rest as the default.
//     40 registers, no spills. Reads the payload in full: the cost model's bytes at 50% and 99%
//     (99.6% of the sectors hold a kept row), about 13x the payload bytes at 1%;
//   - eager_adapt (SC_LATE=2, code removed): the same, chosen per tile where the inclusive prefix of tile - 1024
//     shows a quarter or more of the rows so far kept (eager_copies_pay), else the late copies;
//     the first 1024 tiles late. 40 registers, no spills. Keeps the default's 1% row;
//   - lb128 (-DSC_LB_WORDS=4): a look-back round reads 128 predecessors, not 64: at 60 tiles
//     started per us the nearest inclusive prefix lies about 60 x (look-back time) back, at the
//     edge of 64 once a look-back takes 1 us. 40 registers, no spills.
//   Not swept: the count written by the last tile's look-back, no count kernel (about 1-2 us,
//   under the noise of one bench row; its flag SC_COUNT_IN_TILE went with eager_pdl, below);
//   SC_GROUPS=2 SC_MIN_BLOCKS=8 (8 CTAs of 2048 rows, 32 registers, 26,064 B, no spills: 16,384
//   rows per SM, about 16 us slower under reading (a) above).
// Measured (H200, 2026-12-03, "Eighth session"): eager_async 534.30 us at 50% (78.3% of SOL,
// 1.02x the default), 0.92x at 1%; eager_adapt and lb128 within noise of the default on every row.
// eager_adapt's choice is right in arithmetic (tile - 1024's word is inclusive once that CTA is
// done, a wave before), but its copies wait on that word: in its SASS the LDGSTS sit behind a branch
// on the LD.E.64.STRONG.GPU, an L2 round trip that under this load is about as long as the
// predicate column's DRAM round trip, so the copies go out about when the late ones would. Its
// line and its code are gone (2026-12-03), and so is lb128's.
// Second set, measured (H200, 2026-12-03, 1e8 rows at 1% / 50% / 99% kept; this kernel 338.32 /
// 544.70 / 706.69 us, 32.7 / 77.1 / 79.0% of SOL), code removed:
//   - eager_sampled (the eager choice per call from a sample of 4096 rows taken by a kernel that
//     replaced the memset): 358.35 / 557.79 / 720.90 us, 0.94 / 0.98 / 0.98x this kernel;
//   - eager_pdl (the same plus programmatic dependent launch and the count written by the last
//     tile: two launch gaps fewer) and eager_overlap (the same plus the look-back's first round
//     in flight through an in-place compaction at the tile rank): both died with an illegal
//     instruction in copy_group_async, called from sc_select_tiles, under compute-sanitizer
//     memcheck and in the bench (cudaErrorIllegalInstruction); the defect was never diagnosed.
// The eleventh session's variants (2026-12-03; measured below), for the 2.9 points
// still missing at 50% (544.70 us, 77.1%, against <= 523.7). At 50% a CTA is resident 13.2 us
// (544.70 us x 792 slots / 32,553 tiles). In the eager form (eager_async, 534.30 us) the payload
// lands with the predicate column, so after the ranks' barrier warp 0's look-back (one loaded L2
// round trip of 64 status words, ~0.7-1 us, longer when a predecessor has not yet published) runs
// with nothing else of the CTA in flight, then the compaction (3 barriers, ~90 KB of shared-memory
// reads and writes per tile: ~700 cycles of the SM's 128 B/clock, ~0.4 us) follows it. Each
// variant is 40 registers or fewer, 38,384 B of shared memory, no spills, 5 barriers:
//   - eager_nopol (-DSC_LATE=0 -DSC_ASYNC_POLICY=0): eager_async with plain cp.async.cg, without
//     the createpolicy.fractional evict-first policy (SC_ASYNC_POLICY), which ptxas miscompiles
//     in some kernels (layernorm_backward's copies, and likely the ninth session's eager_pdl and
//     eager_overlap, died with an illegal instruction in copy_group_async). The control for the
//     two below: expected within noise of eager_async (534 us at 50%, ~368 us at 1%);
//   - ovl_eager (-DSC_LATE=0 -DSC_ASYNC_POLICY=0 -DSC_LB_OVERLAP=1): eager_overlap's idea without
//     its sampled choice, programmatic launch and in-tile count: warp 0 publishes the count and
//     issues the look-back's first round, every warp compacts the tile in place at its rank (no
//     offset, so it needs no prefix), and warp 0 reads the words after the compaction; the stores
//     read the staging shifted by (first output row mod 32) through aligned 16-byte reads and a
//     funnel of b = (-shift) mod 4 words (staged_quad_at: 2 LDS.128 per column where b > 0, no
//     bank conflict). Saves min(look-back, compaction) ~0.4-0.7 us of the 13.2 us per CTA:
//     expected 3-5% under eager_nopol at 50%, 507-518 us (79.4-83% of SOL): the candidate for the
//     bar; at 1% eager_async's ~0.92x the default (the payload read in full), still ~2.3x CUB;
//   - ovl_eager_wb (ovl_eager plus -DSC_STORE_EF=0): the kept rows' 16-byte stores without the
//     evict-first hint (STG.E.128): the written lines leave L2 under its normal replacement, not
//     first, which may group DRAM writes into longer runs between reads (the read/write turnaround
//     at 50%, where a third of the traffic is writes). Expected within +-1% of ovl_eager; a gain
//     beyond that says the write side costs;
//   - ovl_late (-DSC_ASYNC_POLICY=0 -DSC_LB_OVERLAP=1): the overlap in the late form, which keeps
//     the default's 1% row: there the look-back already overlaps the payload copies, so expected
//     within noise at 50% and 99%; at 1%, where a tile copies ~4% of its groups and the look-back
//     (plus waits on predecessors) can outlast them, up to the compaction's ~0.3 us of the ~8.2 us
//     per CTA (338.32 us x 792 / 32,553): up to 3% (~328 us).
// %VARIANT% tile3k_regs -DSC_ASYNC_PAYLOAD=0 -DSC_MIN_BLOCKS=4
// %VARIANT% tile2k_prev -DSC_ASYNC_PAYLOAD=0 -DSC_GROUPS=2 -DSC_MIN_BLOCKS=5 -DSC_VEC_STORE=0 -DSC_CLAIM=1 -DSC_LB_WORDS=1
// %VARIANT% async4k -DSC_GROUPS=4 -DSC_MIN_BLOCKS=4
// %VARIANT% async6k -DSC_GROUPS=6 -DSC_MIN_BLOCKS=3
// %VARIANT% eager_async -DSC_LATE=0
// Measured (H200, eleventh session, suite-eleven-2026-12-03.md; one d2k bench beside the library),
// n1e8 at 1% / 50% / 99%, us: default 305.71 / 544.86 (76.8%) / 706.36; eager_nopol 385.80 /
// 536.67 / 701.87; ovl_eager 391.13 / 531.92 / 694.46; ovl_eager_wb 386.42 / 529.26 (79.1%) /
// 690.44; ovl_late 307.73 / 541.47 / 699.90. memcheck and racecheck clean. The overlap gains 0.9%
// at 50%, plain stores 0.5% more; the eager forms lose the 1% row by 1.26x. None reaches 80% at
// 50%; the default stays. Retired from the sweep (their flags still build them).
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "sc_args.h"

#ifndef SC_STAGE
#define SC_STAGE 1  // 1: kept rows staged in shared memory, written coalesced; 0: written from registers
#endif
#ifndef SC_LATE
// 1: payload columns loaded only for groups with a kept row; 0: always.
#define SC_LATE 1
#endif
static_assert(SC_LATE == 0 || SC_LATE == 1, "SC_LATE: 1 (late payload) or 0 (eager payload)");
#ifndef SC_GROUPS
#define SC_GROUPS 3  // groups of 4 consecutive rows per thread: the tile is 256 x 4 x SC_GROUPS rows
#endif
#ifndef SC_VEC_STORE
// 1: the kept rows staged at an offset of (the tile's first output row mod 32) once the look-back
// has returned, then written as 16-byte evict-first stores, each warp store covering four whole
// 128-byte lines of a column; 0: 4-byte stores of consecutive rows from staging offset 0.
#define SC_VEC_STORE 1
#endif
#ifndef SC_CLAIM
// 1: each CTA's tile id from an atomic counter, in order of arrival; 0: blockIdx.x, relying on the
// hardware starting a grid's CTAs in increasing index order (as CUB's single-pass scan and select
// do), which takes the claim's L2 round trip off the start of every CTA.
#define SC_CLAIM 0
#endif
#ifndef SC_ASYNC_PAYLOAD
// 1: the payload columns copied by cp.async (16 bytes, no registers) straight into their staging
// arrays, at staging row 32 + tile row, and compacted in place group by group once the look-back
// has returned; the payload is never held in registers across its load latency, so the kernel
// fits 40 registers (6 CTAs per SM at 3072-row tiles) where the register form needs 64 (4 CTAs).
// 0: the payload loaded into registers (int4) with l_shipdate.
#define SC_ASYNC_PAYLOAD 1
#endif
#ifndef SC_ASYNC_POLICY
// 1: the cp.async payload copies carry an evict-first L2 cache policy (createpolicy.fractional,
// then cp.async ... L2::cache_hint), as the register form's `ld.global.cs`; 0: plain
// `cp.async.cg` with no cache hint. ptxas miscompiles fractional cache policies on cp.async in some
// kernels (layernorm_backward's evict-first copies died with an illegal instruction; the ninth
// session's eager_pdl and eager_overlap died with one inside copy_group_async): the variants that
// restructure the kernel around the copies use 0.
#define SC_ASYNC_POLICY 1
#endif
#ifndef SC_LB_OVERLAP
// 1 (SC_ASYNC_PAYLOAD only): the look-back's first round of status words is issued before the
// in-place compaction and read after it, and the tile is compacted at its rank (no offset) before
// its first output row is known; the stores read the staging shifted by (first output row mod 32).
// The look-back's L2 round trip then overlaps the compaction instead of preceding it, which matters
// where the payload arrives with the predicate column (SC_LATE=0) and nothing else hides it.
// 0: the look-back returns before the compaction, which stages at rank + (first output row mod 32).
#define SC_LB_OVERLAP 0
#endif
#ifndef SC_STORE_EF
// 1: the kept rows' stores carry the evict-first hint (st.global.cs: STG.E.EF); 0: plain
// write-back stores (STG.E), so the written lines age out of L2 under its normal replacement
// instead of being picked first, which may batch DRAM writes into longer runs between reads.
#define SC_STORE_EF 1
#endif
#ifndef SC_MIN_BLOCKS
// Resident CTAs per SM the register budget is cut for: at SC_GROUPS=3, 4 (64 registers, no
// spills). At SC_GROUPS=2, 5 fits in 48 registers without
// spills (the unbounded build takes 64, 4 CTAs); 6 needs 40 and spills 24 bytes.
#define SC_MIN_BLOCKS 6
#endif

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kGroups = SC_GROUPS;                ///< groups of 4 consecutive rows per thread
constexpr int kTile = kThreads * kGroups * 4;     ///< rows per tile (one CTA)
/// Staging rows per column: the tile, plus up to 31 rows of offset that line the staging up with
/// the output's 128-byte lines (SC_VEC_STORE). A multiple of 4, so every column starts 16-byte aligned.
constexpr int kStageRows = kTile + (SC_VEC_STORE ? 32 : 0);

using StatusWord = unsigned long long;
constexpr StatusWord kAggregate = StatusWord{1} << 62;  ///< value = this tile's count
constexpr StatusWord kInclusive = StatusWord{2} << 62;  ///< value = kept rows up to and including this tile
constexpr StatusWord kValueMask = (StatusWord{1} << 62) - 1;

__device__ __forceinline__ StatusWord load_status(StatusWord* w) {
  return cuda::atomic_ref<StatusWord, cuda::thread_scope_device>(*w).load(cuda::std::memory_order_relaxed);
}
__device__ __forceinline__ void store_status(StatusWord* w, StatusWord v) {
  cuda::atomic_ref<StatusWord, cuda::thread_scope_device>(*w).store(v, cuda::std::memory_order_relaxed);
}

/// Publishes a tile's count (lane 0 of the warp that looks back): tile 0's count is already its
/// inclusive prefix.
__device__ __forceinline__ void publish_count(StatusWord* status, int64_t tile, int tile_count) {
  store_status(status + tile, (tile == 0 ? kInclusive : kAggregate) | static_cast<StatusWord>(tile_count));
}

#ifndef SC_LB_WORDS
// Status words each lane of the look-back reads per round: a round covers 32 x SC_LB_WORDS
// predecessors (2: 64, the default, about twice the 30-45 tiles that start per round trip;
// 1: 32; 4: 128 spills at 48 registers).
#define SC_LB_WORDS 2
#endif
constexpr int kLbWords = SC_LB_WORDS;

// The look-back in two parts, so that SC_LB_OVERLAP can have the first round's status words in
// flight while the tile is compacted (look_back_load early, look_back_rounds late); without it
// look_back_published calls them back to back.
/// One look-back round's status words: predecessor d = nearest - (32 k + lane) of the round
/// (0: the nearest) as lane d % 32's word k; before tile 0, an inclusive prefix of 0.
__device__ __forceinline__ void look_back_load(StatusWord* status, int64_t nearest, int lane,
                                               StatusWord (&s)[kLbWords]) {
#pragma unroll
  for (int k = 0; k < kLbWords; ++k) {
    const int64_t idx = nearest - lane - 32 * k;  // lane 0, word 0 reads the nearest predecessor
    s[k] = idx >= 0 ? load_status(status + idx) : kInclusive;  // before tile 0: a prefix of 0
  }
}

/// Kept rows before `tile` (> 0), whose count publish_count has published (all lanes of one warp
/// call it; every lane returns the value). kFirstLoaded: the first round's words are already in
/// `s` (look_back_load(tile - 1), in flight or landed), else every round loads its own. A round waits until all 32 x kLbWords predecessors have published
/// something, sums them back to the nearest inclusive prefix (or all of them, and reads the next
/// round, if none is inclusive). Publishes the tile's inclusive prefix last.
template <bool kFirstLoaded>
__device__ __forceinline__ int64_t look_back_rounds(StatusWord* status, int64_t tile, int tile_count, int lane,
                                                    StatusWord (&s)[kLbWords]) {
  int64_t exclusive = 0;
  for (int64_t nearest = tile - 1;; nearest -= 32 * kLbWords) {
    if (!kFirstLoaded || nearest != tile - 1) look_back_load(status, nearest, lane, s);
    for (;;) {  // wait until every predecessor of the round has published something
      bool pending = false;
#pragma unroll
      for (int k = 0; k < kLbWords; ++k) pending |= (s[k] >> 62) == 0;
      if (!__any_sync(0xffffffffu, pending)) break;
#pragma unroll
      for (int k = 0; k < kLbWords; ++k)
        if ((s[k] >> 62) == 0) s[k] = load_status(status + (nearest - lane - 32 * k));
    }
    // The nearest inclusive prefix: the lowest word index k holding one, its lowest lane.
    int stop = 32 * kLbWords - 1;
    bool found = false;
#pragma unroll
    for (int k = kLbWords - 1; k >= 0; --k) {
      const unsigned inclusive_lanes = __ballot_sync(0xffffffffu, (s[k] >> 62) == 2);
      if (inclusive_lanes) {
        stop = 32 * k + __ffs(inclusive_lanes) - 1;
        found = true;
      }
    }
    int64_t v = 0;
#pragma unroll
    for (int k = 0; k < kLbWords; ++k)
      if (32 * k + lane <= stop) v += static_cast<int64_t>(s[k] & kValueMask);
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    exclusive += v;
    if (found) break;
  }
  if (lane == 0) store_status(status + tile, kInclusive | static_cast<StatusWord>(exclusive + tile_count));
  return exclusive;
}
#if !SC_LB_OVERLAP  // the overlap path calls the two parts itself
/// Kept rows before `tile`, whose count publish_count has published (all lanes of one warp call
/// it; every lane returns the value): the rounds above from the nearest predecessors on.
__device__ int64_t look_back_published(StatusWord* status, int64_t tile, int tile_count, int lane) {
  if (tile == 0) return 0;
  StatusWord s[kLbWords];
  return look_back_rounds<false>(status, tile, tile_count, lane, s);
}

/// Kept rows before `tile` (all lanes of warp 0 call it; every lane returns the value). Publishes
/// the tile's aggregate first and its inclusive prefix last.
__device__ __forceinline__ int64_t look_back(StatusWord* status, int64_t tile, int tile_count, int lane) {
  if (lane == 0) publish_count(status, tile, tile_count);
  return look_back_published(status, tile, tile_count, lane);
}
#endif

/// Four consecutive rows of a column from row `row0`: one 16-byte load when all four exist, else
/// the rows below n one by one.
template <class T>
__device__ __forceinline__ int4 load_group(const T* __restrict__ col, int64_t row0, int64_t n) {
  if (row0 + 4 <= n) return __ldcs(reinterpret_cast<const int4*>(col + row0));
  int v[4] = {0, 0, 0, 0};
  for (int e = 0; e < 4; ++e)
    if (row0 + e < n) v[e] = __ldcs(reinterpret_cast<const int*>(col + row0 + e));
  return make_int4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ int lane_of(const int4& v, int e) { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; }

/// Ranks inside the tile: groups in row order are (g, warp, lane). Sets before[g] (kept rows of
/// the tile ahead of this thread's group g) and returns the tile's count. One barrier, after the
/// warps' totals are written: the caller orders warp_totals' next write behind another barrier.
__device__ __forceinline__ int tile_ranks(const unsigned (&keep)[kGroups], int (&before)[kGroups],
                                          int (&warp_totals)[kGroups][kWarps], int lane, int warp) {
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int mine = __popc(keep[g]);
    int incl = mine;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int up = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += up;
    }
    before[g] = incl - mine;
    if (lane == 31) warp_totals[g][warp] = incl;
  }
  __syncthreads();
  int tile_count = 0;
#pragma unroll
  for (int g = 0; g < kGroups; ++g)
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w == warp) before[g] += tile_count;
      tile_count += warp_totals[g][w];
    }
  return tile_count;
}

/// The predicate over this thread's groups of the tile starting at row `base`.
__device__ __forceinline__ void keep_masks(const int4 (&va)[kGroups], int64_t base, int64_t n, int32_t date_lt,
                                           unsigned (&keep)[kGroups], int t) {
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int64_t row0 = base + (static_cast<int64_t>(g) * kThreads + t) * 4;
    keep[g] = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) keep[g] |= static_cast<unsigned>(row0 + e < n && lane_of(va[g], e) < date_lt) << e;
  }
}

#if !SC_ASYNC_PAYLOAD  // the register form's payload
/// The payload columns of this thread's groups: late materialisation loads only the groups that
/// keep a row (SC_LATE), so at low selectivity most payload sectors are never fetched.
__device__ __forceinline__ void load_payload(const float* __restrict__ price, const int32_t* __restrict__ partkey,
                                             int64_t base, int64_t n, const unsigned (&keep)[kGroups],
                                             int4 (&vb)[kGroups], int4 (&vc)[kGroups], int t) {
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int64_t row0 = base + (static_cast<int64_t>(g) * kThreads + t) * 4;
    vb[g] = vc[g] = make_int4(0, 0, 0, 0);
    if (!SC_LATE || keep[g]) {
      vb[g] = load_group(price, row0, n);
      vc[g] = load_group(partkey, row0, n);
    }
  }
}
#endif

#if SC_ASYNC_PAYLOAD
/// An L2 policy that marks the copied payload lines evict-first, like the register form's
/// `ld.global.cs` (the rows are read once).
/// SC_ASYNC_POLICY=0: no policy (0, unused by the copies).
__device__ __forceinline__ unsigned long long evict_first_policy() {
#if SC_ASYNC_POLICY
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
#else
  return 0;
#endif
}

/// Four consecutive rows of a column from `row0` into shared memory at `dst` (16-byte aligned) by
/// one cp.async of 16 bytes: only the rows below n are read from global memory (src-size), the
/// rest of the 16 bytes is zero-filled. The caller ensures row0 < n and a 16-byte aligned column.
__device__ __forceinline__ void copy_group_async(int32_t* dst, const void* col, int64_t row0, int64_t n,
                                                 unsigned long long policy) {
  const int64_t left = n - row0;
  const char* src = static_cast<const char*>(col) + row0 * 4;
  if (left < 4) {
    // The column's last partial group: plain loads. A 16-byte cp.async with a smaller src-size
    // reads only src-size bytes, but compute-sanitizer checks the whole 16 (20 errors on the
    // n = 1 check workload on the H200), so the copy is kept to whole groups.
    const int32_t* s = reinterpret_cast<const int32_t*>(src);
#pragma unroll
    for (int i = 0; i < 4; ++i) dst[i] = i < left ? s[i] : 0;
    return;
  }
  const unsigned dst_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
#if SC_ASYNC_POLICY
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, 16, %2;" ::"r"(dst_addr), "l"(src), "l"(policy)
               : "memory");
#else
  (void)policy;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, 16;" ::"r"(dst_addr), "l"(src) : "memory");
#endif
}

/// Waits for this thread's cp.async copies: they are then visible to this thread (each thread reads
/// back only the staging rows it copied itself).
__device__ __forceinline__ void wait_async_copies() { asm volatile("cp.async.wait_all;" ::: "memory"); }
#endif

/// Shared-memory staging of one tile's kept rows, one array per column (float bits for price).
struct Staging {
  int32_t* shipdate;
  int32_t* price;
  int32_t* partkey;
};

#if !SC_ASYNC_PAYLOAD  // the register form's staging
/// Kept values into the staging at their tile rank (the caller's barrier follows).
__device__ __forceinline__ void stage_kept(const Staging& st, const unsigned (&keep)[kGroups],
                                           const int (&before)[kGroups], const int4 (&va)[kGroups],
                                           const int4 (&vb)[kGroups], const int4 (&vc)[kGroups]) {
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    int r = before[g];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (keep[g] >> e & 1u) {
        st.shipdate[r] = lane_of(va[g], e);
        st.price[r] = lane_of(vb[g], e);
        st.partkey[r] = lane_of(vc[g], e);
        ++r;
      }
  }
}
#endif

/// The staged rows out in row order by consecutive threads: 128 contiguous bytes per warp store,
/// whatever the selection pattern. kAligned starts the threads (exclusive mod 32) rows early, so
/// that each warp store covers one 128-byte line (4 whole sectors) of each output column, except
/// at the tile's two ends (the outputs are 256-byte aligned).
template <bool kAligned>
__device__ __forceinline__ void store_staged(const Staging& st, int tile_count, int64_t exclusive,
                                             int32_t* __restrict__ out_shipdate, float* __restrict__ out_price,
                                             int32_t* __restrict__ out_partkey, int t) {
  const int head = kAligned ? static_cast<int>(exclusive & 31) : 0;
  for (int i = t - head; i < tile_count; i += kThreads) {
    if (kAligned && i < 0) continue;
    out_shipdate[exclusive + i] = st.shipdate[i];
    out_price[exclusive + i] = __int_as_float(st.price[i]);
    out_partkey[exclusive + i] = st.partkey[i];
  }
}

/// One store of the kept rows' output: evict-first (st.global.cs) or, under SC_STORE_EF=0, a plain
/// st.global (no cache hint).
template <class T>
__device__ __forceinline__ void store_out(T* p, const T& v) {
#if SC_STORE_EF
  __stcs(p, v);
#else
  *p = v;
#endif
}
#if !SC_STORE_EF
/// The 16-byte form of the plain store: as a struct copy the int4 store is split into four 4-byte
/// stores (and __stwb prints as STG.E.128.STRONG.SM), so one st.global.v4 is written out.
template <>
__device__ __forceinline__ void store_out<int4>(int4* p, const int4& v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
#endif

#if SC_VEC_STORE
#if !SC_LB_OVERLAP  // store_shifted_vec under SC_LB_OVERLAP
/// SC_VEC_STORE: the staged rows out as aligned 16-byte stores. The caller staged the tile's rows
/// at staging rows [shift, shift + tile_count), where shift = (first output row) mod 32, so staging
/// row j goes to output row line0 + j with line0 a multiple of 32 rows (128 bytes; the outputs are
/// at least 256-byte aligned): thread t writes quad j = 4q (q = t, t + 256, ...), consecutive
/// lanes consecutive quads, so a warp store covers four whole 128-byte lines of each column. The
/// two quads that hold the tile's ends write only their rows inside the tile, one at a time. The
/// evict-first hint keeps the written lines, which this call never reads back, from displacing
/// other lines in L2.
__device__ __forceinline__ void store_staged_vec(const Staging& st, int shift, int tile_count, int64_t line0,
                                                 int32_t* __restrict__ out_shipdate, float* __restrict__ out_price,
                                                 int32_t* __restrict__ out_partkey, int t) {
  const int end = shift + tile_count;  // staging rows [shift, end) hold the tile's kept rows
  const int quads = (end + 3) >> 2;
  for (int q = t; q < quads; q += kThreads) {
    const int j = q * 4;
    const int64_t row = line0 + j;
    if (j >= shift && j + 4 <= end) {
      store_out(reinterpret_cast<int4*>(out_shipdate + row), *reinterpret_cast<const int4*>(st.shipdate + j));
      store_out(reinterpret_cast<int4*>(out_price + row), *reinterpret_cast<const int4*>(st.price + j));
      store_out(reinterpret_cast<int4*>(out_partkey + row), *reinterpret_cast<const int4*>(st.partkey + j));
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (j + e >= shift && j + e < end) {
          store_out(out_shipdate + row + e, st.shipdate[j + e]);
          store_out(out_price + row + e, __int_as_float(st.price[j + e]));
          store_out(out_partkey + row + e, st.partkey[j + e]);
        }
    }
  }
}
#endif
#endif  // SC_VEC_STORE

#if SC_LB_OVERLAP
/// SC_LB_OVERLAP: four consecutive staging rows [i, i + 4) of a column, i >= 0, where b = i mod 4
/// is the same for every quad of the tile (i = j - shift with j a multiple of 4): one aligned
/// 16-byte read where b = 0, else two (the aligned quads holding the four) and a funnel shift by
/// b words. Consecutive lanes read consecutive 16-byte quads, so a warp's read is 4 shared-memory
/// wavefronts per 16-byte read (no bank conflict), where four 4-byte reads at a stride of 4 words
/// would each take 4 (a 4-way conflict). Reads at most staging row i + 6 < kStageRows.
__device__ __forceinline__ int4 staged_quad_at(const int32_t* col, int i, int b) {
  const int4 lo = *reinterpret_cast<const int4*>(col + (i - b));
  if (b == 0) return lo;
  const int4 hi = *reinterpret_cast<const int4*>(col + (i - b) + 4);
  if (b == 1) return make_int4(lo.y, lo.z, lo.w, hi.x);
  if (b == 2) return make_int4(lo.z, lo.w, hi.x, hi.y);
  return make_int4(lo.w, hi.x, hi.y, hi.z);
}

/// SC_LB_OVERLAP: as store_staged_vec, with the tile's kept rows staged at their rank, [0,
/// tile_count), not at rank + shift: output row line0 + j (j in [shift, shift + tile_count)) is
/// staging row j - shift. Whole quads are read by staged_quad_at and written as one aligned 16-byte
/// store; the two end quads row by row.
__device__ __forceinline__ void store_shifted_vec(const Staging& st, int shift, int tile_count, int64_t line0,
                                                  int32_t* __restrict__ out_shipdate, float* __restrict__ out_price,
                                                  int32_t* __restrict__ out_partkey, int t) {
  const int end = shift + tile_count;  // output rows [line0 + shift, line0 + end) are the tile's
  const int quads = (end + 3) >> 2;
  const int b = (4 - (shift & 3)) & 3;  // (j - shift) mod 4 for every j that is a multiple of 4
  for (int q = t; q < quads; q += kThreads) {
    const int j = q * 4;
    const int64_t row = line0 + j;
    const int i = j - shift;  // the staging row of output row line0 + j
    if (j >= shift && j + 4 <= end) {
      store_out(reinterpret_cast<int4*>(out_shipdate + row), staged_quad_at(st.shipdate, i, b));
      store_out(reinterpret_cast<int4*>(out_price + row), staged_quad_at(st.price, i, b));
      store_out(reinterpret_cast<int4*>(out_partkey + row), staged_quad_at(st.partkey, i, b));
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (j + e >= shift && j + e < end) {
          store_out(out_shipdate + row + e, st.shipdate[i + e]);
          store_out(out_price + row + e, __int_as_float(st.price[i + e]));
          store_out(out_partkey + row + e, st.partkey[i + e]);
        }
    }
  }
}
#endif  // SC_LB_OVERLAP

#ifndef SC_DYN_STAGE
// 1: the staging in dynamic shared memory (past the 48 KB of static shared memory: 4096-row tiles
// stage 48 KB, 49.5 KB with the SC_VEC_STORE offset); 0: static.
#define SC_DYN_STAGE (SC_STAGE && SC_GROUPS >= 4)
#endif
static_assert(SC_DYN_STAGE || kStageRows * 12 + 1024 <= 48 * 1024,
              "static staging fits 48 KB up to SC_GROUPS = 3; 4 stages in dynamic shared memory");
static_assert(!SC_VEC_STORE || SC_STAGE, "the vector stores read the staging");
static_assert(!SC_DYN_STAGE || SC_STAGE, "dynamic staging needs staging");
static_assert(!SC_LB_OVERLAP || SC_ASYNC_PAYLOAD, "the overlapped look-back is in the cp.async form's compaction");
static_assert(!SC_ASYNC_PAYLOAD || SC_VEC_STORE,
              "the in-place compaction stages at rank + shift and stores with store_staged_vec");
/// SC_ASYNC_PAYLOAD: tile row i's payload is copied to staging row kAsyncPad + i, above the
/// largest staging row a kept row i goes to (shift + rank <= 31 + i).
constexpr int kAsyncPad = 32;
static_assert(!SC_ASYNC_PAYLOAD || kStageRows >= kAsyncPad + kTile, "the copied payload fits the staging");
/// Dynamic shared memory of the one-tile kernel: the three staging columns, or none.
constexpr size_t kTileDynBytes = SC_DYN_STAGE ? size_t{3} * kStageRows * sizeof(int32_t) : 0;

struct Shared {
#if SC_STAGE && !SC_DYN_STAGE
  alignas(16) int32_t shipdate[kStageRows];
  alignas(16) int32_t price[kStageRows];  ///< float bits
  alignas(16) int32_t partkey[kStageRows];
#endif
  int warp_totals[kGroups][kWarps];
  int64_t exclusive;
  unsigned long long tile;
};

__global__ void __launch_bounds__(kThreads, SC_MIN_BLOCKS)
    sc_select_tiles(const int32_t* __restrict__ shipdate, const float* __restrict__ price,
                    const int32_t* __restrict__ partkey, int64_t n, int32_t date_lt, int32_t* __restrict__ out_shipdate,
                    float* __restrict__ out_price, int32_t* __restrict__ out_partkey,
                    StatusWord* __restrict__ status, unsigned long long* __restrict__ tile_counter
) {
  __shared__ Shared s;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;

#if SC_CLAIM
  // 1. Tile id in order of arrival.
  if (t == 0) s.tile = atomicAdd(tile_counter, 1ull);
  __syncthreads();
  const int64_t tile = static_cast<int64_t>(s.tile);
#else
  // 1'. Tile id in launch order: a lower tile's CTA has started before this one (the look-back
  //     below waits only on lower tiles), so the loads go out at once.
  (void)tile_counter;
  const int64_t tile = static_cast<int64_t>(blockIdx.x);
#endif
  const int64_t base = tile * kTile;

#if SC_ASYNC_PAYLOAD
#if SC_DYN_STAGE
  extern __shared__ int4 staging_words[];
  int32_t* const staging = reinterpret_cast<int32_t*>(staging_words);
  const Staging st{staging, staging + kStageRows, staging + 2 * kStageRows};
#else
  const Staging st{s.shipdate, s.price, s.partkey};
#endif
  // 2. Predicate column into registers (it is needed for the masks and is staged from there).
  int4 va[kGroups];
  unsigned keep[kGroups];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) va[g] = load_group(shipdate, base + (static_cast<int64_t>(g) * kThreads + t) * 4, n);
#if SC_LATE == 1
  keep_masks(va, base, n, date_lt, keep, t);
  // 3'. The payload of the groups that keep a row, copied by cp.async to staging rows
  //     kAsyncPad + tile row of their columns: no registers wait on these loads. The predicate
  //     column's kept groups go to the same rows of its staging, so that no column is held in
  //     registers through the look-back either.
  {
    const unsigned long long policy = evict_first_policy();
#pragma unroll
    for (int g = 0; g < kGroups; ++g)
      if (keep[g]) {  // a kept row is below n, so row0 < n
        const int slot = kAsyncPad + (g * kThreads + t) * 4;
        const int64_t row0 = base + slot - kAsyncPad;
        copy_group_async(st.price + slot, price, row0, n, policy);
        copy_group_async(st.partkey + slot, partkey, row0, n, policy);
        *reinterpret_cast<int4*>(st.shipdate + slot) = va[g];
      }
  }
#else   // SC_LATE == 0
  // 3''. Eager payload: every group's payload below n copied at once, while the predicate
  //      column's loads are in flight, so a tile waits on one DRAM round trip instead of two (the
  //      predicate, then the payload of its kept groups). Reads the payload in full: at 50% and
  //      99% kept that is the cost model's bytes (1 - (1 - s)^8 of the sectors hold a kept row);
  //      at 1% about 13x the payload bytes the late form reads.
  {
    const unsigned long long policy = evict_first_policy();
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const int slot = kAsyncPad + (g * kThreads + t) * 4;
      const int64_t row0 = base + slot - kAsyncPad;
      if (row0 < n) {
        copy_group_async(st.price + slot, price, row0, n, policy);
        copy_group_async(st.partkey + slot, partkey, row0, n, policy);
      }
    }
  }
  keep_masks(va, base, n, date_lt, keep, t);
#pragma unroll
  for (int g = 0; g < kGroups; ++g)
    if (keep[g]) *reinterpret_cast<int4*>(st.shipdate + kAsyncPad + (g * kThreads + t) * 4) = va[g];
#endif  // SC_LATE

  // 4. Ranks inside the tile.
  int before[kGroups];
  const int tile_count = tile_ranks(keep, before, s.warp_totals, lane, warp);

#if SC_LB_OVERLAP
  // 5''. Warp 0 publishes the tile's count and issues the look-back's first round; the status
  //      words come back while every warp compacts the tile (6'') and are read after it (7'').
  StatusWord lb_words[kLbWords];
  if (warp == 0) {
    if (lane == 0) publish_count(status, tile, tile_count);
    if (tile > 0) look_back_load(status, tile - 1, lane, lb_words);
  }

  // 6''. In-place compaction at the tile rank, group by group, as 6' below with no offset: a kept
  //      tile row i goes to staging row rank(i) <= i < kAsyncPad + i, below its own input slot and
  //      above none of a later group's. Every thread waits for its own copies before the first
  //      barrier, so no copy lands after a write.
  wait_async_copies();
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    int4 pa = make_int4(0, 0, 0, 0), pb = pa, pc = pa;
    if (keep[g]) {
      const int slot = kAsyncPad + (g * kThreads + t) * 4;
      pa = *reinterpret_cast<const int4*>(st.shipdate + slot);
      pb = *reinterpret_cast<const int4*>(st.price + slot);
      pc = *reinterpret_cast<const int4*>(st.partkey + slot);
    }
    __syncthreads();  // every thread's copies landed (g = 0) and group g read back before any write
    int r = before[g];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (keep[g] >> e & 1u) {
        st.shipdate[r] = lane_of(pa, e);
        st.price[r] = lane_of(pb, e);
        st.partkey[r] = lane_of(pc, e);
        ++r;
      }
  }

  // 7''. The look-back finished from its first round's words (more rounds if none is inclusive),
  //      then the staged rows out, read shifted by (first output row mod 32).
  if (warp == 0) {
    const int64_t exclusive = tile > 0 ? look_back_rounds<true>(status, tile, tile_count, lane, lb_words) : 0;
    if (lane == 0) s.exclusive = exclusive;
  }
  __syncthreads();  // the look-back's result; every warp's compaction writes done
  {
    const int64_t exclusive = s.exclusive;
    const int shift = static_cast<int>(exclusive & 31);
    store_shifted_vec(st, shift, tile_count, exclusive - shift, out_shipdate, out_price, out_partkey, t);
  }
#else   // !SC_LB_OVERLAP
  // 5. The tile's first output row (the copies land meanwhile).
  if (warp == 0) {
    const int64_t exclusive = look_back(status, tile, tile_count, lane);
    if (lane == 0) s.exclusive = exclusive;
  }

  // 6'. In-place compaction, group by group. A kept tile row i goes to staging row shift + rank(i)
  //     <= 31 + i < kAsyncPad + i, its own input slot: a group's writes land only on input slots of
  //     rows at or before its own, which every thread has read back (into registers) before the
  //     barrier that precedes the group's writes; the next group's slots are above them all. Every
  //     thread waits for its own copies before the first barrier, so no copy lands after a write.
  wait_async_copies();
  int4 pa = make_int4(0, 0, 0, 0), pb = pa, pc = pa;
  if (keep[0]) {
    pa = *reinterpret_cast<const int4*>(st.shipdate + kAsyncPad + t * 4);
    pb = *reinterpret_cast<const int4*>(st.price + kAsyncPad + t * 4);
    pc = *reinterpret_cast<const int4*>(st.partkey + kAsyncPad + t * 4);
  }
  __syncthreads();  // the look-back's result; every thread's copies landed and group 0 read back
  const int64_t exclusive = s.exclusive;
  const int shift = static_cast<int>(exclusive & 31);
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    if (g > 0) {
      if (keep[g]) {
        const int slot = kAsyncPad + (g * kThreads + t) * 4;
        pa = *reinterpret_cast<const int4*>(st.shipdate + slot);
        pb = *reinterpret_cast<const int4*>(st.price + slot);
        pc = *reinterpret_cast<const int4*>(st.partkey + slot);
      }
      __syncthreads();  // every thread's group g read back before any of its slots is overwritten
    }
    int r = shift + before[g];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (keep[g] >> e & 1u) {
        st.shipdate[r] = lane_of(pa, e);
        st.price[r] = lane_of(pb, e);
        st.partkey[r] = lane_of(pc, e);
        ++r;
      }
  }
  __syncthreads();
  store_staged_vec(st, shift, tile_count, exclusive - shift, out_shipdate, out_price, out_partkey, t);
#endif  // SC_LB_OVERLAP
#else   // !SC_ASYNC_PAYLOAD
  // 2-3. Predicate column, masks, payload columns.
  int4 va[kGroups], vb[kGroups], vc[kGroups];
  unsigned keep[kGroups];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) va[g] = load_group(shipdate, base + (static_cast<int64_t>(g) * kThreads + t) * 4, n);
  keep_masks(va, base, n, date_lt, keep, t);
  load_payload(price, partkey, base, n, keep, vb, vc, t);

  // 4. Ranks inside the tile.
  int before[kGroups];
  const int tile_count = tile_ranks(keep, before, s.warp_totals, lane, warp);

  // 5. The tile's first output row.
  if (warp == 0) {
    const int64_t exclusive = look_back(status, tile, tile_count, lane);
    if (lane == 0) s.exclusive = exclusive;
  }

#if SC_STAGE
#if SC_DYN_STAGE
  extern __shared__ int4 staging_words[];
  int32_t* const staging = reinterpret_cast<int32_t*>(staging_words);
  const Staging st{staging, staging + kStageRows, staging + 2 * kStageRows};
#else
  const Staging st{s.shipdate, s.price, s.partkey};
#endif
#if SC_VEC_STORE
  // 6. Once the tile's first output row is known, the kept values into shared memory at their
  //    tile rank plus that row mod 32, then out as aligned 16-byte stores of whole lines.
  __syncthreads();
  const int64_t exclusive = s.exclusive;
  const int shift = static_cast<int>(exclusive & 31);
  stage_kept(Staging{st.shipdate + shift, st.price + shift, st.partkey + shift}, keep, before, va, vb, vc);
  __syncthreads();
  store_staged_vec(st, shift, tile_count, exclusive - shift, out_shipdate, out_price, out_partkey, t);
#else
  // 6. Kept values into shared memory at their tile rank, then out in row order, coalesced.
  stage_kept(st, keep, before, va, vb, vc);
  __syncthreads();
  store_staged<false>(st, tile_count, s.exclusive, out_shipdate, out_price, out_partkey, t);
#endif
#else
  // 6'. Kept values straight from registers to their output rows.
  __syncthreads();
  const int64_t exclusive = s.exclusive;
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    int64_t r = exclusive + before[g];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (keep[g] >> e & 1u) {
        out_shipdate[r] = lane_of(va[g], e);
        out_price[r] = __int_as_float(lane_of(vb[g], e));
        out_partkey[r] = lane_of(vc[g], e);
        ++r;
      }
  }
#endif
#endif  // SC_ASYNC_PAYLOAD
}

/// 7. The count: the last tile's inclusive prefix, written after every row (stream order).
__global__ void sc_write_count(const StatusWord* __restrict__ last_status, int64_t* __restrict__ count) {
  *count = static_cast<int64_t>(*last_status & kValueMask);
}

struct Buffers {
  StatusWord* status;  ///< [num_tiles + 1]: the tiles' status words, then the tile counter
  int64_t num_tiles;
};

Buffers carve(d2k::Workspace& ws, const sc::Params& p) {
  Buffers b{};
  b.num_tiles = (p.n + kTile - 1) / kTile;
  b.status = ws.take<StatusWord>(static_cast<uint64_t>(b.num_tiles) + 1);
  return b;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, sc::read_params(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const sc::Params p = sc::read_params(args);
    const sc::Columns c = sc::read_columns(args, p, kDLCUDA);
    if (!aligned16(c.shipdate) || !aligned16(c.price) || !aligned16(c.partkey))
      throw d2k::abi_error("stream_compaction expert: the input columns must be 16-byte aligned (int4 loads)");
    if (SC_VEC_STORE && (!aligned16(c.out_shipdate) || !aligned16(c.out_price) || !aligned16(c.out_partkey)))
      throw d2k::abi_error("stream_compaction expert: the output columns must be 16-byte aligned (int4 stores)");
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, p);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.status, 0, (static_cast<size_t>(b.num_tiles) + 1) * sizeof(StatusWord), st));
    if (kTileDynBytes > 0)
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(sc_select_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(kTileDynBytes)));
#if SC_ASYNC_PAYLOAD
    // The 40-register build is meant to run 6 CTAs x 37.5 KB per SM: ask for the largest
    // shared-memory carveout, so that the driver does not pick a smaller one that fits fewer.
    D2K_CUDA_TRY(args, cudaFuncSetAttribute(sc_select_tiles, cudaFuncAttributePreferredSharedMemoryCarveout,
                                            static_cast<int>(cudaSharedmemCarveoutMaxShared)));
#endif
    sc_select_tiles<<<static_cast<unsigned>(b.num_tiles), kThreads, kTileDynBytes, st>>>(
        c.shipdate, c.price, c.partkey, p.n, p.date_lt, c.out_shipdate, c.out_price, c.out_partkey, b.status,
        b.status + b.num_tiles);
    sc_write_count<<<1, 1, 0, st>>>(b.status + b.num_tiles - 1, c.count);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
