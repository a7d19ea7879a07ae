// stream_compaction — starter, cutlass track. Read spec.md: keep the rows whose l_shipdate is below date_lt,
// write their three columns, in input order, to the first `count` rows of the outputs, and the
// number of kept rows to `count`. The cutlass track compiles with the CUTLASS and CuTe headers
// (header-only: nothing is linked). This skeleton validates its arguments and writes a count of 0
// and no rows, so it fails correctness until you write it.
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
    const int64_t date_lt = d2k::scalar_i(args, "date_lt");
    if (N < 1) throw d2k::abi_error("solution: need N >= 1");
    const int32_t* shipdate = d2k::data<const int32_t>(d2k::input(args, "l_shipdate"));
    const float* price = d2k::data<const float>(d2k::input(args, "l_extendedprice"));
    const int32_t* partkey = d2k::data<const int32_t>(d2k::input(args, "l_partkey"));
    int32_t* out_shipdate = d2k::data<int32_t>(d2k::output(args, "out_shipdate"));
    float* out_price = d2k::data<float>(d2k::output(args, "out_extendedprice"));
    int32_t* out_partkey = d2k::data<int32_t>(d2k::output(args, "out_partkey"));
    int64_t* count = d2k::data<int64_t>(d2k::output(args, "count"));
    cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)date_lt; (void)shipdate; (void)price; (void)partkey; (void)out_shipdate; (void)out_price; (void)out_partkey;
    // TODO: the kept rows and their number. Issue all work on `stream`; use args->workspace for scratch.
    D2K_CUDA_TRY(args, cudaMemsetAsync(count, 0, sizeof(int64_t), stream));
    return D2K_OK;
  });
}
