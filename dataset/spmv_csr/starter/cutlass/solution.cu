// spmv_csr — starter, cutlass track. Read spec.md: y = A x for a square N x N CSR matrix (int32 row_ptr [N+1],
// int32 col_idx [NNZ], fp32 values [NNZ]), fp32 x [N] and y [N]; y[r] sums the row's
// values[j] * x[col_idx[j]], 0 for an empty row. This skeleton validates its arguments and writes
// zeros, so it fails correctness until you write it. The cutlass track compiles with the CUTLASS
// and CuTe headers (header-only: nothing is linked).
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
    (void)d2k::scalar_i(args, "NNZ");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N");
    const int64_t NNZ = d2k::scalar_i(args, "NNZ");
    if (N < 1 || NNZ < 1) throw d2k::abi_error("solution: need N >= 1 and NNZ >= 1");
    const int32_t* row_ptr = d2k::data<const int32_t>(d2k::input(args, "row_ptr"));
    const int32_t* col_idx = d2k::data<const int32_t>(d2k::input(args, "col_idx"));
    const float* values = d2k::data<const float>(d2k::input(args, "values"));
    const float* x = d2k::data<const float>(d2k::input(args, "x"));
    float* y = d2k::data<float>(d2k::output(args, "y"));
    cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)row_ptr;
    (void)col_idx;
    (void)values;
    (void)x;
    // TODO: y[r] = sum of values[j] * x[col_idx[j]] over row r. Issue all work on `stream`; use
    // args->workspace for scratch.
    D2K_CUDA_TRY(args, cudaMemsetAsync(y, 0, static_cast<size_t>(N) * sizeof(float), stream));
    return D2K_OK;
  });
}
