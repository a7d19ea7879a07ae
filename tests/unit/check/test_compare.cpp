// Host comparators: pass and fail cases of every rule, non-finite values, all-zero outputs,
// unwritten (poisoned) elements, multiset order and counts, topk ties.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "check/compare.h"
#include "check/compare_core.h"
#include "data/dtype_bits.h"

using namespace d2k;

namespace {

HostTensor tensor(DType t, std::vector<std::int64_t> shape, const std::vector<double>& v, std::string name = "out") {
  HostTensor h;
  h.name = std::move(name);
  h.dtype = t;
  h.shape = std::move(shape);
  h.bytes.resize(v.size() * data::elem_bytes(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (data::is_float_type(t)) data::store_real(t, h.data(), static_cast<std::int64_t>(i), v[i]);
    else data::store_int(t, h.data(), static_cast<std::int64_t>(i), static_cast<std::int64_t>(v[i]));
  }
  return h;
}

std::vector<double> randn(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

CompareSpec allclose(double atol, double rtol) {
  CompareSpec s;
  s.rule = "allclose";
  s.atol = atol;
  s.rtol = rtol;
  return s;
}

CompareSpec rule(const char* r) {
  CompareSpec s;
  s.rule = r;
  return s;
}

}  // namespace

TEST(Allclose, PassesWithinToleranceAndReportsErrors) {
  auto e = randn(4096, 1), a = e;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += (i % 2 ? 1 : -1) * 0.004;
  const auto r = compare(allclose(0.005, 0), tensor(DType::f64, {64, 64}, e), tensor(DType::f64, {64, 64}, a));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.status, CheckStatus::passed);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_EQ(r.checked, 4096);
  EXPECT_EQ(r.first_bad, -1);
  EXPECT_NEAR(r.max_abs_error, 0.004, 1e-12);
  EXPECT_GT(r.max_rel_error, 0.004);
  EXPECT_NEAR(r.rel_l2, 0.004 / std::sqrt(1.0), 0.001);
}

TEST(Allclose, FailsOnOneElementAndNamesIt) {
  auto e = randn(64, 2), a = e;
  a[8 * 2 + 5] = e[8 * 2 + 5] + 1.0;
  const auto r = compare(allclose(0.01, 0.01), tensor(DType::f32, {8, 8}, e), tensor(DType::f32, {8, 8}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.status, CheckStatus::incorrect_numerical);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_bad, 21);
  EXPECT_FLOAT_EQ(r.first_expected, static_cast<float>(e[21]));
  EXPECT_FLOAT_EQ(r.first_actual, static_cast<float>(a[21]));
  EXPECT_NE(r.message.find("[2, 5]"), std::string::npos) << r.message;
  EXPECT_NEAR(r.max_abs_error, 1.0, 1e-6);
}

TEST(Allclose, ElementFailsOnlyWhenBothToleranceAreExceeded) {
  // e = 100: rtol 0.01 allows 1.0, atol allows 0.1.
  const auto e = tensor(DType::f64, {3}, {100, 0.001, 100});
  EXPECT_TRUE(compare(allclose(0.1, 0.01), e, tensor(DType::f64, {3}, {100.9, 0.001, 100})).passed);   // rtol saves it
  EXPECT_TRUE(compare(allclose(0.1, 0.01), e, tensor(DType::f64, {3}, {100, 0.09, 100})).passed);      // atol saves it
  EXPECT_FALSE(compare(allclose(0.1, 0.01), e, tensor(DType::f64, {3}, {101.5, 0.001, 100})).passed);  // both exceeded
}

TEST(Allclose, MatchedRatioAndMaxErrorCap) {
  auto e = randn(1000, 3), a = e;
  for (int i = 0; i < 5; ++i) a[static_cast<std::size_t>(i * 100)] += 0.5;
  auto spec = allclose(0.01, 0);
  spec.matched_ratio = 0.99;  // mean 10 chance misses: up to 26 may fail
  auto r = compare(spec, tensor(DType::f64, {1000}, e), tensor(DType::f64, {1000}, a));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.mismatches, 5);
  EXPECT_EQ(r.first_bad, 0);
  spec.matched_ratio = 0.9999;  // mean 0.1 chance misses: up to 4 may fail
  EXPECT_FALSE(compare(spec, tensor(DType::f64, {1000}, e), tensor(DType::f64, {1000}, a)).passed);
  spec.matched_ratio = 0.99;
  spec.max_error_cap = 0.25;  // the 5 allowed mismatches are too large
  r = compare(spec, tensor(DType::f64, {1000}, e), tensor(DType::f64, {1000}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("max_error_cap"), std::string::npos) << r.message;
}

TEST(Allclose, OneTieOnATinyOutputPassesUnderACap) {
  // layernorm_backward's 1 x 8 check: 8 bf16 outputs, rtol half an ulp, matched_ratio 0.999,
  // max_error_cap 0.125. An honest fp32 kernel rounds one output the other way (one ulp).
  const std::vector<double> e = {1.0, -0.5, 0.75, 2.0, -1.25, 0.3125, 1.5, -0.875};
  std::vector<double> a = e;
  a[2] = 0.75 + 0.00390625;  // one bf16 ulp at 0.75
  auto spec = allclose(1e-6, 0.001953125);
  spec.matched_ratio = 0.999;
  spec.max_error_cap = 0.125;
  auto r = compare(spec, tensor(DType::bf16, {8}, e), tensor(DType::bf16, {8}, a));
  EXPECT_TRUE(r.passed) << r.message;
  a[5] = 0.3125 + 0.001953125;  // a second miss: more than one on 8 elements fails
  EXPECT_FALSE(compare(spec, tensor(DType::bf16, {8}, e), tensor(DType::bf16, {8}, a)).passed);
  a[5] = 0.3125;
  a[2] = 0.75 + 0.25;  // one miss beyond the cap fails
  EXPECT_FALSE(compare(spec, tensor(DType::bf16, {8}, e), tensor(DType::bf16, {8}, a)).passed);
  a[2] = 0.75 + 0.00390625;
  spec.max_error_cap = 0;  // no cap: the tiny output stays exact (a wholly wrong element would pass otherwise)
  EXPECT_FALSE(compare(spec, tensor(DType::bf16, {8}, e), tensor(DType::bf16, {8}, a)).passed);
}

TEST(Allclose, NonFiniteValues) {
  const auto e = tensor(DType::f32, {4}, {1, 2, NAN, INFINITY});
  EXPECT_TRUE(compare(allclose(0, 0), e, tensor(DType::f32, {4}, {1, 2, NAN, INFINITY})).passed);
  auto spec = allclose(1e9, 1e9);
  spec.matched_ratio = 0.5;  // NaN fails regardless of tolerance and ratio
  auto r = compare(spec, e, tensor(DType::f32, {4}, {1, NAN, NAN, INFINITY}));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.first_bad, 1);
  EXPECT_TRUE(std::isnan(r.first_actual));
  EXPECT_FALSE(compare(spec, e, tensor(DType::f32, {4}, {1, 2, NAN, -INFINITY})).passed);
  EXPECT_FALSE(compare(spec, e, tensor(DType::f32, {4}, {1, 2, 0, INFINITY})).passed);  // expected NaN, actual finite
  EXPECT_FALSE(compare(spec, e, tensor(DType::f32, {4}, {INFINITY, 2, NAN, INFINITY})).passed);
}

