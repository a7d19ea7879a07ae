// stream_compaction — naive baseline: what an eager framework launches for `out = col[mask]` per
// column, every intermediate materialised in global memory.
//
//   1. sc_flags: a thread per row, mask[i] = l_shipdate[i] < date_lt (one byte per row, as a
//      torch.bool tensor).
//   2. cub::DeviceScan::ExclusiveScan of the mask into int32 row positions (the scan behind
//      nonzero()); the kept-row count is the last position plus the last flag (sc_count).
//   3. sc_scatter, once per column: a thread per row, out[pos[i]] = col[i] where mask[i].
// Nothing is slowed on purpose: each kernel is the textbook one for its operator. The scatter
// writes of one warp land in one contiguous run of the output, so they coalesce in L2. The count
// is written last: the column rows past it are never written, so the count is the output whose
// write says the call is done.
// CUB brackets its calls with NVTX ranges, whose injection hook imports dlopen: a symbol the
// sandbox refuses. The ranges are only a profiler aid, so they are compiled out.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "sc_args.h"

namespace {

constexpr int kThreads = 256;

__global__ void sc_flags(const int32_t* __restrict__ shipdate, int64_t n, int32_t date_lt, uint8_t* __restrict__ mask) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) mask[i] = shipdate[i] < date_lt;
}

template <class T>
__global__ void sc_scatter(const T* __restrict__ col, const uint8_t* __restrict__ mask, const int32_t* __restrict__ pos,
                           int64_t n, T* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && mask[i]) out[pos[i]] = col[i];
}

__global__ void sc_count(const uint8_t* mask, const int32_t* pos, int64_t n, int64_t* count) {
  *count = static_cast<int64_t>(pos[n - 1]) + mask[n - 1];
}

struct Buffers {
  uint8_t* mask;
  int32_t* pos;
  void* cub_temp;
  size_t cub_bytes;
};

size_t cub_scan_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveScan(nullptr, bytes, static_cast<const uint8_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                 cuda::std::plus<>{}, int32_t{0}, n);
  return bytes;
}

Buffers carve(d2k::Workspace& ws, const sc::Params& p) {
  Buffers b{};
  b.mask = ws.take<uint8_t>(static_cast<uint64_t>(p.n));
  b.pos = ws.take<int32_t>(static_cast<uint64_t>(p.n));
  b.cub_bytes = cub_scan_bytes(p.n);
  b.cub_temp = ws.take<unsigned char>(b.cub_bytes);
  return b;
}

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
    d2k::Workspace ws(args);
    Buffers b = carve(ws, p);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    const unsigned blocks = static_cast<unsigned>((p.n + kThreads - 1) / kThreads);
    sc_flags<<<blocks, kThreads, 0, st>>>(c.shipdate, p.n, p.date_lt, b.mask);
    D2K_CUDA_TRY(args, cub::DeviceScan::ExclusiveScan(b.cub_temp, b.cub_bytes, b.mask, b.pos, cuda::std::plus<>{},
                                                      int32_t{0}, p.n, st));
    sc_scatter<<<blocks, kThreads, 0, st>>>(c.shipdate, b.mask, b.pos, p.n, c.out_shipdate);
    sc_scatter<<<blocks, kThreads, 0, st>>>(c.price, b.mask, b.pos, p.n, c.out_price);
    sc_scatter<<<blocks, kThreads, 0, st>>>(c.partkey, b.mask, b.pos, p.n, c.out_partkey);
    sc_count<<<1, 1, 0, st>>>(b.mask, b.pos, p.n, c.count);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
