// chunked_linear_attention — starter. Read spec.md: causal linear attention with a per-step
// log-decay. bf16 q, k, v [B,S,H,D] (D = 64 or 128) and fp32 a [B,H,S] (a <= 0); per (b, h), with
// S_0 = 0: S_t = exp(a_t) S_{t-1} + k_t^T v_t and o_t = q_t S_t. Write o [B,S,H,D] (bf16) and the
// final state [B,H,D,D] (fp32, [key dim][value dim]).
// This skeleton validates its arguments and launches nothing, so it fails correctness (the harness
// poisons the outputs before every call) until you write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

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
    const int64_t H = d2k::scalar_i(args, "H");
    const int64_t S = d2k::scalar_i(args, "S");
    const int64_t D = d2k::scalar_i(args, "D");  // 64 or 128
    if (B < 1 || H < 1 || S < 1 || (D != 64 && D != 128))
      throw d2k::abi_error("solution: need B, H, S >= 1 and D = 64 or 128");
    const __nv_bfloat16* q = d2k::data<const __nv_bfloat16>(d2k::input(args, "q"));  // [B, S, H, D]
    const __nv_bfloat16* k = d2k::data<const __nv_bfloat16>(d2k::input(args, "k"));  // [B, S, H, D]
    const __nv_bfloat16* v = d2k::data<const __nv_bfloat16>(d2k::input(args, "v"));  // [B, S, H, D]
    const float* a = d2k::data<const float>(d2k::input(args, "a"));                  // [B, H, S]
    __nv_bfloat16* o = d2k::data<__nv_bfloat16>(d2k::output(args, "o"));             // [B, S, H, D]
    float* final_state = d2k::data<float>(d2k::output(args, "final_state"));         // [B, H, D, D]
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)q; (void)k; (void)v; (void)a; (void)o; (void)final_state;
    // TODO: o and final_state. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