TEST(Allclose, AllZeroOutputFails) {
  const auto e = tensor(DType::bf16, {4}, {0, 0, 0.5, 0});
  const auto z = tensor(DType::bf16, {4}, {0, 0, 0, 0});
  auto r = compare(allclose(1.0, 1.0), e, z);  // within tolerance, but all zeros
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("all zeros"), std::string::npos) << r.message;
  EXPECT_TRUE(compare(allclose(0, 0), z, z).passed);  // expected all zero too
}

CompareSpec ulp_rule(double ulps, double matched_ratio = 1, double max_ulps = -1) {
  CompareSpec s;
  s.rule = "ulp";
  s.ulps = ulps;
  s.matched_ratio = matched_ratio;
  s.max_ulps = max_ulps;
  return s;
}

TEST(Ulp, SpacingOfEachTypeAtTheExpectedValue) {
  EXPECT_EQ(check::ulp_of(DType::bf16, 1.0), std::ldexp(1.0, -7));
  EXPECT_EQ(check::ulp_of(DType::bf16, 1.99), std::ldexp(1.0, -7));
  EXPECT_EQ(check::ulp_of(DType::bf16, -2.0), std::ldexp(1.0, -6));
  EXPECT_EQ(check::ulp_of(DType::bf16, 0.0), std::ldexp(1.0, -133));  // subnormal spacing
  EXPECT_EQ(check::ulp_of(DType::f16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(check::ulp_of(DType::f16, 1e-6), std::ldexp(1.0, -24));   // below fp16's smallest normal
  EXPECT_EQ(check::ulp_of(DType::f32, 3.0), std::ldexp(1.0, -22));
  EXPECT_EQ(check::ulp_of(DType::f64, 1.0), std::ldexp(1.0, -52));
  EXPECT_EQ(check::ulp_of(DType::f64, 0.0), std::ldexp(1.0, -1074));
  EXPECT_EQ(check::ulp_of(DType::f8e4m3, 1.0), 0.125);
}

// bf16 values one and two ulps away: counted in units of the output type at the expected value.
TEST(Ulp, CountsUlpsAndAppliesMatchedRatioAndMaxUlps) {
  std::vector<double> e(1000), a(1000);
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = a[i] = 1.0 + static_cast<double>(i % 128) / 128.0;  // bf16 exact
  auto r = compare(ulp_rule(0), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.max_ulp_error, 0);
  a[10] += std::ldexp(1.0, -7);  // one ulp
  a[20] -= std::ldexp(1.0, -7);
  r = compare(ulp_rule(0), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.status, CheckStatus::incorrect_numerical);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_EQ(r.first_bad, 10);
  EXPECT_EQ(r.max_ulp_error, 1);
  EXPECT_NE(r.message.find("off by more than 0 ulp (allowed 0)"), std::string::npos) << r.message;
  EXPECT_TRUE(compare(ulp_rule(0, 0.999), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a)).passed);
  // mean 0.001 chance misses in 1000: none may fail
  EXPECT_FALSE(compare(ulp_rule(0, 0.999999), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a)).passed);
  EXPECT_TRUE(compare(ulp_rule(1), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a)).passed);
  a[30] += 2 * std::ldexp(1.0, -7);  // two ulps: beyond max_ulps 1 even though the ratio allows it
  r = compare(ulp_rule(0, 0.99, 1), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.max_ulp_error, 2);
  EXPECT_NE(r.message.find("beyond max_ulps 1"), std::string::npos) << r.message;
  EXPECT_TRUE(compare(ulp_rule(0, 0.99, 2), tensor(DType::bf16, {1000}, e), tensor(DType::bf16, {1000}, a)).passed);
}

