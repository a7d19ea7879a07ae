// stream_compaction — golden host implementation (same ABI, host tensors, stream NULL).
//
// One loop over the rows in order: a row whose l_shipdate is below date_lt is appended to the
// three outputs. Values are copied, never computed, so the golden is exact (the float column is
// copied bit for bit).
#include <cstdint>

#include "d2k/solution.h"
#include "sc_args.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const sc::Params p = sc::read_params(args);
    const sc::Columns c = sc::read_columns(args, p, kDLCPU);
    int64_t kept = 0;
    for (int64_t i = 0; i < p.n; ++i) {
      if (!(c.shipdate[i] < p.date_lt)) continue;
      c.out_shipdate[kept] = c.shipdate[i];
      c.out_price[kept] = c.price[i];
      c.out_partkey[kept] = c.partkey[i];
      ++kept;
    }
    *c.count = kept;
    return D2K_OK;
  });
}
