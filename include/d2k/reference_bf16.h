#pragma once
/// bf16 on the host, for golden references (reference.cpp): exact widening, and rounding from
/// double to bf16 in one step (ties to even), so that no double rounding through float occurs.
/// Host-only and header-only: references link nothing but the ABI.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace d2k::ref {

inline double bf16_to_double(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Rounds to the nearest bf16, ties to even; handles bf16 subnormals and overflow to infinity.
inline std::uint16_t double_to_bf16(double v) {
  if (std::isnan(v)) return 0x7FC0;
  const bool neg = std::signbit(v);
  const double a = std::fabs(v);
  double q = 0.0;  // the rounded magnitude
  if (a != 0.0) {
    int e = 0;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): 8 significant bits put the ulp at 2^(e-8)
    const int ulp_exp = std::max(e - 8, -133);  // -133: spacing of bf16 subnormals
    q = std::ldexp(std::nearbyint(std::ldexp(a, -ulp_exp)), ulp_exp);
  }
  float f = static_cast<float>(q);  // exact: q has at most 8 significant bits (or is too large)
  if (q > 3.3895313892515355e38) f = INFINITY;
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  std::uint16_t b = static_cast<std::uint16_t>(u >> 16);
  if (neg) b |= 0x8000;
  return b;
}

}  // namespace d2k::ref
