// flash_attention_forward — starter, cutlass track. Read spec.md: causal grouped-query attention over
// bf16 q [B,S,Hq,D], k and v [B,S,Hkv,D] (D = 128), write o [B,S,Hq,D] (bf16) and the natural-log
// log-sum-exp lse [B,Hq,S] (fp32) of each query's scaled scores over keys 0..i.
// The cutlass track compiles with the CUTLASS and CuTe headers (header-only: nothing is linked).
// This skeleton launches nothing, so it fails correctness (the harness poisons the outputs before
// every call) until you write it.
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
    (void)d2k::scalar_i(args, "S");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t S = d2k::scalar_i(args, "S");
    const int64_t Hq = d2k::scalar_i(args, "Hq");
    const int64_t Hkv = d2k::scalar_i(args, "Hkv");
    const int64_t D = d2k::scalar_i(args, "D");  // 128
    const float scale = static_cast<float>(d2k::scalar_f(args, "scale"));
    if (B < 1 || S < 1 || Hq < 1 || Hkv < 1 || Hq % Hkv != 0 || D != 128)
      throw d2k::abi_error("solution: need B, S, Hq, Hkv >= 1, Hq % Hkv == 0 and D == 128");
    const __nv_bfloat16* q = d2k::data<const __nv_bfloat16>(d2k::input(args, "q"));  // [B, S, Hq, D]
    const __nv_bfloat16* k = d2k::data<const __nv_bfloat16>(d2k::input(args, "k"));  // [B, S, Hkv, D]
    const __nv_bfloat16* v = d2k::data<const __nv_bfloat16>(d2k::input(args, "v"));  // [B, S, Hkv, D]
    __nv_bfloat16* o = d2k::data<__nv_bfloat16>(d2k::output(args, "o"));             // [B, S, Hq, D]
    float* lse = d2k::data<float>(d2k::output(args, "lse"));                          // [B, Hq, S]
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)scale; (void)q; (void)k; (void)v; (void)o; (void)lse;
    // TODO: o and lse. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
