// groupby_aggregate — golden host implementation (same ABI, host tensors, stream NULL).
//
// A std::unordered_map from key to (count, sum, min, max), one pass over the rows in order; the
// groups are written in order of first appearance. Integer data: the answer is exact. The sum is
// accumulated in uint64 so that it wraps modulo 2^64 (the task's definition) without signed
// overflow, which C++ leaves undefined.
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "d2k/solution.h"

namespace {

struct Group {
  int64_t slot;  ///< output row
  int64_t count;
  uint64_t sum;  ///< wrapping
  int64_t min, max;
};

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t n = d2k::scalar_i(args, "N");
    if (n < 0) throw d2k::abi_error("groupby_aggregate: N must be >= 0");
    const auto* keys = d2k::data<const int64_t>(d2k::input(args, "keys", kDLCPU, d2k::dl::i64, {n}));
    const auto* vals = d2k::data<const int64_t>(d2k::input(args, "values", kDLCPU, d2k::dl::i64, {n}));
    auto* ok = d2k::data<int64_t>(d2k::output(args, "out_keys", kDLCPU, d2k::dl::i64, {n}));
    auto* oc = d2k::data<int64_t>(d2k::output(args, "out_count", kDLCPU, d2k::dl::i64, {n}));
    auto* os = d2k::data<int64_t>(d2k::output(args, "out_sum", kDLCPU, d2k::dl::i64, {n}));
    auto* omin = d2k::data<int64_t>(d2k::output(args, "out_min", kDLCPU, d2k::dl::i64, {n}));
    auto* omax = d2k::data<int64_t>(d2k::output(args, "out_max", kDLCPU, d2k::dl::i64, {n}));
    auto* ng = d2k::data<int64_t>(d2k::output(args, "num_groups", kDLCPU, d2k::dl::i64, {1}));

    std::unordered_map<int64_t, Group> groups;
    std::vector<int64_t> order;  // keys in order of first appearance
    for (int64_t i = 0; i < n; ++i) {
      auto [it, fresh] = groups.try_emplace(keys[i], Group{static_cast<int64_t>(order.size()), 0, 0,
                                                           std::numeric_limits<int64_t>::max(),
                                                           std::numeric_limits<int64_t>::min()});
      if (fresh) order.push_back(keys[i]);
      Group& g = it->second;
      ++g.count;
      g.sum += static_cast<uint64_t>(vals[i]);
      if (vals[i] < g.min) g.min = vals[i];
      if (vals[i] > g.max) g.max = vals[i];
    }
    for (const int64_t k : order) {
      const Group& g = groups.at(k);
      ok[g.slot] = k;
      oc[g.slot] = g.count;
      os[g.slot] = static_cast<int64_t>(g.sum);  // two's complement conversion (C++20)
      omin[g.slot] = g.min;
      omax[g.slot] = g.max;
    }
    *ng = static_cast<int64_t>(order.size());
    return D2K_OK;
  });
}
