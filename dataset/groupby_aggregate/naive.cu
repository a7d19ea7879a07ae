// groupby_aggregate — naive baseline: the textbook GPU hash group-by, kernel by kernel.
//
//   1. gb_naive_init: clear the open-addressing table (keys to all ones = empty, count and sum to
//      0, min to INT64_MAX, max to INT64_MIN) and the group counter.
//   2. gb_naive_aggregate: a thread per row; linear probing with atomicCAS claims or finds the
//      key's slot, then four global atomics (count, sum, min, max) update the group.
//   3. gb_naive_emit: a thread per slot; an occupied slot reserves its output row with one global
//      atomicAdd on num_groups and writes the row.
//
// Table: capacity = the power of two >= 2N (load factor <= 0.5 whatever the number of groups,
// which is not known in advance), murmur3's 64-bit finaliser as the hash. All ones marks an empty
// slot, so the key -1 cannot live in the table: it gets its own slot after the last one. Nothing
// here is slowed on purpose: it is the design a first implementation has (one thread per row,
// one atomic per aggregate per row, no shared-memory or warp-level pre-aggregation).
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

namespace {

constexpr unsigned long long kEmptyKey = ~0ull;
constexpr int kThreads = 256;

/// Capacity of the table for N rows: the power of two >= 2N (at least 2).
uint64_t table_capacity(int64_t n) {
  uint64_t cap = 2;
  while (cap < 2 * static_cast<uint64_t>(n)) cap <<= 1;
  return cap;
}

__device__ __forceinline__ uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

/// The table in the workspace: cap + 1 slots (the last one holds the key -1), one array per field.
struct Table {
  unsigned long long* keys;
  unsigned long long* count;
  unsigned long long* sum;  // wrapping: unsigned addition is two's complement addition
  long long* min;
  long long* max;
  uint64_t cap;
};

Table carve_table(d2k::Workspace& ws, int64_t n) {
  const uint64_t cap = table_capacity(n);
  const uint64_t slots = cap + 1;
  return Table{ws.take<unsigned long long>(slots), ws.take<unsigned long long>(slots),
               ws.take<unsigned long long>(slots), ws.take<long long>(slots),
               ws.take<long long>(slots), cap};
}

__global__ void gb_naive_init(Table t) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i > t.cap) return;
  t.keys[i] = kEmptyKey;
  t.count[i] = 0;
  t.sum[i] = 0;
  t.min[i] = 0x7fffffffffffffffll;
  t.max[i] = -0x7fffffffffffffffll - 1;
}

/// One thread per row: find or claim the key's slot, then one atomic per aggregate.
__global__ void gb_naive_aggregate(const int64_t* __restrict__ keys, const int64_t* __restrict__ vals,
                                   int64_t n, Table t) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const auto k = static_cast<unsigned long long>(keys[i]);
  const long long v = vals[i];
  const uint64_t mask = t.cap - 1;
  uint64_t h = t.cap;  // the key -1 (all ones) has the slot after the table
  if (k != kEmptyKey) {
    h = fmix64(k) & mask;
    while (true) {
      const unsigned long long old = atomicCAS(&t.keys[h], kEmptyKey, k);
      if (old == kEmptyKey || old == k) break;
      h = (h + 1) & mask;
    }
  }
  atomicAdd(&t.count[h], 1ull);
  atomicAdd(&t.sum[h], static_cast<unsigned long long>(v));
  atomicMin(&t.min[h], v);
  atomicMax(&t.max[h], v);
}

struct Outputs {
  int64_t* keys;
  int64_t* count;
  int64_t* sum;
  int64_t* min;
  int64_t* max;
  unsigned long long* num_groups;
};

/// One thread per slot: an occupied slot appends its group (one atomicAdd per group).
__global__ void gb_naive_emit(Table t, Outputs o) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i > t.cap) return;
  const bool used = i < t.cap ? t.keys[i] != kEmptyKey : t.count[i] != 0;
  if (!used) return;
  const unsigned long long row = atomicAdd(o.num_groups, 1ull);
  o.keys[row] = i < t.cap ? static_cast<int64_t>(t.keys[i]) : -1;
  o.count[row] = static_cast<int64_t>(t.count[i]);
  o.sum[row] = static_cast<int64_t>(t.sum[i]);
  o.min[row] = t.min[i];
  o.max[row] = t.max[i];
}

int64_t read_n(const d2k_args* a) {
  const int64_t n = d2k::scalar_i(a, "N");
  if (n < 0) throw d2k::abi_error("groupby_aggregate: N must be >= 0");
  return n;
}

unsigned grid_for(uint64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve_table(ws, read_n(args));
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
    const Table t = carve_table(ws, n);
    D2K_CUDA_TRY(args, cudaMemsetAsync(o.num_groups, 0, sizeof(unsigned long long), stream));
    if (n == 0) return D2K_OK;
    gb_naive_init<<<grid_for(t.cap + 1), kThreads, 0, stream>>>(t);
    D2K_CUDA_TRY(args, cudaGetLastError());
    gb_naive_aggregate<<<grid_for(static_cast<uint64_t>(n)), kThreads, 0, stream>>>(keys, vals, n, t);
    D2K_CUDA_TRY(args, cudaGetLastError());
    gb_naive_emit<<<grid_for(t.cap + 1), kThreads, 0, stream>>>(t, o);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
