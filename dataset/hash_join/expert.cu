// hash_join — expert implementation (PK-FK equi-join, int32 keys and payloads).
//
// Strategy, chosen per call from the shapes (host) and from the data (device):
//   * small build side (a table of the power of two >= 2R packed 64-bit slots fits the shared-
//     memory budget, R <= 4096): ONE kernel, hj_join_smem_table. Every CTA reduces min/max of the
//     build keys itself, builds its own copy of the table in shared memory straight from the build
//     columns (R is tiny, the re-reads hit L2) - direct-indexed by key - min when the key range
//     fits the table, a linear-probing hash table otherwise - and streams its share of the probe
//     rows against it. No global table, no other launch.
//   * otherwise: hj_build_minmax reduces min/max of the build keys on the device, and every later
//     kernel derives the same plan from them (no host round trip, the same kernels every call):
//       - EXACT   (max-min+1 == R, keys exactly a dense range): direct-indexed 4-byte payloads, no
//                 initialisation (every slot is written); a probe is a range check plus one load.
//       - DIRECT  (range <= capacity and 8*range <= L2/2): direct-indexed packed 64-bit slots
//                 (key | payload << 32, empty = all ones): ONE 8-byte L2 load per in-range probe
//                 gives presence and payload together.
//       - BITMAP  (range <= 2*capacity, table too big for L2): direct-indexed 4-byte payload array
//                 plus a presence bitmap of range bits (exact semi-join filter, 32 MB at range
//                 2^28, kept in L2); only probes whose bit is set read the DRAM payload array, and
//                 they read it evict-first so that it does not push the bitmap out of L2.
//       - HASH    (wide key domain): open addressing in 2-slot buckets of packed 64-bit slots (one
//                 16-byte load request per bucket), bucket-linear probing, load factor <= 0.5.
//   Probe (all paths): persistent grid-stride CTAs; each warp owns tiles of 32*kItems probe rows,
//   loaded as 16-byte evict-first vectors, the next tile's loads issued before the current tile's
//   lookups; all lookups of a thread issued before any is resolved; matches ranked inside the warp
//   (shuffle scan), staged in a per-warp shared-memory buffer and flushed with ONE atomicAdd on the
//   row counter per ~kStage rows and fully coalesced stores (no block barrier in the probe loop).
//
// The empty slot is all ones, i.e. the tuple (key -1, payload -1). That tuple, if the build side
// holds it, is flagged (Header::special / the CTA's `special`) and recognised by a probe for key
// -1 that finds an empty slot.
//
// Variants tried (H200, cold L2, median us; docs/results/hash_join-devbench.md; naive = 3265 /
// 3282 / 27682 / 2872 us on range2x-1M / wide-1M / range4x-64M / range2x-4096, S = 100M/256M):
//   run 1, first design (BITMAP for range2x, 4-slot 32-byte hash buckets read as two 16-byte loads,
//   smem hash table only, 8 rows/thread, 512 threads, 1 CTA/SM, warp-staged output, prefetch):
//     range2x-1M 1119, wide-1M 1776 (1.85x naive: missed 2x), 64M 13571, 4096 597.
//   block-wide scan + one atomic per CTA tile instead of warp staging (2 barriers per tile):
//     1246 / 2656 / 13734 / 1157: loses everywhere (warps wait on each other) -> warp staging.
//   no next-tile prefetch: 1122 / 1758 / 13554 / 609: small loss at 4096 -> keep prefetch.
//   16 rows/thread, 256 threads: 1084 / 3229 / 13551 / 930; 256 threads x 3 CTAs: 1134 / 1852 /
//     13638 / 649: no better.
//   4 rows/thread, 2 CTAs/SM (32 warps): 1120 / 1458 / 13607 / 846: the hash path needs more
//     warps (its lookups chain), the shared-memory path wants more rows per thread.
//   Model from run 1: at R = 1M the time is ~240 us + ~5.9 us per million L2 lookup requests
//   (ncu on the range2x probe: L2 throughput 94%, DRAM 31%): L2 requests per probe are the cost.
//   run 2, this design: DIRECT 64-bit slots (1 request per probe instead of bitmap + payload),
//   16-byte hash buckets (1 request), per-CTA direct shared-memory table, evict-first DRAM payloads:
//     8 rows, 1 CTA/SM:  850 / 1938 / 12048 / 377 (wide regressed: 16 warps cannot hide the
//                        overflow chains of 2-slot buckets)
//     4 rows, 2 CTAs/SM: 896 / 1266 / 12084 / 465  <- THIS FILE'S DEFAULTS (>= 2.29x everywhere)
//     4 rows, 1024 thr:  975 / 1257 / 12046 / 491
//     evict-first payload off: 64M 13552 (the hint is worth 11% there)
//     build phase alone: 31 / 59 / 6511 us: at 64M half the time is the build (64M random 4-byte
//     stores into a 1 GB payload array plus 64M bitmap atomics).
//   Build variants (expert_<name>.so; `d2k bench --task hash_join --targets expert,expert:<name>`):
//   %VARIANT% rows8_1cta -DHJ_ITEMS=8 -DHJ_MIN_BLOCKS=1 -DHJ_PARTITIONED=0
//     (run 2's first line: better on the shared-memory path, worse on the hash path)
//   %VARIANT% prev -DHJ_PARTITIONED=0
//     (the global-table path on every build size: the default until the tenth session)
//   HJ_PARTITIONED=1, the default since the tenth session:
//     Radix-partitioned build/probe (Balkesen et al. 2013; Sioulas et al., ICDE 2019) for build
//     sides that do not fit L2: R >= 2^22 rows and a key range max-min+1 <= 2^30 (hj_part.h; the
//     range is known only after hj_build_minmax, so every kernel re-derives the plan and the
//     global-table kernels return early, or the hj_part_* kernels do when the range is wider).
//     Both sides are partitioned by (key - min) >> 15 (32K keys of domain per partition: 2^13
//     partitions at range 2^28; out-of-range probe rows are dropped): a per-chunk histogram, a
//     scan, then a two-pass scatter of 8-byte (key, payload) pairs (pass 1 into 2^7 first-level
//     bins, pass 2 into the 2^6 partitions of each bin; tiles of 4096 rows ranked and staged
//     bin-major in shared memory, each bin's run stored contiguously; pass 2's tiles span two
//     slices so that they are full). Then persistent CTAs join
//     one partition at a time: its build pairs into a shared-memory direct table (128 KB of
//     payloads plus a 4 KB presence bitmap: no empty marker, so (key -1, payload -1) needs no
//     special case), its probe pairs streamed against it, the output warp-staged as in
//     probe_tiles.
//     Measured (H200, tenth session, suite-ten-2026-12-03.md) with a ONE-pass scatter (each row
//     its own 8-byte store to one of 2^13 partitions): 64M row 20988 us, 0.60x today's expert
//     (12499 us); 1M row 890 us (falls back, 1.00x). ncu per kernel: the probe scatter 14.67 ms,
//     DRAM 7.69 GB read + 7.29 GB written for 2 GB of pairs, the build scatter 3.63 ms (1.94 +
//     1.82 GB for 0.5 GB): partly written sectors evicted and read-modify-written; the join 1.72
//     ms, hist + scans 0.92 ms, min/max 0.11 ms.
//     This version: the two-pass scatter above (model: 10.75 GB over both sides' passes, all
//     whole-sector streams); the join's build phase with 8 loads in flight per thread;
//     hj_part_scan_chunks and hj_part_hist with 8 loads in flight. Measured (H200, tenth session,
//     one call, the expert then the global-table path): 64M row 6443.95 us (1.12%) against
//     12525.48 us, 1.94x; 1M row 889.69 us (falls back, 1.00x). ncu: the passes 0.45 + 0.44 ms
//     (build side) and 1.77 + 1.74 ms (probe side, 2.24 GB read + 2.19 GB written each: whole
//     sectors), the join 1.45 ms, histograms and scans 0.5 ms. memcheck and racecheck clean. The
//     default of the tenth session; the 2x bar (<= 6263 us) MISSED by 2.9%.
//   Variants of the partitioned join (flags; `%VARIANT%` lines are the ones in the sweep):
//   -DHJ_PASS2_SPAN=0 -DHJ_PASS_ASYNC=0 (retired: `partitioned_1slice`): pass 2 one slice per
//     tile, its last tile partial (hjp::pass2_tile); tenth session 6373.31 us, 1.01x that
//     session's default.
//   -DHJ_JOIN_ITEMS=16 -DHJ_JOIN_STAGE=512 -DHJ_PASS_ASYNC=0 (retired: `partitioned_j16`): 16 probe
//     pairs per thread per join tile, 64 KB of loads in flight per SM, 196 KB of shared memory;
//     tenth session 6381.14 us, 1.01x.
//   %VARIANT% partitioned_all -DHJ_PARTITIONED=1 -DHJ_PART_MIN_ROWS=1
//     (the same join from R = 1 on, wherever the range allows and the build side is too big for the
//     per-CTA shared-memory path: it puts the partitioned kernels under compute-sanitizer on the
//     small range2x / range4x check workloads, which the 2^22-row threshold keeps off that path)
//   HJ_PASS_ASYNC=1, the default since the eleventh session: the passes' input tiles copied with
//     cp.async into a 2-slot shared-memory ring two tiles ahead, instead of the register prefetch
//     issued after the ranking: each CTA keeps 32-64 KB in flight through its ranking barriers, the
//     one-warp bin scan and its stores; two CTAs per SM still, 103 KB of shared memory each. The
//     tenth session's ncu had the four passes at 2.5 TB/s read and written together (11.1 GB in
//     4.40 ms), ~58% of a copy's.
//     Measured (H200, eleventh session, suite-eleven-2026-12-03.md; one d2k bench, 0.5 s per
//     target and row): 64M row 6294.34 us (0.87%) against `prev` 12571.18 us (0.05%), 1.997x;
//     the register-prefetch form (`sync`) 6530.57 us (1.29%), 1.925x; 1M row 875.96 us (falls
//     back: 1.00x). memcheck and racecheck clean on the check workloads with the same ring at
//     2^14-key partitions (partitioned_all_p14_async). The default since (SASS equal to the timed
//     variant's); the 2x bar (<= 6285.6 us in that call) MISSED by 0.14%, inside the noise.
//   %VARIANT% sync -DHJ_PASS_ASYNC=0
//     (the passes' register prefetch: the default of the tenth session)
//   %VARIANT% async_j16 -DHJ_JOIN_ITEMS=16 -DHJ_JOIN_STAGE=512
//     (the ring passes with partitioned_j16's join: the two are in different kernels, so the
//     tenth session's 1.01x of j16 should add: expected ~6230 us, 2.02x `prev`)
//   Retired (their flags still build them): -DHJ_PART_BITS=14, 2^14 keys of domain per partition
//     (98 KB join: two join CTAs per SM): 7233.85 us with the register prefetch, 6917.36 us with
//     the ring, 0.90x / 0.94x the ring default at 2^13 in the same call: the doubled partition
//     count costs pass 2 more (fan-out 2^7) and the count matrices 16 MB per side than two join CTAs
//     win; with -DHJ_PART_MIN_ROWS=1 as well, memcheck and racecheck clean (above).
//   Not prepared: fusing pass 2 into the join. A first-level bin spans 2^6 partitions, 2^21 keys of
//   domain; joining its probe rows unsorted needs the bin's whole table, 8 MB of payloads (the
//   bin's 512K build rows are 4 MB even as pairs): 40x an SM's shared memory, so the join cannot
//   take pass 1's slices without a sub-partitioning step that writes them somewhere.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

