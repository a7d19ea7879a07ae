// stream_compaction — expert: one pass over the rows, a tile per CTA, the tile's output position
// from a decoupled look-back, the kept rows staged in shared memory and written out coalesced.
//
// Per tile of kTile = 2048 rows (256 threads x 2 groups of 4 consecutive rows):
//   1. the tile id from an atomic counter, so every lower tile has started (the look-back below
//      cannot wait on a tile that is not yet resident);
//   2. l_shipdate read as int4 (16-byte loads, a warp reads 512 contiguous bytes per load), the
//      predicate evaluated into a 4-bit mask per group;
//   3. late materialisation: l_extendedprice and l_partkey are loaded (int4) only for groups that
//      keep a row, so at low selectivity most of their sectors are never fetched;
//   4. ranks: __popc of each group's mask, a warp inclusive scan (shuffles), the warps' totals in
//      shared memory, one barrier: every kept row's position inside the tile, and the tile's count;
//   5. decoupled look-back (Merrill & Garland 2016) by warp 0: the tile publishes its count
//      (AGGREGATE), then reads 32 predecessors' status words at a time until it meets an
//      INCLUSIVE prefix, and publishes its own inclusive prefix. Flag and value share one 64-bit
//      word, so a relaxed load sees both or neither (no fence);
//   6. the kept values scattered into shared memory at their tile rank, then copied to
//      out[exclusive + i] by consecutive threads: 128 contiguous bytes per warp store, whatever
//      the selection pattern;
//   7. a one-thread kernel after it writes the count from the last tile's inclusive prefix: the
//      count is the call's last write (stream order), so a reader that sees it written sees every
//      row written. (The last CTA to finish could write it instead, but that needs a fence behind
//      every CTA's stores, which lengthens every CTA; the extra launch costs about a microsecond.)
// The status words and the tile counter are the workspace, zeroed by one memset per call
// (8 bytes per tile: 3.9 MB at 1e9 rows, about 1 us).
//
// Variants considered (the H200 table is in docs/results/stream_compaction.md):
//   - this one (staged stores, late payload loads);
//   - direct_store: each thread writes its kept values straight to global memory at their rank
//     (no staging): a warp's stores then scatter over the run of its kept rows, 1-4 values per
//     lane, more L2 write transactions for the same bytes;
//   - eager_payload: all three columns loaded before the predicate is known (one round trip less
//     per tile, but the payload columns are read in full: 8 B per row more than the cost model at
//     1% selectivity);
//   - blocks6: registers cut for 6 resident CTAs per SM instead of 5 (more loads in flight, a few
//     spilled registers);
//   - CUB's three-call composition (library.cu): reads l_shipdate three times;
//   - the flag / scan / scatter chain (naive.cu): materialises a mask and positions.
// %VARIANT% direct_store -DSC_STAGE=0
// %VARIANT% eager_payload -DSC_LATE=0
// %VARIANT% blocks6 -DSC_MIN_BLOCKS=6
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "sc_args.h"

#ifndef SC_STAGE
#define SC_STAGE 1  // 1: kept rows staged in shared memory, written coalesced; 0: written from registers
#endif
#ifndef SC_LATE
#define SC_LATE 1  // 1: payload columns loaded only for groups with a kept row; 0: always
#endif
#ifndef SC_MIN_BLOCKS
// Resident CTAs per SM the register budget is cut for: 5 fits in 48 registers without spills
// (the unbounded build takes 64, 4 CTAs); 6 needs 40 and spills 24 bytes.
#define SC_MIN_BLOCKS 5
#endif

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kGroups = 2;                        ///< groups of 4 consecutive rows per thread
constexpr int kTile = kThreads * kGroups * 4;     ///< rows per tile (one CTA)

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

/// Kept rows before `tile` (all lanes of warp 0 call it; every lane returns the value). Publishes
/// the tile's aggregate first and its inclusive prefix last.
__device__ int64_t look_back(StatusWord* status, int64_t tile, int tile_count, int lane) {
  if (tile == 0) {
    if (lane == 0) store_status(status, kInclusive | static_cast<StatusWord>(tile_count));
    return 0;
  }
  if (lane == 0) store_status(status + tile, kAggregate | static_cast<StatusWord>(tile_count));
  int64_t exclusive = 0;
  for (int64_t nearest = tile - 1;; nearest -= 32) {
    const int64_t idx = nearest - lane;  // lane 0 reads the nearest predecessor
    StatusWord s = idx >= 0 ? load_status(status + idx) : kInclusive;  // before tile 0: a prefix of 0
    for (;;) {  // wait until all 32 predecessors have published something
      const bool pending = (s >> 62) == 0;
      if (!__any_sync(0xffffffffu, pending)) break;
      if (pending) s = load_status(status + idx);
    }
    const unsigned inclusive_lanes = __ballot_sync(0xffffffffu, (s >> 62) == 2);
    const int stop = inclusive_lanes ? __ffs(inclusive_lanes) - 1 : 31;  // nearest inclusive prefix
    int64_t v = lane <= stop ? static_cast<int64_t>(s & kValueMask) : 0;
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    exclusive += v;
    if (inclusive_lanes) break;
  }
  if (lane == 0) store_status(status + tile, kInclusive | static_cast<StatusWord>(exclusive + tile_count));
  return exclusive;
}

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

