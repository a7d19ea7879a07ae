// hash_join — starter. Read spec.md: join R build rows (distinct int32 keys, int32 payloads) with
// S probe rows on key equality and write every matching (build payload, probe payload) pair, in
// any order, plus their count. This skeleton validates its arguments and writes nothing, so it
// fails correctness (the harness poisons the outputs, count included, before every call) until
// you write it.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need,
    // e.g. a table sized from R.
    (void)d2k::scalar_i(args, "R");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t R = d2k::scalar_i(args, "R");
    const int64_t S = d2k::scalar_i(args, "S");
    if (R < 0 || S < 0) throw d2k::abi_error("solution: need R >= 0 and S >= 0");
    const int32_t* build_keys = d2k::data<const int32_t>(d2k::input(args, "build_keys"));
    const int32_t* build_payload = d2k::data<const int32_t>(d2k::input(args, "build_payload"));
    const int32_t* probe_keys = d2k::data<const int32_t>(d2k::input(args, "probe_keys"));
    const int32_t* probe_payload = d2k::data<const int32_t>(d2k::input(args, "probe_payload"));
    int32_t* out_build_payload = d2k::data<int32_t>(d2k::output(args, "out_build_payload"));
    int32_t* out_probe_payload = d2k::data<int32_t>(d2k::output(args, "out_probe_payload"));
    int64_t* count = d2k::data<int64_t>(d2k::output(args, "count"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)build_keys; (void)build_payload; (void)probe_keys; (void)probe_payload;
    (void)out_build_payload; (void)out_probe_payload; (void)count;
    // TODO: the join. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
