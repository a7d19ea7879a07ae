// fused_add_rmsnorm — fp64 golden reference on host tensors.
//
//   residual_out[t,h] = bf16(x[t,h] + residual[t,h])
//   out[t,h]          = bf16(r[t,h] * weight[h] / sqrt(mean_h r[t,h]^2 + eps)),  r = residual_out
//
// The sum x + residual of two bf16 values is exact in double and rounded once to bf16 (round to
// nearest even). The mean square is taken over the bf16-rounded residual_out, accumulated in
// double; out is rounded once. Plain C++: built by the host compiler, no CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

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
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    const double eps = d2k::scalar_f(args, "eps");
    if (T < 0 || H < 1) throw d2k::abi_error("reference: need T >= 0 and H >= 1");
    const DLTensor& x = d2k::input(args, "x", kDLCPU, d2k::dl::bf16, {T, H});
    const DLTensor& res = d2k::input(args, "residual", kDLCPU, d2k::dl::bf16, {T, H});
    const DLTensor& w = d2k::input(args, "weight", kDLCPU, d2k::dl::bf16, {H});
    const DLTensor& out = d2k::output(args, "out", kDLCPU, d2k::dl::bf16, {T, H});
    const DLTensor& res_out = d2k::output(args, "residual_out", kDLCPU, d2k::dl::bf16, {T, H});

    const auto* xp = d2k::data<const std::uint16_t>(x);
    const auto* rp = d2k::data<const std::uint16_t>(res);
    const auto* wp = d2k::data<const std::uint16_t>(w);
    auto* op = d2k::data<std::uint16_t>(out);
    auto* rop = d2k::data<std::uint16_t>(res_out);

    for (int64_t t = 0; t < T; ++t) {
      const int64_t base = t * H;
      double sum_sq = 0.0;
      for (int64_t h = 0; h < H; ++h) {
        const std::uint16_t rb = double_to_bf16(bf16_to_double(xp[base + h]) + bf16_to_double(rp[base + h]));
        rop[base + h] = rb;
        const double r = bf16_to_double(rb);
        sum_sq += r * r;
      }
      const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(H) + eps);
      for (int64_t h = 0; h < H; ++h)
        op[base + h] = double_to_bf16(bf16_to_double(rop[base + h]) * inv_rms * bf16_to_double(wp[h]));
    }
    return D2K_OK;
  });
}
