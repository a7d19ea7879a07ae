// gemm_bias_gelu — starter, cutlass track. Read spec.md: out[M,N] = gelu_tanh(A[M,K] B[K,N] +
// bias[N]), all row-major bf16, fp32 accumulation. The cutlass track compiles with the CUTLASS
// and CuTe headers (header-only: nothing is linked). This skeleton launches nothing, so it fails
// correctness (the harness poisons the outputs before every call) until you write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include <cute/tensor.hpp>
#include <cutlass/numeric_types.h>

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
    const cutlass::bfloat16_t* A = d2k::data<const cutlass::bfloat16_t>(d2k::input(args, "A"));
    const cutlass::bfloat16_t* B = d2k::data<const cutlass::bfloat16_t>(d2k::input(args, "B"));
    const cutlass::bfloat16_t* bias = d2k::data<const cutlass::bfloat16_t>(d2k::input(args, "bias"));
    cutlass::bfloat16_t* out = d2k::data<cutlass::bfloat16_t>(d2k::output(args, "out"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    // CuTe views of the row-major operands, for a kernel to tile (cute::local_tile) and copy.
    [[maybe_unused]] auto a = cute::make_tensor(A, cute::make_layout(cute::make_shape(M, K), cute::make_stride(K, cute::Int<1>{})));
    [[maybe_unused]] auto b = cute::make_tensor(B, cute::make_layout(cute::make_shape(K, N), cute::make_stride(N, cute::Int<1>{})));
    (void)bias; (void)out;
    // TODO: out = gelu_tanh(A B + bias). Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
