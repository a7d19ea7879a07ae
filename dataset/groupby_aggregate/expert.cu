// groupby_aggregate — expert: a hash group-by that adapts to the number of groups as it runs.
//
// Variants considered:
//   (a) sort-based: CUB radix sort of (key, value) pairs then a reduce-by-key. Reads and writes
//       every row ~4 times (8 radix passes on 64-bit keys are 16 N bytes each): 10x the
//       least-work bytes at every cardinality. Not taken (it is the library route).
//   (b) global hash table, one atomic per aggregate per row (naive.cu): every row pays five L2
//       atomics; at 16 groups they all land on 16 addresses and serialise.
//   (c) strategy chosen up front from a sampled estimate of the distinct count: a sample cannot
//       tell 1e6 Zipf groups from 1e8 (the tail is what it misses), and a wrong guess costs a rerun.
//   (d) taken: per-row warp aggregation, per-CTA shared-memory tables that spill, and a global
//       table sized small first and regrown on the device when it overflows:
//       1. Warp aggregation: __match_any_sync on the 32 keys a warp holds; the lowest lane of each
//          set of equal keys folds their values (count = popcount, sum/min/max over a staged
//          shared-memory row) and makes one update for them. Zipf skew puts the head keys in
//          most warps many times over, so this is what keeps the hot groups from serialising.
//       2. Per-CTA shared-memory table (kSmemSlots groups): the warp leader updates its group
//          there with shared atomics; at 16 groups every CTA holds all of them and the global
//          table sees kSmemSlots-bounded flushes per CTA only. When the CTA's table is 3/4 full it
//          stops claiming new slots (keys already there keep aggregating: the Zipf head), and
//          other keys go to the global table: at 1e8 groups the CTA table costs a few probes.
//          This is the run-time cardinality decision, taken per CTA from its own keys.
//       3. Global table of 32-byte records, linear probing, atomicCAS on keys: first kSmallCap
//          records, abandoned once it holds kSmallLimit groups (an overflow word); then a
//          device-side gate reruns the whole aggregation into a table of the power of two
//          >= 1.25 N records, which holds any input. No host synchronisation: the second clear
//          and pass read the overflow word and return at once when it is clear.
//       4. Emit: a scan over the table's slots, warp-aggregated reservation of output rows.
// Min and max are kept as uint64 of (v XOR 2^63), which orders like the int64 v, so empty slots
// are 0 (max) and all ones (min) and the unsigned 64-bit atomics apply. Sum: unsigned addition,
// which is the task's wrapping int64 sum. The key -1 (all ones) marks an empty slot, so it has a
// slot of its own after the table's last.
//
// The global table as records (since 2026-12-03). Its form before, five arrays (keys, count,
// sum, min, max; measured as prev, code removed), made an update touch five random 32-byte
// sectors, and at 1e6 groups its 4M-slot table (160 MB) missed the L2. H200, one d2k run
// (docs/results/groupby_aggregate.md), five arrays / records / records without the bypass (the
// aos_probe variant) in us: 16 uniform 3748 / 3786 / 3766; 16 Zipf 3871 / 3947 / 3867; 1e6
// uniform 43996 / 12973 / 19512; 1e6 Zipf 22286 / 14105 / 14140; 1e8 uniform 249672 / 47588 /
// 50863; 1e8 Zipf 128872 / 35329 / 34489: the records 3.4x / 1.6x / 5.2x / 3.6x from 1e6 groups
// up, within 2% at 16; the bypass is 1.5x of it at 1e6 uniform. In detail:
//   - Global table: cap + 1 records {key, sum, min_u, max_u} of 32 bytes (one sector, 32-byte
//     aligned) plus a 4-byte count array (counts <= N < 2^32; N >= 2^32 is refused). The key CAS
//     and the sum/min/max atomics of an update hit one sector; the count one more, in a dense array.
//   - First table 2^21 records (64 MB) + 8 MB of counts, abandoned at kSmallLimit = 1398100 groups
//     (load 2/3): 1e6 groups fit without the rerun (about 32 MB of used records + 8 MB of counts,
//     mostly L2-resident). Full table: the power of two >= 1.25 N (2^28 at
//     N = 2e8: 8.6 GB of records + 1.07 GB of counts = 9.66 GB to clear, five arrays 10.7 GB). A
//     non-power-of-two capacity of 1.25 N would clear 9.0 GB (~0.15 ms less) for a multiply-high
//     slot reduction; not taken. It must hold N distinct keys, so it cannot be sized smaller
//     without a bound on the distinct count that only `groups` (not read) would give.
//   - A table without a limit (the full one, or the only one at small N) counts no claims: that
//     counter is one address, and the 1e8 rerun would make ~0.9e8 serialised L2 atomics on it.
//   - GB_SMEM_BYPASS (default on; the aos_probe variant turns it off): once a CTA's table
//     is full (3/4, no more claims), the first kBypassWindow = 1024 leader lookups are counted;
//     if fewer than 1/8 hit, the CTA stops probing it (its groups are still flushed at the end).
//     A miss in a 3/4-full linear-probing table costs ~8.5 dependent shared loads; at 1e6 and 1e8
//     uniform groups a CTA's 768 keys hit < 0.1% of lookups, while Zipf heads keep hitting (the
//     top 768 of 1e6 Zipf ranks hold ~50% of the rows) and keep probing.
// DRAM traffic of a global update: 1e6 groups: five arrays 5 sectors read-modify-written per row
// on a 160 MB table that misses L2; records 1 record sector + 1 count sector on a ~40 MB hot set
// that fits L2. 1e8 groups: 5 sectors per row (~320 B of DRAM read + write) against 2 (~128 B).
// The L2 atomics per update are as many (4 + the CAS of a new key): what is left at 1e6 groups.
//
// The pick (GB_PICK=1, the default since 2026-12-03): one CTA reads 8192 keys at evenly spaced
// rows into a shared set (gb_pick); at most kWarpClaimLimit = 24 distinct keys there run the
// per-warp tables below (gb_aggregate_wt), more run the rows loop (gb_aggregate); both kernels are
// launched and the one not picked returns at once (a device-side word, no host synchronisation).
// The rerun after an overflow is always the rows loop. H200, one d2k run (docs/results/
// groupby_aggregate.md), rows loop (variant rows) / pick in us: 16 uniform 3779.76 / 2357.88
// (1.60x); 16 Zipf 3942.47 / 3028.73 (1.30x, noise 12%); 1e6 uniform 13010.14 / 13010.29; 1e6 Zipf
// 14191.46 / 14396.75; 1e8 uniform 48167.73 / 48028.16; 1e8 Zipf 35191.61 / 35277.68.
// The warp tables alone at every cardinality (warptab, measured and removed: its own full-table
// hit rule then decided when a warp stopped probing): 2342.83 / 2987.37 at 16 groups, as the pick,
// but 35433 at 1e6 Zipf and 60952 at 1e8 Zipf (2.5x / 1.75x slower than the rows loop, with a
// 1024- or a 64-lookup window and a keep rule of 1/8 or 3/4 of hits alike: the cause was not
// found; the pick keeps the tables off those inputs).
//
// lanes (GB_LANES=1, built, not yet measured; the default's SASS is unchanged): the pick's
// warp-table path without grouping. At 16 groups the round above spends ~245 SASS instructions
// per 32 rows on grouping the lanes by slot (ballots), the pointer-jumping fold and the leader's
// update; lanes gives each lane its own partial aggregate per claimed key (the warp table's keys
// get compact ids in claim order; 25 rows x 32 lanes x 28 B = 22.4 KB per warp, column per lane,
// conflict-free) and adds its row there: lookup + four shared read-modify-writes (~40-50
// instructions per round, estimated from the source; not counted on the SASS), no shuffles. The keys not in the table still take the
// fold and the CTA table. The merge sums a row's 32 partials (skewed reads). 8 warps of 22.9 KB
// and the 41 KB CTA table fill an SM: 1 CTA per SM (132 registers, no local memory), so the loads
// run three chunks ahead (64 KB in flight per SM). Expected: memory-bound at 16 groups (the
// shared-memory pipe ~20 wavefronts per round, ~0.5 ms of the ~0.76 ms floor), i.e. well above the
// warp tables' 32.6% of SOL if 64 KB per SM keeps the DRAM busy; confirmed if >= 1.25x the pick at
// 16 groups and equal elsewhere (the rows loop runs there).
//
// The per-warp tables (measured as warptab). At 16
// groups the rows loop is ~5x off the floor (3786 us, 20% of SOL) with the global table idle: every
// row's warp makes one MATCH.ANY.U64 and up to ~14 leaders fold their peers serially and then make
// four 64-bit shared atomics (CAS loops: ATOMS.CAS.64 / CAST.SPIN.64) on the same <= 16 slots as
// the other 31 warps of the SM: contended CAS retries. warptab puts a private table in front:
//   - Per warp 32 slots {key, count (u32), sum, min_u, max_u} + a slot for the key -1 (9472 B of
//     dynamic shared memory per CTA: with the 41 KB CTA table this is over the 48 KB static limit;
//     ~51 KB a CTA keeps 4 CTAs per SM). Only its warp touches it: plain loads and stores.
//   - 4 rows per lane per step (a warp's chunk is 128 contiguous rows, two 16-byte loads per
//     column per lane; chunks grid-strided over the warps), processed in 4 rounds of 32 rows.
//   - Per round, lookup first: Fibonacci hash (k * 2^64/phi, top 5 bits), a read-only linear probe
//     to k's slot or an empty one. Claims: the lowest lane among those that ended on an empty slot
//     writes its key, __syncwarp, the others probe again from where they stopped (a slot taken by
//     another key is passed, by their own key found). Race-free: keys are written only there, one
//     lane per step between two __syncwarp, into an empty slot the lane probed to, so a key holds
//     at most one slot and a slot one key; aggregates are written only by the one leader of a slot
//     in a round, and rounds are separated by __syncwarp. Claims stop at 24 (3/4); a lookup past 8
//     slots, or a claimer of a full table, falls back.
//   - Peers without MATCH at small G: the lanes in the table are grouped by their slot from five
//     ballots of its bits; only the lanes out of it (fallback, key -1, bypassed warp) make a
//     __match_any_sync on the key, among themselves. So 16 groups make no MATCH; 1e6+ groups one
//     per 32 rows, as the default.
//   - Fold by pointer jumping (shuffles of sum, min_u, max_u and the next-peer lane; ceil(log2) of
//     the largest peer set steps: 3 at 16 uniform groups, 4 at 16 Zipf) instead of the leader's
//     serial walk over a staged row (~5 / ~11 iterations there).
//   - Overflow: a warp whose table is full counts its next 64 lookups; if fewer than 3/4 hit it
//     stops probing (1e6 and 1e8 groups: after ~100 rows of its ~47k), else it keeps the table
//     for the keys it holds. Keys not in the table take the default path unchanged (CTA table with
//     its bypass, global table), folded by key match. At the end each warp merges its <= 24 groups
//     into the CTA table (else global) and its -1 slot into the global table: one update per group
//     per warp, before the CTA's flush. CTA table, global tables, rerun gate, -1 slot, sign-flipped
//     min/max and emit are the default's.
//   - SASS (sm_90a, cuobjdump): gb_aggregate 49 registers, no stack, no local memory, 42016 B static
//     + 9472 B dynamic shared. Steady-state path of one round at 16 groups, counted by hand on the
//     SASS (a hit at the first probe, no claim, no fallback): ~245 instructions per 32 rows with 3
//     fold steps (~7.7 a row), ~271 with 4 (~8.5 a row, Zipf); 0 MATCH, 0 atomics; the pieces:
//     ~30 lookup, ~30 slot ballots, ~26 per fold step (7 SHFL), ~26 the leader's plain update,
//     ~50 predicates and votes. The default's round issues fewer instructions (~150-200: MATCH,
//     serial fold, hash, probe, four CAS loops) but its CAS loops retry under contention.
//   - Predicted before the run: at 16 groups issue-bound near ~250 instructions per 32 rows: ~2 ms
//     at an SM IPC of ~2.7 (~1.6x the rows loop, ~35% of SOL), ~1.3 ms if the IPC nears 4 (the 40%
//     bar needs <= ~300 per 32 rows at IPC 4). Measured: 2343 us (1.61x, 32% of SOL): an IPC
//     near 2.7 by this count.
//
// %VARIANT% global_only -DGB_SMEM_SLOTS=0 -DGB_PICK=0
// %VARIANT% aos_probe -DGB_SMEM_BYPASS=0 -DGB_PICK=0
// %VARIANT% rows -DGB_PICK=0
// %VARIANT% tables -DGB_PICK_TABLES=1
// %VARIANT% lanes -DGB_LANES=1
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

