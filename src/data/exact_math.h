#pragma once
/// Elementary functions built only from IEEE-exact operations (+, -, *, /, sqrt, each rounded
/// to nearest once), so that host and device compute the same bits. On the device every
/// operation is an explicit rounding intrinsic (__dadd_rn, ...): nvcc would otherwise contract
/// a*b+c into an FMA. On the host plain operators are used (x86-64 SSE2 is IEEE; the library is
/// compiled with -ffp-contract=off and without -ffast-math).
///
/// Accuracy is a few ulp, more than enough for random-number transforms; what matters here is
/// that the result is a pure function of the input bits on both sides.
#include <cstdint>
#include <cstring>

#include "data/hd.h"

namespace d2k::data {

/// Bit casts usable on host and device.
D2K_HD std::uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
D2K_HD double double_of(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

/// A double whose arithmetic operators round each operation once (never fused).
struct xd {
  double v;
  D2K_HD xd(double x = 0.0) : v(x) {}  // NOLINT: implicit on purpose, for readable formulas
};

D2K_HD xd operator+(xd a, xd b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a.v, b.v);
#else
  return a.v + b.v;
#endif
}
D2K_HD xd operator-(xd a, xd b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a.v, b.v);
#else
  return a.v - b.v;
#endif
}
D2K_HD xd operator*(xd a, xd b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a.v, b.v);
#else
  return a.v * b.v;
#endif
}
D2K_HD xd operator/(xd a, xd b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a.v, b.v);
#else
  return a.v / b.v;
#endif
}
D2K_HD xd operator-(xd a) { return -a.v; }
D2K_HD xd xsqrt(xd a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a.v);
#else
  return __builtin_sqrt(a.v);  // correctly rounded (sqrtsd)
#endif
}

/// Exact conversions between int64 and double (round to nearest / truncation).
D2K_HD double i64_to_double(std::int64_t i) {
#if defined(__CUDA_ARCH__)
  return __ll2double_rn(i);
#else
  return static_cast<double>(i);
#endif
}
D2K_HD double u64_to_double(std::uint64_t i) {
#if defined(__CUDA_ARCH__)
  return __ull2double_rn(i);
#else
  return static_cast<double>(i);
#endif
}
/// Truncation toward zero; the caller keeps |x| < 2^63.
D2K_HD std::int64_t double_to_i64_trunc(double x) {
#if defined(__CUDA_ARCH__)
  return __double2ll_rz(x);
#else
  return static_cast<std::int64_t>(x);
#endif
}
D2K_HD float double_to_float_rn(double x) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(x);
#else
  return static_cast<float>(x);
#endif
}