// matched_ratio bounds an honest kernel's chance-miss rate; the allowance in n elements is the
// count such a kernel exceeds with probability below kChanceMissRisk (Poisson tail), capped at
// kMissShareCap times the mean. floor(rate*n)
// failed the fused_add_rmsnorm expert on the H200: 2 one-ulp misses in 1360 elements (a hidden
// 34x40 workload) against an allowance of 1.
TEST(MatchedRatio, AllowanceIsThePoissonTailOfTheChanceMissRate) {
  using check::allowed_mismatches;
  EXPECT_EQ(allowed_mismatches(1.0, 1 << 20), 0);  // exact rules allow nothing
  EXPECT_GE(allowed_mismatches(0.999, 1360), 2);   // the H200 case passes
  EXPECT_LE(allowed_mismatches(0.999, 1360), 10);
  // The cap (kMissShareCap x the mean): a tiny output stays exact; a wholly wrong one-element
  // output never passes.
  EXPECT_EQ(allowed_mismatches(0.999, 1), 0);
  EXPECT_EQ(allowed_mismatches(0.999, 99), 0);
  EXPECT_EQ(allowed_mismatches(0.999, 128), 1);
  EXPECT_EQ(allowed_mismatches(0.999999, 1000), 0);
  // A rule that bounds each miss (max_error_cap, max_ulps) keeps one miss on a tiny output
  // (layernorm_backward's 1 x 8 check: a one-ulp tie); exact rules still allow none.
  EXPECT_EQ(allowed_mismatches(0.999, 8, true), 1);
  EXPECT_EQ(allowed_mismatches(0.999, 1, true), 1);
  EXPECT_EQ(allowed_mismatches(1.0, 8, true), 0);
  EXPECT_EQ(allowed_mismatches(0.999, 128, true), 1);
  EXPECT_EQ(allowed_mismatches(0.999, 1360, true), allowed_mismatches(0.999, 1360));
  for (std::int64_t n = 1; n < 100'000; n = n * 3 + 1)
    EXPECT_GE(allowed_mismatches(0.999, n), n / 1000) << n;  // never below the old floor
  // The tail at each allowance: P(X > k) < risk <= P(X > k - 1), computed independently.
  for (const auto& [ratio, n] : std::vector<std::pair<double, std::int64_t>>{{0.999, 1360}, {0.99, 1000}, {0.999, 300000}}) {
    const double lambda = (1 - ratio) * static_cast<double>(n);
    const std::int64_t k = allowed_mismatches(ratio, n);
    auto tail_above = [&](std::int64_t m) {  // P(X > m) by summing the pmf in log space
      double cdf = 0;
      for (std::int64_t i = 0; i <= m; ++i)
        cdf += std::exp(static_cast<double>(i) * std::log(lambda) - lambda - std::lgamma(static_cast<double>(i) + 1));
      return 1 - cdf;
    };
    EXPECT_LT(tail_above(k), check::kChanceMissRisk) << ratio << " " << n;
    EXPECT_GE(tail_above(k - 1), check::kChanceMissRisk) << ratio << " " << n;
  }
  // Large n (normal approximation): within a few percent above the mean, never below it.
  const std::int64_t big = allowed_mismatches(0.999, 100'000'000);
  EXPECT_GT(big, 100'000 + 4 * 316);
  EXPECT_LT(big, 100'000 + 6 * 316);
  EXPECT_LE(allowed_mismatches(0.999, 499'000), allowed_mismatches(0.999, 501'000));  // no step down at the switch
}

// A value that cancels to near zero (p - lr*u) carries its operands' absolute error, which is
// thousands of ulps of the tiny result: the atol floor counts such an element as matched (not in
// max_ulps either), and leaves the ulp rule whole at ordinary magnitudes.
TEST(Ulp, AtolFloorCoversValuesThatCancelToNearZero) {
  std::vector<double> e = {3e-9, 0.25, 0.5}, a = {1.1e-8, 0.25, 0.5};  // 8e-9 off: ~2^10 bf16 ulps at 3e-9
  auto spec = ulp_rule(0, 0.5, 1);
  auto r = compare(spec, tensor(DType::bf16, {3}, e), tensor(DType::bf16, {3}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("beyond max_ulps 1"), std::string::npos) << r.message;
  spec.atol = 2e-8;
  r = compare(spec, tensor(DType::bf16, {3}, e), tensor(DType::bf16, {3}, a));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.max_ulp_error, 0);
  a[1] = 0.25 + 2 * std::ldexp(1.0, -9);  // two ulps at 0.25, far above atol: still caught
  r = compare(spec, tensor(DType::bf16, {3}, e), tensor(DType::bf16, {3}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.max_ulp_error, 2);
  EXPECT_NE(r.message.find("atol=2e-08"), std::string::npos) << r.message;  // the rule as stated
}

// An error of the same size counts as more ulps where the expected value is small: the rule sees
// relative precision, which no single atol can.
TEST(Ulp, ScalesWithTheExpectedMagnitudeAndRejectsNonFinite) {
  const std::vector<double> e = {0.01, 100.0};
  auto r = compare(ulp_rule(1), tensor(DType::f32, {2}, e), tensor(DType::f32, {2}, {0.01 + 1e-6, 100.0 + 1e-6}));
  EXPECT_FALSE(r.passed);  // 1e-6 is ~ 1e-6 / 9.3e-10 ulp at 0.01, < 1 ulp (7.6e-6) at 100
  EXPECT_EQ(r.first_bad, 0);
  EXPECT_EQ(r.mismatches, 1);
  r = compare(ulp_rule(0, 0.5), tensor(DType::f32, {2}, e), tensor(DType::f32, {2}, {NAN, 100.0}));
  EXPECT_FALSE(r.passed);  // NaN fails regardless of the ratio
}

TEST(RelL2, PassFailAndValue) {
  const auto e = randn(10000, 4);
  auto a = e;
  std::mt19937 rng(5);
  std::normal_distribution<double> d(0, 1e-3);
  for (auto& x : a) x += d(rng);
  CompareSpec s = rule("rel_l2");
  s.tol = 2e-3;
  auto r = compare(s, tensor(DType::f64, {10000}, e), tensor(DType::f64, {10000}, a));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NEAR(r.rel_l2, 1e-3, 1e-4);
  s.tol = 5e-4;
  r = compare(s, tensor(DType::f64, {10000}, e), tensor(DType::f64, {10000}, a));
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.mismatches, 0);  // elements beyond tol * rms(e)
  EXPECT_GE(r.first_bad, 0);
  const auto z = tensor(DType::f32, {3}, {0, 0, 0});
  s.tol = 0;
  EXPECT_TRUE(compare(s, z, z).passed);
  auto withnan = a;
  withnan[7] = NAN;
  s.tol = 1;
  r = compare(s, tensor(DType::f64, {10000}, e), tensor(DType::f64, {10000}, withnan));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.first_bad, 7);
}

TEST(Exact, IntegersAndFloats) {
  const auto e = tensor(DType::i32, {5}, {1, 2, 3, 4, 5});
  EXPECT_TRUE(compare(rule("exact"), e, tensor(DType::i32, {5}, {1, 2, 3, 4, 5})).passed);
  auto r = compare(rule("exact"), e, tensor(DType::i32, {5}, {1, 2, 3, 5, 5}));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_bad, 3);
  // int64 values beyond 2^53 that differ by one.
  HostTensor a64 = tensor(DType::i64, {1}, {0}), b64 = a64;
  a64.as<std::int64_t>()[0] = (std::int64_t{1} << 60) + 1;
  b64.as<std::int64_t>()[0] = (std::int64_t{1} << 60);
  EXPECT_FALSE(compare(rule("exact"), a64, b64).passed);
  EXPECT_TRUE(compare(rule("exact"), tensor(DType::f32, {2}, {0.0, 1.5}), tensor(DType::f32, {2}, {-0.0, 1.5})).passed);
}

TEST(Compare, ShapeMismatchAndNone) {
  auto r = compare(allclose(1, 1), tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                   tensor(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r.status, CheckStatus::incorrect_shape);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(check_status_name(r.status), "INCORRECT_SHAPE");
  EXPECT_TRUE(compare(rule("none"), tensor(DType::f32, {1}, {1}), tensor(DType::f32, {1}, {2})).passed);
  EXPECT_THROW(compare(rule("closeish"), tensor(DType::f32, {1}, {1}), tensor(DType::f32, {1}, {1})),
               std::invalid_argument);
}

TEST(Poison, PatternsAreNaNForFloatsAndDocumentedBytesForInts) {
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2})
    for (int v : {0, 1}) {
      const auto p = poison_pattern(t, v);
      EXPECT_TRUE(std::isnan(data::load_double(t, &p.bits, 0))) << dtype_name(t) << " variant " << v;
    }
  EXPECT_EQ(poison_pattern(DType::f32).bits, 0x7FA5A5A5u);
  EXPECT_EQ(poison_pattern(DType::i32).bits, 0xA5A5A5A5u);
  EXPECT_EQ(poison_pattern(DType::i16, 1).bits, 0x5A5Au);
  EXPECT_EQ(poison_from_byte(DType::f32, 0xFF).bits, 0xFFFFFFFFu);
  EXPECT_NE(poison_pattern(DType::f16, 0).bits, poison_pattern(DType::f16, 1).bits);
}