#ifndef GB_SMEM_SLOTS
#define GB_SMEM_SLOTS 1024  // 40 KB of static shared memory: 5 CTAs of 256 threads per SM
#endif
#ifndef GB_SMEM_BYPASS
#define GB_SMEM_BYPASS (GB_SMEM_SLOTS > 0)  // 1: a CTA whose full table rarely hits stops probing it
#endif
#if GB_SMEM_BYPASS && GB_SMEM_SLOTS == 0
#error "GB_SMEM_BYPASS needs the per-CTA tables (GB_SMEM_SLOTS > 0)"
#endif
#ifndef GB_PICK
// 1: a one-CTA sample of the keys picks, per call, the per-warp tables (at most kWarpClaimLimit
// distinct keys in it) or the rows loop (header: "pick"); 0: the rows loop alone (variant rows).
#define GB_PICK 1
#endif
#ifndef GB_LANES
// 1: the warp-table path keeps per-lane partial aggregates (variant lanes, header: no grouping or
// fold of a warp's rows at few keys) and prefetches three chunks ahead; 1 CTA of 8 warps per SM.
#define GB_LANES 0
#endif
#if GB_LANES && !GB_PICK
#error "GB_LANES is a form of the pick's warp-table path: it needs GB_PICK"
#endif
#ifndef GB_PICK_TABLES
// 1: the pick always takes the warp tables (variant tables: the warp tables at every cardinality,
// to profile them where the sample keeps them off, e.g. 1e6 Zipf groups).
#define GB_PICK_TABLES 0
#endif
#if GB_PICK_TABLES && !GB_PICK
#error "GB_PICK_TABLES forces the pick: it needs GB_PICK"
#endif
#if GB_PICK && !GB_SMEM_BYPASS
#error "GB_PICK builds on the CTA table with its bypass"
#endif

