// The exact-operation elementary functions against the C library (accuracy only: the bits
// differ from glibc by design, what must match is host vs device, tested on the GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "data/exact_math.h"

using namespace d2k::data;

namespace {
double rel(double a, double b) { return b == 0 ? std::fabs(a) : std::fabs(a - b) / std::fabs(b); }
}  // namespace

TEST(ExactMath, LogMatchesLibm) {
  std::mt19937_64 rng(1);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    // Log-uniform over [1e-300, 1e300] plus the unit interval where Box-Muller lives.
    const double x = (i & 1) ? std::ldexp(1.0, static_cast<int>(rng() % 1990) - 995) * (1 + (rng() >> 11) * 0x1p-53)
                             : ((rng() >> 11) + 1) * 0x1p-53;
    const double ref = std::log(x);
    const double err = std::fabs(xlog(x) - ref) / std::max(std::fabs(ref), 1e-300);
    if (std::fabs(ref) > 1e-3) worst = std::max(worst, err);
    else ASSERT_LT(std::fabs(xlog(x) - ref), 1e-18) << x;
  }
  EXPECT_LT(worst, 1e-15);
  EXPECT_EQ(xlog(1.0), 0.0);
  EXPECT_TRUE(std::isinf(xlog(0.0)) && xlog(0.0) < 0);
  EXPECT_TRUE(std::isnan(xlog(-1.0)));
  EXPECT_NEAR(xlog(4.9406564584124654e-324), std::log(4.9406564584124654e-324), 1e-12);  // subnormal
}

TEST(ExactMath, ExpMatchesLibm) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> d(-700, 700);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = (i % 3 == 0) ? d(rng) / 300 : d(rng);
    worst = std::max(worst, rel(xexp(x), std::exp(x)));
  }
  EXPECT_LT(worst, 1e-15);
  EXPECT_EQ(xexp(0.0), 1.0);
  EXPECT_EQ(xexp(-800.0), 0.0);
  EXPECT_TRUE(std::isinf(xexp(800.0)));
  EXPECT_LT(rel(xexp(-744.0), std::exp(-744.0)), 1e-3);  // deep subnormal result
}

TEST(ExactMath, Log1pExpm1NearZero) {
  for (double x : {1e-300, 1e-20, 1e-10, -1e-9, 3e-5, 0.25, -0.5, 2.0, 30.0}) {
    EXPECT_LT(rel(xlog1p(x), std::log1p(x)), 4e-16) << x;
    EXPECT_LT(rel(xexpm1(x), std::expm1(x)), 4e-15) << x;
  }
}

TEST(ExactMath, SinCos2PiMatchesLibm) {
  double worst = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = i / 100000.0;
    double s, c;
    sincos_2pi(u, &s, &c);
    worst = std::max({worst, std::fabs(s - std::sin(2 * M_PI * u)), std::fabs(c - std::cos(2 * M_PI * u))});
    ASSERT_LE(s * s + c * c, 1 + 1e-15);
  }
  EXPECT_LT(worst, 2e-15);
  double s, c;
  sincos_2pi(0.25, &s, &c);
  EXPECT_EQ(s, 1.0);
  EXPECT_EQ(c, 0.0);
}

TEST(ExactMath, FloorAndLdexp) {
  EXPECT_EQ(floor_d(-2.5), -3.0);
  EXPECT_EQ(floor_d(2.5), 2.0);
  EXPECT_EQ(floor_d(-3.0), -3.0);
  EXPECT_EQ(ldexp_exact(1.5, 10), 1536.0);
  EXPECT_EQ(ldexp_exact(1.0, -1074), 4.9406564584124654e-324);
  EXPECT_EQ(ldexp_exact(1.0, 1023), std::ldexp(1.0, 1023));
}
