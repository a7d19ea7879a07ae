// tpch_q6 — the arguments every implementation reads: the row count, the query's parameters and
// the four columns (checked for device, dtype and shape by solution.h's accessors).
#pragma once
#include <cstdint>

#include "d2k/solution.h"

namespace q6 {

struct Params {
  int64_t n;
  int32_t date_lo, date_hi;        ///< keep date_lo <= l_shipdate < date_hi
  int64_t discount_lo, discount_hi;  ///< keep discount_lo <= l_discount <= discount_hi
  int64_t quantity_lt;             ///< keep l_quantity < quantity_lt
};

struct Columns {
  const int32_t* shipdate;
  const int64_t* discount;
  const int64_t* quantity;
  const int64_t* price;
  int64_t* revenue;
};

inline int32_t as_date(int64_t v, const char* name) {
  if (v < INT32_MIN || v > INT32_MAX) throw d2k::abi_error(std::string("tpch_q6: ") + name + " must fit int32");
  return static_cast<int32_t>(v);
}

inline Params read_params(const d2k_args* a) {
  Params p{};
  p.n = d2k::scalar_i(a, "N");
  if (p.n < 0) throw d2k::abi_error("tpch_q6: N must be >= 0");
  p.date_lo = as_date(d2k::scalar_i(a, "date_lo"), "date_lo");
  p.date_hi = as_date(d2k::scalar_i(a, "date_hi"), "date_hi");
  p.discount_lo = d2k::scalar_i(a, "discount_lo");
  p.discount_hi = d2k::scalar_i(a, "discount_hi");
  p.quantity_lt = d2k::scalar_i(a, "quantity_lt");
  return p;
}

inline Columns read_columns(const d2k_args* a, const Params& p, DLDeviceType dev) {
  using d2k::dl::i32;
  using d2k::dl::i64;
  return Columns{d2k::data<const int32_t>(d2k::input(a, "l_shipdate", dev, i32, {p.n})),
                 d2k::data<const int64_t>(d2k::input(a, "l_discount", dev, i64, {p.n})),
                 d2k::data<const int64_t>(d2k::input(a, "l_quantity", dev, i64, {p.n})),
                 d2k::data<const int64_t>(d2k::input(a, "l_extendedprice", dev, i64, {p.n})),
                 d2k::data<int64_t>(d2k::output(a, "revenue", dev, i64, {1}))};
}

}  // namespace q6
