// stream_compaction — library: CUB's DeviceSelect, one call per column, as a practitioner
// composes it from the CUDA toolkit's CUB.
//
//   1. cub::DeviceSelect::FlaggedIf(l_extendedprice, flags = l_shipdate -> out_extendedprice) and
//      the same for l_partkey: the predicate applied to the shipdate column as the flag, so no mask
//      is materialised; each call reads l_shipdate again (4 B per row per payload column).
//   2. cub::DeviceSelect::If(l_shipdate -> out_shipdate, keep = l_shipdate < date_lt): the kept
//      values and the count. Each call is one single-pass decoupled look-back kernel (and CUB's
//      tile-state initialisation).
// CUB brackets its calls with NVTX ranges, whose injection hook imports dlopen: a symbol the
// sandbox refuses. The ranges are only a profiler aid, so they are compiled out.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_select.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "d2k/solution.h"
#include "sc_args.h"

namespace {

struct Before {
  int32_t date_lt;
  __host__ __device__ bool operator()(int32_t shipdate) const { return shipdate < date_lt; }
};

size_t cub_select_bytes(int64_t n) {
  size_t a = 0, b = 0, c = 0;
  const Before keep{0};
  cub::DeviceSelect::If(nullptr, a, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                        static_cast<int64_t*>(nullptr), n, keep);
  cub::DeviceSelect::FlaggedIf(nullptr, b, static_cast<const float*>(nullptr), static_cast<const int32_t*>(nullptr),
                               static_cast<float*>(nullptr), static_cast<int64_t*>(nullptr), n, keep);
  cub::DeviceSelect::FlaggedIf(nullptr, c, static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                               static_cast<int32_t*>(nullptr), static_cast<int64_t*>(nullptr), n, keep);
  return std::max({a, b, c});
}

struct Buffers {
  int64_t* payload_counts;  ///< [2]: the counts of the payload calls (equal to `count`; not read)
  void* cub_temp;
  size_t cub_bytes;
};

Buffers carve(d2k::Workspace& ws, const sc::Params& p) {
  Buffers b{};
  b.payload_counts = ws.take<int64_t>(2);
  b.cub_bytes = cub_select_bytes(p.n);
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
    const Before keep{p.date_lt};
    // The payload columns first: the call that writes `count` comes last, so the count's write
    // says the call is done.
    D2K_CUDA_TRY(args, cub::DeviceSelect::FlaggedIf(b.cub_temp, b.cub_bytes, c.price, c.shipdate, c.out_price,
                                                    b.payload_counts, p.n, keep, st));
    D2K_CUDA_TRY(args, cub::DeviceSelect::FlaggedIf(b.cub_temp, b.cub_bytes, c.partkey, c.shipdate, c.out_partkey,
                                                    b.payload_counts + 1, p.n, keep, st));
    D2K_CUDA_TRY(args, cub::DeviceSelect::If(b.cub_temp, b.cub_bytes, c.shipdate, c.out_shipdate, c.count, p.n, keep, st));
    return D2K_OK;
  });
}