TEST(Poison, UnwrittenElementsGiveIncorrectWrite) {
  const auto e = tensor(DType::f32, {2, 4}, randn(8, 6));
  HostTensor a = e;
  const auto p = poison_pattern(DType::f32);
  fill_poison(p, a.as<float>() + 6, 1);  // element [1, 2] never written
  EXPECT_EQ(first_unwritten(p, a), 6);
  EXPECT_EQ(first_unwritten(p, a, 6), -1);  // beyond the limit
  CompareOptions o;
  o.poison_variant = 0;
  auto r = compare(allclose(1e9, 1e9), e, a, o);
  EXPECT_EQ(r.status, CheckStatus::incorrect_write);
  EXPECT_EQ(r.first_bad, 6);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_NE(r.message.find("[1, 2]"), std::string::npos) << r.message;
  // Without the write check the poison is a NaN and fails numerically.
  EXPECT_EQ(compare(allclose(1e9, 1e9), e, a).status, CheckStatus::incorrect_numerical);

  // An integer output whose expected value equals the poison counts as written.
  const auto pi = poison_pattern(DType::i8);
  const auto ei = tensor(DType::i8, {3}, {static_cast<double>(static_cast<std::int8_t>(0xA5)), 1, 2});
  EXPECT_EQ(check_written(pi, ei, -1, &ei).unwritten, 0);
  EXPECT_EQ(check_written(pi, ei).unwritten, 1);
  EXPECT_TRUE(compare(rule("exact"), ei, ei, o).passed);

  // Two runs: unwritten only where both hold their poison.
  HostTensor ra = tensor(DType::i32, {4}, {1, 2, 3, 4}), rb = ra;
  const auto pa = poison_from_byte(DType::i32, 0xFF), pb = poison_from_byte(DType::i32, 0xA5);
  fill_poison(pa, ra.as<std::int32_t>() + 1, 2);
  fill_poison(pb, rb.as<std::int32_t>() + 2, 1);
  const WriteCheck w = check_written_two_runs(pa, ra, pb, rb);
  EXPECT_EQ(w.unwritten, 1);
  EXPECT_EQ(w.first, 2);
}

