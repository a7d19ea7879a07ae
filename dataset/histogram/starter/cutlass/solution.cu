// histogram — starter, cutlass track. Read spec.md: counts[b] = how many of the N uint32 values
// equal b, for b in [0, B); values >= B are counted nowhere. The cutlass track compiles with the
// CUTLASS and CuTe headers (header-only: nothing is linked). This skeleton validates its arguments
// and writes zero counts, so it fails correctness until you write it.
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
    (void)d2k::scalar_i(args, "B");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N");
    const int64_t B = d2k::scalar_i(args, "B");
    if (N < 1 || B < 1) throw d2k::abi_error("solution: need N >= 1 and B >= 1");
    const uint32_t* values = d2k::data<const uint32_t>(d2k::input(args, "values"));
    uint32_t* counts = d2k::data<uint32_t>(d2k::output(args, "counts"));
    cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)values;
    // TODO: count the values into the B bins. Issue all work on `stream`; use args->workspace for scratch.
    D2K_CUDA_TRY(args, cudaMemsetAsync(counts, 0, static_cast<size_t>(B) * sizeof(uint32_t), stream));
    return D2K_OK;
  });
}
