// tpch_q1 — the arguments every implementation reads (checked by solution.h's accessors) and the
// group numbering the outputs use.
#pragma once
#include <cstdint>

#include "d2k/solution.h"

#ifdef __CUDACC__
#define Q1_HD __host__ __device__ __forceinline__
#else
#define Q1_HD inline
#endif

namespace q1 {

inline constexpr int kGroups = 6;  ///< l_returnflag A, N, R x l_linestatus F, O, in ORDER BY order
inline constexpr DLDataType kInt8 = {kDLInt, 8, 1};  // solution.h's d2k::dl has no int8

/// Output row of (flag, status): flag A, N, R -> 0, 1, 2; status F, O -> 0, 1; row = 2 flag + status.
/// -1 for a value outside the domain (which the generator never makes).
Q1_HD int group_of(int8_t flag, int8_t status) {
  const int f = flag == 'A' ? 0 : flag == 'N' ? 1 : flag == 'R' ? 2 : -1;
  const int s = status == 'F' ? 0 : status == 'O' ? 1 : -1;
  return f < 0 || s < 0 ? -1 : 2 * f + s;
}

struct Columns {
  int64_t n;
  int32_t shipdate_max;
  const int8_t *flag, *status;
  const int64_t *quantity, *price, *discount, *tax;
  const int32_t* shipdate;
};

struct Outputs {
  int64_t *sum_qty, *sum_base_price, *sum_disc_price, *sum_charge;  ///< sum_charge: [G][2] (hi, lo)
  double *avg_qty, *avg_price, *avg_disc;
  int64_t* count_order;
};

inline Columns read_columns(const d2k_args* a, DLDeviceType dev) {
  using d2k::dl::i32;
  using d2k::dl::i64;
  Columns c{};
  c.n = d2k::scalar_i(a, "N");
  if (c.n < 0) throw d2k::abi_error("tpch_q1: N must be >= 0");
  const int64_t g = d2k::scalar_i(a, "G");
  if (g != kGroups) throw d2k::abi_error("tpch_q1: G must be 6");
  const int64_t m = d2k::scalar_i(a, "shipdate_max");
  if (m < INT32_MIN || m > INT32_MAX) throw d2k::abi_error("tpch_q1: shipdate_max must fit int32");
  c.shipdate_max = static_cast<int32_t>(m);
  c.flag = d2k::data<const int8_t>(d2k::input(a, "l_returnflag", dev, kInt8, {c.n}));
  c.status = d2k::data<const int8_t>(d2k::input(a, "l_linestatus", dev, kInt8, {c.n}));
  c.quantity = d2k::data<const int64_t>(d2k::input(a, "l_quantity", dev, i64, {c.n}));
  c.price = d2k::data<const int64_t>(d2k::input(a, "l_extendedprice", dev, i64, {c.n}));
  c.discount = d2k::data<const int64_t>(d2k::input(a, "l_discount", dev, i64, {c.n}));
  c.tax = d2k::data<const int64_t>(d2k::input(a, "l_tax", dev, i64, {c.n}));
  c.shipdate = d2k::data<const int32_t>(d2k::input(a, "l_shipdate", dev, i32, {c.n}));
  return c;
}

inline Outputs read_outputs(const d2k_args* a, DLDeviceType dev) {
  using d2k::dl::f64;
  using d2k::dl::i64;
  Outputs o{};
  o.sum_qty = d2k::data<int64_t>(d2k::output(a, "sum_qty", dev, i64, {int64_t{kGroups}}));
  o.sum_base_price = d2k::data<int64_t>(d2k::output(a, "sum_base_price", dev, i64, {int64_t{kGroups}}));
  o.sum_disc_price = d2k::data<int64_t>(d2k::output(a, "sum_disc_price", dev, i64, {int64_t{kGroups}}));
  o.sum_charge = d2k::data<int64_t>(d2k::output(a, "sum_charge", dev, i64, {int64_t{kGroups}, int64_t{2}}));
  o.avg_qty = d2k::data<double>(d2k::output(a, "avg_qty", dev, f64, {int64_t{kGroups}}));
  o.avg_price = d2k::data<double>(d2k::output(a, "avg_price", dev, f64, {int64_t{kGroups}}));
  o.avg_disc = d2k::data<double>(d2k::output(a, "avg_disc", dev, f64, {int64_t{kGroups}}));
  o.count_order = d2k::data<int64_t>(d2k::output(a, "count_order", dev, i64, {int64_t{kGroups}}));
  return o;
}

}  // namespace q1
