// fused_add_rmsnorm — starter. Read spec.md: compute residual_out = bf16(x + residual) and
// out = bf16(residual_out * rsqrt(mean(residual_out^2) + eps) * weight) for T rows of length H.
// This skeleton validates its arguments and launches nothing, so it fails correctness (the
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
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    const float eps = static_cast<float>(d2k::scalar_f(args, "eps"));
    if (T < 0 || H < 1) throw d2k::abi_error("solution: need T >= 0 and H >= 1");
    const __nv_bfloat16* x = d2k::data<const __nv_bfloat16>(d2k::input(args, "x"));
    const __nv_bfloat16* residual = d2k::data<const __nv_bfloat16>(d2k::input(args, "residual"));
    const __nv_bfloat16* weight = d2k::data<const __nv_bfloat16>(d2k::input(args, "weight"));
    __nv_bfloat16* out = d2k::data<__nv_bfloat16>(d2k::output(args, "out"));
    __nv_bfloat16* residual_out = d2k::data<__nv_bfloat16>(d2k::output(args, "residual_out"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)eps; (void)x; (void)residual; (void)weight; (void)out; (void)residual_out;
    // TODO: the fused add + RMSNorm. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
