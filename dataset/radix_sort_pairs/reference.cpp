// radix_sort_pairs — golden host implementation (same ABI, host tensors, stream NULL).
//
// A stable sort of the pairs by key: the pair indices ordered by (key, index), which is the
// stable order by construction (equal keys keep their input order), then keys and values
// gathered in that order. Values are copied, never computed, so the golden is exact.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "d2k/solution.h"
#include "rs_args.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const rs::Params p = rs::read_params(args);
    const rs::Pairs t = rs::read_pairs(args, p, kDLCPU);
    std::vector<int64_t> order(static_cast<size_t>(p.n));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return t.keys[a] != t.keys[b] ? t.keys[a] < t.keys[b] : a < b;
    });
    for (int64_t i = 0; i < p.n; ++i) {
      t.keys_out[i] = t.keys[order[static_cast<size_t>(i)]];
      t.values_out[i] = t.values[order[static_cast<size_t>(i)]];
    }
    return D2K_OK;
  });
}
