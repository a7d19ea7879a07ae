// moe_topk_router — starter, cutlass track. Read spec.md: for T tokens of E fp32 router logits,
// write each token's K experts (largest logits, ties to the lower id) with their renormalised
// softmax weights, the tokens per expert, their exclusive prefix sum and the (token, slot) pairs
// grouped by expert. The cutlass track compiles with the CUTLASS and CuTe headers (header-only:
// nothing is linked). This skeleton launches nothing, so it fails correctness (the harness poisons
// the outputs before every call) until you write it.
#include <cuda_runtime.h>

#include <cstdint>

#include <cute/tensor.hpp>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "T");
    (void)d2k::scalar_i(args, "E");
    (void)d2k::scalar_i(args, "K");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t E = d2k::scalar_i(args, "E");
    const int64_t K = d2k::scalar_i(args, "K");
    if (T < 1 || K < 1 || K > E) throw d2k::abi_error("solution: need T >= 1 and 1 <= K <= E");
    const float* logits = d2k::data<const float>(d2k::input(args, "logits"));
    float* weights = d2k::data<float>(d2k::output(args, "topk_weights"));
    int32_t* ids = d2k::data<int32_t>(d2k::output(args, "topk_ids"));
    int32_t* counts = d2k::data<int32_t>(d2k::output(args, "expert_counts"));
    int32_t* offsets = d2k::data<int32_t>(d2k::output(args, "expert_offsets"));
    int32_t* perm = d2k::data<int32_t>(d2k::output(args, "permutation"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)logits; (void)weights; (void)ids; (void)counts; (void)offsets; (void)perm;
    // TODO: per token the K largest logits (ties: lower id first) and their renormalised weights;
    // then the per-expert counts, offsets and the permutation grouped by expert. Issue all work on
    // `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