namespace {

constexpr unsigned long long kEmptyKey = ~0ull;
constexpr unsigned long long kSignBit = 1ull << 63;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSmemSlots = GB_SMEM_SLOTS;
constexpr int kSmemProbes = 32;
constexpr unsigned long long kSmemMask = kSmemSlots > 0 ? kSmemSlots - 1 : 0;
constexpr int kSmemClaimLimit = kSmemSlots * 3 / 4;  // stop claiming at 3/4 full
constexpr int kCtasPerSm = 4;
constexpr uint64_t kSmallCap = 1ull << 21;  // first global table: 2M records (64 MB) + 8 MB of counts
constexpr unsigned long long kSmallLimit = kSmallCap / 3 * 2;  // abandoned at 1398100 groups (load 2/3)
constexpr unsigned kBypassWindow = 1024;  // lookups into the full CTA table before the decision
constexpr unsigned kBypassHitDiv = 8;     // bypass when fewer than 1/8 of them hit
constexpr int kItems = 4;                 // rows per lane per step: two 16-byte loads per column
constexpr int kChunk = 32 * kItems;       // rows per warp step (contiguous)
constexpr int kWarpSlots = 32;            // per-warp table; slot kWarpSlots holds the key -1
constexpr int kWarpSlotBits = 5;
constexpr int kWarpClaimLimit = 24;       // claims stop at 3/4 full
constexpr int kWarpProbes = 8;            // a lookup gives up (falls back) after 8 occupied slots
// Lookups into the full warp table before the decision: two rounds (the pick runs the tables only
// where the sample saw <= 24 keys, so a table that fills meets an input the sample misjudged: decide
// soon). 1024 was tried first; neither it nor this window, nor a keep rule of 1/8 or 3/4, changed
// the tables' 2.5x / 1.75x slowdown at 1e6 / 1e8 Zipf groups on the H200 (header).
constexpr unsigned kWarpWindow = 64;
// The warp keeps probing its full table only when at least 3/4 of the window's lookups hit: a table
// of 24 keys is worth its misses' probes only where it holds nearly every key its warp meets.
constexpr unsigned kWarpKeepNum = 3, kWarpKeepDen = 4;
static_assert(kWarpSlots == 1 << kWarpSlotBits && kWarpSlots == 32, "one slot per lane at the merge");
static_assert(kWarpClaimLimit < kWarpSlots, "a full table keeps an empty slot: every probe ends");

/// Table capacity that holds any input of N rows: the power of two >= 1.25 N (at least 2).
uint64_t full_capacity(int64_t n) {
  uint64_t cap = 2;
  const uint64_t need = static_cast<uint64_t>(n) + static_cast<uint64_t>(n) / 4;
  while (cap < need) cap <<= 1;
  return cap;
}

__host__ __device__ __forceinline__ uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

/// One group's partial aggregate; min and max in the sign-flipped unsigned order.
struct Agg {
  unsigned long long count, sum, min_u, max_u;
};

/// One group's record in the global table: one 32-byte sector, so the key CAS and the sum,
/// min and max atomics of an update hit one sector (L2 atomics on one line, one DRAM sector when
/// the table misses L2). The count lives in a separate 4-byte array (N < 2^32 rows).
struct alignas(32) Rec {
  unsigned long long key, sum, min_u, max_u;
};
static_assert(sizeof(Rec) == 32, "a record is one 32-byte sector");

/// A global open-addressing table of records: cap + 1 records and counts (slot cap holds the key -1).
struct GTable {
  Rec* rec;
  unsigned* count;
  uint64_t cap;
  unsigned long long limit;     ///< groups claimed before the table is abandoned (~0: never)
  unsigned long long* claimed;  ///< groups claimed so far (not counted when limit is ~0)
  unsigned long long* overflow; ///< set once claimed reaches limit: this pass is void
};

struct Plan {
  GTable small, full;
  bool two_tables;  ///< false when the small table already holds any input (small N)
  unsigned long long* go;  ///< GB_PICK: [rows loop, warp tables], written by gb_pick
};

Plan carve(d2k::Workspace& ws, int64_t n) {
  Plan p{};
  const uint64_t cap_full = full_capacity(n);
  p.two_tables = cap_full > kSmallCap;
  auto* ctrl = ws.take<unsigned long long>(GB_PICK ? 6 : 4);
  p.go = GB_PICK ? ctrl + 4 : nullptr;
  auto table = [&](uint64_t cap, unsigned long long limit, unsigned long long* c) {
    const uint64_t slots = cap + 1;
    Rec* rec = ws.take<Rec>(slots);  // the workspace's 256-byte alignment keeps records on sectors
    return GTable{rec, ws.take<unsigned>(slots), cap, limit, c, c + 1};
  };
  if (p.two_tables) {
    p.small = table(kSmallCap, kSmallLimit, ctrl);
    p.full = table(cap_full, ~0ull, ctrl + 2);
  } else {
    p.small = table(cap_full, ~0ull, ctrl);
    p.full = p.small;
  }
  return p;
}

/// The slot of key k, claiming one if k is new; false when the table is abandoned (overflow).
/// A table without a limit (the full one, or the only one) does not count its claims: that
/// counter is one address, and at 1e8 groups every new group would be a serialised L2 atomic on
/// it; such a table has more slots than N >= the distinct keys, so a probe always ends.
__device__ bool global_slot(const GTable& t, unsigned long long k, uint64_t* slot) {
  if (k == kEmptyKey) {
    *slot = t.cap;
    return true;
  }
  const uint64_t mask = t.cap - 1;
  uint64_t h = fmix64(k) & mask;
  for (uint64_t probe = 0; probe < t.cap; ++probe) {
    const unsigned long long cur = __ldcg(&t.rec[h].key);
    if (cur == k) {
      *slot = h;
      return true;
    }
    if (cur == kEmptyKey) {
      const unsigned long long old = atomicCAS(&t.rec[h].key, kEmptyKey, k);
      if (old == kEmptyKey) {
        if (t.limit != ~0ull && atomicAdd(t.claimed, 1ull) >= t.limit) {
          atomicExch(t.overflow, 1ull);
          return false;
        }
        *slot = h;
        return true;
      }
      if (old == k) {
        *slot = h;
        return true;
      }
    }
    h = (h + 1) & mask;
  }
  atomicExch(t.overflow, 1ull);
  return false;
}

__device__ void global_add(const GTable& t, unsigned long long k, const Agg& a) {
  uint64_t s;
  if (!global_slot(t, k, &s)) return;
  Rec* r = &t.rec[s];
  atomicAdd(&r->sum, a.sum);
  atomicMin(&r->min_u, a.min_u);
  atomicMax(&r->max_u, a.max_u);
  atomicAdd(&t.count[s], static_cast<unsigned>(a.count));  // a group's count <= N < 2^32
}


/// Per-CTA shared-memory table.
struct SmemTable {
  unsigned long long keys[kSmemSlots > 0 ? kSmemSlots : 1];
  unsigned long long count[kSmemSlots > 0 ? kSmemSlots : 1];
  unsigned long long sum[kSmemSlots > 0 ? kSmemSlots : 1];
  unsigned long long min_u[kSmemSlots > 0 ? kSmemSlots : 1];
  unsigned long long max_u[kSmemSlots > 0 ? kSmemSlots : 1];
  unsigned int fill;
};

/// The shared slot of k, or -1: k absent and the table too full to claim, or too many probes.
__device__ int smem_slot(SmemTable& st, unsigned long long k) {
  const bool may_claim = static_cast<int>(*static_cast<volatile unsigned*>(&st.fill)) < kSmemClaimLimit;
  int h = static_cast<int>(fmix64(k) & kSmemMask);
  for (int probe = 0; probe < kSmemProbes; ++probe) {
    const unsigned long long cur = static_cast<volatile unsigned long long*>(st.keys)[h];
    if (cur == k) return h;
    if (cur == kEmptyKey) {
      if (!may_claim) return -1;
      const unsigned long long old = atomicCAS(&st.keys[h], kEmptyKey, k);
      if (old == kEmptyKey) {
        atomicAdd(&st.fill, 1u);
        return h;
      }
      if (old == k) return h;
    }
    h = (h + 1) & static_cast<int>(kSmemMask);
  }
  return -1;
}

/// Whether this pass must stop (its table overflowed) or not run (gate given and clear).
__device__ __forceinline__ bool pass_void(const unsigned long long* overflow) {
  return *static_cast<const volatile unsigned long long*>(overflow) != 0;
}

/// Fold the values of the lanes in `peers` (staged in row) into one aggregate.
__device__ Agg fold_peers(unsigned peers, const long long* row) {
  Agg a{static_cast<unsigned long long>(__popc(peers)), 0ull, ~0ull, 0ull};
  for (unsigned m = peers; m != 0; m &= m - 1) {
    const auto u = static_cast<unsigned long long>(row[__ffs(m) - 1]);
    a.sum += u;
    const unsigned long long o = u ^ kSignBit;
    a.min_u = o < a.min_u ? o : a.min_u;
    a.max_u = o > a.max_u ? o : a.max_u;
  }
  return a;
}

/// One warp's private table: only its own warp reads or writes it, so every access is a plain
/// shared load or store. Slot kWarpSlots holds the key -1 (its key entry is implied).
#if GB_LANES
/// GB_LANES: the warp's keys by hash slot, each claimed slot's compact id (claim order), and per
/// compact id (row kWarpClaimLimit: the key -1) one partial aggregate per lane: a lane adds its
/// own rows into its own column, so a round needs no grouping, fold or leader. Column-major per
/// row: lane l's 8-byte word of row r at (32 r + l) x 8 bytes, so a warp's 32 accesses to 32
/// different rows hit 32 different banks pairs (two wavefronts, as any 64-bit warp access).
constexpr int kLaneRows = kWarpClaimLimit + 1;
struct WarpTable {
  unsigned long long keys[kWarpSlots];
  unsigned long long key_of[kWarpClaimLimit];  ///< the key of each compact id
  unsigned char id[kWarpSlots];                ///< compact id of a claimed slot
  unsigned long long sum[kLaneRows][32];
  unsigned long long min_u[kLaneRows][32];
  unsigned long long max_u[kLaneRows][32];
  unsigned count[kLaneRows][32];
};
[[maybe_unused]] constexpr int kWtCtasPerSm = 1;  // 8 x 22.9 KB of warp tables + the 41 KB CTA table
#else
struct WarpTable {
  unsigned long long keys[kWarpSlots];
  unsigned long long sum[kWarpSlots + 1];
  unsigned long long min_u[kWarpSlots + 1];
  unsigned long long max_u[kWarpSlots + 1];
  unsigned count[kWarpSlots + 1];  // a warp's rows of a group <= N < 2^32 (read_n refuses larger N)
};
[[maybe_unused]] constexpr int kWtCtasPerSm = kCtasPerSm;
#endif

/// Warp-uniform state of a warp's table, in registers.
struct WarpState {
  int fill;         ///< keys claimed (claims stop at kWarpClaimLimit)
  int state;        ///< 0: probing, undecided; 1: bypassed (no more lookups); 2: keeps probing
  unsigned looks;   ///< lookups counted while the table is full and undecided
  unsigned hits;    ///< of them, found in the table
};

/// Fibonacci hashing into the warp table: the top bits of k * 2^64/phi (dense keys spread evenly).
__device__ __forceinline__ int warp_hash(unsigned long long k) {
  return static_cast<int>((k * 0x9E3779B97F4A7C15ull) >> (64 - kWarpSlotBits));
}

/// A fallback update (the default path): the CTA table with shared atomics, else the global table.
__device__ __forceinline__ void cta_add(SmemTable& st, const GTable& t, unsigned long long k, int s, const Agg& a) {
  if (s >= 0) {
    atomicAdd(&st.count[s], a.count);
    atomicAdd(&st.sum[s], a.sum);
    atomicMin(&st.min_u[s], a.min_u);
    atomicMax(&st.max_u[s], a.max_u);
  } else {
    global_add(t, k, a);
  }
}

/// The CTA table's mode for this warp's step, the same in every lane of `mask` (lane 0 reads it):
/// 0 probe the table; 1 probe it and count the lookups (full, undecided); 2 bypass it (decided:
/// fewer than 1/kBypassHitDiv of kBypassWindow lookups hit).
__device__ __forceinline__ int cta_mode(SmemTable& st, int& by_state, int lane, unsigned mask) {
  int mode = 0;
  if (lane == 0) {
    const int state = *static_cast<volatile int*>(&by_state);
    const bool full = static_cast<int>(*static_cast<volatile unsigned*>(&st.fill)) >= kSmemClaimLimit;
    mode = state == 1 ? 2 : (state == 0 && full ? 1 : 0);
  }
  return __shfl_sync(mask, mode, 0);  // lane 0 is in every mask passed: it holds the step's first row
}

/// Mode 1: the warp's lookups and hits join the CTA's window; the warp that crosses it decides.
__device__ __forceinline__ void count_window(unsigned looked, unsigned hit, unsigned& by_looks, unsigned& by_hits,
                                             int& by_state, int lane) {
  if (lane != 0) return;
  const unsigned before = atomicAdd(&by_looks, looked);
  const unsigned hits = atomicAdd(&by_hits, hit) + hit;
  const unsigned after = before + looked;
  if (before < kBypassWindow && after >= kBypassWindow)  // one warp crosses the window
    by_state = static_cast<unsigned long long>(hits) * kBypassHitDiv < after ? 1 : 2;
}

/// One round: one row per lane (k, v; valid false past N). Called by all 32 lanes, converged.
///  1. Lookup of k in the warp table (all valid lanes but the key -1, unless the warp bypassed it):
///     a read-only probe from warp_hash(k) to k's slot or an empty slot; the lanes that end on an
///     empty slot (k absent) are the claimers: while there are some and the table is below its
///     limit, the lowest claiming lane alone writes its key to its slot, then __syncwarp and the
///     others probe again from where they stopped (a slot just taken by another key is passed, by
///     the same key is found). A key is written only there, by one lane, between two __syncwarp,
///     and only into an empty slot it probed to: each key holds at most one slot, each slot one key.
///     Claimers of a full table, and lookups past kWarpProbes slots, fall back.
///  2. Peers: lanes in the table grouped by slot from five ballots of the slot's bits (no MATCH);
///     the others (key -1, fallback, bypass) by __match_any_sync on the key among themselves.
///  3. Fold over each peer set by pointer jumping: lane r of a set adds the partial of the peer
///     `nxt` (2^i ranks up) and takes its nxt; after ceil(log2(largest set)) steps the lowest peer
///     (the leader) holds the set's sum, min and max; count = popcount.
///  4. Leaders in the table (one per slot) and of the key -1 (one) update the warp table with plain
///     loads and stores; the other leaders take the default path (CTA table, its bypass, global).
__device__ __forceinline__ void warp_round(WarpTable& wt, SmemTable& st, const GTable& t, WarpState& w,
                                           unsigned& by_looks, unsigned& by_hits, int& by_state, int lane,
                                           unsigned long long k, long long v, bool valid) {
  const bool minus_one = k == kEmptyKey;
  int slot = -1;  // k's slot in the warp table
  if (w.state != 1) {
    bool pend = valid && !minus_one;
    int h = warp_hash(k), probes = 0;
    for (;;) {
      if (pend) {
        for (;;) {  // read-only: keys change only in the claim below, between two __syncwarp
          const unsigned long long cur = wt.keys[h];
          if (cur == k) {
            slot = h;
            pend = false;
            break;
          }
          if (cur == kEmptyKey) break;  // k is absent: claim h
          if (++probes == kWarpProbes) {
            pend = false;  // give up: the fallback path
            break;
          }
          h = (h + 1) & (kWarpSlots - 1);
        }
      }
      const unsigned claimers = __ballot_sync(~0u, pend);
      if (claimers == 0) break;
      if (w.fill >= kWarpClaimLimit) break;  // full: the claimers (pend) fall back
      __syncwarp();  // the probes' reads of keys[] before the claim's write (a vote does not order memory)
      if (lane == __ffs(claimers) - 1) {
        wt.keys[h] = k;
#if GB_LANES
        wt.id[h] = static_cast<unsigned char>(w.fill);
        wt.key_of[w.fill] = k;
#endif
        slot = h;
        pend = false;
      }
      ++w.fill;
      __syncwarp();
    }
    if (w.state == 0 && w.fill >= kWarpClaimLimit) {  // full and undecided: count, then decide
      w.looks += __popc(__ballot_sync(~0u, valid && !minus_one));
      w.hits += __popc(__ballot_sync(~0u, slot >= 0));
      if (w.looks >= kWarpWindow) w.state = w.hits * kWarpKeepDen < w.looks * kWarpKeepNum ? 1 : 2;
    }
  }
  const bool in = slot >= 0;
#if GB_LANES
  if (valid && (in || minus_one)) {  // the lane's own partial of the row's key: no other lane writes it
    const int r = in ? static_cast<int>(wt.id[slot]) : kWarpClaimLimit;
    const auto u = static_cast<unsigned long long>(v);
    const unsigned long long o = u ^ kSignBit;
    wt.sum[r][lane] += u;
    wt.count[r][lane] += 1u;
    if (o < wt.min_u[r][lane]) wt.min_u[r][lane] = o;
    if (o > wt.max_u[r][lane]) wt.max_u[r][lane] = o;
  }
  valid = valid && !in && !minus_one;  // what is left: the keys not in the warp table
  if (__ballot_sync(~0u, valid) == 0) return;  // the stores above are the lane's own: no barrier needed
#endif
  const unsigned active = __ballot_sync(~0u, valid);
  const unsigned out = __ballot_sync(~0u, valid && !in);
  unsigned peers = 1u << lane;  // a lane past N: a set of its own, no leader
  if (out != active) {          // lanes in the table: equal slots from five ballots
    unsigned diff = 0;          // lanes whose slot differs from this lane's in some bit
#pragma unroll
    for (int b = 0; b < kWarpSlotBits; ++b) {
      const bool set = (slot & (1 << b)) != 0;
      diff |= __ballot_sync(~0u, set) ^ (set ? ~0u : 0u);
    }
    if (in) peers = active & ~out & ~diff;
  }
  if (out != 0 && valid && !in) peers = __match_any_sync(out, k);
  // Pointer-jumping fold of each peer set (all lanes shuffle: the loop bound is warp-uniform).
  const unsigned above = peers & ~((2u << lane) - 1u);  // lane 31: 2u << 31 == 0, nothing above
  int nxt = above != 0 ? __ffs(above) - 1 : -1;
  const unsigned cnt = __popc(peers);
  const unsigned largest = __reduce_max_sync(~0u, cnt);
  unsigned long long sum = static_cast<unsigned long long>(v);
  unsigned long long mn = sum ^ kSignBit, mx = mn;
  for (unsigned span = 1; span < largest; span <<= 1) {  // branch-free: a lane without nxt reads itself
    const bool has = nxt >= 0;
    const int src = has ? nxt : lane;
    const unsigned long long s2 = __shfl_sync(~0u, sum, src);
    const unsigned long long mn2 = __shfl_sync(~0u, mn, src);
    const unsigned long long mx2 = __shfl_sync(~0u, mx, src);
    nxt = __shfl_sync(~0u, nxt, src);  // its own -1 when it has none
    sum += has ? s2 : 0ull;            // min and max of itself are idempotent
    mn = mn2 < mn ? mn2 : mn;
    mx = mx2 > mx ? mx2 : mx;
  }
  const bool lead = valid && (peers & ((1u << lane) - 1u)) == 0;
#if !GB_LANES  // (GB_LANES: the lanes in the table or of the key -1 updated their own partials above)
  if (lead && (in || minus_one)) {  // one leader per slot: plain read-modify-write
    const int s = in ? slot : kWarpSlots;
    wt.count[s] += cnt;
    wt.sum[s] += sum;
    wt.min_u[s] = mn < wt.min_u[s] ? mn : wt.min_u[s];
    wt.max_u[s] = mx > wt.max_u[s] ? mx : wt.max_u[s];
  }
#endif
  const bool flead = lead && !in && !minus_one;
  if (__ballot_sync(~0u, flead) != 0) {  // the default path for the keys not in the warp table
    const int mode = cta_mode(st, by_state, lane, ~0u);
    int s = -1;
    if (flead) {
      if (mode != 2) s = smem_slot(st, k);
      cta_add(st, t, k, s, Agg{cnt, sum, mn, mx});
    }
    if (mode == 1)
      count_window(__popc(__ballot_sync(~0u, flead)), __popc(__ballot_sync(~0u, s >= 0)), by_looks, by_hits, by_state,
                   lane);
  }
  __syncwarp();  // this round's table stores before the next round's loads
}

/// Four rows per lane: lane l holds rows 4l .. 4l+3 of the warp's chunk.
struct Items {
  unsigned long long k[kItems];
  long long v[kItems];
};

__device__ __forceinline__ Items load_items(const int64_t* __restrict__ keys, const int64_t* __restrict__ vals,
                                            int64_t n, int64_t r0, bool vec_full) {
  Items it;
  if (vec_full) {  // the whole chunk in range and 16-byte aligned columns: two 16-byte loads each
    const auto* kp = reinterpret_cast<const longlong2*>(keys + r0);
    const auto* vp = reinterpret_cast<const longlong2*>(vals + r0);
    const longlong2 k0 = __ldcs(kp), k1 = __ldcs(kp + 1), v0 = __ldcs(vp), v1 = __ldcs(vp + 1);
    it.k[0] = static_cast<unsigned long long>(k0.x);
    it.k[1] = static_cast<unsigned long long>(k0.y);
    it.k[2] = static_cast<unsigned long long>(k1.x);
    it.k[3] = static_cast<unsigned long long>(k1.y);
    it.v[0] = v0.x;
    it.v[1] = v0.y;
    it.v[2] = v1.x;
    it.v[3] = v1.y;
  } else {
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const bool ok = r0 + j < n;
      it.k[j] = ok ? static_cast<unsigned long long>(__ldcs(&keys[r0 + j])) : 0ull;
      it.v[j] = ok ? __ldcs(&vals[r0 + j]) : 0ll;
    }
  }
  return it;
}

