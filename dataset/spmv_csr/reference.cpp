// spmv_csr — golden host implementation (same ABI, host tensors, stream NULL).
//
// Each row's products summed in fp64 in storage order, rounded once to fp32. Products of two
// fp32 values are exact in fp64 and the sums of a row (at most 2^31 terms of magnitude < 2^128)
// lose at most L·2^-53 relative, far below fp32's 2^-24: the golden is the exact y rounded once.
// The row pointer is trusted only within [0, NNZ] (a malformed matrix is reported, not read out
// of bounds); a column outside [0, N) likewise.
#include <cstdint>
#include <string>

#include "d2k/solution.h"
#include "spmv_args.h"

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)spmv::read_params(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const spmv::Params p = spmv::read_params(args);
    const spmv::Tensors t = spmv::read_tensors(args, p, kDLCPU);
    if (t.row_ptr[0] != 0 || t.row_ptr[p.n] != p.nnz)
      throw d2k::abi_error("spmv_csr: row_ptr must start at 0 and end at NNZ");
    for (int64_t r = 0; r < p.n; ++r) {
      const int64_t b = t.row_ptr[r], e = t.row_ptr[r + 1];
      if (b > e) throw d2k::abi_error("spmv_csr: row_ptr decreases at row " + std::to_string(r));
      double s = 0.0;
      for (int64_t j = b; j < e; ++j) {
        const int32_t c = t.col_idx[j];
        if (c < 0 || c >= p.n) throw d2k::abi_error("spmv_csr: col_idx[" + std::to_string(j) + "] out of range");
        s += static_cast<double>(t.values[j]) * static_cast<double>(t.x[c]);
      }
      t.y[r] = static_cast<float>(s);
    }
    return D2K_OK;
  });
}
