// fp8_blockwise_gemm — starter, cutlass track. Read spec.md: c[m, n] = sum_k a[m, k] · b[n, k] ·
// a_scales[m, k/128] · b_scales[n/128, k/128], a [M, K] and b [N, K] float8_e4m3fn (K contiguous),
// fp32 scales per 1 x 128 block of a and per 128 x 128 block of b, sums in fp32, c rounded once to
// bf16. The cutlass track compiles with the CUTLASS and CuTe headers (header-only: nothing is
// linked). This skeleton launches nothing, so it fails correctness (the harness poisons the
// outputs before every call) until you write it.
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
    if (M < 1 || N < 8 || K % 128 != 0) throw d2k::abi_error("solution: need M >= 1, N >= 8 and K a multiple of 128");
    const auto* a = d2k::data<const cutlass::float_e4m3_t>(d2k::input(args, "a"));
    const auto* b = d2k::data<const cutlass::float_e4m3_t>(d2k::input(args, "b"));
    const float* a_scales = d2k::data<const float>(d2k::input(args, "a_scales"));  // [M, K/128]
    const float* b_scales = d2k::data<const float>(d2k::input(args, "b_scales"));  // [ceil(N/128), K/128]
    auto* c = d2k::data<cutlass::bfloat16_t>(d2k::output(args, "c"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    // CuTe views of the K-major operands (M, K) and (N, K), for the kernel to tile
    // (cute::local_tile) and copy with TMA / copy atoms.
    [[maybe_unused]] auto layout_a = cute::make_layout(cute::make_shape(M, K), cute::make_stride(K, cute::Int<1>{}));
    [[maybe_unused]] auto layout_b = cute::make_layout(cute::make_shape(N, K), cute::make_stride(K, cute::Int<1>{}));
    (void)a; (void)b; (void)a_scales; (void)b_scales; (void)c;
    // TODO: c. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
