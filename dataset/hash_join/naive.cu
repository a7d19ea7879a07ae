// hash_join — naive baseline: what a straightforward GPU hash join does, kernel by kernel.
//
//   1. cudaMemsetAsync: clear the open-addressing table (keys to all-ones = empty) and the count.
//   2. hj_naive_build: a thread per build tuple; atomicCAS claims a slot (linear probing) in a
//      key array, then the payload is stored in a parallel payload array.
//   3. hj_naive_probe: a thread per probe tuple; walks the probe sequence in the key array; on a
//      match, one global atomicAdd on the output counter reserves the output row, the build
//      payload is read from the payload array and the pair is written.
//
// Table: capacity = the power of two >= 2R (load factor <= 0.5), keys widened to 64 bits and
// zero-extended so that the empty marker (all ones) can never be a real key, murmur3 finaliser
// as the hash. Nothing here is slowed on purpose: it is the textbook design (separate key and
// payload arrays, one thread per tuple, one atomic per output row).
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

namespace {

constexpr unsigned long long kEmptyKey = ~0ull;
constexpr int kThreads = 256;

/// Capacity of the table for R build rows: the power of two >= 2R (at least 2).
uint64_t table_capacity(int64_t r) {
  uint64_t cap = 2;
  while (cap < 2 * static_cast<uint64_t>(r)) cap <<= 1;
  return cap;
}

__device__ __forceinline__ uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

/// One thread per build tuple: claim the first empty slot of the probe sequence.
__global__ void hj_naive_build(const int32_t* __restrict__ keys, const int32_t* __restrict__ payload,
                               int64_t r, unsigned long long* table_keys, int32_t* table_vals,
                               uint64_t mask) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= r) return;
  const uint32_t k = static_cast<uint32_t>(keys[i]);
  const unsigned long long wide = k;  // zero-extended: never equal to kEmptyKey
  uint64_t h = fmix32(k) & mask;
  while (true) {
    unsigned long long old = atomicCAS(&table_keys[h], kEmptyKey, wide);
    if (old == kEmptyKey) {
      table_vals[h] = payload[i];
      return;
    }
    h = (h + 1) & mask;
  }
}

/// One thread per probe tuple: at most one match (the build keys are unique).
__global__ void hj_naive_probe(const int32_t* __restrict__ keys, const int32_t* __restrict__ payload,
                               int64_t s, const unsigned long long* __restrict__ table_keys,
                               const int32_t* __restrict__ table_vals, uint64_t mask,
                               int32_t* out_build, int32_t* out_probe, unsigned long long* count) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= s) return;
  const uint32_t k = static_cast<uint32_t>(keys[i]);
  const unsigned long long wide = k;
  uint64_t h = fmix32(k) & mask;
  while (true) {
    unsigned long long cur = table_keys[h];
    if (cur == wide) {
      unsigned long long pos = atomicAdd(count, 1ull);
      out_build[pos] = table_vals[h];
      out_probe[pos] = payload[i];
      return;
    }
    if (cur == kEmptyKey) return;
    h = (h + 1) & mask;
  }
}

struct Shapes {
  int64_t r, s;
};

Shapes read_shapes(const d2k_args* a) {
  Shapes sh{d2k::scalar_i(a, "R"), d2k::scalar_i(a, "S")};
  if (sh.r < 0 || sh.s < 0) throw d2k::abi_error("hash_join: R and S must be >= 0");
  return sh;
}

/// The open-addressing table in the workspace: cap keys (64-bit, empty = all ones) and cap values.
struct Table {
  unsigned long long* keys;
  int32_t* vals;
  uint64_t cap;
};
Table carve_table(d2k::Workspace& ws, const Shapes& sh) {
  const uint64_t cap = table_capacity(sh.r);
  return Table{ws.take<unsigned long long>(cap), ws.take<int32_t>(cap), cap};
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve_table(ws, read_shapes(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shapes sh = read_shapes(args);
    const auto* bk = d2k::data<const int32_t>(d2k::input(args, "build_keys", kDLCUDA, d2k::dl::i32, {sh.r}));
    const auto* bp = d2k::data<const int32_t>(d2k::input(args, "build_payload", kDLCUDA, d2k::dl::i32, {sh.r}));
    const auto* pk = d2k::data<const int32_t>(d2k::input(args, "probe_keys", kDLCUDA, d2k::dl::i32, {sh.s}));
    const auto* pp = d2k::data<const int32_t>(d2k::input(args, "probe_payload", kDLCUDA, d2k::dl::i32, {sh.s}));
    auto* ob = d2k::data<int32_t>(d2k::output(args, "out_build_payload", kDLCUDA, d2k::dl::i32, {sh.s}));
    auto* op = d2k::data<int32_t>(d2k::output(args, "out_probe_payload", kDLCUDA, d2k::dl::i32, {sh.s}));
    // int64 count, added to with 64-bit atomics (unsigned long long is their operand type).
    auto* cnt = d2k::data<unsigned long long>(d2k::output(args, "count", kDLCUDA, d2k::dl::i64, {1}));
    auto stream = static_cast<cudaStream_t>(args->stream);

    d2k::Workspace ws(args);
    const Table t = carve_table(ws, sh);
    const uint64_t cap = t.cap;
    auto* table_keys = t.keys;
    auto* table_vals = t.vals;

    D2K_CUDA_TRY(args, cudaMemsetAsync(cnt, 0, sizeof(unsigned long long), stream));
    if (sh.r == 0 || sh.s == 0) return D2K_OK;
    D2K_CUDA_TRY(args, cudaMemsetAsync(table_keys, 0xFF, cap * sizeof(unsigned long long), stream));

    const uint64_t build_blocks = (static_cast<uint64_t>(sh.r) + kThreads - 1) / kThreads;
    hj_naive_build<<<static_cast<unsigned>(build_blocks), kThreads, 0, stream>>>(
        bk, bp, sh.r, table_keys, table_vals, cap - 1);
    D2K_CUDA_TRY(args, cudaGetLastError());

    const uint64_t probe_blocks = (static_cast<uint64_t>(sh.s) + kThreads - 1) / kThreads;
    hj_naive_probe<<<static_cast<unsigned>(probe_blocks), kThreads, 0, stream>>>(
        pk, pp, sh.s, table_keys, table_vals, cap - 1, ob, op, cnt);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