#ifndef HJ_ITEMS
#define HJ_ITEMS 4  // probe rows per thread per tile (multiple of 4)
#endif
#ifndef HJ_PROBE_THREADS
#define HJ_PROBE_THREADS 512
#endif
#ifndef HJ_SMEM_TABLE_MAX
#define HJ_SMEM_TABLE_MAX (64 * 1024)  // bytes of shared memory a per-CTA build table may take
#endif
#ifndef HJ_STAGE
#define HJ_STAGE 512  // staged (build payload, probe payload) pairs per warp
#endif
#ifndef HJ_HASH_BATCH
#define HJ_HASH_BATCH 4  // hash-bucket loads in flight per thread at once
#endif
#ifndef HJ_PARTITIONED
#define HJ_PARTITIONED 1  // 1: radix-partitioned join for large build sides (header: Variants); 0: `prev`
#endif
#if HJ_PARTITIONED
#include "hj_part.h"
#endif
#ifndef HJ_PASS2_SPAN
#define HJ_PASS2_SPAN 1  // partitioned: pass 2's tiles span two slices (0: one slice per tile)
#endif
#ifndef HJ_PASS_ASYNC
#define HJ_PASS_ASYNC 1  // partitioned: the passes' input tiles through a cp.async ring (0: `sync`; header: Variants)
#endif
#ifndef HJ_JOIN_ITEMS
#define HJ_JOIN_ITEMS 8  // partitioned join: probe pairs per thread per tile
#endif
#ifndef HJ_JOIN_STAGE
#define HJ_JOIN_STAGE 256  // partitioned join: staged pairs per warp (beside a 132 KB table)
#endif
#ifndef HJ_MIN_BLOCKS
#define HJ_MIN_BLOCKS 2  // __launch_bounds__ minimum resident blocks of the probe kernels
#endif

namespace {

constexpr int kItems = HJ_ITEMS;
constexpr int kVec = kItems / 4;
constexpr int kProbeThreads = HJ_PROBE_THREADS;
constexpr int kWarps = kProbeThreads / 32;
constexpr int kBuildThreads = 256;
constexpr uint64_t kSmemTableMax = HJ_SMEM_TABLE_MAX;
constexpr int kStage = HJ_STAGE;
constexpr int kHashBatch = HJ_HASH_BATCH;
constexpr unsigned long long kEmpty = ~0ull;
constexpr uint32_t kGolden = 0x9E3779B1u;  // Fibonacci hashing multiplier
constexpr uint64_t kHeaderBytes = 256;
static_assert(kItems % 4 == 0 && kItems >= 4, "HJ_ITEMS must be a multiple of 4");
static_assert(kProbeThreads % 32 == 0 && kProbeThreads <= 1024, "bad HJ_PROBE_THREADS");
static_assert(kItems % kHashBatch == 0, "HJ_HASH_BATCH must divide HJ_ITEMS");
static_assert(kStage >= 32 * kItems, "HJ_STAGE must hold one warp tile of matches");

enum Mode : int { kModeExact = 0, kModeDirect = 1, kModeBitmap = 2, kModeHash = 3 };
#if HJ_PARTITIONED
constexpr int kModePartitioned = 4;  ///< the global-table kernels do nothing, hj_part_* join
#endif

/// Workspace header: min/max of the build keys (order-preserving unsigned flips, both reduced
/// with atomicMax from a zeroed header) and the flag for the (key -1, payload -1) build tuple.
struct Header {
  unsigned int max_flip;     ///< max over build keys of (key ^ 0x80000000)
  unsigned int negmin_flip;  ///< max over build keys of ~(key ^ 0x80000000)
  int special;               ///< 1 when the build side holds (key -1, payload -1)
  int pad;
};

/// The plan every global-path kernel derives from the header (identically, so no kernel has to
/// publish it and the host never waits for it).
struct Plan {
  int mode;
  uint32_t lo;     ///< min build key, as uint32
  uint32_t range;  ///< max - min + 1 (valid for the direct modes)
};

/// direct_max: the most 64-bit direct slots that stay L2-resident (from the device's L2 size).
__device__ __forceinline__ Plan make_plan(const Header* h, int64_t r, uint64_t cap,
                                          uint64_t direct_max) {
  const int mn = static_cast<int>((~h->negmin_flip) ^ 0x80000000u);
  const int mx = static_cast<int>(h->max_flip ^ 0x80000000u);
  const int64_t range = static_cast<int64_t>(mx) - mn + 1;
  Plan p;
  p.lo = static_cast<uint32_t>(mn);
  p.range = static_cast<uint32_t>(range);  // only used when range <= 2*cap
  if (range == r)
    p.mode = kModeExact;
  else if (range <= static_cast<int64_t>(cap) && range <= static_cast<int64_t>(direct_max))
    p.mode = kModeDirect;
  else if (range <= static_cast<int64_t>(2 * cap))
    p.mode = kModeBitmap;
  else
    p.mode = kModeHash;
#if HJ_PARTITIONED
  if (hjp::use_partitioned(hjp::part_plan(mn, mx), r)) p.mode = kModePartitioned;
#endif
  return p;
}

__device__ __forceinline__ uint32_t fib_hash(int key, uint32_t shift) {
  return (static_cast<uint32_t>(key) * kGolden) >> shift;
}

__device__ __forceinline__ unsigned long long pack(int key, int payload) {
  return (static_cast<unsigned long long>(static_cast<uint32_t>(payload)) << 32) |
         static_cast<uint32_t>(key);
}

struct ProbeArgs {
  const int32_t* pk;
  const int32_t* pp;
  int64_t s;
  int32_t* ob;
  int32_t* op;
  unsigned long long* count;
  int vec_ok;  ///< both probe columns 16-byte aligned
};

// ---------------------------------------------------------------------------------------------
// Lookups. Each resolves kItems keys of one thread; loads for all items are issued first so that
// their latencies overlap (memory-level parallelism is what a random-access probe lives on).

/// Direct index into a payload array; with kBitmap, a presence bitmap filters first.
template <bool kBitmap>
struct DirectLookup {
  const int32_t* __restrict__ pay;
  const uint32_t* __restrict__ bitmap;
  uint32_t lo, range;

  __device__ __forceinline__ void operator()(const int (&key)[kItems], const bool (&valid)[kItems],
                                             bool (&hit)[kItems], int (&bp)[kItems]) const {
    uint32_t d[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      d[j] = static_cast<uint32_t>(key[j]) - lo;
      hit[j] = valid[j] && d[j] < range;
    }
    if constexpr (kBitmap) {
      uint32_t w[kItems];
#pragma unroll
      for (int j = 0; j < kItems; ++j) w[j] = hit[j] ? __ldg(bitmap + (d[j] >> 5)) : 0u;
#pragma unroll
      for (int j = 0; j < kItems; ++j) hit[j] = (w[j] >> (d[j] & 31)) & 1u;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      // BITMAP: the payload array is DRAM-resident and each line is touched about once; read it
      // evict-first so that it does not push the bitmap out of L2.
      if constexpr (kBitmap)
        bp[j] = hit[j] ? __ldcs(pay + d[j]) : 0;
      else
        bp[j] = hit[j] ? __ldg(pay + d[j]) : 0;
    }
  }
};

/// Direct index into packed 64-bit slots (key | payload << 32), empty = all ones: ONE 8-byte load
/// per in-range probe resolves presence and payload together. The (-1, -1) tuple looks empty and
/// is recognised through `special`; its payload half is -1 either way.
struct Direct64Lookup {
  const unsigned long long* __restrict__ slots;
  uint32_t lo, range;
  int special;

  __device__ __forceinline__ void operator()(const int (&key)[kItems], const bool (&valid)[kItems],
                                             bool (&hit)[kItems], int (&bp)[kItems]) const {
    unsigned long long v[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint32_t d = static_cast<uint32_t>(key[j]) - lo;
      hit[j] = valid[j] && d < range;
      v[j] = hit[j] ? __ldg(slots + d) : kEmpty;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      hit[j] = hit[j] && (v[j] != kEmpty || (key[j] == -1 && special));
      bp[j] = static_cast<int>(v[j] >> 32);
    }
  }
};

/// Bucketised open addressing in global memory: 2 packed slots (16 bytes, ONE load request) per
/// bucket, bucket-linear probing, load factor <= 0.5.
struct HashLookup {
  const ulonglong2* __restrict__ buckets;
  uint32_t shift;  // 32 - log2(number of buckets)
  uint32_t bmask;  // number of buckets - 1
  int special;     // the (-1, -1) build tuple exists

  /// Resolves one bucket: 1 hit, 0 miss (an empty slot ends the probe sequence), -1 go on.
  static __device__ __forceinline__ int scan_bucket(ulonglong2 b, int key, int& bp) {
    if (b.x == kEmpty) return 0;
    if (static_cast<uint32_t>(b.x) == static_cast<uint32_t>(key)) {
      bp = static_cast<int>(b.x >> 32);
      return 1;
    }
    if (b.y == kEmpty) return 0;
    if (static_cast<uint32_t>(b.y) == static_cast<uint32_t>(key)) {
      bp = static_cast<int>(b.y >> 32);
      return 1;
    }
    return -1;
  }

