// muon_optimizer_step — argument parsing and validation shared by reference.cpp, naive.cu,
// expert.cu and library.cu (plain C++, no CUDA). Every check names the tensor or scalar.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace muon {

/// Quintic Newton-Schulz coefficients and step count (fixed by the task, not scalars).
inline constexpr double kNsA = 3.4445;
inline constexpr double kNsB = -4.7750;
inline constexpr double kNsC = 2.0315;
inline constexpr int kNsSteps = 5;

/// Everything one call needs, with shapes checked against the definition.
struct Args {
  int64_t B = 0, M = 0, N = 0;
  double lr = 0, beta = 0, wd = 0, eps = 0;
  const float* param = nullptr;        ///< [B,M,N] fp32
  const uint16_t* grad = nullptr;      ///< [B,M,N] bf16 bits
  const float* momentum = nullptr;     ///< [B,M,N] fp32
  float* momentum_out = nullptr;       ///< [B,M,N] fp32
  uint16_t* update = nullptr;          ///< [B,M,N] bf16 bits
  float* param_out = nullptr;          ///< [B,M,N] fp32

  int64_t s() const { return M < N ? M : N; }  ///< short side: NS iterates on s x l
  int64_t l() const { return M < N ? N : M; }  ///< long side
  bool tall() const { return M > N; }          ///< X = G^T when rows exceed columns
  int64_t numel() const { return B * M * N; }
  /// sqrt(max(1, M/N)): the shape scale applied to the orthogonalised update.
  double scale() const { return std::sqrt(std::fmax(1.0, double(M) / double(N))); }
};

/// Reads and validates every tensor and scalar; `dev` is kDLCPU (reference) or kDLCUDA.
inline Args parse(const d2k_args* a, DLDeviceType dev) {
  Args r;
  r.B = d2k::scalar_i(a, "B");
  r.M = d2k::scalar_i(a, "M");
  r.N = d2k::scalar_i(a, "N");
  if (r.B < 1 || r.M < 1 || r.N < 1) throw d2k::abi_error("axes B, M, N must be >= 1");
  if (r.M * r.N > (int64_t(1) << 31)) throw d2k::abi_error("axes M*N must be < 2^31");
  r.lr = d2k::scalar_f(a, "lr");
  r.beta = d2k::scalar_f(a, "momentum_beta");
  r.wd = d2k::scalar_f(a, "weight_decay");
  r.eps = d2k::scalar_f(a, "eps");
  const DLTensor& p = d2k::input(a, "param", dev, d2k::dl::f32, {r.B, r.M, r.N});
  const DLTensor& g = d2k::input(a, "grad", dev, d2k::dl::bf16, {r.B, r.M, r.N});
  const DLTensor& m = d2k::input(a, "momentum", dev, d2k::dl::f32, {r.B, r.M, r.N});
  const DLTensor& mo = d2k::output(a, "momentum_out", dev, d2k::dl::f32, {r.B, r.M, r.N});
  const DLTensor& u = d2k::output(a, "update", dev, d2k::dl::bf16, {r.B, r.M, r.N});
  const DLTensor& po = d2k::output(a, "param_out", dev, d2k::dl::f32, {r.B, r.M, r.N});
  r.param = d2k::data<const float>(p);
  r.grad = d2k::data<const uint16_t>(g);
  r.momentum = d2k::data<const float>(m);
  r.momentum_out = d2k::data<float>(mo);
  r.update = d2k::data<uint16_t>(u);
  r.param_out = d2k::data<float>(po);
  return r;
}

/// Round x up to a multiple of m.
inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace muon
