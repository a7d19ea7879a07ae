// histogram — library: CUB's DeviceHistogram::HistogramEven, as a practitioner calls it from the
// CUDA toolkit's CUB for unit-width bins over [0, B): num_levels = B + 1, lower level 0, upper
// level B, uint32 samples and uint32 counters. Samples outside [0, B) are dropped, the task's
// rule. CUB privatises the histogram in shared memory for up to 256 bins and in global memory
// (a copy per CTA) above that, then merges the copies into the output (its own init and merge
// kernels). For uint32 samples and levels its bin arithmetic is exact in 64-bit:
// (v - 0) * B / B.
// CUB brackets its calls with NVTX ranges, whose injection hook imports dlopen: a symbol the
// sandbox refuses. The ranges are only a profiler aid, so they are compiled out.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_histogram.cuh>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "hist_args.h"

namespace {

/// CUB's scratch for the call (shape-only: null data pointers).
size_t cub_histogram_bytes(const hist::Params& p) {
  size_t bytes = 0;
  cub::DeviceHistogram::HistogramEven(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                      static_cast<uint32_t*>(nullptr), static_cast<int>(p.b + 1), uint32_t{0},
                                      static_cast<uint32_t>(p.b), p.n);
  return bytes;
}

struct Buffers {
  void* cub_temp;
  size_t cub_bytes;
};

Buffers carve(d2k::Workspace& ws, const hist::Params& p) {
  Buffers b{};
  b.cub_bytes = cub_histogram_bytes(p);
  b.cub_temp = ws.take<unsigned char>(b.cub_bytes);
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, hist::read_params(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const hist::Params p = hist::read_params(args);
    const hist::Tensors t = hist::read_tensors(args, p, kDLCUDA);
    d2k::Workspace ws(args);
    Buffers b = carve(ws, p);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cub::DeviceHistogram::HistogramEven(b.cub_temp, b.cub_bytes, t.values, t.counts,
                                                           static_cast<int>(p.b + 1), uint32_t{0},
                                                           static_cast<uint32_t>(p.b), p.n, st));
    return D2K_OK;
  });
}