  __device__ __forceinline__ void operator()(const int (&key)[kItems], const bool (&valid)[kItems],
                                             bool (&hit)[kItems], int (&bp)[kItems]) const {
#pragma unroll
    for (int g = 0; g < kItems; g += kHashBatch) {
      uint32_t b[kHashBatch];
      ulonglong2 v[kHashBatch];
#pragma unroll
      for (int i = 0; i < kHashBatch; ++i) {
        const int j = g + i;
        b[i] = fib_hash(key[j], shift);
        v[i] = valid[j] ? __ldg(buckets + b[i]) : make_ulonglong2(kEmpty, kEmpty);
      }
#pragma unroll
      for (int i = 0; i < kHashBatch; ++i) {
        const int j = g + i;
        bp[j] = 0;
        int res = scan_bucket(v[i], key[j], bp[j]);
        // A full bucket without the key: go on to the next buckets.
        uint32_t bb = b[i];
        while (res < 0) {
          bb = (bb + 1) & bmask;
          res = scan_bucket(__ldg(buckets + bb), key[j], bp[j]);
        }
        hit[j] = valid[j] && res > 0;
        if (valid[j] && res == 0 && key[j] == -1 && special) {
          hit[j] = true;
          bp[j] = -1;
        }
      }
    }
  }
};

/// Dynamic shared memory: [shared-memory table (small-build path only)] [ProbeSmem].
extern __shared__ unsigned long long smem_table[];

/// Linear probing over a shared-memory table of single packed slots.
struct SmemHashLookup {
  uint32_t shift, mask;
  int special;

  __device__ __forceinline__ void operator()(const int (&key)[kItems], const bool (&valid)[kItems],
                                             bool (&hit)[kItems], int (&bp)[kItems]) const {
    uint32_t h[kItems];
    unsigned long long v[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      h[j] = fib_hash(key[j], shift);
      v[j] = smem_table[h[j]];
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      bool found = false, done = !valid[j];
      while (!done) {
        if (v[j] == kEmpty) {
          done = true;
        } else if (static_cast<uint32_t>(v[j]) == static_cast<uint32_t>(key[j])) {
          found = true;
          done = true;
        } else {
          h[j] = (h[j] + 1) & mask;
          v[j] = smem_table[h[j]];
        }
      }
      bp[j] = found ? static_cast<int>(v[j] >> 32) : 0;
      if (valid[j] && !found && key[j] == -1 && special) {
        found = true;
        bp[j] = -1;
      }
      hit[j] = found;
    }
  }
};

/// Direct index into the shared-memory table (per-CTA key range <= table slots).
struct SmemDirectLookup {
  uint32_t lo, range;
  int special;

  __device__ __forceinline__ void operator()(const int (&key)[kItems], const bool (&valid)[kItems],
                                             bool (&hit)[kItems], int (&bp)[kItems]) const {
    unsigned long long v[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint32_t d = static_cast<uint32_t>(key[j]) - lo;
      hit[j] = valid[j] && d < range;
      v[j] = hit[j] ? smem_table[d] : kEmpty;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      hit[j] = hit[j] && (v[j] != kEmpty || (key[j] == -1 && special));
      bp[j] = static_cast<int>(v[j] >> 32);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Probe loop: tiles of probe rows, 16-byte streaming loads, the next tile's loads issued before the
// current tile's lookups, and warp-staged output: each warp owns a tile of 32*kItems rows and a
// shared-memory staging buffer of kStage (build payload, probe payload) pairs; matches are ranked
// inside the warp (shuffle scan), staged, and flushed with ONE atomicAdd per ~kStage rows and fully
// coalesced stores. No block barrier anywhere, so warps never wait for each other (a block-wide
// scan with one atomic per tile lost everywhere: table at the top).

/// Loads one tile's probe rows for this thread: element (v, q) of thread t in a group of kGroup
/// threads is row base + (v*kGroup + t)*4 + q, so each v is one coalesced 16-byte-per-thread load.
template <int kGroup>
__device__ __forceinline__ void load_tile(const ProbeArgs& a, int64_t base, int t, int (&key)[kItems],
                                          int (&pay)[kItems], bool (&valid)[kItems]) {
  constexpr int64_t kTile = static_cast<int64_t>(kGroup) * kItems;
  if (a.vec_ok && base + kTile <= a.s) {
    const int4* k4 = reinterpret_cast<const int4*>(a.pk + base);
    const int4* p4 = reinterpret_cast<const int4*>(a.pp + base);
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const int4 kk = __ldcs(k4 + v * kGroup + t);
      const int4 pp = __ldcs(p4 + v * kGroup + t);
      key[4 * v + 0] = kk.x; key[4 * v + 1] = kk.y; key[4 * v + 2] = kk.z; key[4 * v + 3] = kk.w;
      pay[4 * v + 0] = pp.x; pay[4 * v + 1] = pp.y; pay[4 * v + 2] = pp.z; pay[4 * v + 3] = pp.w;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) valid[j] = true;
  } else {
#pragma unroll
    for (int v = 0; v < kVec; ++v)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int64_t idx = base + (static_cast<int64_t>(v) * kGroup + t) * 4 + q;
        const int j = 4 * v + q;
        valid[j] = idx < a.s;
        key[j] = valid[j] ? __ldcs(a.pk + idx) : 0;
        pay[j] = valid[j] ? __ldcs(a.pp + idx) : 0;
      }
  }
}

__device__ __forceinline__ int warp_inclusive_scan(int x, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d) x += y;
  }
  return x;
}

/// Shared memory of the probe loop (per block): one staging buffer per warp.
struct ProbeSmem {
  int2 stage[kWarps][kStage];
};

/// Writes the warp's staged pairs to rows [base, base + n) of the outputs with coalesced stores.
__device__ __forceinline__ void flush_stage(const ProbeArgs& a, const int2* stage, int n, int lane) {
  __syncwarp();
  unsigned long long base = 0;
  if (lane == 0) base = atomicAdd(a.count, static_cast<unsigned long long>(n));
  base = __shfl_sync(0xffffffffu, base, 0);
  for (int i = lane; i < n; i += 32) {
    const int2 v = stage[i];
    __stcs(a.ob + base + i, v.x);
    __stcs(a.op + base + i, v.y);
  }
  __syncwarp();
}

template <class Lookup>
__device__ __forceinline__ void probe_tiles(const ProbeArgs& a, const Lookup& lookup, ProbeSmem& sm) {
  constexpr int kGroup = 32;
  const int t = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * (kGroup * kItems);
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarps * (kGroup * kItems);
  int2* stage = sm.stage[warp];
  int staged = 0;
  int key[kItems], pay[kItems];
  bool valid[kItems];
  if (first < a.s) load_tile<kGroup>(a, first, t, key, pay, valid);
  for (int64_t base = first; base < a.s; base += step) {
    // Issue the next tile's streaming loads now; they complete while this tile's lookups wait.
    int nkey[kItems], npay[kItems];
    bool nvalid[kItems];
    if (base + step < a.s) {
      load_tile<kGroup>(a, base + step, t, nkey, npay, nvalid);
    } else {
#pragma unroll
      for (int j = 0; j < kItems; ++j) nkey[j] = npay[j] = 0, nvalid[j] = false;
    }
    bool hit[kItems];
    int bp[kItems];
    lookup(key, valid, hit, bp);
    int n = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) n += hit[j] ? 1 : 0;
    const int incl = warp_inclusive_scan(n, t);
    const int total = __shfl_sync(0xffffffffu, incl, 31);
    if (staged + total > kStage) {  // make room: flush what is staged
      flush_stage(a, stage, staged, t);
      staged = 0;
    }
    int pos = staged + incl - n;
#pragma unroll
    for (int j = 0; j < kItems; ++j)
      if (hit[j]) stage[pos++] = make_int2(bp[j], pay[j]);
    staged += total;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      key[j] = nkey[j];
      pay[j] = npay[j];
      valid[j] = nvalid[j];
    }
  }
  if (staged > 0) flush_stage(a, stage, staged, t);
}

// ---------------------------------------------------------------------------------------------
// Kernels.

/// Small build side: every CTA builds the whole table in its shared memory, then probes. The CTA
/// first reduces min/max of the build keys itself (R is small and the reads hit L2): when the key
/// range fits the table, the table is direct-indexed by key - min (one shared-memory load per
/// probe, no probe sequence); otherwise it is a linear-probing hash table.
__global__ void __launch_bounds__(kProbeThreads, HJ_MIN_BLOCKS) hj_join_smem_table(
    const int32_t* __restrict__ bk, const int32_t* __restrict__ bpay, int64_t r, ProbeArgs a,
    uint32_t log2cap) {
  __shared__ int special;
  __shared__ unsigned int s_max_flip, s_negmin_flip;
  const uint32_t cap = 1u << log2cap, mask = cap - 1, shift = 32 - log2cap;
  ProbeSmem& sm = *reinterpret_cast<ProbeSmem*>(smem_table + cap);
  for (uint32_t i = threadIdx.x; i < cap; i += kProbeThreads) smem_table[i] = kEmpty;
  if (threadIdx.x == 0) {
    special = 0;
    s_max_flip = 0;
    s_negmin_flip = 0;
  }
  __syncthreads();
  unsigned int mx = 0, nmn = 0;
  for (int64_t i = threadIdx.x; i < r; i += kProbeThreads) {
    const unsigned int f = static_cast<unsigned int>(bk[i]) ^ 0x80000000u;
    mx = max(mx, f);
    nmn = max(nmn, ~f);
  }
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, d));
    nmn = max(nmn, __shfl_xor_sync(0xffffffffu, nmn, d));
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&s_max_flip, mx);
    atomicMax(&s_negmin_flip, nmn);
  }
  __syncthreads();
  const uint32_t lo = (~s_negmin_flip) ^ 0x80000000u;
  const uint64_t range = static_cast<uint64_t>((s_max_flip ^ 0x80000000u) - lo) + 1;  // mod 2^32, <= 2^32
  const bool direct = range <= cap;
  for (int64_t i = threadIdx.x; i < r; i += kProbeThreads) {
    const int k = bk[i], p = bpay[i];
    const unsigned long long v = pack(k, p);
    if (v == kEmpty) special = 1;
    if (direct) {
      smem_table[static_cast<uint32_t>(k) - lo] = v;  // distinct keys: no conflicts
    } else if (v != kEmpty) {
      uint32_t h = fib_hash(k, shift);
      while (atomicCAS(&smem_table[h], kEmpty, v) != kEmpty) h = (h + 1) & mask;
    }
  }
  __syncthreads();
  if (direct)
    probe_tiles(a, SmemDirectLookup{lo, static_cast<uint32_t>(range), special}, sm);
  else
    probe_tiles(a, SmemHashLookup{shift, mask, special}, sm);
}

