// topk_topp_mask — starter. Read spec.md: for B rows of V fp32 logits, write the renormalised
// probabilities of the tokens kept by top-k and top-p (ties by value) and 0 elsewhere. This
// skeleton validates its arguments and launches nothing, so it fails correctness (the harness
// poisons the outputs before every call) until you write it.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "B");
    (void)d2k::scalar_i(args, "V");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t k = d2k::scalar_i(args, "k");
    const double top_p = d2k::scalar_f(args, "top_p");
    const double temperature = d2k::scalar_f(args, "temperature");
    if (B < 0 || V < 1) throw d2k::abi_error("solution: need B >= 0 and V >= 1");
    const float* logits = d2k::data<const float>(d2k::input(args, "logits"));
    float* probs = d2k::data<float>(d2k::output(args, "probs"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)k; (void)top_p; (void)temperature; (void)logits; (void)probs;
    // TODO: per row, the threshold tau and the kept probabilities. Issue all work on `stream`;
    // use args->workspace for scratch.
    return D2K_OK;
  });
}
