// Device comparators against the host ones on the same data: same verdict and fields.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "check/compare_device.h"
#include "data/dtype_bits.h"
#include "gpu_util.h"

using namespace d2k;

namespace {

HostTensor random_tensor(DType t, std::vector<std::int64_t> shape, unsigned seed, double scale = 1.0) {
  HostTensor h;
  h.name = "out";
  h.dtype = t;
  h.shape = std::move(shape);
  std::int64_t n = 1;
  for (auto d : h.shape) n *= d;
  h.bytes.resize(static_cast<std::size_t>(n) * data::elem_bytes(t));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0, scale);
  for (std::int64_t i = 0; i < n; ++i) {
    if (data::is_float_type(t)) data::store_real(t, h.data(), i, nd(rng));
    else data::store_int(t, h.data(), i, static_cast<std::int64_t>(rng() % 1000) - 500);
  }
  return h;
}

/// Adds noise of size `eps` to a copy, then breaks `bad` elements by `jump`.
HostTensor perturb(const HostTensor& e, double eps, std::int64_t bad, double jump, unsigned seed) {
  HostTensor a = e;
  const std::int64_t n = static_cast<std::int64_t>(a.bytes.size() / data::elem_bytes(a.dtype));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-eps, eps);
  for (std::int64_t i = 0; i < n; ++i) {
    double v = data::load_double(a.dtype, a.data(), i) + (eps > 0 ? u(rng) : 0.0);
    if (bad > 0 && i % (n / bad) == 7) v += jump;
    if (data::is_float_type(a.dtype)) data::store_real(a.dtype, a.data(), i, v);
    else data::store_int(a.dtype, a.data(), i, static_cast<std::int64_t>(v));
  }
  return a;
}

DeviceTensorView view(const data::DeviceBuffer& b, const HostTensor& h) {
  return DeviceTensorView{b.get(), h.dtype, h.shape, h.name};
}

bool same_or_both_nan(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_same(const CompareSpec& spec, const HostTensor& e, const HostTensor& a, const CompareOptions& o = {}) {
  const CompareResult h = compare(spec, e, a, o);
  const auto de = test::to_device(e.data(), e.bytes.size()), da = test::to_device(a.data(), a.bytes.size());
  const CompareResult d = compare_device(spec, view(de, e), view(da, a), nullptr, o);
  SCOPED_TRACE(spec.rule + " " + std::string(dtype_name(a.dtype)) + ": host says " + h.message + " | device says " +
               d.message);
  EXPECT_EQ(h.passed, d.passed);
  EXPECT_EQ(h.status, d.status);
  EXPECT_EQ(h.checked, d.checked);
  EXPECT_EQ(h.mismatches, d.mismatches);
  EXPECT_EQ(h.first_bad, d.first_bad);
  EXPECT_TRUE(same_or_both_nan(h.first_expected, d.first_expected));
  EXPECT_TRUE(same_or_both_nan(h.first_actual, d.first_actual));
  EXPECT_EQ(h.max_abs_error, d.max_abs_error);
  EXPECT_EQ(h.max_rel_error, d.max_rel_error);
  EXPECT_TRUE(same_or_both_nan(h.max_ulp_error, d.max_ulp_error));
  if (std::isfinite(h.rel_l2)) EXPECT_NEAR(d.rel_l2, h.rel_l2, 1e-12 * std::max(1.0, h.rel_l2));
  else EXPECT_TRUE(same_or_both_nan(h.rel_l2, d.rel_l2));
}

CompareSpec spec(const char* rule, double atol = 0, double rtol = 0, double tol = 0) {
  CompareSpec s;
  s.rule = rule;
  s.atol = atol;
  s.rtol = rtol;
  s.tol = tol;
  return s;
}

}  // namespace

