// paged_attention_decode — starter. Read spec.md: for each of B sequences and each of its 32
// query heads, attend over the sequence's seq_lens[b] cached tokens, found through the block
// table in the paged bf16 KV cache (8 KV heads, GQA), and write o (bf16). This skeleton validates
// its arguments and launches nothing, so it fails correctness (the harness poisons the outputs
// before every call) until you write it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here). Ask for the scratch you need.
    (void)d2k::scalar_i(args, "B");
    (void)d2k::scalar_i(args, "P");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), P = d2k::scalar_i(args, "P");
    const float scale = static_cast<float>(d2k::scalar_f(args, "scale"));
    if (B < 1 || P < 1) throw d2k::abi_error("solution: need B >= 1 and P >= 1");
    const __nv_bfloat16* q = d2k::data<const __nv_bfloat16>(d2k::input(args, "q"));
    const __nv_bfloat16* k_cache = d2k::data<const __nv_bfloat16>(d2k::input(args, "k_cache"));
    const __nv_bfloat16* v_cache = d2k::data<const __nv_bfloat16>(d2k::input(args, "v_cache"));
    const int32_t* block_table = d2k::data<const int32_t>(d2k::input(args, "block_table"));
    const int32_t* seq_lens = d2k::data<const int32_t>(d2k::input(args, "seq_lens"));
    __nv_bfloat16* o = d2k::data<__nv_bfloat16>(d2k::output(args, "o"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)scale; (void)q; (void)k_cache; (void)v_cache; (void)block_table; (void)seq_lens; (void)o;
    // TODO: o. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
