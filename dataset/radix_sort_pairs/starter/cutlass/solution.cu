// radix_sort_pairs — starter, cutlass track. Read spec.md: sort the (key, value) pairs by key, ascending, keeping
// pairs with equal keys in their input order (a stable sort), into keys_out and values_out. This
// skeleton validates its arguments and copies the pairs unsorted, so it fails correctness until
// you write the sort. The cutlass track compiles with the CUTLASS and CuTe headers (header-only:
// nothing is linked).
#include <cuda_runtime.h>

#include <cstdint>

#include <cute/tensor.hpp>
#include <cutlass/numeric_types.h>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "N");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N");
    if (N < 1) throw d2k::abi_error("solution: need N >= 1");
    const uint32_t* keys = d2k::data<const uint32_t>(d2k::input(args, "keys"));
    const uint32_t* values = d2k::data<const uint32_t>(d2k::input(args, "values"));
    uint32_t* keys_out = d2k::data<uint32_t>(d2k::output(args, "keys_out"));
    uint32_t* values_out = d2k::data<uint32_t>(d2k::output(args, "values_out"));
    cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    // TODO: the stable sort by key. Issue all work on `stream`; use args->workspace for scratch.
    const size_t bytes = static_cast<size_t>(N) * sizeof(uint32_t);
    D2K_CUDA_TRY(args, cudaMemcpyAsync(keys_out, keys, bytes, cudaMemcpyDeviceToDevice, stream));
    D2K_CUDA_TRY(args, cudaMemcpyAsync(values_out, values, bytes, cudaMemcpyDeviceToDevice, stream));
    return D2K_OK;
  });
}