TEST(GpuCompare, AllcloseMatchesHost) {
  D2K_REQUIRE_GPU();
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
    const auto e = random_tensor(t, {1531, 2049}, 1);  // ~3.1M elements: many blocks, odd sizes
    expect_same(spec("allclose", 0.02, 0.02), e, perturb(e, 0.001, 0, 0, 2));
    expect_same(spec("allclose", 0.02, 0.02), e, perturb(e, 0.001, 37, 0.75, 3));
    auto s = spec("allclose", 0.02, 0.02);
    s.matched_ratio = 0.9999;
    s.max_error_cap = 0.5;
    expect_same(s, e, perturb(e, 0.001, 200, 0.75, 4));
  }
}

// The ulp rule is evaluated by the same accumulate() on both sides (check/compare_core.h): the
// device verdict, counts and largest ulp error equal the host's.
TEST(GpuCompare, UlpMatchesHost) {
  D2K_REQUIRE_GPU();
  for (DType t : {DType::bf16, DType::f16, DType::f32}) {
    const auto e = random_tensor(t, {1531, 2049}, 21);
    for (double ulps : {0.0, 1.0}) {
      auto s = spec("ulp");
      s.ulps = ulps;
      s.matched_ratio = 0.999;
      s.max_ulps = 2;
      expect_same(s, e, e);
      expect_same(s, e, perturb(e, 0.004, 0, 0, 22));      // about one bf16 ulp everywhere
      expect_same(s, e, perturb(e, 0, 2000, 0.01, 23));    // a few larger errors
    }
  }
}

TEST(GpuCompare, NonFiniteAllZeroAndPoisonMatchHost) {
  D2K_REQUIRE_GPU();
  const auto e = random_tensor(DType::f32, {100003}, 5);
  auto a = perturb(e, 1e-4, 0, 0, 6);
  a.as<float>()[77777] = NAN;
  a.as<float>()[99999] = -INFINITY;
  expect_same(spec("allclose", 0.01, 0.01), e, a);
  expect_same(spec("rel_l2", 0, 0, 0.5), e, a);
  HostTensor z = e;
  std::fill(z.bytes.begin(), z.bytes.end(), std::byte{0});
  expect_same(spec("allclose", 10, 10), e, z);
  HostTensor p = perturb(e, 1e-4, 0, 0, 7);
  fill_poison(poison_pattern(DType::f32), p.as<float>() + 4242, 3);
  CompareOptions o;
  o.poison_variant = 0;
  expect_same(spec("allclose", 0.01, 0.01), e, p, o);
  const auto r = compare(spec("allclose", 0.01, 0.01), e, p, o);
  EXPECT_EQ(r.status, CheckStatus::incorrect_write);
  EXPECT_EQ(r.first_bad, 4242);
}

TEST(GpuCompare, RelL2AndExactMatchHost) {
  D2K_REQUIRE_GPU();
  const auto e = random_tensor(DType::f64, {4096, 777}, 8, 3.0);
  expect_same(spec("rel_l2", 0, 0, 1e-3), e, perturb(e, 1e-3, 0, 0, 9));
  expect_same(spec("rel_l2", 0, 0, 1e-5), e, perturb(e, 1e-3, 0, 0, 9));
  const auto ei = random_tensor(DType::i32, {1 << 21}, 10);
  expect_same(spec("exact"), ei, ei);
  expect_same(spec("exact"), ei, perturb(ei, 0, 11, 1, 11));
  HostTensor big = random_tensor(DType::i64, {3000}, 12), big2 = big;
  big.as<std::int64_t>()[2999] = (std::int64_t{1} << 60) + 1;
  big2.as<std::int64_t>()[2999] = std::int64_t{1} << 60;
  expect_same(spec("exact"), big, big2);
}

