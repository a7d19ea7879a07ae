// hash_join — golden host implementation (same ABI, host tensors, stream NULL).
//
// A std::unordered_map from build key to build payload, then one pass over the probe rows in
// order, writing each (build payload, probe payload) match at the next output row. Integer data:
// there is nothing to accumulate, so "fp64" does not apply; the answer is exact.
// The build side must be a primary key: a repeated build key is reported as bad input.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t r = d2k::scalar_i(args, "R");
    const int64_t s = d2k::scalar_i(args, "S");
    if (r < 0 || s < 0) throw d2k::abi_error("hash_join: R and S must be >= 0");
    const auto* bk = d2k::data<const int32_t>(d2k::input(args, "build_keys", kDLCPU, d2k::dl::i32, {r}));
    const auto* bp = d2k::data<const int32_t>(d2k::input(args, "build_payload", kDLCPU, d2k::dl::i32, {r}));
    const auto* pk = d2k::data<const int32_t>(d2k::input(args, "probe_keys", kDLCPU, d2k::dl::i32, {s}));
    const auto* pp = d2k::data<const int32_t>(d2k::input(args, "probe_payload", kDLCPU, d2k::dl::i32, {s}));
    auto* ob = d2k::data<int32_t>(d2k::output(args, "out_build_payload", kDLCPU, d2k::dl::i32, {s}));
    auto* op = d2k::data<int32_t>(d2k::output(args, "out_probe_payload", kDLCPU, d2k::dl::i32, {s}));
    auto* cnt = d2k::data<int64_t>(d2k::output(args, "count", kDLCPU, d2k::dl::i64, {1}));

    std::unordered_map<int32_t, int32_t> table;
    table.reserve(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) {
      if (!table.emplace(bk[i], bp[i]).second)
        throw d2k::abi_error("hash_join: build_keys[" + std::to_string(i) + "] = " +
                             std::to_string(bk[i]) + " repeats an earlier key (not a primary key)");
    }
    int64_t n = 0;
    for (int64_t i = 0; i < s; ++i) {
      auto it = table.find(pk[i]);
      if (it == table.end()) continue;
      ob[n] = it->second;
      op[n] = pp[i];
      ++n;
    }
    *cnt = n;
    return D2K_OK;
  });
}