/// The aggregation pass into table t, through per-warp tables (kWT) or the rows loop. gate: run
/// only if *gate is set (the rerun, or the pick), else always.
template <bool kWT>
__device__ __forceinline__ void aggregate(const int64_t* __restrict__ keys, const int64_t* __restrict__ vals, int64_t n,
                                          GTable t, const unsigned long long* gate) {
  if (gate != nullptr && !pass_void(gate)) return;
  __shared__ SmemTable st;
  extern __shared__ __align__(16) unsigned char gb_dyn[];  // kWT: kWarps WarpTables (dynamic: > 48 KB in all)
  // GB_SMEM_BYPASS: leader lookups into the full CTA table and their hits; 0: undecided, 1: bypass
  // the CTA table, 2: keep probing. (Declared in every build: the warp-table path names them.)
  __shared__ unsigned by_looks, by_hits;
  __shared__ int by_state;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (kSmemSlots > 0) {
    for (int s = threadIdx.x; s < kSmemSlots; s += kThreads) {
      st.keys[s] = kEmptyKey;
      st.count[s] = 0;
      st.sum[s] = 0;
      st.min_u[s] = ~0ull;
      st.max_u[s] = 0;
    }
    if (threadIdx.x == 0) st.fill = 0;
#if GB_SMEM_BYPASS
    if (threadIdx.x == 0) by_looks = by_hits = by_state = 0;
#endif
    if constexpr (kWT) {
    WarpTable& wt0 = reinterpret_cast<WarpTable*>(gb_dyn)[warp];
#if GB_LANES
    wt0.keys[lane] = kEmptyKey;  // kWarpSlots == 32
    for (int r = 0; r < kLaneRows; ++r) {  // each lane its own column
      wt0.count[r][lane] = 0u;
      wt0.sum[r][lane] = 0ull;
      wt0.min_u[r][lane] = ~0ull;
      wt0.max_u[r][lane] = 0ull;
    }
#else
    for (int s = lane; s <= kWarpSlots; s += 32) {
      if (s < kWarpSlots) wt0.keys[s] = kEmptyKey;
      wt0.count[s] = 0u;
      wt0.sum[s] = 0ull;
      wt0.min_u[s] = ~0ull;
      wt0.max_u[s] = 0ull;
    }
#endif
    }
    __syncthreads();
  }
  if constexpr (kWT) {
  // Phase 1: chunks of kChunk contiguous rows, a warp at a time (grid-strided over the warps),
  // the next chunk's loads issued before this one's rounds.
  WarpTable& wt = reinterpret_cast<WarpTable*>(gb_dyn)[warp];
  WarpState ws{0, 0, 0u, 0u};
  {
    const bool aligned = ((reinterpret_cast<uintptr_t>(keys) | reinterpret_cast<uintptr_t>(vals)) & 15u) == 0;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarps;
    int64_t c = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
    auto load = [&](int64_t ch) {
      const int64_t r0 = ch * kChunk + lane * kItems;
      return load_items(keys, vals, n, r0, aligned && ch * kChunk + kChunk <= n);
    };
    auto rounds = [&](const Items& cur, int64_t ch) {
      const int64_t r0 = ch * kChunk + lane * kItems;
      const int64_t left = n - r0;  // rows of this lane's four in range (all four below the last chunk)
      const int nvalid = left >= kItems ? kItems : (left > 0 ? static_cast<int>(left) : 0);
#pragma unroll
      for (int j = 0; j < kItems; ++j)
        warp_round(wt, st, t, ws, by_looks, by_hits, by_state, lane, cur.k[j], cur.v[j], j < nvalid);
    };
#if GB_LANES
    // kAhead + 1 chunks in flight per warp (64 KB per SM at 8 warps): with one CTA per SM the
    // loads of one chunk at a time would leave ~2 MB in flight on the GPU, a third of what the
    // DRAM's latency-bandwidth product asks. q[j] is chunk c + j * stride; indices are unrolled
    // constants, so the ring stays in registers.
    constexpr int kAhead = 3;
    Items q[kAhead + 1];
    auto load_or_none = [&](int64_t ch) { return ch < chunks ? load(ch) : Items{}; };
#pragma unroll
    for (int j = 0; j <= kAhead; ++j) q[j] = load_or_none(c + j * stride);
    for (; c < chunks; c += (kAhead + 1) * stride) {
#pragma unroll
      for (int j = 0; j <= kAhead; ++j) {
        const int64_t ch = c + j * stride;
        const bool stop = __shfl_sync(~0u, lane == 0 ? pass_void(t.overflow) : false, 0);
        if (ch < chunks && !stop) {
          const Items cur = q[j];
          q[j] = load_or_none(ch + (kAhead + 1) * stride);
          rounds(cur, ch);
        }
      }
      if (__shfl_sync(~0u, lane == 0 ? pass_void(t.overflow) : false, 0)) break;
    }
#else
    for (; c < chunks; c += stride) {
      const bool stop = __shfl_sync(~0u, lane == 0 ? pass_void(t.overflow) : false, 0);
      if (stop) break;
      rounds(load(c), c);
    }
#endif
  }
#if GB_LANES
  // Merge: lane r < fill sums compact id r's 32 lane partials (read skewed, (r + i) mod 32, so the
  // lanes' reads fall in different banks) into one update of the CTA table (else the global
  // table); lane kWarpClaimLimit does the key -1's into the global table.
  __syncwarp();
  if (!pass_void(t.overflow) && (lane < ws.fill || lane == kWarpClaimLimit)) {
    Agg a{0ull, 0ull, ~0ull, 0ull};
    for (int i = 0; i < 32; ++i) {
      const int l = (lane + i) & 31;
      a.count += wt.count[lane][l];
      a.sum += wt.sum[lane][l];
      a.min_u = wt.min_u[lane][l] < a.min_u ? wt.min_u[lane][l] : a.min_u;
      a.max_u = wt.max_u[lane][l] > a.max_u ? wt.max_u[lane][l] : a.max_u;
    }
    if (a.count == 0) {
      // the key -1 never seen (a claimed key has its claimer's row)
    } else if (lane == kWarpClaimLimit) {
      global_add(t, kEmptyKey, a);
    } else {
      const unsigned long long k = wt.key_of[lane];
      cta_add(st, t, k, smem_slot(st, k), a);
    }
  }
#else
  // Merge: each warp's groups into the CTA table (else the global table), one update per group
  // per warp, before the CTA's flush below (after the __syncthreads).
  __syncwarp();
  if (!pass_void(t.overflow)) {
    const unsigned long long k = wt.keys[lane];  // kWarpSlots == 32: one slot per lane
    if (k != kEmptyKey) {
      const Agg a{wt.count[lane], wt.sum[lane], wt.min_u[lane], wt.max_u[lane]};
      cta_add(st, t, k, smem_slot(st, k), a);
    }
    if (lane == 0 && wt.count[kWarpSlots] != 0u)
      global_add(t, kEmptyKey, Agg{wt.count[kWarpSlots], wt.sum[kWarpSlots], wt.min_u[kWarpSlots], wt.max_u[kWarpSlots]});
  }
#endif
  } else {
  __shared__ long long stage[kWarps][32];
  // Phase 1: rows, a warp at a time (the loop bound is uniform across the CTA).
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kThreads; base < n;
       base += static_cast<int64_t>(gridDim.x) * kThreads) {
    const bool stop = __shfl_sync(~0u, lane == 0 ? pass_void(t.overflow) : false, 0);
    if (stop) break;
    const int64_t row = base + threadIdx.x;
    const bool valid = row < n;
    const unsigned active = __ballot_sync(~0u, valid);
    if (!valid) continue;
    const auto k = static_cast<unsigned long long>(__ldcs(&keys[row]));
    stage[warp][lane] = __ldcs(&vals[row]);
    const unsigned peers = __match_any_sync(active, k);
    __syncwarp(active);
#if GB_SMEM_BYPASS
    const int mode = cta_mode(st, by_state, lane, active);
    const bool lead = lane == __ffs(peers) - 1;
    int s = -1;
    if (lead) {
      const Agg a = fold_peers(peers, stage[warp]);
      if (k != kEmptyKey && mode != 2) s = smem_slot(st, k);
      cta_add(st, t, k, s, a);
    }
    if (mode == 1)
      count_window(__popc(__ballot_sync(active, lead && k != kEmptyKey)), __popc(__ballot_sync(active, s >= 0)), by_looks,
                   by_hits, by_state, lane);
#else
    if (lane == __ffs(peers) - 1) {
      const Agg a = fold_peers(peers, stage[warp]);
      int s = -1;
      if constexpr (kSmemSlots > 0) {
        if (k != kEmptyKey) s = smem_slot(st, k);
      }
      cta_add(st, t, k, s, a);
    }
#endif
    __syncwarp(active);  // the staged row is rewritten next iteration
  }
  }
  // Phase 2: flush the CTA's groups, one global update each.
  if constexpr (kSmemSlots > 0) {
    __syncthreads();
    if (pass_void(t.overflow)) return;
    for (int s = threadIdx.x; s < kSmemSlots; s += kThreads) {
      const unsigned long long k = st.keys[s];
      if (k == kEmptyKey) continue;
      global_add(t, k, Agg{st.count[s], st.sum[s], st.min_u[s], st.max_u[s]});
    }
  }
}

