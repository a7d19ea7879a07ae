// tpch_q6 — starter. Read spec.md: sum l_extendedprice * l_discount (int64 fixed-point) over the
// lineitem rows that pass the query's date, discount and quantity predicates, and write the exact
// int64 revenue. This skeleton validates its arguments and writes nothing, so it fails
// correctness (the harness poisons revenue before every call) until you write it.
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
    const int64_t date_lo = d2k::scalar_i(args, "date_lo");
    const int64_t date_hi = d2k::scalar_i(args, "date_hi");
    const int64_t discount_lo = d2k::scalar_i(args, "discount_lo");
    const int64_t discount_hi = d2k::scalar_i(args, "discount_hi");
    const int64_t quantity_lt = d2k::scalar_i(args, "quantity_lt");
    const int32_t* l_shipdate = d2k::data<const int32_t>(d2k::input(args, "l_shipdate"));
    const int64_t* l_discount = d2k::data<const int64_t>(d2k::input(args, "l_discount"));
    const int64_t* l_quantity = d2k::data<const int64_t>(d2k::input(args, "l_quantity"));
    const int64_t* l_extendedprice = d2k::data<const int64_t>(d2k::input(args, "l_extendedprice"));
    int64_t* revenue = d2k::data<int64_t>(d2k::output(args, "revenue"));
    [[maybe_unused]] cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
    (void)date_lo; (void)date_hi; (void)discount_lo; (void)discount_hi; (void)quantity_lt;
    (void)l_shipdate; (void)l_discount; (void)l_quantity; (void)l_extendedprice; (void)revenue;
    // TODO: the query. Issue all work on `stream`; use args->workspace for scratch.
    return D2K_OK;
  });
}
