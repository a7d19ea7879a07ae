// moe_grouped_gemm — fp64 golden reference on host tensors.
//
//   for every expert e, every row t in [offsets[e], offsets[e+1]), every n:
//     y[t, n] = bf16( sum_k x[t, k] * w[e, n, k] )      (sum in double, rounded once)
//
// Offsets that are not a partition of [0, T) (offsets[0] != 0, offsets[E] != T, or decreasing)
// are an error. Plain C++: built by the host compiler, no CUDA.
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"
#include "moe_gemm_args.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

/// Rows [r0, r1) of x times w_e^T; the weight is widened once per expert, not per row.
void expert_rows(const std::uint16_t* x, const std::uint16_t* we, int64_t r0, int64_t r1, int64_t K, int64_t N,
                 std::vector<double>& wd, std::uint16_t* y) {
  if (r0 == r1) return;
  wd.resize(static_cast<std::size_t>(N * K));
  for (int64_t i = 0; i < N * K; ++i) wd[static_cast<std::size_t>(i)] = bf16_to_double(we[i]);
  std::vector<double> xr(static_cast<std::size_t>(K));
  for (int64_t t = r0; t < r1; ++t) {
    for (int64_t k = 0; k < K; ++k) xr[static_cast<std::size_t>(k)] = bf16_to_double(x[t * K + k]);
    for (int64_t n = 0; n < N; ++n) {
      const double* wr = wd.data() + n * K;
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += xr[static_cast<std::size_t>(k)] * wr[k];
      y[t * N + n] = double_to_bf16(s);
    }
  }
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const moe_gemm::Args g = moe_gemm::bind(args, kDLCPU);
    moe_gemm::check_offsets(g.offsets, g.E, g.T, "reference");
    const auto* x = static_cast<const std::uint16_t*>(g.x);
    const auto* w = static_cast<const std::uint16_t*>(g.w);
    auto* y = static_cast<std::uint16_t*>(g.y);
    std::vector<double> wd;
    for (int64_t e = 0; e < g.E; ++e)
      expert_rows(x, w + e * g.N * g.K, g.offsets[e], g.offsets[e + 1], g.K, g.N, wd, y);
    return D2K_OK;
  });
}