D2K_HD bool is_nan(double x) { return (bits_of(x) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }
D2K_HD bool is_finite(double x) { return (bits_of(x) & 0x7FF0000000000000ull) != 0x7FF0000000000000ull; }
D2K_HD double abs_d(double x) { return double_of(bits_of(x) & 0x7FFFFFFFFFFFFFFFull); }

/// floor(x) for |x| < 2^62, exactly.
D2K_HD double floor_d(double x) {
  const double t = i64_to_double(double_to_i64_trunc(x));
  return (t > x) ? (xd(t) - 1.0).v : t;
}

/// x * 2^k for an integer k, exact unless the result under/overflows.
D2K_HD double ldexp_exact(double x, int k) {
  // Split into steps whose scale factor is a normal power of two.
  while (k > 1000) { x = (xd(x) * double_of(static_cast<std::uint64_t>(1023 + 1000) << 52)).v; k -= 1000; }
  while (k < -1000) { x = (xd(x) * double_of(static_cast<std::uint64_t>(1023 - 1000) << 52)).v; k += 1000; }
  return (xd(x) * double_of(static_cast<std::uint64_t>(1023 + k) << 52)).v;
}

namespace exact_detail {
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000: k*kLn2Hi exact for |k| < 2^21
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kSqrt2 = 1.41421356237309514547e+00;
constexpr double kPiOver2 = 1.57079632679489655800e+00;
}  // namespace exact_detail

/// Natural logarithm for x > 0 (returns -inf at 0, NaN below 0, +inf at +inf).
/// log x = k ln2 + 2 atanh(s), s = (m - 1)/(m + 1), m in (sqrt(1/2), sqrt(2)].
D2K_HD double xlog(double x) {
  using namespace exact_detail;
  if (is_nan(x) || x < 0) return double_of(0x7FF8000000000000ull);
  if (x == 0) return -double_of(0x7FF0000000000000ull);
  if (!is_finite(x)) return x;
  std::uint64_t b = bits_of(x);
  int k = 0;
  if ((b >> 52) == 0) {  // subnormal: scale up by 2^54 first
    b = bits_of((xd(x) * double_of(static_cast<std::uint64_t>(1023 + 54) << 52)).v);
    k = -54;
  }
  k += static_cast<int>(b >> 52) - 1023;
  double m = double_of((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);  // [1, 2)
  if (m > kSqrt2) {
    m = (xd(m) * 0.5).v;
    ++k;
  }
  const xd f = xd(m) - 1.0;  // exact (Sterbenz)
  const xd s = f / (xd(2.0) + f);
  const xd z = s * s;
  // atanh(s)/s - 1 = z/3 + z^2/5 + ... ; |z| < 0.0295 so 11 terms reach 1e-17.
  xd p = 1.0 / 23.0;
  p = p * z + 1.0 / 21.0;
  p = p * z + 1.0 / 19.0;
  p = p * z + 1.0 / 17.0;
  p = p * z + 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z + 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  const xd two_s = s * 2.0;
  const xd logm = two_s + two_s * (z * p);
  const xd kd = i64_to_double(k);
  return (kd * kLn2Hi + (kd * kLn2Lo + logm)).v;
}

/// e^x (0 below -745.2, +inf above 709.78).
D2K_HD double xexp(double x) {
  using namespace exact_detail;
  if (is_nan(x)) return x;
  if (x > 709.78) return double_of(0x7FF0000000000000ull);
  if (x < -745.2) return 0.0;
  const xd t = xd(x) * kInvLn2;
  const std::int64_t k = double_to_i64_trunc((t.v >= 0 ? t + 0.5 : t - 0.5).v);
  const xd kd = i64_to_double(k);
  const xd r = (xd(x) - kd * kLn2Hi) - kd * kLn2Lo;  // |r| <= ~0.347
  // Taylor series to r^14 / 14!: error below 1e-17 on that interval.
  xd p = 1.0 / 87178291200.0;
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return ldexp_exact(p.v, static_cast<int>(k));
}

/// log(1 + x), accurate near 0 (Goldberg's correction).
D2K_HD double xlog1p(double x) {
  const xd u = xd(1.0) + x;
  if (u.v == 1.0) return x;
  return (xd(xlog(u.v)) * (xd(x) / (u - 1.0))).v;
}

/// e^x - 1, accurate near 0 (Kahan's correction).
D2K_HD double xexpm1(double x) {
  const xd u = xexp(x);
  if (u.v == 1.0) return x;
  const xd um1 = u - 1.0;
  if (um1.v == -1.0) return -1.0;
  if (!is_finite(u.v)) return u.v;
  return (um1 * (xd(x) / xlog(u.v))).v;
}

/// sin and cos of t in [0, pi/4] by Taylor series (error < 1e-17).
D2K_HD void sincos_small(double t, double* s, double* c) {
  const xd x = t, z = x * x;
  xd ps = -1.0 / 121645100408832000.0;  // -1/19!
  ps = ps * z + 1.0 / 355687428096000.0;
  ps = ps * z - 1.0 / 1307674368000.0;
  ps = ps * z + 1.0 / 6227020800.0;
  ps = ps * z - 1.0 / 39916800.0;
  ps = ps * z + 1.0 / 362880.0;
  ps = ps * z - 1.0 / 5040.0;
  ps = ps * z + 1.0 / 120.0;
  ps = ps * z - 1.0 / 6.0;
  *s = (x + x * (z * ps)).v;
  xd pc = 1.0 / 6402373705728000.0;  // 1/18!
  pc = pc * z - 1.0 / 20922789888000.0;
  pc = pc * z + 1.0 / 87178291200.0;
  pc = pc * z - 1.0 / 479001600.0;
  pc = pc * z + 1.0 / 3628800.0;
  pc = pc * z - 1.0 / 40320.0;
  pc = pc * z + 1.0 / 720.0;
  pc = pc * z - 1.0 / 24.0;
  pc = pc * z + 0.5;
  *c = (xd(1.0) - z * pc).v;
}

/// sin(2 pi u) and cos(2 pi u) for u in [0, 1). The quadrant and the reflection about pi/4
/// are taken on u itself (exact), so no large-argument reduction is needed.
D2K_HD void sincos_2pi(double u, double* s_out, double* c_out) {
  const xd t = xd(u) * 4.0;                      // exact
  const int q = static_cast<int>(double_to_i64_trunc(t.v)) & 3;
  const xd f = t - i64_to_double(double_to_i64_trunc(t.v));  // exact, in [0, 1)
  double s, c;
  if (f.v > 0.5) {
    // angle (pi/2) f = pi/2 - (pi/2)(1 - f): swap sin and cos.
    sincos_small((( xd(1.0) - f) * exact_detail::kPiOver2).v, &c, &s);
  } else {
    sincos_small((f * exact_detail::kPiOver2).v, &s, &c);
  }
  // Rotate by q quarter turns.
  switch (q) {
    case 0: *s_out = s; *c_out = c; break;
    case 1: *s_out = c; *c_out = -s; break;
    case 2: *s_out = -s; *c_out = -c; break;
    default: *s_out = -c; *c_out = s; break;
  }
}

}  // namespace d2k::data
