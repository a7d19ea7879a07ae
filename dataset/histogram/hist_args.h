// histogram — the arguments every implementation reads: the value count N, the bin count B, the
// uint32 values and the uint32 counts (checked for device, dtype and shape by solution.h's
// accessors).
#pragma once
#include <cstdint>

#include "d2k/solution.h"

namespace hist {

inline constexpr DLDataType kU32 = {kDLUInt, 32, 1};

struct Params {
  int64_t n;  ///< values, [1, 2^32)
  int64_t b;  ///< bins, [1, 65536]
};

struct Tensors {
  const uint32_t* values;
  uint32_t* counts;
};

inline Params read_params(const d2k_args* a) {
  Params p{d2k::scalar_i(a, "N"), d2k::scalar_i(a, "B")};
  if (p.n < 1 || p.n > 4294967295ll) throw d2k::abi_error("histogram: N must be in [1, 2^32 - 1]");
  if (p.b < 1 || p.b > 65536) throw d2k::abi_error("histogram: B must be in [1, 65536]");
  return p;
}

inline Tensors read_tensors(const d2k_args* a, const Params& p, DLDeviceType dev) {
  return Tensors{d2k::data<const uint32_t>(d2k::input(a, "values", dev, kU32, {p.n})),
                 d2k::data<uint32_t>(d2k::output(a, "counts", dev, kU32, {p.b}))};
}

}  // namespace hist
