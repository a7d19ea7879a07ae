// layernorm_backward — fp64 golden reference on host tensors.
//
//   xhat = (x - mean[t]) * rstd[t];  g = gamma * dy
//   a_t = sum_h g * xhat;  b_t = sum_h g
//   dx[t,h]   = bf16(rstd[t] * (g - (b_t + xhat * a_t) / H))
//   dgamma[h] = fp32(sum_t dy * xhat);  dbeta[h] = fp32(sum_t dy)
//
// Everything in double, each output rounded once (bf16 to nearest even for dx, fp32 for dgamma
// and dbeta). Plain C++: built by the host compiler, no CUDA.
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

/// One row: writes dx and adds the row's terms to the column sums.
void layernorm_backward_row(const std::uint16_t* dy, const std::uint16_t* x, double mean, double rstd,
                            const float* gamma, int64_t H, std::uint16_t* dx, double* dgamma, double* dbeta) {
  double a = 0.0, b = 0.0;
  for (int64_t h = 0; h < H; ++h) {
    const double xhat = (bf16_to_double(x[h]) - mean) * rstd;
    const double g = static_cast<double>(gamma[h]) * bf16_to_double(dy[h]);
    a += g * xhat;
    b += g;
  }
  const double inv_h = 1.0 / static_cast<double>(H);
  for (int64_t h = 0; h < H; ++h) {
    const double d = bf16_to_double(dy[h]);
    const double xhat = (bf16_to_double(x[h]) - mean) * rstd;
    const double g = static_cast<double>(gamma[h]) * d;
    dx[h] = double_to_bf16(rstd * (g - (b + xhat * a) * inv_h));
    dgamma[h] += d * xhat;
    dbeta[h] += d;
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
    const int64_t H = d2k::scalar_i(args, "H");
    if (T < 0 || H < 1) throw d2k::abi_error("reference: need T >= 0 and H >= 1");
    const DLTensor& dy = d2k::input(args, "dy", kDLCPU, d2k::dl::bf16, {T, H});
    const DLTensor& x = d2k::input(args, "x", kDLCPU, d2k::dl::bf16, {T, H});
    const DLTensor& mean = d2k::input(args, "mean", kDLCPU, d2k::dl::f32, {T});
    const DLTensor& rstd = d2k::input(args, "rstd", kDLCPU, d2k::dl::f32, {T});
    const DLTensor& gamma = d2k::input(args, "gamma", kDLCPU, d2k::dl::f32, {H});
    const DLTensor& dx = d2k::output(args, "dx", kDLCPU, d2k::dl::bf16, {T, H});
    const DLTensor& dgamma = d2k::output(args, "dgamma", kDLCPU, d2k::dl::f32, {H});
    const DLTensor& dbeta = d2k::output(args, "dbeta", kDLCPU, d2k::dl::f32, {H});

    const auto* dyp = d2k::data<const std::uint16_t>(dy);
    const auto* xp = d2k::data<const std::uint16_t>(x);
    const auto* mp = d2k::data<const float>(mean);
    const auto* rp = d2k::data<const float>(rstd);
    const auto* gp = d2k::data<const float>(gamma);
    auto* dxp = d2k::data<std::uint16_t>(dx);
    std::vector<double> dg(static_cast<size_t>(H), 0.0), db(static_cast<size_t>(H), 0.0);
    for (int64_t t = 0; t < T; ++t)
      layernorm_backward_row(dyp + t * H, xp + t * H, mp[t], rp[t], gp, H, dxp + t * H, dg.data(), db.data());
    auto* dgp = d2k::data<float>(dgamma);
    auto* dbp = d2k::data<float>(dbeta);
    for (int64_t h = 0; h < H; ++h) {
      dgp[h] = static_cast<float>(dg[static_cast<size_t>(h)]);
      dbp[h] = static_cast<float>(db[static_cast<size_t>(h)]);
    }
    return D2K_OK;
  });
}
