// topk_topp_mask — fp64 golden reference on host tensors.
//
//   for every row b, with x = logits[b, :] (fp32), m = max_v x[v]:
//     e[v]   = exp((x[v] - m) / temperature)                       (double)
//     Z      = sum_v e[v]
//     t_k    = the min(k, V)-th largest x (counted with multiplicity)
//     groups = the distinct values of x, descending; for a value u,
//              above(u) = sum of e[v] over x[v] > u
//     keep v iff x[v] >= t_k and (top_p >= 1 or above(x[v]) < top_p * Z)
//     probs[b, v] = keep ? fp32(e[v] / sum_{kept} e) : 0
//
// The kept set is {v : x[v] >= tau} for tau = max(t_k, t_p), t_p the smallest value u with
// above(u) < top_p * Z (above() shrinks as u grows). Ties are resolved by value only: equal logits
// are kept or dropped together. Everything in double; each output rounded once to fp32.
// +0 and -0 are one value (they compare equal). Plain C++: built by the host compiler, no CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "d2k/solution.h"

namespace {

/// One row: writes probs[0, V).
void filter_row(const float* x, int64_t V, int64_t k, double top_p, double temperature, float* probs) {
  double m = -INFINITY;
  for (int64_t v = 0; v < V; ++v) m = std::max(m, static_cast<double>(x[v]));
  std::vector<double> sorted(x, x + V);
  std::sort(sorted.begin(), sorted.end(), std::greater<double>());
  auto e = [&](double u) { return std::exp((u - m) / temperature); };
  double Z = 0.0;
  for (int64_t v = 0; v < V; ++v) Z += e(x[v]);

  const double t_k = sorted[static_cast<std::size_t>(std::min(k, V) - 1)];
  // Walk the groups of equal values from the top: above = mass strictly above the group.
  double tau = sorted[0], above = 0.0;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (sorted[i] < t_k || (top_p < 1.0 && !(above < top_p * Z))) break;
    tau = sorted[i];
    above += static_cast<double>(j - i) * e(sorted[i]);
    i = j;
  }
  double kept = 0.0;
  for (int64_t v = 0; v < V; ++v)
    if (x[v] >= tau) kept += e(x[v]);
  for (int64_t v = 0; v < V; ++v) probs[v] = x[v] >= tau ? static_cast<float>(e(x[v]) / kept) : 0.0f;
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
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t k = d2k::scalar_i(args, "k");
    const double top_p = d2k::scalar_f(args, "top_p");
    const double temperature = d2k::scalar_f(args, "temperature");
    if (B < 0 || V < 1) throw d2k::abi_error("reference: need B >= 0 and V >= 1");
    if (k < 1) throw d2k::abi_error("reference: k = " + std::to_string(k) + " must be >= 1");
    if (!(top_p > 0.0 && top_p <= 1.0)) throw d2k::abi_error("reference: top_p must be in (0, 1]");
    if (!(temperature > 0.0)) throw d2k::abi_error("reference: temperature must be > 0");
    const DLTensor& logits = d2k::input(args, "logits", kDLCPU, d2k::dl::f32, {B, V});
    const DLTensor& probs = d2k::output(args, "probs", kDLCPU, d2k::dl::f32, {B, V});
    const float* xp = d2k::data<const float>(logits);
    float* pp = d2k::data<float>(probs);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t v = 0; v < V; ++v)
        if (!std::isfinite(xp[b * V + v]))
          throw d2k::abi_error("reference: logits[" + std::to_string(b) + ", " + std::to_string(v) +
                               "] is not finite");
      filter_row(xp + b * V, V, k, top_p, temperature, pp + b * V);
    }
    return D2K_OK;
  });
}