TEST(Multiset, OrderInsensitiveRowsAcrossColumns) {
  const auto ek = tensor(DType::i32, {6}, {1, 2, 3, 4, 0, 0}, "keys");
  const auto ev = tensor(DType::i32, {6}, {10, 20, 30, 40, 0, 0}, "vals");
  const auto ak = tensor(DType::i32, {6}, {3, 1, 4, 2, 99, -7}, "keys");  // garbage beyond the count
  const auto av = tensor(DType::i32, {6}, {30, 10, 40, 20, 5, 5}, "vals");
  const HostTensor* E[] = {&ek, &ev};
  const HostTensor* A[] = {&ak, &av};
  CompareSpec s = rule("multiset");
  auto r = compare_multiset(s, E, A, 4, 4);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.checked, 4);
  // Columns shuffled independently break rows.
  const auto av2 = tensor(DType::i32, {6}, {10, 30, 40, 20, 5, 5}, "vals");
  const HostTensor* A2[] = {&ak, &av2};
  r = compare_multiset(s, E, A2, 4, 4);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_EQ(r.first_bad, 0);
  // Count handling: mismatch, beyond capacity.
  EXPECT_FALSE(compare_multiset(s, E, A, 4, 5).passed);
  r = compare_multiset(s, E, A, 4, 7);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("outside"), std::string::npos) << r.message;
}