struct Shared {
#if SC_STAGE
  int32_t shipdate[kTile];
  int32_t price[kTile];  ///< float bits
  int32_t partkey[kTile];
#endif
  int warp_totals[kGroups][kWarps];
  int64_t exclusive;
  unsigned long long tile;
};

__global__ void __launch_bounds__(kThreads, SC_MIN_BLOCKS)
    sc_select_tiles(const int32_t* __restrict__ shipdate, const float* __restrict__ price,
                    const int32_t* __restrict__ partkey, int64_t n, int32_t date_lt, int32_t* __restrict__ out_shipdate,
                    float* __restrict__ out_price, int32_t* __restrict__ out_partkey,
                    StatusWord* __restrict__ status, unsigned long long* __restrict__ tile_counter) {
  __shared__ Shared s;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;

  // 1. Tile id in order of arrival.
  if (t == 0) s.tile = atomicAdd(tile_counter, 1ull);
  __syncthreads();
  const int64_t tile = static_cast<int64_t>(s.tile);
  const int64_t base = tile * kTile;

  // 2-3. Predicate column, masks, payload columns.
  int4 va[kGroups], vb[kGroups], vc[kGroups];
  unsigned keep[kGroups];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int64_t row0 = base + (static_cast<int64_t>(g) * kThreads + t) * 4;
    va[g] = load_group(shipdate, row0, n);
    keep[g] = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) keep[g] |= static_cast<unsigned>(row0 + e < n && lane_of(va[g], e) < date_lt) << e;
  }
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int64_t row0 = base + (static_cast<int64_t>(g) * kThreads + t) * 4;
    vb[g] = vc[g] = make_int4(0, 0, 0, 0);
    if (!SC_LATE || keep[g]) {
      vb[g] = load_group(price, row0, n);
      vc[g] = load_group(partkey, row0, n);
    }
  }

  // 4. Ranks inside the tile: groups in row order are (g, warp, lane).
  int before[kGroups];  // kept rows of this thread's group g that precede it inside its warp
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
    if (lane == 31) s.warp_totals[g][warp] = incl;
  }
  __syncthreads();
  int tile_count = 0;
#pragma unroll
  for (int g = 0; g < kGroups; ++g)
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w == warp) before[g] += tile_count;
      tile_count += s.warp_totals[g][w];
    }

  // 5. The tile's first output row.
  if (warp == 0) {
    const int64_t exclusive = look_back(status, tile, tile_count, lane);
    if (lane == 0) s.exclusive = exclusive;
  }

#if SC_STAGE
  // 6. Kept values into shared memory at their tile rank, then out in row order, coalesced.
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    int r = before[g];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (keep[g] >> e & 1u) {
        s.shipdate[r] = lane_of(va[g], e);
        s.price[r] = lane_of(vb[g], e);
        s.partkey[r] = lane_of(vc[g], e);
        ++r;
      }
  }
  __syncthreads();
  const int64_t exclusive = s.exclusive;
  for (int i = t; i < tile_count; i += kThreads) {
    out_shipdate[exclusive + i] = s.shipdate[i];
    out_price[exclusive + i] = __int_as_float(s.price[i]);
    out_partkey[exclusive + i] = s.partkey[i];
  }
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
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, p);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.status, 0, (static_cast<size_t>(b.num_tiles) + 1) * sizeof(StatusWord), st));
    sc_select_tiles<<<static_cast<unsigned>(b.num_tiles), kThreads, 0, st>>>(
        c.shipdate, c.price, c.partkey, p.n, p.date_lt, c.out_shipdate, c.out_price, c.out_partkey, b.status,
        b.status + b.num_tiles);
    sc_write_count<<<1, 1, 0, st>>>(b.status + b.num_tiles - 1, c.count);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
