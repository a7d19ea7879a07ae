// rope_qk_norm — fp64 golden reference on host tensors.
//
//   for every token t, p = positions[t], c = cache[p, 0:D/2], s = cache[p, D/2:D]:
//     for every query head h (gain w = q_norm_weight) and key head (w = k_norm_weight), x its D values:
//       r = 1 / sqrt(mean_i x[i]^2 + eps);  n[i] = x[i] * r * w[i]
//       out[i]       = bf16(n[i] * c[i] - n[i + D/2] * s[i])          i < D/2
//       out[i + D/2] = bf16(n[i + D/2] * c[i] + n[i] * s[i])
//     v[t, h, :] = qkv[t, (Hq + Hkv + h) * D : ...]                  (bit copy)
//
// Everything in double, each output rounded once to bf16 (nearest even). A position outside
// [0, P) is an error (the cache has no such row). Plain C++: built by the host compiler, no CUDA.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

/// One head vector of D values: normalised with gain w, rotated with the cache row cs.
void norm_rope_head(const std::uint16_t* x, const std::uint16_t* w, const float* cs, int64_t D, double eps,
                    std::uint16_t* out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < D; ++i) sum_sq += bf16_to_double(x[i]) * bf16_to_double(x[i]);
  const double r = 1.0 / std::sqrt(sum_sq / static_cast<double>(D) + eps);
  const int64_t half = D / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double n1 = bf16_to_double(x[i]) * r * bf16_to_double(w[i]);
    const double n2 = bf16_to_double(x[i + half]) * r * bf16_to_double(w[i + half]);
    const double c = cs[i], s = cs[half + i];
    out[i] = double_to_bf16(n1 * c - n2 * s);
    out[i + half] = double_to_bf16(n2 * c + n1 * s);
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
    const int64_t Hq = d2k::scalar_i(args, "Hq");
    const int64_t Hkv = d2k::scalar_i(args, "Hkv");
    const int64_t D = d2k::scalar_i(args, "D");
    const int64_t P = d2k::scalar_i(args, "P");
    const double eps = d2k::scalar_f(args, "eps");
    if (T < 0 || Hq < 1 || Hkv < 1 || D < 2 || D % 2 != 0 || P < 1)
      throw d2k::abi_error("reference: need T >= 0, Hq >= 1, Hkv >= 1, even D >= 2 and P >= 1");
    const int64_t H = Hq + 2 * Hkv;
    const DLTensor& qkv = d2k::input(args, "qkv", kDLCPU, d2k::dl::bf16, {T, H * D});
    const DLTensor& qw = d2k::input(args, "q_norm_weight", kDLCPU, d2k::dl::bf16, {D});
    const DLTensor& kw = d2k::input(args, "k_norm_weight", kDLCPU, d2k::dl::bf16, {D});
    const DLTensor& pos = d2k::input(args, "positions", kDLCPU, d2k::dl::i64, {T});
    const DLTensor& cache = d2k::input(args, "cos_sin_cache", kDLCPU, d2k::dl::f32, {P, D});
    const DLTensor& q = d2k::output(args, "q", kDLCPU, d2k::dl::bf16, {T, Hq, D});
    const DLTensor& k = d2k::output(args, "k", kDLCPU, d2k::dl::bf16, {T, Hkv, D});
    const DLTensor& v = d2k::output(args, "v", kDLCPU, d2k::dl::bf16, {T, Hkv, D});

    const auto* xp = d2k::data<const std::uint16_t>(qkv);
    const auto* qwp = d2k::data<const std::uint16_t>(qw);
    const auto* kwp = d2k::data<const std::uint16_t>(kw);
    const auto* pp = d2k::data<const int64_t>(pos);
    const auto* cp = d2k::data<const float>(cache);
    auto* qp = d2k::data<std::uint16_t>(q);
    auto* kp = d2k::data<std::uint16_t>(k);
    auto* vp = d2k::data<std::uint16_t>(v);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = pp[t];
      if (p < 0 || p >= P)
        throw d2k::abi_error("reference: positions[" + std::to_string(t) + "] = " + std::to_string(p) +
                             " is outside [0, P) = [0, " + std::to_string(P) + ")");
      const float* cs = cp + p * D;
      const std::uint16_t* row = xp + t * H * D;
      for (int64_t h = 0; h < Hq; ++h) norm_rope_head(row + h * D, qwp, cs, D, eps, qp + (t * Hq + h) * D);
      for (int64_t h = 0; h < Hkv; ++h)
        norm_rope_head(row + (Hq + h) * D, kwp, cs, D, eps, kp + (t * Hkv + h) * D);
      std::memcpy(vp + t * Hkv * D, row + (Hq + Hkv) * D, static_cast<size_t>(Hkv * D) * sizeof(std::uint16_t));
    }
    return D2K_OK;
  });
}