TEST(Multiset, DuplicatesCountAsAMultiset) {
  const auto e = tensor(DType::i64, {3}, {1, 1, 2});
  EXPECT_FALSE(compare(rule("multiset"), e, tensor(DType::i64, {3}, {1, 2, 2})).passed);
  EXPECT_TRUE(compare(rule("multiset"), e, tensor(DType::i64, {3}, {2, 1, 1})).passed);
}

TEST(Multiset, PoisonOnlyMattersInValidRows) {
  const auto e = tensor(DType::i32, {4}, {5, 6, 0, 0});
  HostTensor a = tensor(DType::i32, {4}, {6, 5, 0, 0});
  fill_poison(poison_pattern(DType::i32), a.as<std::int32_t>() + 2, 2);  // unused rows keep the poison
  const HostTensor* E[] = {&e};
  const HostTensor* A[] = {&a};
  EXPECT_TRUE(compare_multiset(rule("multiset"), E, A, 2, 2, 0).passed);
  fill_poison(poison_pattern(DType::i32), a.as<std::int32_t>() + 1, 1);
  const auto r = compare_multiset(rule("multiset"), E, A, 2, 2, 0);
  EXPECT_EQ(r.status, CheckStatus::incorrect_write);
  EXPECT_EQ(r.first_bad, 1);
}

