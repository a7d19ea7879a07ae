// gemm_bias_gelu — the one GELU of the task, the tanh approximation (PyTorch's
// gelu(approximate="tanh"), cuBLASLt's CUBLASLT_EPILOGUE_GELU_BIAS):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// Shared by reference.cpp (fp64), naive.cu and expert.cu (fp32) and the CPU tests. Plain C++
// with host/device qualifiers when compiled by nvcc.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define GBG_HD __host__ __device__ __forceinline__
#else
#define GBG_HD inline
#endif

namespace gbg {

inline constexpr double kGeluK0 = 0.7978845608028654;  // sqrt(2/pi)
inline constexpr double kGeluK1 = 0.044715;

/// The golden, in double: 0.5 x (1 + tanh(u)) evaluated as x / (1 + exp(-2u)), the same
/// function (0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u))) without the cancellation of 1 + tanh(u),
/// which in double already rounds to exactly 0 below x = -8.5 (see gelu_tanh_f32).
inline double gelu_tanh_f64(double x) {
  const double u = kGeluK0 * (x + kGeluK1 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

/// The formula as written, in double (the tests compare the two forms where it does not cancel).
inline double gelu_tanh_formula_f64(double x) {
  const double u = kGeluK0 * (x + kGeluK1 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

/// The same function as x * sigmoid(2u) = x / (1 + exp(-2u)), in fp32. 0.5 (1 + tanh(u)) ==
/// sigmoid(2u) exactly, but the sigmoid form never subtracts two numbers near 1: for x < -3,
/// 1 + tanh(u) loses every bit a tanh error of 1 fp32 ulp (or tanh.approx's 2^-11) touches, while
/// exp(-2u) keeps its relative accuracy, so the result is accurate to a few fp32 ulps everywhere.
/// exp(-2u) overflowing to +inf gives x / inf = -0 (gelu of a very negative x), exp(-2u)
/// underflowing to 0 gives x.
GBG_HD float gelu_tanh_f32(float x) {
  constexpr float k2 = float(-2.0 * kGeluK0);
  constexpr float k2k1 = float(-2.0 * kGeluK0 * kGeluK1);
  const float t = x * fmaf(k2k1, x * x, k2);  // -2u
#if defined(__CUDA_ARCH__)
  return __fdividef(x, 1.0f + __expf(t));
#else
  return x / (1.0f + std::exp(t));
#endif
}

}  // namespace gbg
