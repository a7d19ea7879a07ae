// tpch_q6 — golden host implementation (same ABI, host tensors, stream NULL).
//
// One loop over the rows in order: the query's WHERE clause as written, then the product of
// price (cents) and discount (hundredths) added to an int64. Fixed-point integers throughout, so
// the answer is exact (no "fp64" rounding to speak of). The largest sum the axes allow,
// 2^30 rows x 10,495,000 cents x 10, is about 1.1e17, well inside int64.
#include <cstdint>

#include "d2k/solution.h"
#include "q6_args.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const q6::Params p = q6::read_params(args);
    const q6::Columns c = q6::read_columns(args, p, kDLCPU);
    int64_t revenue = 0;
    for (int64_t i = 0; i < p.n; ++i) {
      if (c.shipdate[i] >= p.date_lo && c.shipdate[i] < p.date_hi && c.discount[i] >= p.discount_lo &&
          c.discount[i] <= p.discount_hi && c.quantity[i] < p.quantity_lt)
        revenue += c.price[i] * c.discount[i];
    }
    *c.revenue = revenue;
    return D2K_OK;
  });
}
