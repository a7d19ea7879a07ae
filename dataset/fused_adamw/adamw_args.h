// fused_adamw — the hyperparameters every implementation reads (reference, naive, expert), with
// the per-step constants derived once on the host in double precision, as PyTorch's fused AdamW
// derives them from the step count before launching.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace adamw {

/// torch.nn.utils.clip_grad_norm_ adds this to the norm before dividing.
inline constexpr double kClipEps = 1e-6;

struct Hyper {
  double lr, beta1, beta2, eps, weight_decay, max_norm;
  int64_t step;
  // Derived on the host (double): the decoupled decay factor, the bias-corrected step size and
  // the square root of the second bias correction.
  double decay() const { return 1.0 - lr * weight_decay; }
  double step_size() const { return lr / (1.0 - std::pow(beta1, static_cast<double>(step))); }
  double bc2_sqrt() const { return std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))); }
  /// The clipping coefficient from the global norm (in double; an implementation rounds it to fp32).
  double clip(double norm) const { return std::fmin(1.0, max_norm / (norm + kClipEps)); }
};

/// Reads and checks the scalars (a bad value is a clear error naming it, not a NaN later).
inline Hyper read_hyper(const d2k_args* args) {
  Hyper h{d2k::scalar_f(args, "lr"),           d2k::scalar_f(args, "beta1"),
          d2k::scalar_f(args, "beta2"),        d2k::scalar_f(args, "eps"),
          d2k::scalar_f(args, "weight_decay"), d2k::scalar_f(args, "max_norm"),
          d2k::scalar_i(args, "step")};
  if (h.step < 1) throw d2k::abi_error("fused_adamw: step must be >= 1, not " + std::to_string(h.step));
  if (!(h.beta1 >= 0.0 && h.beta1 < 1.0)) throw d2k::abi_error("fused_adamw: beta1 must be in [0, 1)");
  if (!(h.beta2 >= 0.0 && h.beta2 < 1.0)) throw d2k::abi_error("fused_adamw: beta2 must be in [0, 1)");
  if (!(h.eps > 0.0)) throw d2k::abi_error("fused_adamw: eps must be > 0");
  if (!(h.max_norm > 0.0)) throw d2k::abi_error("fused_adamw: max_norm must be > 0");
  if (!(h.lr >= 0.0) || !(h.weight_decay >= 0.0)) throw d2k::abi_error("fused_adamw: lr and weight_decay must be >= 0");
  return h;
}

/// The axes: P parameters in G segments.
struct Shape {
  int64_t P, G;
};
inline Shape read_shape(const d2k_args* args) {
  Shape s{d2k::scalar_i(args, "P"), d2k::scalar_i(args, "G")};
  if (s.P < 1 || s.G < 1 || s.G > s.P) throw d2k::abi_error("fused_adamw: need 1 <= G <= P");
  return s;
}

}  // namespace adamw