/// Min and max of the build keys: a block reduction, then two atomics per block.
__global__ void __launch_bounds__(kBuildThreads) hj_build_minmax(const int32_t* __restrict__ bk,
                                                                 int64_t r, Header* h) {
  unsigned int mx = 0, nmn = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBuildThreads + threadIdx.x; i < r;
       i += static_cast<int64_t>(gridDim.x) * kBuildThreads) {
    const unsigned int f = static_cast<unsigned int>(__ldcs(bk + i)) ^ 0x80000000u;
    mx = max(mx, f);
    nmn = max(nmn, ~f);
  }
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    mx = max(mx, __shfl_xor_sync(0xffffffffu, mx, d));
    nmn = max(nmn, __shfl_xor_sync(0xffffffffu, nmn, d));
  }
  __shared__ unsigned int smx[kBuildThreads / 32], snmn[kBuildThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    smx[warp] = mx;
    snmn[warp] = nmn;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kBuildThreads / 32; ++w) {
      mx = max(mx, smx[w]);
      nmn = max(nmn, snmn[w]);
    }
    atomicMax(&h->max_flip, mx);
    atomicMax(&h->negmin_flip, nmn);
  }
}

/// Clears what the plan needs cleared: hash or direct slots (to empty), or the bitmap (to zero).
__global__ void __launch_bounds__(kBuildThreads) hj_build_clear(const Header* h, int64_t r,
                                                                uint64_t cap, uint64_t direct_max,
                                                                ulonglong2* table, uint4* bitmap) {
  const Plan p = make_plan(h, r, cap, direct_max);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * kBuildThreads;
  const uint64_t i0 = static_cast<uint64_t>(blockIdx.x) * kBuildThreads + threadIdx.x;
  const ulonglong2 e = make_ulonglong2(kEmpty, kEmpty);
  if (p.mode == kModeHash) {
    for (uint64_t i = i0; i < cap / 2; i += stride) table[i] = e;
  } else if (p.mode == kModeDirect) {
    const uint64_t n = (static_cast<uint64_t>(p.range) + 1) / 2;  // range <= cap
    for (uint64_t i = i0; i < n; i += stride) table[i] = e;
  } else if (p.mode == kModeBitmap) {
    const uint64_t n = (static_cast<uint64_t>(p.range) + 127) / 128;
    for (uint64_t i = i0; i < n; i += stride) bitmap[i] = make_uint4(0, 0, 0, 0);
  }
}

/// Inserts the build tuples according to the plan.
__global__ void __launch_bounds__(kBuildThreads) hj_build_insert(
    const int32_t* __restrict__ bk, const int32_t* __restrict__ bpay, int64_t r, Header* h,
    uint64_t cap, uint64_t direct_max, unsigned long long* table, uint32_t* bitmap) {
  const Plan p = make_plan(h, r, cap, direct_max);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBuildThreads;
  int64_t i = static_cast<int64_t>(blockIdx.x) * kBuildThreads + threadIdx.x;
  int32_t* pay = reinterpret_cast<int32_t*>(table);
#if HJ_PARTITIONED
  if (p.mode == kModePartitioned) return;
#endif
  if (p.mode == kModeExact) {
    for (; i < r; i += stride) pay[static_cast<uint32_t>(__ldcs(bk + i)) - p.lo] = __ldcs(bpay + i);
  } else if (p.mode == kModeDirect) {
    for (; i < r; i += stride) {
      const int k = __ldcs(bk + i);
      const unsigned long long v = pack(k, __ldcs(bpay + i));
      if (v == kEmpty) h->special = 1;  // stored anyway: it reads as empty, `special` tells
      table[static_cast<uint32_t>(k) - p.lo] = v;
    }
  } else if (p.mode == kModeBitmap) {
    for (; i < r; i += stride) {
      const uint32_t d = static_cast<uint32_t>(__ldcs(bk + i)) - p.lo;
      __stcs(pay + d, __ldcs(bpay + i));  // evict-first: keep the bitmap in L2 (worth 11% at 64M)
      atomicOr(bitmap + (d >> 5), 1u << (d & 31));
    }
  } else {
    const uint32_t nb = static_cast<uint32_t>(cap / 2);
    const uint32_t shift = 32 - (31 - __clz(static_cast<int>(nb)));
    for (; i < r; i += stride) {
      const int k = __ldcs(bk + i);
      const unsigned long long v = pack(k, __ldcs(bpay + i));
      if (v == kEmpty) {
        h->special = 1;
        continue;
      }
      uint32_t b = fib_hash(k, shift);
      for (;;) {
        unsigned long long* slot = table + 2ull * b;
        // Skip slots already seen occupied; CAS only where a slot looks empty.
        if (slot[0] == kEmpty && atomicCAS(slot, kEmpty, v) == kEmpty) break;
        if (slot[1] == kEmpty && atomicCAS(slot + 1, kEmpty, v) == kEmpty) break;
        b = (b + 1) & (nb - 1);
      }
    }
  }
}

/// Probe against the global table built above, dispatching once on the plan.
__global__ void __launch_bounds__(kProbeThreads, HJ_MIN_BLOCKS) hj_probe_global(
    ProbeArgs a, const Header* h, int64_t r, uint64_t cap, uint64_t direct_max,
    const unsigned long long* table, const uint32_t* bitmap) {
  ProbeSmem& sm = *reinterpret_cast<ProbeSmem*>(smem_table);
  const Plan p = make_plan(h, r, cap, direct_max);
  const int32_t* pay = reinterpret_cast<const int32_t*>(table);
#if HJ_PARTITIONED
  if (p.mode == kModePartitioned) return;
#endif
  if (p.mode == kModeExact) {
    probe_tiles(a, DirectLookup<false>{pay, bitmap, p.lo, p.range}, sm);
  } else if (p.mode == kModeDirect) {
    probe_tiles(a, Direct64Lookup{table, p.lo, p.range, h->special}, sm);
  } else if (p.mode == kModeBitmap) {
    probe_tiles(a, DirectLookup<true>{pay, bitmap, p.lo, p.range}, sm);
  } else {
    const uint32_t nb = static_cast<uint32_t>(cap / 2);
    const uint32_t log2nb = 31 - __clz(static_cast<int>(nb));
    probe_tiles(a,
                HashLookup{reinterpret_cast<const ulonglong2*>(table), 32 - log2nb, nb - 1,
                           h->special},
                sm);
  }
}

#if HJ_PARTITIONED
// ---------------------------------------------------------------------------------------------
// Radix-partitioned join (variant `partitioned`; Balkesen et al., ICDE 2013; Sioulas et al.,
// "Hardware-conscious hash-joins on GPUs", ICDE 2019). Both sides are partitioned by the top bits
// of key - min (hj_part.h: kSlots keys of domain per partition), so that each partition's build
// side becomes a direct-indexed shared-memory table; the random accesses of the build and the
// probe then hit shared memory, and every global access is a stream or a scatter store.
// Per side: hj_part_hist (per-chunk partition counts, chunk-major), hj_part_scan_chunks (each
// partition's running offset across chunks, and its total), hj_part_scan_parts (exclusive scan
// of the totals: partition bases), then a two-pass scatter from those counts: hj_part_pass1
// (each chunk's rows into its slice of each of ~2^7 first-level bins of a temporary buffer),
// hj_part_pass2 (each slice into the ~2^6 final partitions of its bin, at base + chunk offset).
// The order inside a partition is free: the output is a multiset. Then hj_part_join: persistent
// CTAs, one partition at a time.
// Why two passes: the first version scattered each row straight to its final partition with its
// own 8-byte store (2^13 partitions: a staging tile of a few thousand rows holds < 1 row per
// partition), relying on the L2 to combine a chunk's stores to one partition into whole sectors.
// Measured on the H200 (ncu, bench row): the probe scatter moved 7.69 GB read + 7.29 GB written
// for 2 GB of pairs in 14.67 ms; partly written sectors were evicted and read-modify-written in
// DRAM. With ~sqrt(2^13) bins per pass, a 4096-row tile has ~32-64 rows per bin, staged
// bin-major in shared memory and stored as 256-512 B runs: whole sectors, at the price of one
// more read and write of the pairs (traffic model: docs/results/hash_join-devbench.md).

constexpr int kPartThreads = 1024;
constexpr int kPartScanThreads = 256;
constexpr int kJoinThreads = 512;
constexpr int kJoinWarps = kJoinThreads / 32;
constexpr int kJoinItems = HJ_JOIN_ITEMS;
constexpr int kJoinTile = 32 * kJoinItems;
constexpr int kJoinStage = HJ_JOIN_STAGE;
constexpr int kJoinBuildItems = 8;  ///< partitioned join: build pairs per thread per batch
static_assert(kJoinStage >= kJoinTile, "HJ_JOIN_STAGE must hold one join tile of matches");
static_assert(hjp::kMaxParts % kPartThreads == 0, "the partition scan gives each thread a segment");
#if HJ_PASS_ASYNC && !HJ_PASS2_SPAN
#error "HJ_PASS_ASYNC is written for pass 2's spanning walk (HJ_PASS2_SPAN=1)"
#endif

/// The partition plan from the min/max header (the same in every kernel).
__device__ __forceinline__ hjp::PartPlan part_plan_of(const Header* h) {
  return hjp::part_plan(static_cast<int>((~h->negmin_flip) ^ 0x80000000u),
                        static_cast<int>(h->max_flip ^ 0x80000000u));
}

/// Chunk blockIdx.x of a side: its partition counts into counts[chunk * parts + part].
__global__ void __launch_bounds__(kPartThreads) hj_part_hist(const int32_t* __restrict__ keys,
                                                             int64_t n, int64_t chunk,
                                                             const Header* h, int64_t r,
                                                             uint32_t* counts) {
  const hjp::PartPlan pl = part_plan_of(h);
  if (!hjp::use_partitioned(pl, r)) return;
  uint32_t* hist = reinterpret_cast<uint32_t*>(smem_table);
  for (uint32_t p = threadIdx.x; p < pl.parts; p += kPartThreads) hist[p] = 0;
  __syncthreads();
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * chunk;
  const int64_t c1 = c0 + chunk < n ? c0 + chunk : n;
  // Loads in flight per thread before their shared-memory atomics: the 128 KB histogram allows
  // one 1024-thread CTA per SM, so 8 per thread (32 KB per SM) cover the DRAM latency (4 gave
  // 2.7 TB/s on the probe side).
  constexpr int kU = 8;
  for (int64_t i = c0 + threadIdx.x; i < c1; i += kU * kPartThreads) {
    int k[kU];
    bool v[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t j = i + u * kPartThreads;
      v[u] = j < c1;
      k[u] = v[u] ? keys[j] : 0;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      uint32_t d;
      if (v[u] && hjp::key_offset(pl, k[u], d)) atomicAdd(hist + hjp::part_of(d), 1u);
    }
  }
  __syncthreads();
  uint32_t* out = counts + static_cast<uint64_t>(blockIdx.x) * pl.parts;
  for (uint32_t p = threadIdx.x; p < pl.parts; p += kPartThreads) out[p] = hist[p];
}

