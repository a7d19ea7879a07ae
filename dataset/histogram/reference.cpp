// histogram — golden host implementation (same ABI, host tensors, stream NULL).
//
// One loop over the values in order: a value below B adds one to its bin, any other value is
// counted nowhere. Integer counting is exact, so the golden is exact.
#include <cstdint>
#include <cstring>

#include "d2k/solution.h"
#include "hist_args.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)hist::read_params(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const hist::Params p = hist::read_params(args);
    const hist::Tensors t = hist::read_tensors(args, p, kDLCPU);
    std::memset(t.counts, 0, static_cast<size_t>(p.b) * sizeof(uint32_t));
    const uint64_t bins = static_cast<uint64_t>(p.b);
    for (int64_t i = 0; i < p.n; ++i)
      if (t.values[i] < bins) ++t.counts[t.values[i]];
    return D2K_OK;
  });
}
