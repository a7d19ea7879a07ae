// fused_adamw — fp64 golden reference on host tensors.
//
//   norm  = sqrt(sum_i grad_i^2)                       over all P elements (the G tensors together)
//   clip  = min(1, max_norm / (norm + 1e-6))
//   g     = clip * grad_i
//   m'    = beta1*m + (1-beta1)*g                      -> m_out     (rounded once to fp32)
//   v'    = beta2*v + (1-beta2)*g^2                    -> v_out     (rounded once to fp32)
//   p'    = param*(1 - lr*wd) - step_size * m' / (sqrt(v') / bc2_sqrt + eps)
//           step_size = lr / (1 - beta1^step), bc2_sqrt = sqrt(1 - beta2^step)
//                                                      -> param_out (rounded once to fp32)
//   param_bf16_out = bf16(param_out): the fp32 value written, rounded to nearest even
//
// Everything in double (the clipping coefficient too); p' uses the unrounded m' and v'. The
// offsets are checked (offsets[0] = 0, strictly increasing, offsets[G] = P) but do not change
// the arithmetic: every tensor has the same hyperparameters and the norm is global.
// Plain C++: built by the host compiler, no CUDA.
#include <cmath>
#include <cstdint>
#include <string>

#include "adamw_args.h"
#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

void check_offsets(const int64_t* o, int64_t G, int64_t P) {
  if (o[0] != 0) throw d2k::abi_error("reference: offsets[0] must be 0, not " + std::to_string(o[0]));
  for (int64_t g = 0; g < G; ++g)
    if (o[g + 1] <= o[g])
      throw d2k::abi_error("reference: offsets must increase strictly (offsets[" + std::to_string(g + 1) + "] = " +
                           std::to_string(o[g + 1]) + ")");
  if (o[G] != P) throw d2k::abi_error("reference: offsets[G] must be P = " + std::to_string(P));
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
    const adamw::Shape s = adamw::read_shape(args);
    const adamw::Hyper h = adamw::read_hyper(args);
    const int64_t P = s.P, G = s.G;
    const auto* param = d2k::data<const float>(d2k::input(args, "param", kDLCPU, d2k::dl::f32, {P}));
    const auto* grad = d2k::data<const std::uint16_t>(d2k::input(args, "grad", kDLCPU, d2k::dl::bf16, {P}));
    const auto* m = d2k::data<const float>(d2k::input(args, "m", kDLCPU, d2k::dl::f32, {P}));
    const auto* v = d2k::data<const float>(d2k::input(args, "v", kDLCPU, d2k::dl::f32, {P}));
    const auto* offsets = d2k::data<const int64_t>(d2k::input(args, "offsets", kDLCPU, d2k::dl::i64, {G + 1}));
    auto* p_out = d2k::data<float>(d2k::output(args, "param_out", kDLCPU, d2k::dl::f32, {P}));
    auto* m_out = d2k::data<float>(d2k::output(args, "m_out", kDLCPU, d2k::dl::f32, {P}));
    auto* v_out = d2k::data<float>(d2k::output(args, "v_out", kDLCPU, d2k::dl::f32, {P}));
    auto* b_out = d2k::data<std::uint16_t>(d2k::output(args, "param_bf16_out", kDLCPU, d2k::dl::bf16, {P}));
    check_offsets(offsets, G, P);

    double sq = 0.0;  // bf16 squares are exact in double; P < 2^53 terms of < 2^256 stay far from overflow
    for (int64_t i = 0; i < P; ++i) {
      const double gi = bf16_to_double(grad[i]);
      sq += gi * gi;
    }
    const double clip = h.clip(std::sqrt(sq));
    const double decay = h.decay(), step_size = h.step_size(), bc2_sqrt = h.bc2_sqrt();
    for (int64_t i = 0; i < P; ++i) {
      const double g = clip * bf16_to_double(grad[i]);
      const double mi = h.beta1 * m[i] + (1.0 - h.beta1) * g;
      const double vi = h.beta2 * v[i] + (1.0 - h.beta2) * g * g;
      const double pi = param[i] * decay - step_size * mi / (std::sqrt(vi) / bc2_sqrt + h.eps);
      m_out[i] = static_cast<float>(mi);
      v_out[i] = static_cast<float>(vi);
      p_out[i] = static_cast<float>(pi);
      b_out[i] = double_to_bf16(static_cast<double>(p_out[i]));
    }
    return D2K_OK;
  });
}
