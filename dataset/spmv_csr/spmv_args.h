// spmv_csr — the arguments every implementation reads: N (rows = columns), NNZ, the CSR matrix
// (int32 row_ptr [N+1], int32 col_idx [NNZ], fp32 values [NNZ]), fp32 x [N] and fp32 y [N]
// (checked for device, dtype and shape by solution.h's accessors).
#pragma once
#include <cstdint>

#include "d2k/solution.h"

namespace spmv {

inline constexpr DLDataType kI32 = {kDLInt, 32, 1};
inline constexpr DLDataType kF32 = {kDLFloat, 32, 1};

struct Params {
  int64_t n;    ///< rows and columns, [1, 2^31 - 2]
  int64_t nnz;  ///< stored entries, [1, 2^31 - 1]
};

struct Tensors {
  const int32_t* row_ptr;
  const int32_t* col_idx;
  const float* values;
  const float* x;
  float* y;
};

inline Params read_params(const d2k_args* a) {
  Params p{d2k::scalar_i(a, "N"), d2k::scalar_i(a, "NNZ")};
  if (p.n < 1 || p.n > 2147483646ll) throw d2k::abi_error("spmv_csr: N must be in [1, 2^31 - 2]");
  if (p.nnz < 1 || p.nnz > 2147483647ll) throw d2k::abi_error("spmv_csr: NNZ must be in [1, 2^31 - 1]");
  return p;
}

inline Tensors read_tensors(const d2k_args* a, const Params& p, DLDeviceType dev) {
  return Tensors{d2k::data<const int32_t>(d2k::input(a, "row_ptr", dev, kI32, {p.n + 1})),
                 d2k::data<const int32_t>(d2k::input(a, "col_idx", dev, kI32, {p.nnz})),
                 d2k::data<const float>(d2k::input(a, "values", dev, kF32, {p.nnz})),
                 d2k::data<const float>(d2k::input(a, "x", dev, kF32, {p.n})),
                 d2k::data<float>(d2k::output(a, "y", dev, kF32, {p.n}))};
}

}  // namespace spmv