/// Thread per partition: counts[c][p] becomes the exclusive running sum over chunks c (the
/// chunk's offset inside the partition), totals[p] the partition's rows. Coalesced: the threads
/// of a warp read consecutive partitions of one chunk row.
__global__ void __launch_bounds__(kPartScanThreads) hj_part_scan_chunks(const Header* h, int64_t r,
                                                                        uint32_t* counts,
                                                                        int64_t chunks,
                                                                        uint32_t* totals) {
  const hjp::PartPlan pl = part_plan_of(h);
  if (!hjp::use_partitioned(pl, r)) return;
  const uint32_t p = blockIdx.x * kPartScanThreads + threadIdx.x;
  if (p >= pl.parts) return;
  // Batches of kB loads before their stores: one load at a time made the walk over 256 chunks
  // latency-bound (0.25 ms measured at 2^13 partitions for 0.016 GB of counts).
  constexpr int kB = 8;
  uint32_t run = 0;
  int64_t c = 0;
  for (; c + kB <= chunks; c += kB) {
    uint32_t v[kB];
#pragma unroll
    for (int j = 0; j < kB; ++j) v[j] = counts[static_cast<uint64_t>(c + j) * pl.parts + p];
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      counts[static_cast<uint64_t>(c + j) * pl.parts + p] = run;
      run += v[j];
    }
  }
  for (; c < chunks; ++c) {
    uint32_t* e = counts + static_cast<uint64_t>(c) * pl.parts + p;
    const uint32_t v = *e;
    *e = run;
    run += v;
  }
  totals[p] = run;
}

/// One CTA: base[p] = exclusive scan of totals (base[parts] = all rows kept). Each thread scans a
/// segment of kMaxParts / kPartThreads partitions; the segment sums are scanned across the block.
__global__ void __launch_bounds__(kPartThreads) hj_part_scan_parts(const Header* h, int64_t r,
                                                                   const uint32_t* totals,
                                                                   uint32_t* base) {
  const hjp::PartPlan pl = part_plan_of(h);
  if (!hjp::use_partitioned(pl, r)) return;
  constexpr uint32_t kSeg = hjp::kMaxParts / kPartThreads;
  __shared__ uint32_t warp_sum[kPartThreads / 32];
  const uint32_t p0 = threadIdx.x * kSeg;
  uint32_t sum = 0;
#pragma unroll 1
  for (uint32_t i = 0; i < kSeg; ++i)
    if (p0 + i < pl.parts) sum += totals[p0 + i];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t incl = static_cast<uint32_t>(warp_inclusive_scan(static_cast<int>(sum), lane));
  if (lane == 31) warp_sum[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const uint32_t w = warp_sum[lane];
    const uint32_t wi = static_cast<uint32_t>(warp_inclusive_scan(static_cast<int>(w), lane));
    warp_sum[lane] = wi - w;
  }
  __syncthreads();
  uint32_t run = warp_sum[warp] + incl - sum;
#pragma unroll 1
  for (uint32_t i = 0; i < kSeg; ++i) {
    if (p0 + i < pl.parts) {
      base[p0 + i] = run;
      run += totals[p0 + i];
    }
  }
  if (threadIdx.x == kPartThreads - 1) base[pl.parts] = run;  // the last segment's end
}

// ---- Two-pass scatter (hj_part.h: first-level bins, then sub-bins) --------------------------
// Positions come from the same per-chunk histogram of the final partitions (counts, scanned over
// chunks by hj_part_scan_chunks) as the one-pass scatter: chunk c's rows of final partition q go to
// [base[q] + off[c][q], + cnt[c][q]), exactly as before. Pass 1 writes chunk c's rows of first-level
// bin b to one slice of the temporary buffer, [base[b << sb] + sum_s off[c][(b << sb) + s], + sum_s
// cnt[c][...]): the slices of bin b tile b's range (which equals the union of its partitions'
// ranges), chunk after chunk, so no slice spans two bins. Pass 2 reads chunk c's slices and sends
// each row to its final partition's cursor base[q] + off[c][q]: no histogram over the temporary
// buffer is needed. Both passes rank a tile of kPassTile rows by bin in shared memory (tile
// histogram, scan over the bins, stage the tile bin-major) and write each bin's run of the tile
// contiguously at the bin's global cursor: ~32 rows (256 B) per bin per tile at 2^7 / 2^6 bins.

constexpr int kPassThreads = 512;
constexpr int kPassRows = static_cast<int>(hjp::kPassTile) / kPassThreads;  // rows per thread
static_assert(kPassRows * kPassThreads == static_cast<int>(hjp::kPassTile), "tile of whole rows");
static_assert(hjp::kMaxFirstBins % 32 == 0 && hjp::kMaxFirstBins >= 2 * hjp::kMaxSubBins,
              "warp 0 scans the bins, kMaxFirstBins / 32 per lane; pass 2 ranks two slices' sub-bins");

struct PassSmem {
  uint32_t hist[hjp::kMaxFirstBins];      ///< tile rows per bin (zeroed by the scan)
  uint32_t toff[hjp::kMaxFirstBins];      ///< the bin's first row in the staged tile
  uint32_t gdst[hjp::kMaxFirstBins];      ///< global position of staged row 0 of the bin (mod 2^32)
  uint32_t cursor[hjp::kMaxFirstBins];    ///< the bin's next global position
  uint32_t slice_lo[hjp::kMaxFirstBins];  ///< this chunk's slice of each first-level bin
  uint32_t slice_len[hjp::kMaxFirstBins];
  uint32_t kept;  ///< rows staged in this tile
  int2 stage[hjp::kPassTile];
};

__device__ __forceinline__ uint32_t warp_sum(uint32_t x) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xffffffffu, x, d);
  return x;
}

/// Chunk c's slice of every first-level bin in the temporary buffer (see above), a warp per bin.
/// Read by the caller after a barrier.
__device__ __forceinline__ void first_level_slices(const hjp::PartPlan& pl, uint32_t sb, uint32_t nb,
                                                   const uint32_t* counts, const uint32_t* totals, int64_t chunks,
                                                   uint32_t c, const uint32_t* base, PassSmem& sm) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t* off = counts + static_cast<uint64_t>(c) * pl.parts;
  const uint32_t* next = c + 1 < chunks ? off + pl.parts : totals;  // off[c + 1], or the totals
  for (uint32_t b = warp; b < nb; b += kPassThreads / 32) {
    uint32_t o = 0, n = 0;
    for (uint32_t s = lane; s < (1u << sb); s += 32) {
      const uint32_t q = (b << sb) + s;
      if (q < pl.parts) {
        o += off[q];
        n += next[q] - off[q];
      }
    }
    o = warp_sum(o);
    n = warp_sum(n);
    if (lane == 0) {
      sm.slice_lo[b] = base[b << sb] + o;
      sm.slice_len[b] = n;
    }
  }
}

/// Tile step 1: rank the rows by bin (shared-memory atomics on the tile histogram), scan the nb
/// bins (warp 0; advances the cursors), stage the tile bin-major. Rows with bin < 0 are dropped.
/// Ends with a barrier: sm.stage, sm.gdst and sm.kept are ready for write_tile.
__device__ __forceinline__ void rank_and_stage(PassSmem& sm, const int2 (&kv)[kPassRows], const int (&bin)[kPassRows],
                                               uint32_t nb) {
  uint32_t rank[kPassRows];
#pragma unroll
  for (int u = 0; u < kPassRows; ++u) rank[u] = bin[u] >= 0 ? atomicAdd(sm.hist + bin[u], 1u) : 0u;
  __syncthreads();
  if (threadIdx.x < 32) {
    constexpr int kPer = hjp::kMaxFirstBins / 32;
    const int lane = threadIdx.x;
    uint32_t v[kPer], sum = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const uint32_t b = lane * kPer + i;
      v[i] = b < nb ? sm.hist[b] : 0u;
      sum += v[i];
    }
    const uint32_t incl = static_cast<uint32_t>(warp_inclusive_scan(static_cast<int>(sum), lane));
    uint32_t run = incl - sum;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const uint32_t b = lane * kPer + i;
      if (b < nb) {
        sm.toff[b] = run;
        sm.gdst[b] = sm.cursor[b] - run;  // staged row s of bin b goes to gdst[b] + s
        sm.cursor[b] += v[i];
        sm.hist[b] = 0;  // the next tile's atomics come after two more barriers
      }
      run += v[i];
    }
    if (lane == 31) sm.kept = incl;
  }
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kPassRows; ++u)
    if (bin[u] >= 0) sm.stage[sm.toff[bin[u]] + rank[u]] = kv[u];
  __syncthreads();
}

/// Tile step 2: consecutive threads store consecutive staged rows, i.e. each bin's run of the tile
/// to consecutive global addresses. No barrier after it: the next tile touches sm.stage, sm.gdst
/// and sm.kept only after the two barriers of its rank_and_stage.
template <class BinOf>
__device__ __forceinline__ void write_tile(const PassSmem& sm, BinOf bin_of, int2* out) {
  const uint32_t kept = sm.kept;
  for (uint32_t s = threadIdx.x; s < kept; s += kPassThreads) {
    const int2 kv = sm.stage[s];
    out[sm.gdst[bin_of(kv.x)] + s] = kv;
  }
}

#if HJ_PASS_ASYNC
// ---- Input ring of the passes (variant `partitioned_async`) ----------------------------------
// The default passes prefetch the next tile into registers after the tile's ranking, so a CTA has
// loads in flight only while it writes its staged tile (the measured passes: ~1.25 TB/s read +
// ~1.25 TB/s written, ~58% of a copy's rate). Here each tile's rows are copied into a 2-slot
// shared-memory ring with cp.async two tiles ahead: tile i + 2's copies are issued right after
// tile i's ranking into the slot tile i was read from, so each CTA keeps one to two tiles (32-64
// KB) in flight through its ranking, its barriers and its stores, and no registers hold them.
// Each thread copies exactly the ring elements it later reads (row u * kPassThreads + tid of the
// tile), so its own cp.async.wait_group orders copy and read: no barrier guards the ring, and a
// slot is refilled by the same thread after it read that element into registers.
constexpr uint32_t kRingSlots = 2;

