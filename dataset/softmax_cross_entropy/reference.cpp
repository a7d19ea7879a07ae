// softmax_cross_entropy — fp64 golden reference on host tensors.
//
//   for every row t with y = targets[t] != ignore_index:
//     m       = max_v logits[t,v]
//     lse     = m + log(sum_v exp(logits[t,v] - m))
//     loss[t] = fp32(lse - logits[t,y])
//     dlogits[t,v] = bf16(grad_scale * (exp(logits[t,v] - lse) - [v == y]))
//   rows with y == ignore_index: loss 0, dlogits 0.
//
// Everything in double, each output rounded once (fp32 for the loss, bf16 to nearest even for
// dlogits). A target outside [0, V) that is not ignore_index is an error (PyTorch asserts too).
// Plain C++: built by the host compiler, no CUDA.
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

/// One row: writes loss and the dlogits row.
void cross_entropy_row(const std::uint16_t* x, int64_t V, int64_t y, double grad_scale, float* loss,
                       std::uint16_t* dx) {
  double m = -INFINITY;
  for (int64_t v = 0; v < V; ++v) m = std::max(m, bf16_to_double(x[v]));
  double s = 0.0;
  for (int64_t v = 0; v < V; ++v) s += std::exp(bf16_to_double(x[v]) - m);
  const double lse = m + std::log(s);
  *loss = static_cast<float>(lse - bf16_to_double(x[y]));
  for (int64_t v = 0; v < V; ++v) {
    const double p = std::exp(bf16_to_double(x[v]) - lse);
    dx[v] = double_to_bf16(grad_scale * (v == y ? p - 1.0 : p));
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
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t ignore_index = d2k::scalar_i(args, "ignore_index");
    const double grad_scale = d2k::scalar_f(args, "grad_scale");
    if (T < 0 || V < 1) throw d2k::abi_error("reference: need T >= 0 and V >= 1");
    const DLTensor& logits = d2k::input(args, "logits", kDLCPU, d2k::dl::bf16, {T, V});
    const DLTensor& targets = d2k::input(args, "targets", kDLCPU, d2k::dl::i64, {T});
    const DLTensor& loss = d2k::output(args, "loss", kDLCPU, d2k::dl::f32, {T});
    const DLTensor& dlogits = d2k::output(args, "dlogits", kDLCPU, d2k::dl::bf16, {T, V});

    const auto* xp = d2k::data<const std::uint16_t>(logits);
    const auto* yp = d2k::data<const int64_t>(targets);
    auto* lp = d2k::data<float>(loss);
    auto* dp = d2k::data<std::uint16_t>(dlogits);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t y = yp[t];
      if (y == ignore_index) {
        lp[t] = 0.0f;
        std::fill(dp + t * V, dp + (t + 1) * V, std::uint16_t{0});
        continue;
      }
      if (y < 0 || y >= V)
        throw d2k::abi_error("reference: targets[" + std::to_string(t) + "] = " + std::to_string(y) +
                             " is outside [0, V) and is not ignore_index");
      cross_entropy_row(xp + t * V, V, y, grad_scale, lp + t, dp + t * V);
    }
    return D2K_OK;
  });
}
