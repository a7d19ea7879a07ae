// muon_optimizer_step — starter. Read spec.md: compute momentum_out, update and param_out for a
// batch of B matrices of M x N. This skeleton validates its arguments and launches nothing, so
// it fails correctness (the harness poisons the outputs before every call) until you write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "B");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), M = d2k::scalar_i(args, "M"), N = d2k::scalar_i(args, "N");
    const double lr = d2k::scalar_f(args, "lr");
    const double beta = d2k::scalar_f(args, "momentum_beta");
    const double wd = d2k::scalar_f(args, "weight_decay");
    const double eps = d2k::scalar_f(args, "eps");
    const float* param = d2k::data<const float>(d2k::input(args, "param"));
    const __nv_bfloat16* grad = d2k::data<const __nv_bfloat16>(d2k::input(args, "grad"));
    const float* momentum = d2k::data<const float>(d2k::input(args, "momentum"));
    float* momentum_out = d2k::data<float>(d2k::output(args, "momentum_out"));
    __nv_bfloat16* update = d2k::data<__nv_bfloat16>(d2k::output(args, "update"));
    float* param_out = d2k::data<float>(d2k::output(args, "param_out"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)B; (void)M; (void)N; (void)lr; (void)beta; (void)wd; (void)eps;
    (void)param; (void)grad; (void)momentum; (void)momentum_out; (void)update; (void)param_out;
    // TODO: the Muon step. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