/// A cp.async of kBytes into the ring. No L2 cache policy: ptxas miscompiles fractional policies
/// on cp.async in some kernels (layernorm_backward's evict-first copies died with an illegal
/// instruction on the H200, docs/results/layernorm_backward.md, while spmv_csr's run), so a
/// variant not yet run on a GPU keeps the default eviction class for its fills.
template <int kBytes>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(d), "l"(src), "n"(kBytes) : "memory");
}
/// One commit group per tile (empty past the chunk's end), so wait_group 1 always means "every
/// group but the newest landed": the tile about to be read.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all_but_newest() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
#endif

/// Pass 1, chunk blockIdx.x of a side: its in-range rows as (key, payload) pairs into its slice of
/// each first-level bin of tmp. The next tile's loads are issued before the current tile's stores.
__global__ void __launch_bounds__(kPassThreads, 2)
    hj_part_pass1(const int32_t* __restrict__ keys, const int32_t* __restrict__ pays, int64_t n, int64_t chunk,
                  const Header* h, int64_t r, const uint32_t* counts, const uint32_t* totals, int64_t chunks,
                  const uint32_t* base, int2* tmp) {
  const hjp::PartPlan pl = part_plan_of(h);
  if (!hjp::use_partitioned(pl, r)) return;
  __shared__ PassSmem sm;
  const uint32_t sb = hjp::sub_bits(pl.parts), nb = hjp::first_bins(pl.parts);
  first_level_slices(pl, sb, nb, counts, totals, chunks, blockIdx.x, base, sm);
  for (uint32_t b = threadIdx.x; b < hjp::kMaxFirstBins; b += kPassThreads) sm.hist[b] = 0;
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < nb; b += kPassThreads) sm.cursor[b] = sm.slice_lo[b];
  // (cursor is first read by warp 0 after rank_and_stage's first barrier)
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * chunk;
  const int64_t c1 = c0 + chunk < n ? c0 + chunk : n;
  auto bin1_of = [&](int key) { return hjp::first_bin_of(hjp::part_of(static_cast<uint32_t>(key) - pl.lo), sb); };
#if HJ_PASS_ASYNC
  // Ring slot: the tile's keys, then its payloads (kPassTile each).
  int32_t* ring = reinterpret_cast<int32_t*>(smem_table);
  auto issue = [&](int64_t t0, uint32_t slot) {
    int32_t* rk = ring + slot * 2 * hjp::kPassTile;
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t e = u * kPassThreads + threadIdx.x;
      if (t0 + e < c1) {
        cp_async<4>(rk + e, keys + t0 + e);
        cp_async<4>(rk + hjp::kPassTile + e, pays + t0 + e);
      }
    }
    cp_async_commit();
  };
  issue(c0, 0);
  issue(c0 + hjp::kPassTile, 1);
  uint32_t slot = 0;
  for (int64_t t0 = c0; t0 < c1; t0 += hjp::kPassTile, slot ^= 1u) {
    cp_async_wait_all_but_newest();  // this thread's copies of tile t0
    const int32_t* rk = ring + slot * 2 * hjp::kPassTile;
    int2 kv[kPassRows];
    int bin[kPassRows];
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t e = u * kPassThreads + threadIdx.x;
      const bool row = t0 + e < c1;
      kv[u] = row ? make_int2(rk[e], rk[hjp::kPassTile + e]) : make_int2(0, 0);
      uint32_t d;
      const bool in = row && hjp::key_offset(pl, kv[u].x, d);
      bin[u] = in ? static_cast<int>(hjp::first_bin_of(hjp::part_of(d), sb)) : -1;
    }
    rank_and_stage(sm, kv, bin, nb);
    issue(t0 + 2 * static_cast<int64_t>(hjp::kPassTile), slot);  // into the slot just read
    write_tile(sm, bin1_of, tmp);
  }
#else
  int k[kPassRows], v[kPassRows];
  auto load = [&](int64_t t0) {
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const int64_t j = t0 + u * kPassThreads + threadIdx.x;
      k[u] = j < c1 ? __ldcs(keys + j) : 0;
      v[u] = j < c1 ? __ldcs(pays + j) : 0;
    }
  };
  load(c0);
  for (int64_t t0 = c0; t0 < c1; t0 += hjp::kPassTile) {
    int2 kv[kPassRows];
    int bin[kPassRows];
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      uint32_t d;
      const bool in = t0 + u * kPassThreads + threadIdx.x < c1 && hjp::key_offset(pl, k[u], d);
      bin[u] = in ? static_cast<int>(hjp::first_bin_of(hjp::part_of(d), sb)) : -1;
      kv[u] = make_int2(k[u], v[u]);
    }
    rank_and_stage(sm, kv, bin, nb);
    if (t0 + hjp::kPassTile < c1) load(t0 + hjp::kPassTile);
    write_tile(sm, bin1_of, tmp);
  }
#endif
}

/// Pass 2, chunk blockIdx.x of a side: its slice of every first-level bin, read from tmp, into the
/// final partitions of pairs (cursors base[q] + off[c][q] for the bin's 2^sb sub-bins). The tiles
/// of all the chunk's slices form one sequence, so the next tile's loads (possibly the next
/// slice's) are issued before the current tile's stores.
__global__ void __launch_bounds__(kPassThreads, 2)
    hj_part_pass2(const int2* __restrict__ tmp, const Header* h, int64_t r, const uint32_t* counts,
                  const uint32_t* totals, int64_t chunks, const uint32_t* base, int2* pairs) {
  const hjp::PartPlan pl = part_plan_of(h);
  if (!hjp::use_partitioned(pl, r)) return;
  __shared__ PassSmem sm;
  const uint32_t sb = hjp::sub_bits(pl.parts), nb = hjp::first_bins(pl.parts);
  const uint32_t c = blockIdx.x;
  first_level_slices(pl, sb, nb, counts, totals, chunks, c, base, sm);
  for (uint32_t b = threadIdx.x; b < hjp::kMaxFirstBins; b += kPassThreads) sm.hist[b] = 0;
  __syncthreads();
  const uint32_t* off = counts + static_cast<uint64_t>(c) * pl.parts;
  const uint32_t subs = 1u << sb;
  // Cursors of slice bin's sub-bins into cursor[half * subs ..]: base[q] + off[c][q]. Warp 0 reads
  // them after rank_and_stage's first barrier; the slice that used that half before was finished
  // by the previous tile, whose last read of the cursors came before its second barrier.
  auto init_cursors = [&](uint32_t bin, uint32_t half) {
    const uint32_t q = (bin << sb) + threadIdx.x;
    if (threadIdx.x < subs && q < pl.parts) sm.cursor[half * subs + threadIdx.x] = base[q] + off[q];
  };
  int2 kv[kPassRows];
#if HJ_PASS_ASYNC || HJ_PASS2_SPAN
  // The bins of a spanning tile's rows (in kv): slice t.a's rows into cursor half ha, slice t.b's
  // into hb, padding rows -1.
  auto span_bins = [&](const hjp::Pass2Tile& t, uint32_t ha, uint32_t hb, int (&bin)[kPassRows]) {
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t j = u * kPassThreads + threadIdx.x;
      const uint32_t sub = hjp::sub_bin_of(hjp::part_of(static_cast<uint32_t>(kv[u].x) - pl.lo), sb);
      bin[u] =
          j < t.na ? static_cast<int>(ha * subs + sub) : (j < t.na + t.nbr ? static_cast<int>(hb * subs + sub) : -1);
    }
  };
#endif
#if HJ_PASS_ASYNC
  // The spanning walk below with its tiles' rows copied into the ring (see above): `cur` is being
  // ranked (ring slot `slot`), the tile starting at `nx` is in flight in the other slot; after
  // cur's ranking its slot is refilled with the tile after nx. Only nx's start is kept (the
  // descriptors are recomputed from it: three of them live at once spilled at 64 registers).
  int2* ring = reinterpret_cast<int2*>(smem_table);
  auto issue = [&](const hjp::Pass2Next& at, uint32_t slot) {
    if (at.has) {
      const hjp::Pass2Tile s = hjp::pass2_tile(sm.slice_len, nb, at.a, at.t);
      const uint32_t lo_a = sm.slice_lo[s.a] + s.ta, lo_b = s.nbr > 0 ? sm.slice_lo[s.b] : 0u;
#pragma unroll
      for (int u = 0; u < kPassRows; ++u) {
        const uint32_t j = u * kPassThreads + threadIdx.x;
        if (j < s.na) cp_async<8>(ring + slot * hjp::kPassTile + j, tmp + lo_a + j);
        else if (j < s.na + s.nbr) cp_async<8>(ring + slot * hjp::kPassTile + j, tmp + lo_b + (j - s.na));
      }
    }
    cp_async_commit();
  };
  const uint32_t a0 = hjp::next_nonempty(sm.slice_len, nb, 0);
  if (a0 >= nb) return;  // uniform: no rows in this chunk
  hjp::Pass2Tile cur = hjp::pass2_tile(sm.slice_len, nb, a0, 0);
  hjp::Pass2Next nx = hjp::pass2_after(cur, nb);
  issue(hjp::Pass2Next{a0, 0, true}, 0);
  issue(nx, 1);
  uint32_t slot = 0;
  for (uint32_t k = 0;; slot ^= 1u) {
    cp_async_wait_all_but_newest();  // this thread's copies of tile cur
    const uint32_t ha = k & 1u, hb = ha ^ 1u;
    if (cur.ta == 0) init_cursors(cur.a, ha);
    if (cur.nbr > 0) init_cursors(cur.b, hb);
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t j = u * kPassThreads + threadIdx.x;
      kv[u] = j < cur.na + cur.nbr ? ring[slot * hjp::kPassTile + j] : make_int2(0, 0);
    }
    int bin[kPassRows];
    span_bins(cur, ha, hb, bin);
    rank_and_stage(sm, kv, bin, 2u * subs);
    k += cur.steps;
    const hjp::Pass2Next after =
        nx.has ? hjp::pass2_after(hjp::pass2_tile(sm.slice_len, nb, nx.a, nx.t), nb) : hjp::Pass2Next{nb, 0, false};
    issue(after, slot);  // into the slot just read
    const uint32_t cur_a = cur.a;
    write_tile(
        sm,
        [&](int key) {
          const uint32_t part = hjp::part_of(static_cast<uint32_t>(key) - pl.lo);
          return (hjp::first_bin_of(part, sb) == cur_a ? ha : hb) * subs + hjp::sub_bin_of(part, sb);
        },
        pairs);
    if (!nx.has) break;
    cur = hjp::pass2_tile(sm.slice_len, nb, nx.a, nx.t);
    nx = after;
  }
