// muon_optimizer_step — fp64 golden reference on host tensors.
//
// Per matrix b (all arithmetic in double; inputs are exact in double):
//   momentum_out = beta*momentum + grad                          (rounded once to fp32)
//   U            = grad + beta*momentum_out                      (Nesterov; unrounded momentum_out)
//   X            = U / (||U||_F + eps), transposed when M > N    (X is S x L, S = min(M,N))
//   5 times:  A = X X^T;  Bm = b*A + c*A*A;  X = a*X + Bm*X       (a, b, c = 3.4445, -4.7750, 2.0315)
//   update       = sqrt(max(1, M/N)) * X, transposed back        (rounded once to bf16)
//   param_out    = param*(1 - lr*weight_decay) - lr*update       (the bf16 update written; rounded once to fp32)
// param_out uses the update as written (bf16), as the PyTorch Muon step does: a user can rebuild
// param_out from the call's own outputs, and an optimizer that applies `update` later (or
// another rank that receives it) lands on the same weights.
// Plain C++: built by the host compiler, no CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"
#include "muon_args.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

/// One matrix: everything above, for rows M and columns N starting at element offset `off`.
void muon_one(const muon::Args& g, int64_t off) {
  const int64_t M = g.M, N = g.N, n = M * N;
  const int64_t s = g.s(), l = g.l();
  const bool tall = g.tall();
  std::vector<double> u(static_cast<size_t>(n));
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double gr = bf16_to_double(g.grad[off + i]);
    const double mo = g.beta * static_cast<double>(g.momentum[off + i]) + gr;
    g.momentum_out[off + i] = static_cast<float>(mo);
    u[i] = gr + g.beta * mo;
    ss += u[i] * u[i];
  }
  const double inv = 1.0 / (std::sqrt(ss) + g.eps);
  std::vector<double> X(static_cast<size_t>(s * l)), Y(static_cast<size_t>(s * l));
  std::vector<double> A(static_cast<size_t>(s * s)), Bm(static_cast<size_t>(s * s));
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      const double x = u[r * N + c] * inv;
      if (tall) X[c * l + r] = x; else X[r * l + c] = x;
    }
  for (int it = 0; it < muon::kNsSteps; ++it) {
    // A = X X^T (symmetric: one triangle, mirrored).
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = i; j < s; ++j) {
        const double* xi = &X[i * l];
        const double* xj = &X[j * l];
        double acc = 0.0;
        for (int64_t k = 0; k < l; ++k) acc += xi[k] * xj[k];
        A[i * s + j] = acc;
        A[j * s + i] = acc;
      }
    // Bm = b A + c A A; A A is symmetric and (A A)[i][j] = <row i, row j> since A = A^T.
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = i; j < s; ++j) {
        const double* ai = &A[i * s];
        const double* aj = &A[j * s];
        double acc = 0.0;
        for (int64_t k = 0; k < s; ++k) acc += ai[k] * aj[k];
        const double v = muon::kNsB * A[i * s + j] + muon::kNsC * acc;
        Bm[i * s + j] = v;
        Bm[j * s + i] = v;
      }
    // X = a X + Bm X.
    for (int64_t i = 0; i < s; ++i) {
      double* yi = &Y[i * l];
      const double* xi = &X[i * l];
      for (int64_t k = 0; k < l; ++k) yi[k] = muon::kNsA * xi[k];
      for (int64_t k = 0; k < s; ++k) {
        const double bik = Bm[i * s + k];
        const double* xk = &X[k * l];
        for (int64_t j = 0; j < l; ++j) yi[j] += bik * xk[j];
      }
    }
    X.swap(Y);
  }
  const double scale = g.scale();
  const double decay = 1.0 - g.lr * g.wd;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      const double up = scale * (tall ? X[c * l + r] : X[r * l + c]);
      const int64_t i = off + r * N + c;
      g.update[i] = double_to_bf16(up);
      const double up_written = bf16_to_double(g.update[i]);
      g.param_out[i] = static_cast<float>(static_cast<double>(g.param[i]) * decay - g.lr * up_written);
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
    const muon::Args g = muon::parse(args, kDLCPU);
    for (int64_t b = 0; b < g.B; ++b) muon_one(g, b * g.M * g.N);
    return D2K_OK;
  });
}
