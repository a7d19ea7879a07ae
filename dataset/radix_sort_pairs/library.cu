// radix_sort_pairs — library: CUB's DeviceRadixSort::SortPairs over all 32 key bits, as a
// practitioner calls it from the CUDA toolkit. For 32-bit keys on Hopper CUB runs its onesweep
// LSD sort: one histogram kernel for all digits, an exclusive-sum kernel, then one onesweep
// kernel per 8-bit digit with a decoupled look-back (the sorts ping-pong through a key and a value
// copy in CUB's temporary storage, so the inputs stay untouched).
// CUB brackets its calls with NVTX ranges, whose injection hook imports dlopen: a symbol the
// sandbox refuses. The ranges are only a profiler aid, so they are compiled out.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "rs_args.h"

namespace {

// N < 2^30 (rs_args.h), so CUB's 32-bit item count is exact.
size_t cub_sort_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                  static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                  static_cast<int>(n), 0, 32);
  return bytes;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = cub_sort_bytes(rs::read_params(args).n);
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const rs::Params p = rs::read_params(args);
    const rs::Pairs io = rs::read_pairs(args, p, kDLCUDA);
    d2k::Workspace ws(args);
    size_t bytes = cub_sort_bytes(p.n);
    void* temp = ws.take<unsigned char>(bytes);
    D2K_CUDA_TRY(args, cub::DeviceRadixSort::SortPairs(temp, bytes, io.keys, io.keys_out, io.values, io.values_out,
                                                       static_cast<int>(p.n), 0, 32,
                                                       static_cast<cudaStream_t>(args->stream)));
    return D2K_OK;
  });
}
