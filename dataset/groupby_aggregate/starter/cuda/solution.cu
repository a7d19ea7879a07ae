// groupby_aggregate — starter. Read spec.md: for each distinct int64 key of the N rows write one
// row (key, count, sum, min, max of the int64 values; the sum wraps modulo 2^64), in any order,
// in the first num_groups rows of the five outputs, and num_groups. This skeleton validates its
// arguments and writes nothing, so it fails correctness (the harness poisons the outputs,
// num_groups included, before every call) until you write it.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need,
    // e.g. a hash table sized from N (the number of groups is not known in advance).
    (void)d2k::scalar_i(args, "N");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N");
    if (N < 0) throw d2k::abi_error("solution: need N >= 0");
    const int64_t* keys = d2k::data<const int64_t>(d2k::input(args, "keys"));
    const int64_t* values = d2k::data<const int64_t>(d2k::input(args, "values"));
    int64_t* out_keys = d2k::data<int64_t>(d2k::output(args, "out_keys"));
    int64_t* out_count = d2k::data<int64_t>(d2k::output(args, "out_count"));
    int64_t* out_sum = d2k::data<int64_t>(d2k::output(args, "out_sum"));
    int64_t* out_min = d2k::data<int64_t>(d2k::output(args, "out_min"));
    int64_t* out_max = d2k::data<int64_t>(d2k::output(args, "out_max"));
    int64_t* num_groups = d2k::data<int64_t>(d2k::output(args, "num_groups"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)keys; (void)values; (void)out_keys; (void)out_count; (void)out_sum; (void)out_min;
    (void)out_max; (void)num_groups;
    // TODO: the group-by. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
