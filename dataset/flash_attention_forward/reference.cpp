// flash_attention_forward — fp64 golden reference on host tensors.
//
//   for b, h (kv head g = h / (Hq / Hkv)), query i:
//     s_j   = scale * sum_d q[b,i,h,d] * k[b,j,g,d]        for j in [0, i]  (causal)
//     m     = max_j s_j
//     l     = sum_j exp(s_j - m)
//     lse[b,h,i] = fp32(m + log(l))
//     o[b,i,h,:] = bf16(sum_j exp(s_j - m) * v[b,j,g,:] / l)
//
// Everything in double, each output rounded once (fp32 for lse, bf16 to nearest even for o).
// Plain C++: built by the host compiler, no CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

constexpr int64_t kD = 128;

struct Dims {
  int64_t B, S, Hq, Hkv;
};

/// One (b, h) head: o rows [S, D] (row stride Hq*D) and lse [S].
void attention_head(const Dims& d, double scale, const double* q, const double* k, const double* v,
                    std::uint16_t* o, float* lse) {
  std::vector<double> s(static_cast<size_t>(d.S)), acc(kD);
  for (int64_t i = 0; i < d.S; ++i) {
    const double* qi = q + i * d.Hq * kD;
    double m = -INFINITY;
    for (int64_t j = 0; j <= i; ++j) {
      const double* kj = k + j * d.Hkv * kD;
      double dot = 0.0;
      for (int64_t x = 0; x < kD; ++x) dot += qi[x] * kj[x];
      s[j] = scale * dot;
      m = std::max(m, s[j]);
    }
    double l = 0.0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j <= i; ++j) {
      const double p = std::exp(s[j] - m);
      l += p;
      const double* vj = v + j * d.Hkv * kD;
      for (int64_t x = 0; x < kD; ++x) acc[x] += p * vj[x];
    }
    lse[i] = static_cast<float>(m + std::log(l));
    for (int64_t x = 0; x < kD; ++x) o[i * d.Hq * kD + x] = double_to_bf16(acc[x] / l);
  }
}

std::vector<double> widen(const DLTensor& t, int64_t n) {
  const auto* p = d2k::data<const std::uint16_t>(t);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_double(p[i]);
  return out;
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
    const Dims d{d2k::scalar_i(args, "B"), d2k::scalar_i(args, "S"), d2k::scalar_i(args, "Hq"),
                 d2k::scalar_i(args, "Hkv")};
    const double scale = d2k::scalar_f(args, "scale");
    if (d2k::scalar_i(args, "D") != kD) throw d2k::abi_error("reference: D must be 128");
    if (d.B < 1 || d.S < 1 || d.Hq < 1 || d.Hkv < 1 || d.Hq % d.Hkv != 0)
      throw d2k::abi_error("reference: need B, S, Hq, Hkv >= 1 and Hq % Hkv == 0");
    const DLTensor& q = d2k::input(args, "q", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.Hq, kD});
    const DLTensor& k = d2k::input(args, "k", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.Hkv, kD});
    const DLTensor& v = d2k::input(args, "v", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.Hkv, kD});
    const DLTensor& o = d2k::output(args, "o", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.Hq, kD});
    const DLTensor& lse = d2k::output(args, "lse", kDLCPU, d2k::dl::f32, {d.B, d.Hq, d.S});

    const std::vector<double> qd = widen(q, d.B * d.S * d.Hq * kD);
    const std::vector<double> kd = widen(k, d.B * d.S * d.Hkv * kD);
    const std::vector<double> vd = widen(v, d.B * d.S * d.Hkv * kD);
    auto* op = d2k::data<std::uint16_t>(o);
    auto* lp = d2k::data<float>(lse);
    const int64_t group = d.Hq / d.Hkv;
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t h = 0; h < d.Hq; ++h) {
        const int64_t g = h / group;
        const int64_t q_off = (b * d.S * d.Hq + h) * kD;
        const int64_t kv_off = (b * d.S * d.Hkv + g) * kD;
        attention_head(d, scale, qd.data() + q_off, kd.data() + kv_off, vd.data() + kv_off, op + q_off,
                       lp + (b * d.Hq + h) * d.S);
      }
    return D2K_OK;
  });
}