TEST(GpuCompare, WriteChecksMatchHost) {
  D2K_REQUIRE_GPU();
  const std::int64_t n = 2000001;
  HostTensor a = random_tensor(DType::bf16, {n}, 13), b = a;
  const auto pa = poison_from_byte(DType::bf16, 0xFF), pb = poison_from_byte(DType::bf16, 0xA5);
  fill_poison(pa, a.as<std::uint16_t>() + 1000, 50);
  fill_poison(pb, b.as<std::uint16_t>() + 1040, 50);
  fill_poison(pa, a.as<std::uint16_t>() + n - 1, 1);
  fill_poison(pb, b.as<std::uint16_t>() + n - 1, 1);
  const auto da = test::to_device(a.data(), a.bytes.size()), db = test::to_device(b.data(), b.bytes.size());
  const WriteCheck h2 = check_written_two_runs(pa, a, pb, b);
  const WriteCheck d2 = check_written_two_runs_device(pa, view(da, a), pb, view(db, b), -1, nullptr);
  EXPECT_EQ(h2.unwritten, 11);
  EXPECT_EQ(d2.unwritten, h2.unwritten);
  EXPECT_EQ(d2.first, h2.first);
  const WriteCheck h1 = check_written(pa, a, n - 1), d1 = check_written_device(pa, view(da, a), n - 1, nullptr, nullptr);
  EXPECT_EQ(h1.unwritten, 50);
  EXPECT_EQ(d1.unwritten, h1.unwritten);
  EXPECT_EQ(d1.first, 1000);
  // fill_poison_device writes the same bits as fill_poison.
  data::DeviceBuffer buf(static_cast<std::size_t>(n) * 2);
  const auto pat = poison_pattern(DType::bf16, 1);
  fill_poison_device(pat, buf.get(), n, nullptr);
  HostTensor want = a;
  fill_poison(pat, want.data(), n);
  EXPECT_EQ(test::to_host(buf, want.bytes.size()), want.bytes);
}

TEST(GpuCompare, MultisetAndTopkThroughTheHost) {
  D2K_REQUIRE_GPU();
  HostTensor ek, ak;
  ek.name = ak.name = "keys";
  ek.dtype = ak.dtype = DType::i32;
  ek.shape = ak.shape = {5000};
  ek.bytes.resize(5000 * 4);
  ak.bytes.resize(5000 * 4);
  for (int i = 0; i < 5000; ++i) {
    ek.as<std::int32_t>()[i] = i * 3;
    ak.as<std::int32_t>()[i] = (4999 - i) * 3;
  }
  const auto de = test::to_device(ek.data(), ek.bytes.size()), da = test::to_device(ak.data(), ak.bytes.size());
  const DeviceTensorView ev[] = {view(de, ek)}, av[] = {view(da, ak)};
  const auto r = compare_multiset_device(spec("multiset"), ev, av, 5000, 5000, nullptr);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_FALSE(compare_multiset_device(spec("multiset"), ev, av, 5000, 4999, nullptr).passed);
  // topk on [50, 100] index rows: equal sets pass, another row order fails.
  DeviceTensorView e2 = view(de, ek), a2 = view(da, ak);
  e2.shape = a2.shape = {50, 100};
  EXPECT_TRUE(compare_device(spec("topk"), e2, e2, nullptr).passed);
  const auto t = compare_device(spec("topk"), e2, a2, nullptr);
  EXPECT_FALSE(t.passed);
  EXPECT_EQ(t.first_bad, 0);
}

namespace d2k {
namespace {

// Join-sized integer row sets take the device sort path; its verdict must equal the host's.
TEST(GpuCompare, LargeIntegerMultisetSortsOnTheDevice) {
  const std::int64_t n = 3'000'017;
  HostTensor ek("k", DType::i32, {n}), ev("v", DType::i32, {n}), ak("k", DType::i32, {n}), av("v", DType::i32, {n});
  std::uint64_t x = 88172645463325252ull;
  for (std::int64_t i = 0; i < n; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    ek.as<std::int32_t>()[i] = static_cast<std::int32_t>(x);
    ev.as<std::int32_t>()[i] = static_cast<std::int32_t>(x >> 32) % 1000;  // many ties in the second column
  }
  for (std::int64_t i = 0; i < n; ++i) {  // actual = expected reversed
    ak.as<std::int32_t>()[i] = ek.as<std::int32_t>()[n - 1 - i];
    av.as<std::int32_t>()[i] = ev.as<std::int32_t>()[n - 1 - i];
  }
  auto dev = [](const HostTensor& h) { return test::to_device(h.data(), h.bytes.size()); };
  const auto dek = dev(ek), dev_ = dev(ev), dak = dev(ak), dav = dev(av);
  CompareSpec spec;
  spec.rule = "multiset";
  std::vector<DeviceTensorView> E{view(dek, ek), view(dev_, ev)}, A{view(dak, ak), view(dav, av)};
  CompareResult r = compare_multiset_device(spec, E, A, n, n, nullptr);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("device sort"), std::string::npos) << r.message;
  // One cell changed: the device path declines and the host report names the row.
  av.as<std::int32_t>()[12345] += 1;
  const auto dav2 = dev(av);
  A[1] = view(dav2, av);
  r = compare_multiset_device(spec, E, A, n, n, nullptr);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_bad, 12345);
}

