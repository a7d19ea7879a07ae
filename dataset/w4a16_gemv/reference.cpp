// w4a16_gemv — fp64 golden reference on host tensors.
//
//   w[n, k]  = (q[n, k] - 8) * scales[n, k / 128]          q[n, k] = (qweight[n, k / 8] >> 4 * (k % 8)) & 15
//   y[b, n]  = bf16( sum_k x[b, k] * w[n, k] )
//
// Every product and the sum in double (each product x * (q - 8) * s is exact in double: 8 + 4 + 8
// significant bits), one rounding to bf16 at the end (to nearest even). Plain C++: built by the
// host compiler, no CUDA.
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

constexpr int64_t kGroup = 128;  // quantisation group along K

/// One weight row dequantised to double: (q - 8) * scale, exact.
void dequant_row(const std::uint32_t* qrow, const std::uint16_t* srow, int64_t K, double* w) {
  for (int64_t k = 0; k < K; ++k) {
    const int q = static_cast<int>((qrow[k / 8] >> (4 * (k % 8))) & 15u);
    w[k] = static_cast<double>(q - 8) * bf16_to_double(srow[k / kGroup]);
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
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t N = d2k::scalar_i(args, "N");
    const int64_t K = d2k::scalar_i(args, "K");
    if (B < 0 || N < 0 || K < 0 || K % kGroup != 0)
      throw d2k::abi_error("reference: need B, N, K >= 0 and K a multiple of 128");
    const DLTensor& x = d2k::input(args, "x", kDLCPU, d2k::dl::bf16, {B, K});
    const DLTensor& qweight = d2k::input(args, "qweight", kDLCPU, d2k::dl::i32, {N, K / 8});
    const DLTensor& scales = d2k::input(args, "scales", kDLCPU, d2k::dl::bf16, {N, K / kGroup});
    const DLTensor& y = d2k::output(args, "y", kDLCPU, d2k::dl::bf16, {B, N});

    const auto* xp = d2k::data<const std::uint16_t>(x);
    const auto* qp = d2k::data<const std::uint32_t>(qweight);
    const auto* sp = d2k::data<const std::uint16_t>(scales);
    auto* yp = d2k::data<std::uint16_t>(y);
    std::vector<double> xd(static_cast<size_t>(B * K)), w(static_cast<size_t>(K));
    for (int64_t i = 0; i < B * K; ++i) xd[static_cast<size_t>(i)] = bf16_to_double(xp[i]);
    for (int64_t n = 0; n < N; ++n) {
      dequant_row(qp + n * (K / 8), sp + n * (K / kGroup), K, w.data());
      for (int64_t b = 0; b < B; ++b) {
        const double* xr = xd.data() + b * K;
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += xr[k] * w[static_cast<size_t>(k)];
        yp[b * N + n] = double_to_bf16(acc);
      }
    }
    return D2K_OK;
  });
}
