// tpch_q6 — naive baseline: the plan an operator-at-a-time engine runs, every intermediate
// materialised in global memory.
//
//   1. q6_filter_shipdate: a thread per row; rows with date_lo <= l_shipdate < date_hi append their
//      row id to selection vector sel1 (warp-aggregated append: one atomicAdd per warp).
//   2. q6_filter_discount: a thread per entry of sel1; gathers l_discount, appends to sel2.
//   3. q6_filter_quantity: a thread per entry of sel2; gathers l_quantity, appends to sel3.
//   4. q6_gather_multiply: a thread per entry of sel3; product[k] = price[row] * discount[row].
//   5. cub::DeviceReduce::Sum over the products (the row count is read back first, as an eager
//      framework's nonzero() does).
// Nothing is slowed on purpose: each kernel is the textbook one for its operator; the appends are
// warp-aggregated as any production selection kernel is. The order inside a selection vector varies
// from run to run, which does not change the exact integer sum.
// CUB brackets its calls with NVTX ranges, whose injection hook imports dlopen: a symbol the
// sandbox refuses. The ranges are only a profiler aid, so they are compiled out.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "q6_args.h"

namespace {

constexpr int kThreads = 256;
constexpr int kSelectGrid = 132 * 8;  // grid of the kernels whose length is only known on the device

/// Appends `row` to sel when `keep`; one atomicAdd per warp. Every lane of the warp must call it.
__device__ __forceinline__ void append(bool keep, uint32_t row, uint32_t* sel, unsigned int* count) {
  const unsigned mask = __ballot_sync(0xffffffffu, keep);
  if (mask == 0) return;
  const int lane = threadIdx.x & 31;
  unsigned int base = 0;
  if (lane == __ffs(mask) - 1) base = atomicAdd(count, static_cast<unsigned>(__popc(mask)));
  base = __shfl_sync(0xffffffffu, base, __ffs(mask) - 1);
  if (keep) sel[base + __popc(mask & ((1u << lane) - 1))] = row;
}

__global__ void q6_filter_shipdate(const int32_t* __restrict__ shipdate, int64_t n, int32_t lo, int32_t hi,
                                   uint32_t* sel, unsigned int* count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t i = base + threadIdx.x;
    const bool keep = i < n && shipdate[i] >= lo && shipdate[i] < hi;
    append(keep, static_cast<uint32_t>(i), sel, count);
  }
}

__global__ void q6_filter_discount(const int64_t* __restrict__ discount, const uint32_t* __restrict__ in,
                                   const unsigned int* in_count, int64_t lo, int64_t hi, uint32_t* sel,
                                   unsigned int* count) {
  const int64_t n = *in_count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t k = base + threadIdx.x;
    const uint32_t row = k < n ? in[k] : 0;
    const bool keep = k < n && discount[row] >= lo && discount[row] <= hi;
    append(keep, row, sel, count);
  }
}

__global__ void q6_filter_quantity(const int64_t* __restrict__ quantity, const uint32_t* __restrict__ in,
                                   const unsigned int* in_count, int64_t lt, uint32_t* sel, unsigned int* count) {
  const int64_t n = *in_count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t k = base + threadIdx.x;
    const uint32_t row = k < n ? in[k] : 0;
    const bool keep = k < n && quantity[row] < lt;
    append(keep, row, sel, count);
  }
}

__global__ void q6_gather_multiply(const int64_t* __restrict__ price, const int64_t* __restrict__ discount,
                                   const uint32_t* __restrict__ sel, const unsigned int* count, int64_t* product) {
  const int64_t n = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += stride)
    product[k] = price[sel[k]] * discount[sel[k]];
}

struct Buffers {
  uint32_t *sel1, *sel2, *sel3;
  int64_t* product;
  unsigned int* counts;  ///< [3]: lengths of sel1, sel2, sel3
  void* cub_temp;
  size_t cub_bytes;
};

size_t cub_sum_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
                         static_cast<int>(n < 1 ? 1 : n));
  return bytes;
}

Buffers carve(d2k::Workspace& ws, const q6::Params& p) {
  const uint64_t n = static_cast<uint64_t>(p.n < 1 ? 1 : p.n);
  Buffers b{};
  b.sel1 = ws.take<uint32_t>(n);
  b.sel2 = ws.take<uint32_t>(n);
  b.sel3 = ws.take<uint32_t>(n);
  b.product = ws.take<int64_t>(n);
  b.counts = ws.take<unsigned int>(3);
  b.cub_bytes = cub_sum_bytes(p.n);
  b.cub_temp = ws.take<unsigned char>(b.cub_bytes);
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, q6::read_params(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const q6::Params p = q6::read_params(args);
    if (p.n > UINT32_MAX) throw d2k::abi_error("tpch_q6 naive: N must fit uint32 row ids");
    const q6::Columns c = q6::read_columns(args, p, kDLCUDA);
    d2k::Workspace ws(args);
    Buffers b = carve(ws, p);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.counts, 0, 3 * sizeof(unsigned int), st));
    D2K_CUDA_TRY(args, cudaMemsetAsync(c.revenue, 0, sizeof(int64_t), st));
    if (p.n == 0) return D2K_OK;
    const int64_t blocks = (p.n + kThreads - 1) / kThreads;
    q6_filter_shipdate<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), kThreads, 0, st>>>(
        c.shipdate, p.n, p.date_lo, p.date_hi, b.sel1, b.counts);
    q6_filter_discount<<<kSelectGrid, kThreads, 0, st>>>(c.discount, b.sel1, b.counts, p.discount_lo,
                                                         p.discount_hi, b.sel2, b.counts + 1);
    q6_filter_quantity<<<kSelectGrid, kThreads, 0, st>>>(c.quantity, b.sel2, b.counts + 1, p.quantity_lt,
                                                         b.sel3, b.counts + 2);
    q6_gather_multiply<<<kSelectGrid, kThreads, 0, st>>>(c.price, c.discount, b.sel3, b.counts + 2, b.product);
    D2K_CUDA_TRY(args, cudaGetLastError());
    unsigned int kept = 0;
    D2K_CUDA_TRY(args, cudaMemcpyAsync(&kept, b.counts + 2, sizeof(kept), cudaMemcpyDeviceToHost, st));
    D2K_CUDA_TRY(args, cudaStreamSynchronize(st));
    if (kept == 0) return D2K_OK;  // revenue already 0
    size_t bytes = b.cub_bytes;
    D2K_CUDA_TRY(args, cub::DeviceReduce::Sum(b.cub_temp, bytes, b.product, c.revenue, static_cast<int>(kept), st));
    return D2K_OK;
  });
}
