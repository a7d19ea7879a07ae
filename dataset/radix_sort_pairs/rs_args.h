// radix_sort_pairs — the arguments every implementation reads: the pair count and the two input
// and two output tensors (checked for device, dtype and shape by solution.h's accessors).
#pragma once
#include <cstdint>

#include "d2k/solution.h"

namespace rs {

/// uint32 (solution.h's d2k::dl lists the dtypes the pilots use; this task adds its own).
inline constexpr DLDataType kU32 = {kDLUInt, 32, 1};

/// Largest N: the expert's look-back words hold a digit's running count in 30 bits.
inline constexpr int64_t kMaxN = (int64_t{1} << 30) - 1;

struct Params {
  int64_t n;
};

struct Pairs {
  const uint32_t* keys;
  const uint32_t* values;
  uint32_t* keys_out;
  uint32_t* values_out;
};

inline Params read_params(const d2k_args* a) {
  Params p{};
  p.n = d2k::scalar_i(a, "N");
  if (p.n < 1 || p.n > kMaxN) throw d2k::abi_error("radix_sort_pairs: N must be in [1, 2^30 - 1]");
  return p;
}

inline Pairs read_pairs(const d2k_args* a, const Params& p, DLDeviceType dev) {
  return Pairs{d2k::data<const uint32_t>(d2k::input(a, "keys", dev, kU32, {p.n})),
               d2k::data<const uint32_t>(d2k::input(a, "values", dev, kU32, {p.n})),
               d2k::data<uint32_t>(d2k::output(a, "keys_out", dev, kU32, {p.n})),
               d2k::data<uint32_t>(d2k::output(a, "values_out", dev, kU32, {p.n}))};
}

}  // namespace rs
