// tpch_q1 — starter. Read spec.md: per (l_returnflag, l_linestatus) group of the rows shipped up to
// shipdate_max, the exact fixed-point sums (sum_charge as 128 bits), the count and three float64
// averages, in the query's ORDER BY. This skeleton validates its arguments and writes nothing, so
// it fails correctness (the harness poisons the outputs before every call) until you write it.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    // Decide from shapes only (data pointers are NULL here).
    (void)d2k::scalar_i(args, "N");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N");
    if (N < 0) throw d2k::abi_error("solution: need N >= 0");
    const int64_t shipdate_max = d2k::scalar_i(args, "shipdate_max");
    const int8_t* l_returnflag = d2k::data<const int8_t>(d2k::input(args, "l_returnflag"));
    const int8_t* l_linestatus = d2k::data<const int8_t>(d2k::input(args, "l_linestatus"));
    const int64_t* l_quantity = d2k::data<const int64_t>(d2k::input(args, "l_quantity"));
    const int64_t* l_extendedprice = d2k::data<const int64_t>(d2k::input(args, "l_extendedprice"));
    const int64_t* l_discount = d2k::data<const int64_t>(d2k::input(args, "l_discount"));
    const int64_t* l_tax = d2k::data<const int64_t>(d2k::input(args, "l_tax"));
    const int32_t* l_shipdate = d2k::data<const int32_t>(d2k::input(args, "l_shipdate"));
    int64_t* sum_qty = d2k::data<int64_t>(d2k::output(args, "sum_qty"));
    int64_t* sum_charge = d2k::data<int64_t>(d2k::output(args, "sum_charge"));  // [6][2]: high, low
    double* avg_qty = d2k::data<double>(d2k::output(args, "avg_qty"));
    int64_t* count_order = d2k::data<int64_t>(d2k::output(args, "count_order"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)shipdate_max; (void)l_returnflag; (void)l_linestatus; (void)l_quantity; (void)l_extendedprice;
    (void)l_discount; (void)l_tax; (void)l_shipdate; (void)sum_qty; (void)sum_charge; (void)avg_qty;
    (void)count_order;
    // TODO: the query, and the other outputs (sum_base_price, sum_disc_price, avg_price, avg_disc).
    // Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