__global__ void __launch_bounds__(kThreads) gb_aggregate(const int64_t* __restrict__ keys, const int64_t* __restrict__ vals,
                                                         int64_t n, GTable t, const unsigned long long* gate) {
  aggregate<false>(keys, vals, n, t, gate);
}
#if GB_PICK
// <= 64 registers: kCtasPerSm CTAs per SM
__global__ void __launch_bounds__(kThreads, kWtCtasPerSm)
    gb_aggregate_wt(const int64_t* __restrict__ keys, const int64_t* __restrict__ vals, int64_t n, GTable t,
                    const unsigned long long* gate) {
  aggregate<true>(keys, vals, n, t, gate);
}
#endif

#if GB_PICK
constexpr int kPickThreads = 1024;
constexpr int kPickPerThread = 8;   // keys per thread, all loads issued before the first insert
constexpr int kPickSlots = 256;     // the sample's set: > kWarpClaimLimit keys end the count anyway
/// The pick: kPickThreads x kPickPerThread keys at evenly spaced rows into a shared set; more than
/// kWarpClaimLimit distinct keys (the key -1 aside: it has a warp-table slot of its own) run the
/// rows loop (go[0] = 1), else the warp tables (go[1] = 1). A sample of 8192 rows sees far more
/// than 24 keys at 1e6 or 1e8 groups, Zipf or not, and exactly the keys at 16 groups; an input
/// whose sample misses its many keys gets the warp tables, which are exact on any input (slower
/// there: their fallback runs behind a warp table that keeps missing).
__global__ void __launch_bounds__(kPickThreads) gb_pick(const int64_t* __restrict__ keys, int64_t n,
                                                        unsigned long long* __restrict__ go) {
  __shared__ unsigned long long set[kPickSlots];
  __shared__ unsigned distinct;
  for (int s = threadIdx.x; s < kPickSlots; s += kPickThreads) set[s] = kEmptyKey;
  if (threadIdx.x == 0) distinct = 0;
  __syncthreads();
  constexpr int64_t kSamples = int64_t{kPickThreads} * kPickPerThread;
  const int64_t samples = n < kSamples ? n : kSamples;
  unsigned long long k[kPickPerThread];
#pragma unroll
  for (int j = 0; j < kPickPerThread; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kPickThreads;
    k[j] = i < samples ? static_cast<unsigned long long>(__ldcs(&keys[i * n / samples])) : kEmptyKey;
  }
#pragma unroll
  for (int j = 0; j < kPickPerThread; ++j) {
    if (k[j] == kEmptyKey) continue;  // no key (past the sample) or the key -1
    if (*static_cast<volatile unsigned*>(&distinct) > kWarpClaimLimit) break;  // decided: many
    unsigned h = static_cast<unsigned>(fmix64(k[j])) & (kPickSlots - 1);
    for (int probe = 0; probe < kPickSlots; ++probe) {
      const unsigned long long cur = atomicCAS(&set[h], kEmptyKey, k[j]);
      if (cur == kEmptyKey) {
        atomicAdd(&distinct, 1u);
        break;
      }
      if (cur == k[j]) break;
      h = (h + 1) & (kPickSlots - 1);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool many = !GB_PICK_TABLES && distinct > static_cast<unsigned>(kWarpClaimLimit);
    go[0] = many ? 1ull : 0ull;
    go[1] = many ? 0ull : 1ull;
  }
}
#endif

/// Every record and count to empty (identity aggregates); with a gate, only if *gate is set.
__global__ void gb_clear(GTable t, const unsigned long long* gate) {
  if (gate != nullptr && !pass_void(gate)) return;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i <= t.cap;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    auto* r = reinterpret_cast<ulonglong2*>(&t.rec[i]);
    r[0] = make_ulonglong2(kEmptyKey, 0ull);  // key, sum
    r[1] = make_ulonglong2(~0ull, 0ull);      // min_u, max_u
    t.count[i] = 0u;
  }
}