#elif HJ_PASS2_SPAN
  // hjp::pass2_tile walks full tiles across slices: a tile's rows of slice a rank into bin half
  // ha, those of the next slice b into the other half; the halves alternate per slice (k).
  auto load = [&](const hjp::Pass2Tile& s) {
    const uint32_t lo_a = sm.slice_lo[s.a] + s.ta, lo_b = s.nbr > 0 ? sm.slice_lo[s.b] : 0u;
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t j = u * kPassThreads + threadIdx.x;
      kv[u] =
          j < s.na ? __ldcs(tmp + lo_a + j) : (j < s.na + s.nbr ? __ldcs(tmp + lo_b + (j - s.na)) : make_int2(0, 0));
    }
  };
  const uint32_t a0 = hjp::next_nonempty(sm.slice_len, nb, 0);
  if (a0 >= nb) return;  // uniform: no rows in this chunk
  hjp::Pass2Tile s = hjp::pass2_tile(sm.slice_len, nb, a0, 0);
  load(s);
  for (uint32_t k = 0;;) {
    const uint32_t ha = k & 1u, hb = ha ^ 1u;
    if (s.ta == 0) init_cursors(s.a, ha);
    if (s.nbr > 0) init_cursors(s.b, hb);
    int bin[kPassRows];
    span_bins(s, ha, hb, bin);
    rank_and_stage(sm, kv, bin, 2u * subs);
    const hjp::Pass2Tile cur = s;
    k += cur.steps;
    const bool more = cur.next_a < nb;
    if (more) {
      s = hjp::pass2_tile(sm.slice_len, nb, cur.next_a, cur.next_t);
      load(s);
    }
    write_tile(
        sm,
        [&](int key) {
          const uint32_t part = hjp::part_of(static_cast<uint32_t>(key) - pl.lo);
          return (hjp::first_bin_of(part, sb) == cur.a ? ha : hb) * subs + hjp::sub_bin_of(part, sb);
        },
        pairs);
    if (!more) break;
  }
#else
  // One slice at a time: (b, t) walks the tiles of the non-empty slices in bin order (b == nb:
  // done); a slice's last tile is partial.
  auto next_slice = [&](uint32_t b) {
    while (b < nb && sm.slice_len[b] == 0) ++b;
    return b;
  };
  auto load = [&](uint32_t b, uint32_t t) {
    const uint32_t lo = sm.slice_lo[b] + t, len = sm.slice_len[b] - t;
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t j = u * kPassThreads + threadIdx.x;
      kv[u] = j < len ? __ldcs(tmp + lo + j) : make_int2(0, 0);
    }
  };
  uint32_t b = next_slice(0), t = 0;
  if (b < nb) load(b, 0);
  while (b < nb) {
    const uint32_t len = sm.slice_len[b];
    if (t == 0) init_cursors(b, 0);
    int bin[kPassRows];
#pragma unroll
    for (int u = 0; u < kPassRows; ++u) {
      const uint32_t part = hjp::part_of(static_cast<uint32_t>(kv[u].x) - pl.lo);
      bin[u] = t + u * kPassThreads + threadIdx.x < len ? static_cast<int>(hjp::sub_bin_of(part, sb)) : -1;
    }
    rank_and_stage(sm, kv, bin, subs);
    uint32_t nb2 = b, nt = t + hjp::kPassTile;
    if (nt >= len) {
      nb2 = next_slice(b + 1);
      nt = 0;
    }
    if (nb2 < nb) load(nb2, nt);
    write_tile(
        sm, [&](int key) { return hjp::sub_bin_of(hjp::part_of(static_cast<uint32_t>(key) - pl.lo), sb); }, pairs);
    b = nb2;
    t = nt;
  }
#endif
}

/// Shared memory of hj_part_join: the partition's presence bitmap and payload table, and one
/// output staging buffer per warp.
struct JoinSmem {
  uint32_t bits[hjp::kBitmapWords];
  int32_t tab[hjp::kSlots];
  int2 stage[kJoinWarps][kJoinStage];
};
// sm_90's opt-in dynamic shared memory per block is 227 KB (the 16-item variant uses 196 KB).
static_assert(sizeof(JoinSmem) <= 227 * 1024, "hj_part_join's shared memory exceeds the SM's");

/// Persistent CTAs, one partition at a time: the partition's build pairs into the shared-memory
/// direct table (distinct keys: no collisions), then its probe pairs against it, the matches
/// ranked inside the warp and staged exactly as in probe_tiles (one atomicAdd per flush).
__global__ void __launch_bounds__(kJoinThreads) hj_part_join(const Header* h, int64_t r,
                                                             const int2* __restrict__ bpairs,
                                                             const uint32_t* __restrict__ bbase,
                                                             const int2* __restrict__ ppairs,
                                                             const uint32_t* __restrict__ pbase,
                                                             ProbeArgs a) {
  const hjp::PartPlan pl = part_plan_of(h);
  if (!hjp::use_partitioned(pl, r)) return;
  JoinSmem& sm = *reinterpret_cast<JoinSmem*>(smem_table);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int2* stage = sm.stage[warp];
  int staged = 0;
  for (uint32_t part = blockIdx.x; part < pl.parts; part += gridDim.x) {
    for (uint32_t i = threadIdx.x; i < hjp::kBitmapWords; i += kJoinThreads) sm.bits[i] = 0;
    __syncthreads();
    // kJoinBuildItems loads per thread before their table writes: with one load per iteration
    // each partition's ~8K build pairs (bench row) cost ~16 dependent DRAM latencies per thread,
    // 62 partitions per CTA in a row.
    const uint32_t b1 = bbase[part + 1];
    for (uint32_t i0 = bbase[part]; i0 < b1; i0 += kJoinBuildItems * kJoinThreads) {
      int2 kv[kJoinBuildItems];
#pragma unroll
      for (int j = 0; j < kJoinBuildItems; ++j) {
        const uint32_t i = i0 + j * kJoinThreads + threadIdx.x;
        kv[j] = i < b1 ? __ldcs(bpairs + i) : make_int2(0, 0);
      }
#pragma unroll
      for (int j = 0; j < kJoinBuildItems; ++j) {
        if (i0 + j * kJoinThreads + threadIdx.x < b1) {
          const uint32_t s = hjp::slot_of(static_cast<uint32_t>(kv[j].x) - pl.lo);
          sm.tab[s] = kv[j].y;
          atomicOr(sm.bits + (s >> 5), 1u << (s & 31));
        }
      }
    }
    __syncthreads();
    const uint32_t p1 = pbase[part + 1];
    for (uint32_t t0 = pbase[part] + warp * kJoinTile; t0 < p1; t0 += kJoinWarps * kJoinTile) {
      int2 kv[kJoinItems];
#pragma unroll
      for (int j = 0; j < kJoinItems; ++j) {
        const uint32_t idx = t0 + j * 32 + lane;
        kv[j] = idx < p1 ? __ldcs(ppairs + idx) : make_int2(0, 0);
      }
      bool hit[kJoinItems];
      int bp[kJoinItems];
      int n = 0;
#pragma unroll
      for (int j = 0; j < kJoinItems; ++j) {
        const uint32_t s = hjp::slot_of(static_cast<uint32_t>(kv[j].x) - pl.lo);
        hit[j] = t0 + j * 32 + lane < p1 && ((sm.bits[s >> 5] >> (s & 31)) & 1u);
        bp[j] = hit[j] ? sm.tab[s] : 0;
        n += hit[j] ? 1 : 0;
      }
      const int incl = warp_inclusive_scan(n, lane);
      const int total = __shfl_sync(0xffffffffu, incl, 31);
      if (staged + total > kJoinStage) {
        flush_stage(a, stage, staged, lane);
        staged = 0;
      }
      int pos = staged + incl - n;
#pragma unroll
      for (int j = 0; j < kJoinItems; ++j)
        if (hit[j]) stage[pos++] = make_int2(bp[j], kv[j].y);
      staged += total;
    }
    __syncthreads();  // every warp is done with this partition's table before it is cleared
  }
  if (staged > 0) flush_stage(a, stage, staged, lane);
}
#endif  // HJ_PARTITIONED

// ---------------------------------------------------------------------------------------------
// Host side.

uint32_t ceil_log2(uint64_t v) {
  uint32_t l = 0;
  while ((1ull << l) < v) ++l;
  return l;
}

/// Global table capacity in slots: the power of two >= 2R, at least 64 (16 buckets).
uint64_t global_capacity(int64_t r) {
  uint64_t c = 1ull << ceil_log2(2 * static_cast<uint64_t>(r));
  return c < 64 ? 64 : c;
}

/// log2 of the shared-memory table's slots when the small-build path applies, else -1.
int smem_log2cap(int64_t r) {
  uint32_t l = ceil_log2(2 * static_cast<uint64_t>(r));
  if (l < 6) l = 6;
  return ((1ull << l) * sizeof(unsigned long long) <= kSmemTableMax) ? static_cast<int>(l) : -1;
}

struct Shapes {
  int64_t r, s;
};

Shapes read_shapes(const d2k_args* a) {
  Shapes sh{d2k::scalar_i(a, "R"), d2k::scalar_i(a, "S")};
  if (sh.r < 0 || sh.s < 0) throw d2k::abi_error("hash_join: R and S must be >= 0");
  if (sh.r > (int64_t{1} << 30))
    throw d2k::abi_error("hash_join expert: R above 2^30 is not supported");
  return sh;
}

/// The global table's pieces in the workspace (one carve-up for both entry points); none when the
/// build side fits a per-CTA shared-memory table.
struct GlobalTable {
  Header* hdr = nullptr;
  unsigned long long* table = nullptr;  ///< cap packed 64-bit slots
  uint32_t* bitmap = nullptr;           ///< 2*cap bits: BITMAP mode's presence filter (range <= 2*cap)
};
GlobalTable carve_global_table(d2k::Workspace& ws, const Shapes& sh) {
  GlobalTable g;
  if (smem_log2cap(sh.r) >= 0) return g;
  const uint64_t cap = global_capacity(sh.r);
  g.hdr = static_cast<Header*>(ws.take_bytes(kHeaderBytes));
  g.table = ws.take<unsigned long long>(cap);
  g.bitmap = ws.take<uint32_t>(cap / 16);  // cap / 4 bytes
  return g;
}

