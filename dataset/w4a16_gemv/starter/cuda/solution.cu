// w4a16_gemv — starter. Read spec.md: y[b, n] = sum_k x[b, k] · (q[n, k] - 8) · scales[n, k / 128],
// with the int4 codes q packed eight per int32 word of qweight (k = 8i + j in bits 4j..4j+3 of
// word i), y rounded once to bf16. This skeleton validates its arguments and launches nothing, so
// it fails correctness (the harness poisons the outputs before every call) until you write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "N");
    (void)d2k::scalar_i(args, "K");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t N = d2k::scalar_i(args, "N");
    const int64_t K = d2k::scalar_i(args, "K");
    if (B < 1 || N < 1 || K % 128 != 0) throw d2k::abi_error("solution: need B, N >= 1 and K a multiple of 128");
    const __nv_bfloat16* x = d2k::data<const __nv_bfloat16>(d2k::input(args, "x"));
    const int32_t* qweight = d2k::data<const int32_t>(d2k::input(args, "qweight"));
    const __nv_bfloat16* scales = d2k::data<const __nv_bfloat16>(d2k::input(args, "scales"));
    __nv_bfloat16* y = d2k::data<__nv_bfloat16>(d2k::output(args, "y"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)x; (void)qweight; (void)scales; (void)y;
    // TODO: y. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
