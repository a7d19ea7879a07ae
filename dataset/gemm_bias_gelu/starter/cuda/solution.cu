// gemm_bias_gelu — starter. Read spec.md: out[M,N] = gelu_tanh(A[M,K] B[K,N] + bias[N]), all
// row-major bf16, fp32 accumulation. This skeleton validates its arguments and launches
// nothing, so it fails correctness (the harness poisons the outputs before every call) until you
// write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "M");
    (void)d2k::scalar_i(args, "N");
    (void)d2k::scalar_i(args, "K");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t M = d2k::scalar_i(args, "M");
    const int64_t N = d2k::scalar_i(args, "N");
    const int64_t K = d2k::scalar_i(args, "K");
    if (M < 1 || N < 1 || K < 1) throw d2k::abi_error("solution: need M, N, K >= 1");
    const __nv_bfloat16* A = d2k::data<const __nv_bfloat16>(d2k::input(args, "A"));
    const __nv_bfloat16* B = d2k::data<const __nv_bfloat16>(d2k::input(args, "B"));
    const __nv_bfloat16* bias = d2k::data<const __nv_bfloat16>(d2k::input(args, "bias"));
    __nv_bfloat16* out = d2k::data<__nv_bfloat16>(d2k::output(args, "out"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)A; (void)B; (void)bias; (void)out;
    // TODO: out = gelu_tanh(A B + bias). Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