struct Outputs {
  int64_t *keys, *count, *sum, *min, *max;
  unsigned long long* num_groups;
};

/// Write every group of the table that holds the answer (the full one if the small overflowed).
__global__ void __launch_bounds__(kThreads) gb_emit(GTable small, GTable full, Outputs o) {
  const bool rerun = pass_void(small.overflow);
  GTable t = small;  // field by field, so the choice stays in registers (no stack copy)
  if (rerun) t = full;
  const int lane = threadIdx.x & 31;
  for (uint64_t base = static_cast<uint64_t>(blockIdx.x) * kThreads; base <= t.cap;
       base += static_cast<uint64_t>(gridDim.x) * kThreads) {
    const uint64_t i = base + threadIdx.x;
    ulonglong2 ks = make_ulonglong2(kEmptyKey, 0ull), mm = make_ulonglong2(0ull, 0ull);
    if (i <= t.cap) {  // the whole record: its sector is read whole anyway
      const auto* r = reinterpret_cast<const ulonglong2*>(&t.rec[i]);
      ks = __ldcs(&r[0]);
      mm = __ldcs(&r[1]);
    }
    const bool used = i < t.cap ? ks.x != kEmptyKey : (i == t.cap && t.count[i] != 0u);
    const unsigned ballot = __ballot_sync(~0u, used);
    if (ballot == 0) continue;
    unsigned long long first = 0;
    if (lane == 0) first = atomicAdd(o.num_groups, static_cast<unsigned long long>(__popc(ballot)));
    first = __shfl_sync(~0u, first, 0);
    if (!used) continue;
    const uint64_t r = first + __popc(ballot & ((1u << lane) - 1u));
    o.keys[r] = i < t.cap ? static_cast<int64_t>(ks.x) : -1;
    o.count[r] = static_cast<int64_t>(t.count[i]);
    o.sum[r] = static_cast<int64_t>(ks.y);
    o.min[r] = static_cast<int64_t>(mm.x ^ kSignBit);
    o.max[r] = static_cast<int64_t>(mm.y ^ kSignBit);
  }
}