#if HJ_PARTITIONED
/// The partitioned join's pieces, carved after the global table (which stays: whether the key
/// range is narrow enough to partition is known only on the device, and the global-table paths
/// are the fallback). None below hjp::kMinRows build rows.
struct PartBufs {
  int2* bpairs = nullptr;    ///< R build (key, payload) pairs, partition-major
  int2* ppairs = nullptr;    ///< up to S in-range probe pairs, partition-major
  int2* tmp = nullptr;       ///< max(R, S) pairs: pass 1's output, first-level-bin major (the
                             ///< build side's, then the probe side's: stream-ordered reuse)
  uint32_t* bcounts = nullptr;  ///< per build chunk and partition: count, then chunk offset
  uint32_t* pcounts = nullptr;
  uint32_t* btotals = nullptr;  ///< per partition: rows
  uint32_t* ptotals = nullptr;
  uint32_t* bbase = nullptr;    ///< per partition + 1: first row
  uint32_t* pbase = nullptr;
};
PartBufs carve_partitions(d2k::Workspace& ws, const Shapes& sh) {
  PartBufs b;
  if (sh.r < hjp::kMinRows) return b;
  b.bpairs = ws.take<int2>(static_cast<uint64_t>(sh.r));
  b.ppairs = ws.take<int2>(static_cast<uint64_t>(sh.s));
  b.tmp = ws.take<int2>(static_cast<uint64_t>(sh.r > sh.s ? sh.r : sh.s));
  b.bcounts = ws.take<uint32_t>(static_cast<uint64_t>(hjp::num_chunks(sh.r)) * hjp::kMaxParts);
  b.pcounts = ws.take<uint32_t>(static_cast<uint64_t>(hjp::num_chunks(sh.s)) * hjp::kMaxParts);
  b.btotals = ws.take<uint32_t>(hjp::kMaxParts);
  b.ptotals = ws.take<uint32_t>(hjp::kMaxParts);
  b.bbase = ws.take<uint32_t>(hjp::kMaxParts + 1);
  b.pbase = ws.take<uint32_t>(hjp::kMaxParts + 1);
  return b;
}
#endif

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    const Shapes sh = read_shapes(args);
    carve_global_table(ws, sh);
#if HJ_PARTITIONED
    carve_partitions(ws, sh);
#endif
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shapes sh = read_shapes(args);
    const auto* bk = d2k::data<const int32_t>(d2k::input(args, "build_keys", kDLCUDA, d2k::dl::i32, {sh.r}));
    const auto* bpay = d2k::data<const int32_t>(d2k::input(args, "build_payload", kDLCUDA, d2k::dl::i32, {sh.r}));
    ProbeArgs pa;
    pa.pk = d2k::data<const int32_t>(d2k::input(args, "probe_keys", kDLCUDA, d2k::dl::i32, {sh.s}));
    pa.pp = d2k::data<const int32_t>(d2k::input(args, "probe_payload", kDLCUDA, d2k::dl::i32, {sh.s}));
    pa.s = sh.s;
    pa.ob = d2k::data<int32_t>(d2k::output(args, "out_build_payload", kDLCUDA, d2k::dl::i32, {sh.s}));
    pa.op = d2k::data<int32_t>(d2k::output(args, "out_probe_payload", kDLCUDA, d2k::dl::i32, {sh.s}));
    // int64 count, added to with 64-bit atomics (unsigned long long is their operand type).
    pa.count = d2k::data<unsigned long long>(d2k::output(args, "count", kDLCUDA, d2k::dl::i64, {1}));
    pa.vec_ok = (reinterpret_cast<uintptr_t>(pa.pk) % 16 == 0) &&
                (reinterpret_cast<uintptr_t>(pa.pp) % 16 == 0);
    auto stream = static_cast<cudaStream_t>(args->stream);

    d2k::Workspace ws(args);
    const GlobalTable g = carve_global_table(ws, sh);
#if HJ_PARTITIONED
    const PartBufs pb = carve_partitions(ws, sh);
#endif

    D2K_CUDA_TRY(args, cudaMemsetAsync(pa.count, 0, sizeof(unsigned long long), stream));
    if (sh.r == 0 || sh.s == 0) return D2K_OK;

    int dev = 0, sms = 0, l2_bytes = 0;
    D2K_CUDA_TRY(args, cudaGetDevice(&dev));
    D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev));
    // A direct-indexed table of 64-bit slots is chosen only while it takes at most half the L2
    // (the probe stream passes through the rest).
    const uint64_t direct_max = static_cast<uint64_t>(l2_bytes) / 2 / sizeof(unsigned long long);
    const int64_t tile = static_cast<int64_t>(kProbeThreads) * kItems;
    const int64_t tiles = (sh.s + tile - 1) / tile;

    const int l2c = smem_log2cap(sh.r);
    if (l2c >= 0) {
      const size_t smem = (size_t{1} << l2c) * sizeof(unsigned long long) + sizeof(ProbeSmem);
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(hj_join_smem_table,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(smem)));
      int per_sm = 0;
      D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hj_join_smem_table,
                                                                       kProbeThreads, smem));
      if (per_sm < 1) per_sm = 1;
      int64_t grid = static_cast<int64_t>(per_sm) * sms;
      if (grid > tiles) grid = tiles;
      hj_join_smem_table<<<static_cast<unsigned>(grid), kProbeThreads, smem, stream>>>(
          bk, bpay, sh.r, pa, static_cast<uint32_t>(l2c));
      D2K_CUDA_TRY(args, cudaGetLastError());
      return D2K_OK;
    }

    const uint64_t cap = global_capacity(sh.r);
    Header* hdr = g.hdr;
    unsigned long long* table = g.table;
    uint32_t* bitmap = g.bitmap;

    D2K_CUDA_TRY(args, cudaMemsetAsync(hdr, 0, sizeof(Header), stream));
    const int64_t build_blocks_max = static_cast<int64_t>(sms) * (2048 / kBuildThreads);
    auto blocks_for = [&](uint64_t n) {
      int64_t b = static_cast<int64_t>((n + kBuildThreads - 1) / kBuildThreads);
      if (b > build_blocks_max) b = build_blocks_max;
      return static_cast<unsigned>(b < 1 ? 1 : b);
    };
    hj_build_minmax<<<blocks_for(static_cast<uint64_t>(sh.r)), kBuildThreads, 0, stream>>>(bk, sh.r, hdr);
    D2K_CUDA_TRY(args, cudaGetLastError());
#if HJ_PARTITIONED
    if (sh.r >= hjp::kMinRows) {
      // Every hj_part_* kernel checks the plan itself and returns when the key range is too wide
      // to partition; the global-table kernels below return when it is not.
      const size_t hist_smem = hjp::kMaxParts * sizeof(uint32_t);
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(hj_part_hist, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(hist_smem)));
#if HJ_PASS_ASYNC
      // The passes' input ring (2 slots of a tile of 8-byte rows: 64 KB) beside their 39 KB of
      // static shared memory: 103 KB per CTA, still two CTAs per SM.
      const size_t pass_smem = kRingSlots * hjp::kPassTile * sizeof(int2);
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(hj_part_pass1, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(pass_smem)));
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(hj_part_pass2, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(pass_smem)));
#else
      const size_t pass_smem = 0;
#endif
      auto partition_side = [&](const int32_t* keys, const int32_t* pays, int64_t n, int2* pairs,
                                uint32_t* counts, uint32_t* totals, uint32_t* base) -> int32_t {
        const int64_t chunk = hjp::chunk_rows(n), chunks = hjp::num_chunks(n);
        hj_part_hist<<<static_cast<unsigned>(chunks), kPartThreads, hist_smem, stream>>>(
            keys, n, chunk, hdr, sh.r, counts);
        D2K_CUDA_TRY(args, cudaGetLastError());
        hj_part_scan_chunks<<<hjp::kMaxParts / kPartScanThreads, kPartScanThreads, 0, stream>>>(
            hdr, sh.r, counts, chunks, totals);
        D2K_CUDA_TRY(args, cudaGetLastError());
        hj_part_scan_parts<<<1, kPartThreads, 0, stream>>>(hdr, sh.r, totals, base);
        D2K_CUDA_TRY(args, cudaGetLastError());
        hj_part_pass1<<<static_cast<unsigned>(chunks), kPassThreads, pass_smem, stream>>>(keys, pays, n, chunk, hdr, sh.r,
                                                                                  counts, totals, chunks, base, pb.tmp);
        D2K_CUDA_TRY(args, cudaGetLastError());
        hj_part_pass2<<<static_cast<unsigned>(chunks), kPassThreads, pass_smem, stream>>>(pb.tmp, hdr, sh.r, counts, totals,
                                                                                  chunks, base, pairs);
        D2K_CUDA_TRY(args, cudaGetLastError());
        return D2K_OK;
      };
      int32_t st = partition_side(bk, bpay, sh.r, pb.bpairs, pb.bcounts, pb.btotals, pb.bbase);
      if (st != D2K_OK) return st;
      st = partition_side(pa.pk, pa.pp, sh.s, pb.ppairs, pb.pcounts, pb.ptotals, pb.pbase);
      if (st != D2K_OK) return st;
      const size_t join_smem = sizeof(JoinSmem);
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(hj_part_join, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(join_smem)));
      int join_per_sm = 0;
      D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&join_per_sm, hj_part_join,
                                                                       kJoinThreads, join_smem));
      if (join_per_sm < 1) join_per_sm = 1;
      hj_part_join<<<static_cast<unsigned>(join_per_sm * sms), kJoinThreads, join_smem, stream>>>(
          hdr, sh.r, pb.bpairs, pb.bbase, pb.ppairs, pb.pbase, pa);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
#endif
    hj_build_clear<<<blocks_for(cap / 2), kBuildThreads, 0, stream>>>(
        hdr, sh.r, cap, direct_max, reinterpret_cast<ulonglong2*>(table),
        reinterpret_cast<uint4*>(bitmap));
    D2K_CUDA_TRY(args, cudaGetLastError());
    hj_build_insert<<<blocks_for(static_cast<uint64_t>(sh.r)), kBuildThreads, 0, stream>>>(
        bk, bpay, sh.r, hdr, cap, direct_max, table, bitmap);
    D2K_CUDA_TRY(args, cudaGetLastError());

    const size_t smem = sizeof(ProbeSmem);
    D2K_CUDA_TRY(args, cudaFuncSetAttribute(hj_probe_global,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
    int per_sm = 0;
    D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hj_probe_global,
                                                                     kProbeThreads, smem));
    if (per_sm < 1) per_sm = 1;
    int64_t grid = static_cast<int64_t>(per_sm) * sms;
    if (grid > tiles) grid = tiles;
    hj_probe_global<<<static_cast<unsigned>(grid), kProbeThreads, smem, stream>>>(
        pa, hdr, sh.r, cap, direct_max, table, bitmap);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
