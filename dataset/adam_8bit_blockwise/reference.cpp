// adam_8bit_blockwise — fp64 golden reference on host tensors.
//
// Per block b of 256 elements (the last one partial), with the code maps of adam8_codes.h:
//   m     = code_m[m_q] * m_absmax[b]                  dequantised states (exact in double)
//   v     = code_v[v_q] * v_absmax[b]
//   m'    = beta1*m + (1-beta1)*g
//   v'    = beta2*v + (1-beta2)*g^2
//   p'    = (p + step_size * m' / (sqrt(v') + bc2_sqrt*eps)) * (1 - lr*wd)   -> param_out
//           step_size = -lr * bc2_sqrt / (1 - beta1^step), bc2_sqrt = sqrt(1 - beta2^step)
//   A_m   = max over the block of |m'|                 -> m_absmax_out (rounded once to fp32)
//   m_q'  = the index of the code_m entry nearest to m' / A_m (A_m as written)  -> m_q_out
//   (v the same with the unsigned map); a block whose new absmax is 0 gets the zero code.
// Everything in double; p' from the unrounded m' and v' (as bitsandbytes: the update uses the
// new fp32 states before they are requantised). Ties between two entries take the upper one;
// the comparison rule admits either (spec.md). Plain C++: built by the host compiler, no CUDA.
#include <cmath>
#include <cstdint>
#include <vector>

#include "adam8_args.h"
#include "adam8_codes.h"
#include "d2k/solution.h"

namespace {

/// The nearest entry of the sorted map (as double values of its fp32 entries) to x.
int nearest(const std::vector<double>& code, double x) {
  int lo = 0;
  for (int step = adam8::kCodes / 2; step > 0; step >>= 1)
    if (code[static_cast<std::size_t>(lo + step)] <= x) lo += step;
  if (lo == adam8::kCodes - 1 || x <= code[0]) return lo;
  const double below = x - code[static_cast<std::size_t>(lo)], above = code[static_cast<std::size_t>(lo + 1)] - x;
  return above <= below ? lo + 1 : lo;
}

std::vector<double> as_double(const float* code) { return std::vector<double>(code, code + adam8::kCodes); }

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
    const adam8::Shape s = adam8::read_shape(args);
    const adam8::Hyper h = adam8::read_hyper(args);
    const int64_t N = s.N, NB = s.NB;
    const auto* param = d2k::data<const float>(d2k::input(args, "param", kDLCPU, d2k::dl::f32, {N}));
    const auto* grad = d2k::data<const float>(d2k::input(args, "grad", kDLCPU, d2k::dl::f32, {N}));
    const auto* mq = d2k::data<const uint8_t>(d2k::input(args, "m_q", kDLCPU, d2k::dl::u8, {N}));
    const auto* vq = d2k::data<const uint8_t>(d2k::input(args, "v_q", kDLCPU, d2k::dl::u8, {N}));
    const auto* ma = d2k::data<const float>(d2k::input(args, "m_absmax", kDLCPU, d2k::dl::f32, {NB}));
    const auto* va = d2k::data<const float>(d2k::input(args, "v_absmax", kDLCPU, d2k::dl::f32, {NB}));
    auto* p_out = d2k::data<float>(d2k::output(args, "param_out", kDLCPU, d2k::dl::f32, {N}));
    auto* mq_out = d2k::data<uint8_t>(d2k::output(args, "m_q_out", kDLCPU, d2k::dl::u8, {N}));
    auto* vq_out = d2k::data<uint8_t>(d2k::output(args, "v_q_out", kDLCPU, d2k::dl::u8, {N}));
    auto* ma_out = d2k::data<float>(d2k::output(args, "m_absmax_out", kDLCPU, d2k::dl::f32, {NB}));
    auto* va_out = d2k::data<float>(d2k::output(args, "v_absmax_out", kDLCPU, d2k::dl::f32, {NB}));

    const adam8::CodeMaps maps = adam8::make_code_maps();
    const std::vector<double> cm = as_double(maps.m), cv = as_double(maps.v);
    const double b1 = h.beta1, b2 = h.beta2, step_size = h.step_size(), eps_hat = h.eps_hat(), decay = h.decay();
    std::vector<double> m1(adam8::kBlock), v1(adam8::kBlock);
    for (int64_t b = 0; b < NB; ++b) {
      const int64_t begin = b * adam8::kBlock, n = std::min<int64_t>(adam8::kBlock, N - begin);
      double am = 0.0, av = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = begin + k;
        const double g = grad[i];
        const double m = cm[mq[i]] * static_cast<double>(ma[b]), v = cv[vq[i]] * static_cast<double>(va[b]);
        const double mn = b1 * m + (1.0 - b1) * g, vn = b2 * v + (1.0 - b2) * g * g;
        m1[static_cast<std::size_t>(k)] = mn;
        v1[static_cast<std::size_t>(k)] = vn;
        am = std::fmax(am, std::fabs(mn));
        av = std::fmax(av, std::fabs(vn));
        p_out[i] = static_cast<float>((param[i] + step_size * mn / (std::sqrt(vn) + eps_hat)) * decay);
      }
      ma_out[b] = static_cast<float>(am);
      va_out[b] = static_cast<float>(av);
      const double am_w = ma_out[b], av_w = va_out[b];  // quantise against the absmax as written
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = begin + k;
        mq_out[i] = static_cast<uint8_t>(am_w > 0 ? nearest(cm, m1[static_cast<std::size_t>(k)] / am_w) : adam8::kSignedZero);
        vq_out[i] = static_cast<uint8_t>(av_w > 0 ? nearest(cv, v1[static_cast<std::size_t>(k)] / av_w) : 0);
      }
    }
    return D2K_OK;
  });
}