int64_t read_n(const d2k_args* a) {
  const int64_t n = d2k::scalar_i(a, "N");
  if (n < 0) throw d2k::abi_error("groupby_aggregate: N must be >= 0");
  if (n > int64_t{0xFFFFFFFF}) throw d2k::abi_error("groupby_aggregate: the 4-byte counts need N < 2^32");
  return n;
}

/// Persistent-style grid: enough CTAs to fill the GPU, no more than the work needs.
unsigned grid_for(const d2k_args* args, uint64_t items, int per_sm) {
  int dev = 0, sms = 132;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  (void)args;
  const uint64_t want = (items + kThreads - 1) / kThreads;
  const uint64_t cap = static_cast<uint64_t>(sms) * per_sm;
  return static_cast<unsigned>(want < cap ? (want > 0 ? want : 1) : cap);
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, read_n(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t n = read_n(args);
    const auto* keys = d2k::data<const int64_t>(d2k::input(args, "keys", kDLCUDA, d2k::dl::i64, {n}));
    const auto* vals = d2k::data<const int64_t>(d2k::input(args, "values", kDLCUDA, d2k::dl::i64, {n}));
    Outputs o{};
    o.keys = d2k::data<int64_t>(d2k::output(args, "out_keys", kDLCUDA, d2k::dl::i64, {n}));
    o.count = d2k::data<int64_t>(d2k::output(args, "out_count", kDLCUDA, d2k::dl::i64, {n}));
    o.sum = d2k::data<int64_t>(d2k::output(args, "out_sum", kDLCUDA, d2k::dl::i64, {n}));
    o.min = d2k::data<int64_t>(d2k::output(args, "out_min", kDLCUDA, d2k::dl::i64, {n}));
    o.max = d2k::data<int64_t>(d2k::output(args, "out_max", kDLCUDA, d2k::dl::i64, {n}));
    o.num_groups = d2k::data<unsigned long long>(d2k::output(args, "num_groups", kDLCUDA, d2k::dl::i64, {1}));
    auto stream = static_cast<cudaStream_t>(args->stream);

    d2k::Workspace ws(args);
    const Plan p = carve(ws, n);
    D2K_CUDA_TRY(args, cudaMemsetAsync(o.num_groups, 0, sizeof(unsigned long long), stream));
    if (n == 0) return D2K_OK;
    D2K_CUDA_TRY(args, cudaMemsetAsync(p.small.claimed, 0, 4 * sizeof(unsigned long long), stream));
#if GB_PICK
    const unsigned wt_grid = grid_for(args, (static_cast<uint64_t>(n) + kItems - 1) / kItems, kWtCtasPerSm);
    constexpr int kDynSmem = static_cast<int>(kWarps * sizeof(WarpTable));
    D2K_CUDA_TRY(args, cudaFuncSetAttribute(gb_aggregate_wt, cudaFuncAttributeMaxDynamicSharedMemorySize, kDynSmem));
#endif
    const unsigned rows_grid = grid_for(args, static_cast<uint64_t>(n), kCtasPerSm);
#if GB_PICK
    gb_pick<<<1, kPickThreads, 0, stream>>>(keys, n, p.go);
#endif
    gb_clear<<<grid_for(args, p.small.cap + 1, 8), kThreads, 0, stream>>>(p.small, nullptr);
#if GB_PICK
    // Both launched, one runs: each returns at once unless the pick chose it.
    gb_aggregate<<<rows_grid, kThreads, 0, stream>>>(keys, vals, n, p.small, p.go);
    gb_aggregate_wt<<<wt_grid, kThreads, kDynSmem, stream>>>(keys, vals, n, p.small, p.go + 1);
#else
    gb_aggregate<<<rows_grid, kThreads, 0, stream>>>(keys, vals, n, p.small, nullptr);
#endif
    D2K_CUDA_TRY(args, cudaGetLastError());
    if (p.two_tables) {  // the rerun: both kernels return at once unless the small table overflowed
      gb_clear<<<grid_for(args, p.full.cap + 1, 8), kThreads, 0, stream>>>(p.full, p.small.overflow);
      // The rows loop (with GB_PICK too: more than 1.4M groups overflowed the small table, so a
      // sample of few keys was wrong about the input).
      gb_aggregate<<<rows_grid, kThreads, 0, stream>>>(keys, vals, n, p.full, p.small.overflow);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    gb_emit<<<grid_for(args, p.full.cap + 1, 8), kThreads, 0, stream>>>(p.small, p.full, o);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
