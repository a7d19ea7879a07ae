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
//   %VARIANT% rows8_1cta -DHJ_ITEMS=8 -DHJ_MIN_BLOCKS=1
//     (run 2's first line: better on the shared-memory path, worse on the hash path)
//   Not done, would pay most: radix-partition both sides at 64M so that build scatter and probe
//   gathers hit L2-sized pieces (all other terms there are DRAM-random); per-path tuning (the
//   shared-memory path measured 377 us with 8 rows/thread and 1 CTA/SM).
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

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve_global_table(ws, read_shapes(args));
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
