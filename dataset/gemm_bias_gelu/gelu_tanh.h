// gemm_bias_gelu — the one GELU of the task, the tanh approximation (PyTorch's
// gelu(approximate="tanh"), cuBLASLt's CUBLASLT_EPILOGUE_GELU_BIAS):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// Shared by reference.cpp (fp64), naive.cu and expert.cu (fp32) and the CPU tests. Plain C++
// with host/device qualifiers when compiled by nvcc.
#pragma once
#include <cmath>
#include <cstring>

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

/// The expert's lean GELU variants (GBG_GELU_FORM >= 1 in expert.cu): the same x * sigmoid(2u)
/// with fewer instructions per element. log2(e) is folded into the two constants (t2 = -2u
/// log2(e) in two fp32 operations instead of three), and on the device ex2.approx.ftz and
/// rcp.approx.ftz are issued directly: __expf's non-ftz ex2 adds a range test and two
/// predicated multiplies (it keeps 2^t2 < 2^-126 as a denormal, which 1 + e rounds away anyway).
inline constexpr float kGeluT2C1 = float(-2.0 * kGeluK0 * 1.4426950408889634);           // x term
inline constexpr float kGeluT2C3 = float(-2.0 * kGeluK0 * kGeluK1 * 1.4426950408889634);  // x^3 term

/// t2 = -2u log2(e): exp(-2u) == exp2(t2).
GBG_HD float gelu_t2(float x) { return x * fmaf(kGeluT2C3, x * x, kGeluT2C1); }

/// 1 / d for d >= 1 on the FMA pipe only (Newton-Raphson reciprocal): the classic integer
/// first guess 0x7EF311C3 - bits(d) (relative error <= 1/8 for every normal d), then three Newton
/// steps y += y (1 - d y), each squaring the error: 2^-3 -> 2^-6 -> 2^-12 -> 2^-24, then the
/// rounding of the last fma. Flush-to-zero fmas on the device: d >= 2^126 (also d = inf, clamped)
/// gives a denormal first guess, flushed to 0, so 1/d = 0 as rcp.approx.ftz gives it (the GELU of
/// x < -10, |gelu| < 2^-120, is 0 on both paths). Six FFMA, one FMNMX, one integer subtract
/// against one MUFU.RCP (the MUFU pipe does 16 a clock per SM, the FMA pipe 128).
GBG_HD float rcp_newton_ge1(float d) {
  d = fminf(d, 0x1p126f);
#if defined(__CUDA_ARCH__)
  float y = __int_as_float(0x7EF311C3 - __float_as_int(d));
  float e;
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    asm("fma.rn.ftz.f32 %0, %1, %2, 0f3F800000;" : "=f"(e) : "f"(-d), "f"(y));
    asm("fma.rn.ftz.f32 %0, %1, %2, %1;" : "=f"(y) : "f"(y), "f"(e));
  }
  return y;
#else
  unsigned u;
  std::memcpy(&u, &d, sizeof u);
  u = 0x7EF311C3u - u;
  float y;
  std::memcpy(&y, &u, sizeof y);
  if (std::fabs(y) < 0x1p-126f) y = 0.f;  // the device's flush-to-zero of the first guess
  for (int i = 0; i < 3; ++i) y = std::fma(y, std::fma(-d, y, 1.f), y);
  return y;
#endif
}

/// The lean form with both special functions on the MUFU pipe: x / (1 + 2^t2), two MUFU and
/// about ten instructions an element in the expert's epilogue (gelu_tanh_f32 in CUTLASS's
/// LinCombPerColBiasEltAct: about sixteen). On the host exp2 and a true division stand in for
/// ex2.approx and rcp.approx (each within 2 ulps of them).
GBG_HD float gelu_tanh_lean_f32(float x) {
  const float t2 = gelu_t2(x);
#if defined(__CUDA_ARCH__)
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t2));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return x * r;
#else
  return x / (1.0f + std::exp2(t2));
#endif
}

/// The lean form with the reciprocal on the FMA pipe (rcp_newton_ge1): one MUFU an element.
GBG_HD float gelu_tanh_lean_newton_f32(float x) {
  const float t2 = gelu_t2(x);
#if defined(__CUDA_ARCH__)
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t2));
#else
  const float e = std::exp2(t2);
#endif
  return x * rcp_newton_ge1(1.0f + e);
}

}  // namespace gbg
