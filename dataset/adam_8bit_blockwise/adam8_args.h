// adam_8bit_blockwise — the scalars every implementation reads (reference, naive, expert), with
// the per-step constants derived once on the host in double, as bitsandbytes derives them from
// the step count before its kernel runs.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "adam8_codes.h"
#include "d2k/solution.h"

namespace adam8 {

struct Hyper {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;
  /// bitsandbytes' form: p' = (p + step_size * m' / (sqrt(v') + bc2_sqrt * eps)) * decay, with
  /// step_size = -lr * sqrt(1 - beta2^step) / (1 - beta1^step).
  double bc2_sqrt() const { return std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))); }
  double step_size() const { return -lr * bc2_sqrt() / (1.0 - std::pow(beta1, static_cast<double>(step))); }
  double eps_hat() const { return bc2_sqrt() * eps; }
  /// Decoupled weight decay applied after the update (bitsandbytes' kernel order).
  double decay() const { return 1.0 - lr * weight_decay; }
};

/// Reads and checks the scalars (a bad value is a clear error naming it, not a NaN later).
inline Hyper read_hyper(const d2k_args* args) {
  Hyper h{d2k::scalar_f(args, "lr"),  d2k::scalar_f(args, "beta1"),        d2k::scalar_f(args, "beta2"),
          d2k::scalar_f(args, "eps"), d2k::scalar_f(args, "weight_decay"), d2k::scalar_i(args, "step")};
  const std::string t = "adam_8bit_blockwise: ";
  if (h.step < 1) throw d2k::abi_error(t + "step must be >= 1, not " + std::to_string(h.step));
  if (!(h.beta1 >= 0.0 && h.beta1 < 1.0)) throw d2k::abi_error(t + "beta1 must be in [0, 1)");
  if (!(h.beta2 >= 0.0 && h.beta2 < 1.0)) throw d2k::abi_error(t + "beta2 must be in [0, 1)");
  if (!(h.eps > 0.0)) throw d2k::abi_error(t + "eps must be > 0");
  if (!(h.lr >= 0.0) || !(h.weight_decay >= 0.0)) throw d2k::abi_error(t + "lr and weight_decay must be >= 0");
  return h;
}

/// The axes: N parameters in NB = ceil(N / 256) blocks.
struct Shape {
  int64_t N, NB;
};
inline Shape read_shape(const d2k_args* args) {
  Shape s{d2k::scalar_i(args, "N"), d2k::scalar_i(args, "NB")};
  if (s.N < 1 || s.NB != (s.N + kBlock - 1) / kBlock)
    throw d2k::abi_error("adam_8bit_blockwise: need N >= 1 and NB = ceil(N / 256)");
  return s;
}

}  // namespace adam8
