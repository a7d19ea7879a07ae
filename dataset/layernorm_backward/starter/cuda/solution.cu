// layernorm_backward — starter. Read spec.md: from dy and x (bf16 [T, H]), the saved mean and rstd
// (fp32 [T]) and gamma (fp32 [H]), write dx (bf16 [T, H]) and the column sums dgamma, dbeta (fp32
// [H]). This skeleton validates its arguments and launches nothing, so it fails correctness (the
// harness poisons the outputs before every call) until you write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "T");
    (void)d2k::scalar_i(args, "H");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    if (T < 0 || H < 1) throw d2k::abi_error("solution: need T >= 0 and H >= 1");
    const __nv_bfloat16* dy = d2k::data<const __nv_bfloat16>(d2k::input(args, "dy"));
    const __nv_bfloat16* x = d2k::data<const __nv_bfloat16>(d2k::input(args, "x"));
    const float* mean = d2k::data<const float>(d2k::input(args, "mean"));
    const float* rstd = d2k::data<const float>(d2k::input(args, "rstd"));
    const float* gamma = d2k::data<const float>(d2k::input(args, "gamma"));
    __nv_bfloat16* dx = d2k::data<__nv_bfloat16>(d2k::output(args, "dx"));
    float* dgamma = d2k::data<float>(d2k::output(args, "dgamma"));
    float* dbeta = d2k::data<float>(d2k::output(args, "dbeta"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)dy; (void)x; (void)mean; (void)rstd; (void)gamma; (void)dx; (void)dgamma; (void)dbeta;
    // TODO: dx, dgamma and dbeta. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
