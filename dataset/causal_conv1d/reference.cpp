// causal_conv1d — fp64 golden reference on host tensors.
//
//   out[b,d,l] = bf16( silu( bias[d] + sum_{k<W} weight[d,k] * x[b,d,l-(W-1)+k] ) ),
//   x at a negative position = 0,  silu(z) = z / (1 + exp(-z))
//
// Everything in double, the output rounded once to bf16 (nearest even). Plain C++: built by the
// host compiler, no CUDA.
#include <cmath>
#include <cstdint>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

double silu(double z) { return z / (1.0 + std::exp(-z)); }

/// One (b, d) row of L outputs from its L inputs, the channel's W taps and bias.
void conv_row(const std::uint16_t* x, int64_t L, const float* w, int64_t W, double bias, std::uint16_t* y) {
  for (int64_t l = 0; l < L; ++l) {
    double z = bias;
    for (int64_t k = 0; k < W; ++k) {
      const int64_t src = l - (W - 1) + k;
      if (src >= 0) z += static_cast<double>(w[k]) * bf16_to_double(x[src]);
    }
    y[l] = double_to_bf16(silu(z));
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
    const int64_t D = d2k::scalar_i(args, "D");
    const int64_t L = d2k::scalar_i(args, "L");
    const int64_t W = d2k::scalar_i(args, "W");
    if (B < 0 || D < 0 || L < 0 || W < 1) throw d2k::abi_error("reference: need B, D, L >= 0 and W >= 1");
    const DLTensor& x = d2k::input(args, "x", kDLCPU, d2k::dl::bf16, {B, D, L});
    const DLTensor& weight = d2k::input(args, "weight", kDLCPU, d2k::dl::f32, {D, W});
    const DLTensor& bias = d2k::input(args, "bias", kDLCPU, d2k::dl::f32, {D});
    const DLTensor& out = d2k::output(args, "out", kDLCPU, d2k::dl::bf16, {B, D, L});

    const auto* xp = d2k::data<const std::uint16_t>(x);
    const auto* wp = d2k::data<const float>(weight);
    const auto* bp = d2k::data<const float>(bias);
    auto* yp = d2k::data<std::uint16_t>(out);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t row = (b * D + d) * L;
        conv_row(xp + row, L, wp + d * W, W, bp[d], yp + row);
      }
    return D2K_OK;
  });
}