TEST(Multiset, FloatColumnsWithTolerance) {
  const auto ek = tensor(DType::i32, {3}, {1, 2, 3}), ev = tensor(DType::f32, {3}, {0.5, 1.5, 2.5});
  const auto ak = tensor(DType::i32, {3}, {3, 1, 2}), av = tensor(DType::f32, {3}, {2.5001, 0.5, 1.4999});
  const HostTensor* E[] = {&ek, &ev};
  const HostTensor* A[] = {&ak, &av};
  CompareSpec s = rule("multiset");
  EXPECT_FALSE(compare_multiset(s, E, A, -1, -1).passed);  // exact by default
  s.atol = 1e-3;
  const auto r = compare_multiset(s, E, A, -1, -1);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NEAR(r.max_abs_error, 1e-4, 2e-5);
}

TEST(Multiset, AllZeroFails) {
  const auto e = tensor(DType::i32, {2}, {4, 0});
  EXPECT_FALSE(compare(rule("multiset"), e, tensor(DType::i32, {2}, {0, 0})).passed);
}

TEST(Topk, SetsMatchInAnyOrder) {
  // scores rows: top-3 of row 0 = {4, 1, 2}; row 1 = {0, 3, 5}.
  const auto scores = tensor(DType::f32, {2, 6}, {0.1, 0.8, 0.7, 0.2, 0.9, 0.0, 0.9, 0.1, 0.2, 0.8, 0.3, 0.7});
  const auto e = tensor(DType::i32, {2, 3}, {4, 1, 2, 0, 3, 5});
  CompareSpec s = rule("topk");
  s.k = 3;
  CompareOptions o;
  o.scores = &scores;
  EXPECT_TRUE(compare(s, e, tensor(DType::i32, {2, 3}, {2, 4, 1, 5, 0, 3}), o).passed);
  auto r = compare(s, e, tensor(DType::i32, {2, 3}, {4, 1, 2, 0, 3, 4}), o);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.first_bad, 1);
  EXPECT_EQ(r.first_actual, 4);
  EXPECT_FALSE(compare(s, e, tensor(DType::i32, {2, 3}, {4, 4, 2, 0, 3, 5}), o).passed);  // repeated index
  EXPECT_FALSE(compare(s, e, tensor(DType::i32, {2, 3}, {4, 1, 9, 0, 3, 5}), o).passed);  // out of range
}

TEST(Topk, TiesWithTheKthValueAreInterchangeable) {
  // Row: values 5, 3, 3, 3, 1: top-2 = {0, and any of 1, 2, 3}.
  const auto scores = tensor(DType::f32, {1, 5}, {5, 3, 3, 3, 1});
  const auto e = tensor(DType::i32, {1, 2}, {0, 1});
  CompareSpec s = rule("topk");
  s.k = 2;
  CompareOptions o;
  o.scores = &scores;
  EXPECT_TRUE(compare(s, e, tensor(DType::i32, {1, 2}, {3, 0}), o).passed);
  EXPECT_TRUE(compare(s, e, tensor(DType::i32, {1, 2}, {0, 2}), o).passed);
  EXPECT_FALSE(compare(s, e, tensor(DType::i32, {1, 2}, {0, 4}), o).passed);  // 1 < k-th value 3
  EXPECT_FALSE(compare(s, e, tensor(DType::i32, {1, 2}, {1, 2}), o).passed);  // dropped the strict top 5

  // Without scores: the values outputs of each side decide ties.
  CompareOptions ov;
  const auto evals = tensor(DType::f32, {1, 2}, {5, 3}), avals = tensor(DType::f32, {1, 2}, {5, 3});
  ov.expected_values = &evals;
  ov.actual_values = &avals;
  EXPECT_TRUE(compare(s, e, tensor(DType::i32, {1, 2}, {0, 3}), ov).passed);
  const auto avals_low = tensor(DType::f32, {1, 2}, {5, 1});
  ov.actual_values = &avals_low;
  EXPECT_FALSE(compare(s, e, tensor(DType::i32, {1, 2}, {0, 4}), ov).passed);
  // Without any values only identical sets pass.
  EXPECT_FALSE(compare(s, e, tensor(DType::i32, {1, 2}, {0, 3})).passed);
  EXPECT_TRUE(compare(s, e, tensor(DType::i32, {1, 2}, {1, 0})).passed);
}