// Group-by-shaped outputs: five int64 columns beyond 32 bits, capacity past the row count (rows
// there differ between the sides and are not compared), the rows in another order, and ties in
// the first column that only the later columns order: the device sort decides the pass.
TEST(GpuCompare, WideInt64MultisetSortsOnTheDeviceAndReadsOnlyCountedRows) {
  const std::int64_t cap = 1'200'000, count = 1'000'003;
  std::vector<HostTensor> E, A;
  for (const char* name : {"keys", "count", "sum", "min", "max"}) {
    E.emplace_back(name, DType::i64, std::vector<std::int64_t>{cap});
    A.emplace_back(name, DType::i64, std::vector<std::int64_t>{cap});
  }
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&] { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
  for (std::int64_t i = 0; i < cap; ++i)
    for (std::size_t c = 0; c < E.size(); ++c) {
      // Column 0: 4096 distinct keys spread over the int64 range (many ties); the rest random.
      const std::uint64_t v = c == 0 ? (next() % 4096) * 0x0123456789abcdefull : next();
      E[c].as<std::int64_t>()[i] = static_cast<std::int64_t>(v);
    }
  for (std::int64_t i = 0; i < cap; ++i)  // actual: the counted rows reversed, the rest garbage
    for (std::size_t c = 0; c < E.size(); ++c)
      A[c].as<std::int64_t>()[i] = i < count ? E[c].as<std::int64_t>()[count - 1 - i] : static_cast<std::int64_t>(next());
  auto views = [](std::vector<HostTensor>& h, std::vector<data::DeviceBuffer>& mem) {
    std::vector<DeviceTensorView> v;
    for (auto& t : h) {
      mem.push_back(test::to_device(t.data(), t.bytes.size()));
      v.push_back(view(mem.back(), t));
    }
    return v;
  };
  std::vector<data::DeviceBuffer> me, ma;
  me.reserve(E.size());
  ma.reserve(A.size());
  const auto ev = views(E, me);
  auto av = views(A, ma);
  CompareSpec spec;
  spec.rule = "multiset";
  CompareResult r = compare_multiset_device(spec, ev, av, count, count, nullptr);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("device sort"), std::string::npos) << r.message;
  EXPECT_EQ(r.checked, count);
  // One cell of a later column changed: the device path declines; the host report, on the counted
  // rows only, finds the one row.
  A[3].as<std::int64_t>()[777] += 1;
  ma[3] = test::to_device(A[3].data(), A[3].bytes.size());
  av[3] = view(ma[3], A[3]);
  r = compare_multiset_device(spec, ev, av, count, count, nullptr);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  // Swapping two cells of one column between rows changes the row set even though every column's
  // values are the same multiset: a column-by-column comparison would pass it.
  A[3].as<std::int64_t>()[777] -= 1;
  std::swap(A[2].as<std::int64_t>()[10], A[2].as<std::int64_t>()[20]);
  ma[2] = test::to_device(A[2].data(), A[2].bytes.size());
  ma[3] = test::to_device(A[3].data(), A[3].bytes.size());
  av[2] = view(ma[2], A[2]);
  av[3] = view(ma[3], A[3]);
  EXPECT_FALSE(compare_multiset_device(spec, ev, av, count, count, nullptr).passed);
}

}  // namespace
}  // namespace d2k
