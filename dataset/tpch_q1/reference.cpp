// tpch_q1 — golden host implementation (same ABI, host tensors, stream NULL).
//
// One loop over the rows in order: the WHERE clause, the group from (l_returnflag, l_linestatus),
// the exact fixed-point sums (sum_charge in unsigned __int128: it passes 2^63 at scale factor
// 100), then the averages as sum / count in double (one rounding each; 0 for an empty group).
#include <cstdint>
#include <string>

#include "d2k/solution.h"
#include "q1_args.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const q1::Columns c = q1::read_columns(args, kDLCPU);
    const q1::Outputs o = q1::read_outputs(args, kDLCPU);
    int64_t qty[q1::kGroups] = {}, base[q1::kGroups] = {}, disc_price[q1::kGroups] = {}, disc[q1::kGroups] = {},
            count[q1::kGroups] = {};
    unsigned __int128 charge[q1::kGroups] = {};
    for (int64_t i = 0; i < c.n; ++i) {
      if (c.shipdate[i] > c.shipdate_max) continue;
      const int g = q1::group_of(c.flag[i], c.status[i]);
      if (g < 0)
        throw d2k::abi_error("tpch_q1: row " + std::to_string(i) + " has l_returnflag/l_linestatus outside A,N,R / F,O");
      const int64_t dp = c.price[i] * (100 - c.discount[i]);
      qty[g] += c.quantity[i];
      base[g] += c.price[i];
      disc_price[g] += dp;
      charge[g] += static_cast<unsigned __int128>(dp) * static_cast<unsigned __int128>(100 + c.tax[i]);
      disc[g] += c.discount[i];
      count[g] += 1;
    }
    for (int g = 0; g < q1::kGroups; ++g) {
      o.sum_qty[g] = qty[g];
      o.sum_base_price[g] = base[g];
      o.sum_disc_price[g] = disc_price[g];
      o.sum_charge[2 * g] = static_cast<int64_t>(static_cast<uint64_t>(charge[g] >> 64));
      o.sum_charge[2 * g + 1] = static_cast<int64_t>(static_cast<uint64_t>(charge[g]));
      o.count_order[g] = count[g];
      const double n = static_cast<double>(count[g]);
      o.avg_qty[g] = count[g] ? static_cast<double>(qty[g]) / n : 0.0;
      o.avg_price[g] = count[g] ? static_cast<double>(base[g]) / n : 0.0;
      o.avg_disc[g] = count[g] ? static_cast<double>(disc[g]) / n : 0.0;
    }
    return D2K_OK;
  });
}