TEST(Topk, ValidRowsAndPoison) {
  const auto e = tensor(DType::i32, {3, 2}, {0, 1, 2, 3, 0, 0});
  HostTensor a = tensor(DType::i32, {3, 2}, {1, 0, 3, 2, 0, 0});
  fill_poison(poison_pattern(DType::i32), a.as<std::int32_t>() + 4, 2);  // row 2 not valid
  CompareSpec s = rule("topk");
  s.k = 2;
  CompareOptions o;
  o.expected_rows = o.actual_rows = 2;
  o.poison_variant = 0;
  EXPECT_TRUE(compare(s, e, a, o).passed);
  o.expected_rows = o.actual_rows = 3;
  EXPECT_EQ(compare(s, e, a, o).status, CheckStatus::incorrect_write);
}

TEST(Compare, ReadCount) {
  EXPECT_EQ(read_count(tensor(DType::i64, {1}, {42})), 42);
  EXPECT_EQ(read_count(tensor(DType::u32, {1}, {7})), 7);
  HostTensor empty;
  empty.dtype = DType::i32;
  EXPECT_THROW(read_count(empty), std::invalid_argument);
}

// Integer rows of up to two 32-bit cells take the radix-sorted path; rows with wider values the
// comparison sort. Both must order negatives, extremes and ties alike.
TEST(Multiset, PackedAndGeneralPathsAgreeOnSignedExtremes) {
  const std::vector<double> k = {-5, 3, -5, 2147483647, -2147483648.0, 0, 3};
  const std::vector<double> v = {1, 2, 0, -1, 7, -2147483648.0, 2};
  std::vector<std::size_t> perm = {6, 2, 4, 0, 5, 1, 3};
  std::vector<double> pk, pv;
  for (auto i : perm) {
    pk.push_back(k[i]);
    pv.push_back(v[i]);
  }
  for (DType t : {DType::i32, DType::i64}) {
    const auto ek = tensor(t, {7}, k, "keys"), ev = tensor(t, {7}, v, "vals");
    const auto ak = tensor(t, {7}, pk, "keys"), av = tensor(t, {7}, pv, "vals");
    const HostTensor* E[] = {&ek, &ev};
    const HostTensor* A[] = {&ak, &av};
    auto r = compare_multiset(rule("multiset"), E, A, 7, 7);
    EXPECT_TRUE(r.passed) << r.message;
    // One row changed in its second cell only: exactly one row unmatched on each side.
    auto bad_v = pv;
    bad_v[3] += 1;
    const auto av2 = tensor(t, {7}, bad_v, "vals");
    const HostTensor* A2[] = {&ak, &av2};
    r = compare_multiset(rule("multiset"), E, A2, 7, 7);
    EXPECT_FALSE(r.passed);
    EXPECT_EQ(r.mismatches, 1);
    EXPECT_EQ(r.first_bad, 3);
  }
  // A value beyond 32 bits forces the general path; the verdict is the same.
  const auto e64 = tensor(DType::i64, {3}, {5e10, -1, 2});
  EXPECT_TRUE(compare(rule("multiset"), e64, tensor(DType::i64, {3}, {2, 5e10, -1})).passed);
  EXPECT_FALSE(compare(rule("multiset"), e64, tensor(DType::i64, {3}, {2, 5e10 + 1, -1})).passed);
}
