// stream_compaction — the arguments every implementation reads: the row count, the predicate's
// bound and the three input and four output tensors (checked for device, dtype and shape by
// solution.h's accessors).
#pragma once
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace sc {

struct Params {
  int64_t n;
  int32_t date_lt;  ///< keep l_shipdate < date_lt
};

struct Columns {
  const int32_t* shipdate;
  const float* price;
  const int32_t* partkey;
  int32_t* out_shipdate;
  float* out_price;
  int32_t* out_partkey;
  int64_t* count;
};

inline Params read_params(const d2k_args* a) {
  Params p{};
  p.n = d2k::scalar_i(a, "N");
  if (p.n < 1 || p.n > (int64_t{1} << 31) - 1) throw d2k::abi_error("stream_compaction: N must be in [1, 2^31 - 1]");
  const int64_t lt = d2k::scalar_i(a, "date_lt");
  if (lt < INT32_MIN || lt > INT32_MAX) throw d2k::abi_error("stream_compaction: date_lt must fit int32");
  p.date_lt = static_cast<int32_t>(lt);
  return p;
}

inline Columns read_columns(const d2k_args* a, const Params& p, DLDeviceType dev) {
  using d2k::dl::f32;
  using d2k::dl::i32;
  using d2k::dl::i64;
  return Columns{d2k::data<const int32_t>(d2k::input(a, "l_shipdate", dev, i32, {p.n})),
                 d2k::data<const float>(d2k::input(a, "l_extendedprice", dev, f32, {p.n})),
                 d2k::data<const int32_t>(d2k::input(a, "l_partkey", dev, i32, {p.n})),
                 d2k::data<int32_t>(d2k::output(a, "out_shipdate", dev, i32, {p.n})),
                 d2k::data<float>(d2k::output(a, "out_extendedprice", dev, f32, {p.n})),
                 d2k::data<int32_t>(d2k::output(a, "out_partkey", dev, i32, {p.n})),
                 d2k::data<int64_t>(d2k::output(a, "count", dev, i64, {1}))};
}

}  // namespace sc
