// tpch_q1 — naive baseline: the plan an operator-at-a-time engine runs, every intermediate
// materialised in global memory.
//
//   1. q1_filter: a thread per row; rows with l_shipdate <= shipdate_max append their row id to a
//      selection vector (warp-aggregated append: one atomicAdd per warp).
//   2. q1_gather: a thread per selected row; copies the six columns the aggregates read into a
//      compacted copy (flag, status, quantity, price, discount, tax).
//   3. q1_derive: a thread per selected row; the derived columns disc_price = price * (100 -
//      discount) and charge = disc_price * (100 + tax), materialised.
//   4. q1_aggregate: a thread per selected row; the group from (flag, status), then one global
//      atomicAdd per aggregate per row (the 128-bit charge with a carry into its high word), as an
//      eager framework's index_add does.
//   5. q1_finish: the averages from the sums.
// Nothing is slowed on purpose; the per-row atomics on 6 groups are what index_add costs.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "q1_args.h"

namespace {

constexpr int kThreads = 256;
constexpr int kGrid = 132 * 8;  // grid of the kernels whose length is only known on the device
constexpr int kSums = 6;        // per group: qty, base price, disc price, charge (unused), discount, count

__global__ void q1_filter(const int32_t* __restrict__ shipdate, int64_t n, int32_t maxd, uint32_t* sel,
                          unsigned int* count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t i = base + threadIdx.x;
    const bool keep = i < n && shipdate[i] <= maxd;
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (mask == 0) continue;
    const int lane = threadIdx.x & 31, leader = __ffs(mask) - 1;
    unsigned int at = 0;
    if (lane == leader) at = atomicAdd(count, static_cast<unsigned>(__popc(mask)));
    at = __shfl_sync(0xffffffffu, at, leader);
    if (keep) sel[at + __popc(mask & ((1u << lane) - 1))] = static_cast<uint32_t>(i);
  }
}

struct Compact {
  int8_t *flag, *status;
  int64_t *quantity, *price, *discount, *tax, *disc_price, *charge;
};

__global__ void q1_gather(q1::Columns c, const uint32_t* __restrict__ sel, const unsigned int* count, Compact k) {
  const int64_t n = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    const uint32_t r = sel[j];
    k.flag[j] = c.flag[r];
    k.status[j] = c.status[r];
    k.quantity[j] = c.quantity[r];
    k.price[j] = c.price[r];
    k.discount[j] = c.discount[r];
    k.tax[j] = c.tax[r];
  }
}

__global__ void q1_derive(const unsigned int* count, Compact k) {
  const int64_t n = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    k.disc_price[j] = k.price[j] * (100 - k.discount[j]);
    k.charge[j] = k.disc_price[j] * (100 + k.tax[j]);
  }
}

__global__ void q1_aggregate(const unsigned int* count, Compact k, unsigned long long* sums,
                             unsigned long long* charge) {
  const int64_t n = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    const int g = q1::group_of(k.flag[j], k.status[j]);
    if (g < 0) continue;  // outside the flag domain: in no group
    unsigned long long* s = sums + g * kSums;
    atomicAdd(s + 0, static_cast<unsigned long long>(k.quantity[j]));
    atomicAdd(s + 1, static_cast<unsigned long long>(k.price[j]));
    atomicAdd(s + 2, static_cast<unsigned long long>(k.disc_price[j]));
    const unsigned long long lo = static_cast<unsigned long long>(k.charge[j]);
    const unsigned long long old = atomicAdd(charge + 2 * g + 1, lo);
    if (old + lo < old) atomicAdd(charge + 2 * g, 1ull);
    atomicAdd(s + 4, static_cast<unsigned long long>(k.discount[j]));
    atomicAdd(s + 5, 1ull);
  }
}

__global__ void q1_finish(const unsigned long long* sums, q1::Outputs o) {
  const int g = threadIdx.x;
  if (g >= q1::kGroups) return;
  const int64_t* s = reinterpret_cast<const int64_t*>(sums) + g * kSums;
  o.sum_qty[g] = s[0];
  o.sum_base_price[g] = s[1];
  o.sum_disc_price[g] = s[2];
  o.count_order[g] = s[5];
  const double n = static_cast<double>(s[5]);
  o.avg_qty[g] = s[5] ? static_cast<double>(s[0]) / n : 0.0;
  o.avg_price[g] = s[5] ? static_cast<double>(s[1]) / n : 0.0;
  o.avg_disc[g] = s[5] ? static_cast<double>(s[4]) / n : 0.0;
}

struct Buffers {
  uint32_t* sel;
  unsigned int* count;
  unsigned long long* sums;
  Compact k;
};

Buffers carve(d2k::Workspace& ws, int64_t n_rows) {
  const uint64_t n = static_cast<uint64_t>(n_rows < 1 ? 1 : n_rows);
  Buffers b{};
  b.sel = ws.take<uint32_t>(n);
  b.count = ws.take<unsigned int>(1);
  b.sums = ws.take<unsigned long long>(q1::kGroups * kSums);
  b.k.flag = ws.take<int8_t>(n);
  b.k.status = ws.take<int8_t>(n);
  b.k.quantity = ws.take<int64_t>(n);
  b.k.price = ws.take<int64_t>(n);
  b.k.discount = ws.take<int64_t>(n);
  b.k.tax = ws.take<int64_t>(n);
  b.k.disc_price = ws.take<int64_t>(n);
  b.k.charge = ws.take<int64_t>(n);
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, d2k::scalar_i(args, "N"));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const q1::Columns c = q1::read_columns(args, kDLCUDA);
    const q1::Outputs o = q1::read_outputs(args, kDLCUDA);
    if (c.n > UINT32_MAX) throw d2k::abi_error("tpch_q1 naive: N must fit uint32 row ids");
    d2k::Workspace ws(args);
    Buffers b = carve(ws, c.n);
    auto* charge = reinterpret_cast<unsigned long long*>(o.sum_charge);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.count, 0, sizeof(unsigned int), st));
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.sums, 0, q1::kGroups * kSums * sizeof(unsigned long long), st));
    D2K_CUDA_TRY(args, cudaMemsetAsync(charge, 0, 2 * q1::kGroups * sizeof(int64_t), st));
    if (c.n > 0) {
      const int64_t blocks = (c.n + kThreads - 1) / kThreads;
      q1_filter<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), kThreads, 0, st>>>(
          c.shipdate, c.n, c.shipdate_max, b.sel, b.count);
      q1_gather<<<kGrid, kThreads, 0, st>>>(c, b.sel, b.count, b.k);
      q1_derive<<<kGrid, kThreads, 0, st>>>(b.count, b.k);
      q1_aggregate<<<kGrid, kThreads, 0, st>>>(b.count, b.k, b.sums, charge);
    }
    q1_finish<<<1, 32, 0, st>>>(b.sums, o);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
