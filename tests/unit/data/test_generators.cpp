// Host generators: determinism, independence of elements, distribution sanity per kind,
// structural guarantees (unique keys, join match rate, monotone offsets), and error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_set>

#include "data/dtype_bits.h"
#include "data/gen_plan.h"
#include "data/generators.h"

using namespace d2k;

namespace {

GenRequest request(std::string kind, ordered_json params, DType dtype, std::int64_t count, std::uint64_t seed = 1234,
                   std::uint64_t stream = stream_id("x", 0)) {
  GenRequest r;
  r.spec.kind = std::move(kind);
  r.spec.params = std::move(params);
  r.dtype = dtype;
  r.count = count;
  r.seed = seed;
  r.stream = stream;
  r.where = "test: inputs.x.generator";
  return r;
}

HostTensor gen(const GenRequest& r) {
  HostTensor t;
  generate_host(r, t);
  return t;
}

std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(t.bytes.size() / data::elem_bytes(t.dtype));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = data::load_double(t.dtype, t.data(), static_cast<std::int64_t>(i));
  return v;
}

std::vector<std::int64_t> ints(const HostTensor& t) {
  std::vector<std::int64_t> v(t.bytes.size() / data::elem_bytes(t.dtype));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = data::load_i64(t.dtype, t.data(), static_cast<std::int64_t>(i));
  return v;
}

struct Moments {
  double mean = 0, sd = 0, skew = 0, kurt = 0;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= v.size();
  double m2 = 0, m3 = 0, m4 = 0;
  for (double x : v) {
    const double d = x - m.mean;
    m2 += d * d;
    m3 += d * d * d;
    m4 += d * d * d * d;
  }
  m2 /= v.size();
  m3 /= v.size();
  m4 /= v.size();
  m.sd = std::sqrt(m2);
  m.skew = m3 / (m2 * m.sd);
  m.kurt = m4 / (m2 * m2);
  return m;
}

std::string error_of(const GenRequest& r) {
  try {
    gen(r);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Generators, DeterministicForASeed) {
  for (const char* kind : {"normal", "uniform"}) {
    const auto a = gen(request(kind, ordered_json::object(), DType::f32, 10000));
    const auto b = gen(request(kind, ordered_json::object(), DType::f32, 10000));
    EXPECT_EQ(a.bytes, b.bytes) << kind;
  }
}

TEST(Generators, SeedsAndStreamsGiveDifferentData) {
  const auto a = values(gen(request("normal", {}, DType::f32, 10000, 1)));
  const auto b = values(gen(request("normal", {}, DType::f32, 10000, 2)));
  const auto c = values(gen(request("normal", {}, DType::f32, 10000, 1, stream_id("y", 1))));
  int same_ab = 0, same_ac = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    same_ab += a[i] == b[i];
    same_ac += a[i] == c[i];
  }
  EXPECT_LT(same_ab, 10);
  EXPECT_LT(same_ac, 10);
}

TEST(Generators, ElementsDependOnlyOnTheirIndex) {
  // A shorter tensor is a prefix of a longer one, and the multi-threaded path agrees with it.
  const auto small = gen(request("normal", {}, DType::f64, 1000));
  const auto large = gen(request("normal", {}, DType::f64, 300000));
  ASSERT_EQ(std::memcmp(small.data(), large.data(), small.bytes.size()), 0);
  const auto keys_small = gen(request("unique_keys", {{"low", 0}, {"high", 1000000}}, DType::i64, 100));
  const auto keys_large = gen(request("unique_keys", {{"low", 0}, {"high", 1000000}}, DType::i64, 200000));
  EXPECT_EQ(std::memcmp(keys_small.data(), keys_large.data(), keys_small.bytes.size()), 0);
}

TEST(Generators, NormalMomentsAndTails) {
  const auto v = values(gen(request("normal", {}, DType::f64, 2000000)));
  const Moments m = moments(v);
  const double se = 1.0 / std::sqrt(static_cast<double>(v.size()));
  EXPECT_NEAR(m.mean, 0.0, 5 * se);
  EXPECT_NEAR(m.sd, 1.0, 5 * se);
  EXPECT_NEAR(m.skew, 0.0, 0.01);
  EXPECT_NEAR(m.kurt, 3.0, 0.03);
  std::int64_t beyond2 = 0, beyond3 = 0, beyond4 = 0;
  double maxabs = 0;
  for (double x : v) {
    beyond2 += std::fabs(x) > 2;
    beyond3 += std::fabs(x) > 3;
    beyond4 += std::fabs(x) > 4;
    maxabs = std::max(maxabs, std::fabs(x));
  }
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(beyond2 / n, 0.0455003, 0.0008);
  EXPECT_NEAR(beyond3 / n, 0.0026998, 0.0002);
  EXPECT_NEAR(beyond4 / n, 6.334e-5, 2.5e-5);
  EXPECT_GT(maxabs, 4.5);
  EXPECT_LT(maxabs, 8.6);
}

TEST(Generators, NormalMeanStdAndNarrowTypesRoundOnce) {
  const auto r64 = request("normal", {{"mean", 3.0}, {"std", 0.5}}, DType::f64, 100000);
  const auto v = values(gen(r64));
  const Moments m = moments(v);
  EXPECT_NEAR(m.mean, 3.0, 0.01);
  EXPECT_NEAR(m.sd, 0.5, 0.01);
  // A narrow dtype holds exactly the f64 value rounded to float, then to the format.
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2}) {
    auto r = r64;
    r.dtype = t;
    const auto n = gen(r);
    for (std::int64_t i = 0; i < 100000; ++i) {
      std::uint64_t want[1] = {0};
      data::store_real(t, want, 0, v[static_cast<std::size_t>(i)]);
      ASSERT_EQ(data::load_bits(t, n.data(), i), want[0]) << dtype_name(t) << " element " << i;
    }
  }
}

TEST(Generators, UniformRangeAndMoments) {
  const auto v = values(gen(request("uniform", {{"low", -2.0}, {"high", 6.0}}, DType::f64, 1000000)));
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  EXPECT_GE(*mn, -2.0);
  EXPECT_LE(*mx, 6.0);
  EXPECT_LT(*mn, -1.99);
  EXPECT_GT(*mx, 5.99);
  const Moments m = moments(v);
  EXPECT_NEAR(m.mean, 2.0, 0.01);
  EXPECT_NEAR(m.sd, 8.0 / std::sqrt(12.0), 0.01);
  const auto b = values(gen(request("uniform", {{"low", 0.5}, {"high", 1.5}}, DType::bf16, 100000)));
  for (double x : b) ASSERT_TRUE(x >= 0.5 && x <= 1.5) << x;
}

TEST(Generators, RandintCoversRangeUniformly) {
  const auto v = ints(gen(request("randint", {{"low", -3}, {"high", 7}}, DType::i32, 1000000)));
  std::map<std::int64_t, std::int64_t> hist;
  for (auto x : v) ++hist[x];
  ASSERT_EQ(hist.size(), 10u);
  EXPECT_EQ(hist.begin()->first, -3);
  EXPECT_EQ(hist.rbegin()->first, 6);
  double chi2 = 0;
  for (auto [k, c] : hist) chi2 += (c - 1e5) * (c - 1e5) / 1e5;
  EXPECT_LT(chi2, 30.0);  // 9 degrees of freedom: p < 0.001 above 27.9

  const auto big = ints(gen(request("randint", {{"low", -(std::int64_t{1} << 62)}, {"high", std::int64_t{1} << 62}},
                                    DType::i64, 100000)));
  std::int64_t neg = 0;
  for (auto x : big) {
    ASSERT_GE(x, -(std::int64_t{1} << 62));
    ASSERT_LT(x, std::int64_t{1} << 62);
    neg += x < 0;
  }
  EXPECT_NEAR(neg / 1e5, 0.5, 0.01);

  const auto bits = ints(gen(request("randint", {{"low", 0}, {"high", 2}}, DType::boolean, 10000)));
  std::int64_t ones = 0;
  for (auto x : bits) {
    ASSERT_TRUE(x == 0 || x == 1);
    ones += x;
  }
  EXPECT_NEAR(ones / 1e4, 0.5, 0.03);
}

TEST(Generators, ConstAndArange) {
  for (double x : values(gen(request("const", {{"value", 2.5}}, DType::f32, 100)))) ASSERT_EQ(x, 2.5);
  for (auto x : ints(gen(request("const", {{"value", -7}}, DType::i16, 100)))) ASSERT_EQ(x, -7);
  const auto a = ints(gen(request("arange", {{"start", 10}, {"step", 3}}, DType::i64, 1000)));
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 10 + 3 * i);
  const auto f = values(gen(request("arange", {{"start", 0.5}, {"step", 0.25}}, DType::f64, 1000)));
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(f[i], 0.5 + 0.25 * i);
}

TEST(Generators, UniqueKeysAreDistinctShuffledAndInRange) {
  const std::int64_t n = 200000, low = 5, high = 5 + 3 * n;
  const auto v = ints(gen(request("unique_keys", {{"low", low}, {"high", high}}, DType::i32, n)));
  std::unordered_set<std::int64_t> seen;
  std::int64_t ascending = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_GE(v[i], low);
    ASSERT_LT(v[i], high);
    ASSERT_TRUE(seen.insert(v[i]).second) << "duplicate key " << v[i];
    if (i) ascending += v[i] > v[i - 1];
  }
  EXPECT_NEAR(ascending / double(n), 0.5, 0.01);  // shuffled, not sorted
  // Spread over the domain: each third of it holds about a third of the keys.
  std::int64_t first_third = 0;
  for (auto x : v) first_third += x < low + n;
  EXPECT_NEAR(first_third / double(n), 1.0 / 3, 0.01);

  // A full domain is a permutation of [low, high).
  auto full = ints(gen(request("unique_keys", {{"low", -100}}, DType::i64, 5000)));
  std::sort(full.begin(), full.end());
  for (std::int64_t i = 0; i < 5000; ++i) ASSERT_EQ(full[i], -100 + i);

  // Huge domains work too (cycle walking over 2^41).
  const auto huge = ints(gen(request("unique_keys", {{"low", 0}, {"high", std::int64_t{1} << 40}}, DType::i64, 100000)));
  std::unordered_set<std::int64_t> hs(huge.begin(), huge.end());
  EXPECT_EQ(hs.size(), huge.size());
  EXPECT_GT(*std::max_element(huge.begin(), huge.end()), std::int64_t{1} << 39);
}

TEST(Generators, JoinProbeKeysHitTheMatchRate) {
  const std::int64_t nb = 100000, np = 400000;
  const ordered_json bparams = {{"low", 0}, {"high", 1000000}};
  const auto build_req = request("unique_keys", bparams, DType::i32, nb, 77, stream_id("build_keys", 0));
  const auto build = ints(gen(build_req));
  const std::unordered_set<std::int64_t> bset(build.begin(), build.end());
  for (double rate : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    auto r = request("join_probe_keys", {{"build", "build_keys"}, {"match_rate", rate}}, DType::i32, np, 77,
                     stream_id("probe_keys", 2));
    r.ref = GenRef{"build_keys", build_req.spec, build_req.stream, nb};
    const auto probe = ints(gen(r));
    std::int64_t hits = 0;
    for (auto k : probe) {
      ASSERT_GE(k, 0);
      ASSERT_LT(k, 1000000);
      hits += bset.count(k);
    }
    EXPECT_NEAR(hits / double(np), rate, 0.005) << "match_rate " << rate;
  }
}

TEST(Generators, ZipfFollowsThePowerLaw) {
  for (double s : {0.7, 1.0, 1.5}) {
    const std::int64_t n = 1000, count = 1000000;
    const auto v = ints(gen(request("zipf", {{"n", n}, {"s", s}}, DType::i32, count)));
    std::vector<double> hist(n, 0);
    for (auto x : v) {
      ASSERT_GE(x, 0);
      ASSERT_LT(x, n);
      hist[x] += 1;
    }
    double norm = 0;
    for (std::int64_t k = 1; k <= n; ++k) norm += std::pow(double(k), -s);
    for (std::int64_t k = 0; k < 10; ++k) {
      const double p = std::pow(double(k + 1), -s) / norm;
      const double sd = std::sqrt(count * p * (1 - p));
      EXPECT_NEAR(hist[k], count * p, 5 * sd) << "s=" << s << " rank " << k;
    }
  }
  const auto big = ints(gen(request("zipf", {{"n", 1000000000}, {"s", 1.1}}, DType::i64, 100000)));
  for (auto x : big) ASSERT_TRUE(x >= 0 && x < 1000000000);
}

TEST(Generators, ZipfScatteredRanksKeepTheirFrequenciesOnSparseKeys) {
  // low/high map rank r to low + perm(r): same draws as the plain ranks, one distinct key per rank,
  // keys inside [low, high) and not the dense 0..n-1 (groupby_aggregate's sparse Zipf keys).
  const std::int64_t n = 1000, count = 200000, low = -(std::int64_t{1} << 40), high = std::int64_t{1} << 40;
  const auto ranks = ints(gen(request("zipf", {{"n", n}}, DType::i64, count)));
  const auto keys = ints(gen(request("zipf", {{"n", n}, {"low", low}, {"high", high}}, DType::i64, count)));
  ASSERT_EQ(ranks.size(), keys.size());
  std::map<std::int64_t, std::int64_t> key_of_rank;
  std::int64_t outside_dense = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(keys[i] >= low && keys[i] < high) << keys[i];
    auto [it, fresh] = key_of_rank.try_emplace(ranks[i], keys[i]);
    ASSERT_EQ(it->second, keys[i]) << "rank " << ranks[i] << " maps to two keys";
    outside_dense += keys[i] < 0 || keys[i] >= n;
  }
  std::set<std::int64_t> distinct;
  for (const auto& [r, k] : key_of_rank) distinct.insert(k);
  EXPECT_EQ(distinct.size(), key_of_rank.size()) << "two ranks share a key";
  EXPECT_GT(outside_dense, count / 2) << "keys are still dense";
  // Both or neither, and the domain must hold n keys.
  EXPECT_THROW(validate_generator(GeneratorSpec{"zipf", {{"n", 10}, {"low", 0}}}, DType::i64, "w"), std::invalid_argument);
  EXPECT_THROW(validate_generator(GeneratorSpec{"zipf", {{"n", 10}, {"low", 0}, {"high", 5}}}, DType::i64, "w"),
               std::invalid_argument);
  EXPECT_NO_THROW(validate_generator(GeneratorSpec{"zipf", {{"n", 10}, {"low", 0}, {"high", 10}}}, DType::i64, "w"));
}

TEST(Generators, RaggedOffsetsAreMonotoneAndSkewed) {
  for (double skew : {0.0, 1.0, 2.5}) {
    const std::int64_t groups = 1000, total = 1000000;
    const auto o = ints(gen(request("ragged_offsets", {{"total", total}, {"skew", skew}}, DType::i64, groups + 1)));
    ASSERT_EQ(o.front(), 0);
    ASSERT_EQ(o.back(), total);
    std::int64_t maxlen = 0, minlen = total;
    for (std::int64_t g = 0; g < groups; ++g) {
      ASSERT_LE(o[g], o[g + 1]);
      maxlen = std::max(maxlen, o[g + 1] - o[g]);
      minlen = std::min(minlen, o[g + 1] - o[g]);
    }
    if (skew == 0) {
      EXPECT_LE(maxlen - minlen, 1);
    } else {
      EXPECT_GT(maxlen, (skew > 2 ? 20 : 4) * total / groups) << skew;
    }
  }
  const auto csr = ints(gen(request("powerlaw_csr", {{"part", "row_offsets"}, {"nnz", 500000}, {"alpha", 1.2}},
                                    DType::i32, 10001)));
  ASSERT_EQ(csr.front(), 0);
  ASSERT_EQ(csr.back(), 500000);
  std::int64_t maxrow = 0;
  for (std::size_t i = 0; i + 1 < csr.size(); ++i) {
    ASSERT_LE(csr[i], csr[i + 1]);
    maxrow = std::max(maxrow, csr[i + 1] - csr[i]);
  }
  EXPECT_GT(maxrow, 20 * 50);  // heavy tail: far above the mean row of 50
  const auto cols = ints(gen(request("powerlaw_csr", {{"part", "col_indices"}, {"cols", 77}}, DType::i32, 10000)));
  for (auto c : cols) ASSERT_TRUE(c >= 0 && c < 77);
  const auto one = ints(gen(request("ragged_offsets", {{"total", 0}}, DType::i32, 1)));
  EXPECT_EQ(one, std::vector<std::int64_t>{0});
}

// graph_csr: the row pointer (Pareto light rows, heavy rows at a stride) and the columns that
// follow it (sorted within a row, distinct, a near-diagonal share, in range), deterministic.
struct GraphCsr {
  std::vector<std::int64_t> rp, col;
};

GraphCsr graph_csr(std::int64_t rows, std::int64_t cols, std::int64_t nnz, ordered_json rp_params,
                   ordered_json col_params, std::uint64_t seed = 1234) {
  rp_params["part"] = "row_ptr";
  rp_params["nnz"] = nnz;
  GenRequest r = request("graph_csr", rp_params, DType::i32, rows + 1, seed, stream_id("row_ptr", 0));
  col_params["part"] = "col_idx";
  col_params["row_ptr"] = "row_ptr";
  col_params["cols"] = cols;
  GenRequest c = request("graph_csr", col_params, DType::i32, nnz, seed, stream_id("col_idx", 1));
  c.ref = GenRef{"row_ptr", r.spec, r.stream, rows + 1};
  return {ints(gen(r)), ints(gen(c))};
}

/// Checks the CSR invariants; returns the share of entries within `band` of the diagonal.
double check_csr(const GraphCsr& g, std::int64_t rows, std::int64_t cols, std::int64_t nnz, std::int64_t band) {
  EXPECT_EQ(g.rp.size(), static_cast<std::size_t>(rows + 1));
  EXPECT_EQ(g.rp.front(), 0);
  EXPECT_EQ(g.rp.back(), nnz);
  EXPECT_EQ(g.col.size(), static_cast<std::size_t>(nnz));
  std::int64_t near = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    EXPECT_LE(g.rp[r], g.rp[r + 1]) << "row " << r;
    if (g.rp[r] > g.rp[r + 1]) return 0;
    const std::int64_t diag = r * cols / rows;
    for (std::int64_t j = g.rp[r]; j < g.rp[r + 1]; ++j) {
      EXPECT_TRUE(g.col[j] >= 0 && g.col[j] < cols) << "entry " << j << " column " << g.col[j];
      if (j > g.rp[r]) { EXPECT_LT(g.col[j - 1], g.col[j]) << "row " << r << " entry " << j; }
      if (std::llabs(g.col[j] - diag) <= band) ++near;
      if (::testing::Test::HasFailure()) return 0;
    }
  }
  return static_cast<double>(near) / std::max<std::int64_t>(nnz, 1);
}

TEST(Generators, GraphCsrPowerLawRowsSortedLocalColumns) {
  const std::int64_t rows = 20000, cols = 30000, nnz = 320000;
  const GraphCsr g = graph_csr(rows, cols, nnz, {{"alpha", 1.5}}, {{"local", 0.5}, {"band", 16}});
  const double near = check_csr(g, rows, cols, nnz, 16);
  // Half of each row near the diagonal (rows longer than 66 fill the 33-wide window and spread
  // the rest), so a little below half of all entries; uniform columns would give 0.1%.
  EXPECT_GT(near, 0.30);
  EXPECT_LT(near, 0.60);
  std::int64_t maxrow = 0;
  for (std::int64_t r = 0; r < rows; ++r) maxrow = std::max(maxrow, g.rp[r + 1] - g.rp[r]);
  EXPECT_GT(maxrow, 20 * nnz / rows);  // heavy tail
  // Deterministic from the seed; another seed gives another matrix.
  const GraphCsr again = graph_csr(rows, cols, nnz, {{"alpha", 1.5}}, {{"local", 0.5}, {"band", 16}});
  EXPECT_EQ(g.rp, again.rp);
  EXPECT_EQ(g.col, again.col);
  const GraphCsr other = graph_csr(rows, cols, nnz, {{"alpha", 1.5}}, {{"local", 0.5}, {"band", 16}}, 99);
  EXPECT_NE(g.rp, other.rp);
}

TEST(Generators, GraphCsrHeavyRowsAndBands) {
  // Heavy rows of exactly heavy_len (here whole dense rows) at rows 0, stride, 2 * stride ...
  const std::int64_t rows = 1003, cols = 2000, heavy = 3, nnz = 3 * 2000 + 40000;
  const GraphCsr g = graph_csr(rows, cols, nnz, {{"alpha", 2.0}, {"heavy_rows", heavy}, {"heavy_len", cols}}, {});
  check_csr(g, rows, cols, nnz, 0);
  for (std::int64_t h = 0; h < heavy; ++h) {
    const std::int64_t r = h * (rows / heavy);
    EXPECT_EQ(g.rp[r + 1] - g.rp[r], cols) << r;
    EXPECT_EQ(g.col[g.rp[r]], 0);
    EXPECT_EQ(g.col[g.rp[r + 1] - 1], cols - 1);
  }
  // alpha 0 and local 1: equal rows, a band around the diagonal (a banded FEM-like matrix).
  const std::int64_t brows = 5001, bnnz = 27 * brows;
  const GraphCsr b = graph_csr(brows, brows, bnnz, {{"alpha", 0}}, {{"local", 1.0}, {"band", 13}});
  const double near = check_csr(b, brows, brows, bnnz, 13);
  for (std::int64_t r = 0; r < brows; ++r) ASSERT_EQ(b.rp[r + 1] - b.rp[r], 27) << r;
  EXPECT_GT(near, 0.99);
  // Empty matrix, and a row longer than the matrix is wide repeats columns (sorted, in range).
  const GraphCsr e = graph_csr(7, 5, 0, {}, {});
  EXPECT_EQ(e.rp, std::vector<std::int64_t>(8, 0));
  const GraphCsr w = graph_csr(1, 3, 10, {}, {});
  for (std::size_t j = 0; j < w.col.size(); ++j) {
    EXPECT_TRUE(w.col[j] >= 0 && w.col[j] < 3);
    if (j) { EXPECT_LE(w.col[j - 1], w.col[j]); }
  }
}

TEST(Generators, GraphCsrErrors) {
  auto err = [](const GenRequest& r) {
    try {
      validate_request(r);
    } catch (const GeneratorError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const ordered_json rp = {{"part", "row_ptr"}, {"nnz", 100}};
  EXPECT_EQ(err(request("graph_csr", rp, DType::i32, 11)), "");
  EXPECT_NE(err(request("graph_csr", rp, DType::f32, 11)).find("integer dtype"), std::string::npos);
  EXPECT_NE(err(request("graph_csr", {{"part", "row_ptr"}, {"nnz", 100}, {"heavy_rows", 2}, {"heavy_len", 60}},
                        DType::i32, 11)).find("heavy_len"), std::string::npos);
  EXPECT_NE(err(request("graph_csr", {{"part", "row_ptr"}, {"nnz", 1000}}, DType::i8, 11)).find("do not fit int8"),
            std::string::npos);
  GenRequest c = request("graph_csr", {{"part", "col_idx"}, {"row_ptr", "rp"}, {"cols", 10}}, DType::i32, 99);
  EXPECT_NE(err(c).find("GenRequest::ref"), std::string::npos);
  c.ref = GenRef{"rp", GeneratorSpec{"graph_csr", rp}, 1, 11};
  EXPECT_NE(err(c).find("nnz = 100"), std::string::npos) << err(c);
  c.count = 100;
  EXPECT_EQ(err(c), "");
  c.ref->spec = GeneratorSpec{"ragged_offsets", {{"total", 100}}};
  EXPECT_NE(err(c).find("part \"row_ptr\""), std::string::npos) << err(c);
  EXPECT_EQ(generator_dependency(GeneratorSpec{"graph_csr", {{"part", "col_idx"}, {"row_ptr", "rp"}}}), "rp");
  EXPECT_EQ(generator_dependency(GeneratorSpec{"graph_csr", rp}), std::nullopt);
  // nnz from the `entries` input (the values, whose count the NNZ axis sets), not both.
  GenRequest e = request("graph_csr", {{"part", "row_ptr"}, {"entries", "values"}}, DType::i32, 11);
  EXPECT_NE(err(e).find("GenRequest::ref"), std::string::npos);
  e.ref = GenRef{"values", GeneratorSpec{"uniform", {}}, 2, 77};
  EXPECT_EQ(err(e), "");
  EXPECT_EQ(gen(e).bytes.size(), 11 * 4u);
  EXPECT_EQ(ints(gen(e)).back(), 77);
  e.spec.params["nnz"] = 77;
  EXPECT_NE(err(e).find("exactly one of nnz and entries"), std::string::npos);
  EXPECT_NE(err(request("graph_csr", {{"part", "row_ptr"}}, DType::i32, 11)).find("exactly one"), std::string::npos);
  EXPECT_EQ(generator_dependency(GeneratorSpec{"graph_csr", {{"part", "row_ptr"}, {"entries", "values"}}}), "values");
  // Columns over a row pointer sized by entries: nnz is the column input's own count.
  GenRequest ce = request("graph_csr", {{"part", "col_idx"}, {"row_ptr", "rp"}, {"cols", 50}}, DType::i32, 77);
  ce.ref = GenRef{"rp", GeneratorSpec{"graph_csr", {{"part", "row_ptr"}, {"entries", "values"}}}, 3, 11};
  const auto cc = ints(gen(ce));
  for (auto v : cc) EXPECT_TRUE(v >= 0 && v < 50);
  ce.spec.params.erase("cols");  // square by default: columns in [0, rows)
  for (auto v : ints(gen(ce))) EXPECT_TRUE(v >= 0 && v < 10);
}

// rows_of: the total is the leading dimension of another input (the tokens of x [T, K]), so the
// offsets follow each workload's shape (hidden draws included) and give the same groups as the
// same total written out.
TEST(Generators, RaggedOffsetsFollowRowsOfAnotherInput) {
  const std::int64_t groups = 128, tokens = 4096, K = 7168;
  GenRequest r = request("ragged_offsets", {{"rows_of", "x"}, {"skew", 1.5}}, DType::i32, groups + 1);
  r.ref = GenRef{"x", GeneratorSpec{"normal", {}}, stream_id("x", 0), tokens * K, tokens};
  const auto o = ints(gen(r));
  ASSERT_EQ(o.size(), static_cast<std::size_t>(groups + 1));
  EXPECT_EQ(o.front(), 0);
  EXPECT_EQ(o.back(), tokens);
  const auto same = ints(gen(request("ragged_offsets", {{"total", tokens}, {"skew", 1.5}}, DType::i32, groups + 1)));
  EXPECT_EQ(o, same);
  // A router-like split: some experts get no token at this skew (mean 32 tokens per expert).
  int empty = 0;
  for (std::int64_t g = 0; g < groups; ++g) empty += o[g + 1] == o[g];
  EXPECT_GT(empty, 0);
  EXPECT_EQ(generator_dependency(GeneratorSpec{"ragged_offsets", {{"rows_of", "x"}}}), "x");
  EXPECT_EQ(generator_dependency(GeneratorSpec{"ragged_offsets", {{"total", 5}}}), std::nullopt);
  EXPECT_EQ(generator_dependency_field("ragged_offsets"), "rows_of");
  auto err = [](const GenRequest& q) {
    try {
      validate_request(q);
    } catch (const GeneratorError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  GenRequest both = r;
  both.spec.params["total"] = tokens;
  EXPECT_NE(err(both).find("exactly one of total and rows_of"), std::string::npos) << err(both);
  EXPECT_NE(err(request("ragged_offsets", {{"skew", 1.0}}, DType::i32, 5)).find("exactly one"), std::string::npos);
  GenRequest noref = r;
  noref.ref.reset();
  EXPECT_NE(err(noref).find("GenRequest::ref"), std::string::npos);
}

GenRequest layer_stack(ordered_json params, std::int64_t segments, std::int64_t buffer, DType t = DType::i64) {
  params["buffer"] = "param";
  GenRequest r = request("layer_stack_offsets", std::move(params), t, segments + 1);
  r.ref = GenRef{"param", GeneratorSpec{"normal", {}}, stream_id("param", 0), buffer};
  return r;
}

// Llama-3-8B: 32 layers of 9 tensors, embed_tokens, the final norm and lm_head = 291 tensors and
// 8,030,261,248 parameters (the published count). With a buffer of exactly that many elements plus
// one per segment, every segment is its real tensor plus one element.
TEST(Generators, LayerStackOffsetsFollowLlama3Of8B) {
  const ordered_json llama = {{"hidden", 4096}, {"intermediate", 14336}, {"kv_dim", 1024}, {"vocab", 128256}};
  const std::int64_t G = 291, real = 8030261248;
  const auto o = ints(gen(layer_stack(llama, G, real + G)));
  ASSERT_EQ(o.size(), static_cast<std::size_t>(G + 1));
  auto size = [&](std::int64_t g) { return o[g + 1] - o[g] - 1; };
  EXPECT_EQ(o.front(), 0);
  EXPECT_EQ(o.back(), real + G);
  EXPECT_EQ(size(0), 128256 * 4096);  // embed_tokens
  const std::int64_t layer[9] = {4096 * 4096, 1024 * 4096, 1024 * 4096, 4096 * 4096, 14336 * 4096,
                                 14336 * 4096, 14336 * 4096, 4096, 4096};
  for (std::int64_t g = 1; g < G - 2; ++g) ASSERT_EQ(size(g), layer[(g - 1) % 9]) << "segment " << g;
  EXPECT_EQ(size(G - 2), 4096);               // model.norm
  EXPECT_EQ(size(G - 1), 128256 * 4096);      // lm_head
  // The device path computes the same function (tests/gpu/data_check); host elements are
  // independent of the count of threads, so one element alone agrees with the whole tensor.
}

TEST(Generators, LayerStackOffsetsScaleAndKeepEverySegment) {
  // Qwen1.5-MoE-A2.7B's layer (60 experts of width 1408, MHA): 188 tensors per layer.
  const ordered_json moe = {{"hidden", 2048}, {"intermediate", 1408}, {"vocab", 151936}, {"experts", 60}};
  for (auto [G, total] : {std::pair<std::int64_t, std::int64_t>{5000, 10000000}, {5000, 5000}, {1, 7}, {2, 9}, {3, 3}}) {
    for (DType t : {DType::i64, DType::i32}) {
      const auto o = ints(gen(layer_stack(moe, G, total, t)));
      ASSERT_EQ(o.front(), 0);
      ASSERT_EQ(o.back(), total) << G;
      for (std::int64_t g = 0; g < G; ++g) ASSERT_GE(o[g + 1] - o[g], 1) << "segment " << g << " of " << G;
    }
  }
  const auto o = ints(gen(layer_stack(moe, 5000, 10000000)));
  // An expert matrix is 1408 x 2048 of a ~15.6e9-parameter stack: about 1850 of 1e7 elements;
  // the norms get their one element and at most one more.
  // Segments: 0 embed_tokens, 1-4 attention, 5 the router, 6 expert 0's gate_proj. The stack
  // (26.6 layers of ~536e6) holds ~1.5e10 parameters: an expert matrix gets ~1900 of the 1e7
  // elements, the router 1408/60 times fewer.
  const double expert = static_cast<double>(o[7] - o[6] - 1), router = static_cast<double>(o[6] - o[5] - 1);
  EXPECT_GT(expert, 1700);
  EXPECT_LT(expert, 2100);
  EXPECT_NEAR(expert / router, 1408.0 / 60.0, 0.5);
  const std::int64_t norm = 1 + 4 + 1 + 180 + 1;  // post_attention_layernorm of layer 0
  EXPECT_LE(o[norm + 1] - o[norm], 2);
  std::int64_t sum = 0;
  for (std::int64_t g = 0; g < 5000; ++g) sum += o[g + 1] - o[g];
  EXPECT_EQ(sum, 10000000);
  // kv_dim defaults to hidden (multi-head attention): k_proj as large as q_proj.
  const auto mha = ints(gen(layer_stack({{"hidden", 64}, {"intermediate", 128}, {"vocab", 100}}, 12, 12 + 1000000)));
  EXPECT_NEAR(mha[2] - mha[1], mha[3] - mha[2], 1);
}

TEST(Generators, LayerStackOffsetsErrors) {
  const ordered_json m = {{"hidden", 64}, {"intermediate", 128}, {"vocab", 100}};
  auto err = [](const GenRequest& r) {
    try {
      validate_request(r);
    } catch (const GeneratorError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err(layer_stack(m, 10, 9)).find("fewer than the 10 segments"), std::string::npos) << err(layer_stack(m, 10, 9));
  EXPECT_NE(err(layer_stack(m, 10, 100, DType::f32)).find("integer dtype"), std::string::npos);
  EXPECT_NE(err(layer_stack(m, 10, 1000, DType::i8)).find("do not fit int8"), std::string::npos)
      << err(layer_stack(m, 10, 1000, DType::i8));
  GenRequest noref = layer_stack(m, 10, 100);
  noref.ref.reset();
  EXPECT_NE(err(noref).find("GenRequest::ref"), std::string::npos);
  // The largest model the field bounds allow still counts below 2^63 parameters (64-bit prefixes).
  ordered_json huge = {{"hidden", 1048576}, {"intermediate", 1048576}, {"vocab", 4194304}, {"experts", 1024}};
  EXPECT_EQ(err(layer_stack(huge, 100000, 1000000)), "");
  ordered_json typo = m;
  typo["kv_heads"] = 8;
  EXPECT_NE(err(layer_stack(typo, 10, 100)).find("kv_heads"), std::string::npos);
  EXPECT_EQ(generator_dependency(GeneratorSpec{"layer_stack_offsets", {{"buffer", "param"}}}), "param");
  EXPECT_EQ(generator_dependency_field("layer_stack_offsets"), "buffer");
}

TEST(Generators, TpchLineitemColumnsAreConsistent) {
  const std::int64_t n = 200000;
  auto col = [&](const char* c, DType t = DType::i64) {
    return gen(request("tpch_lineitem", {{"column", c}, {"sf", 1}}, t, n, 9, stream_id(c, 0)));
  };
  const auto qty = ints(col("l_quantity")), pk = ints(col("l_partkey")), price = ints(col("l_extendedprice"));
  const auto disc = ints(col("l_discount")), tax = ints(col("l_tax")), ship = ints(col("l_shipdate"));
  const auto receipt = ints(col("l_receiptdate")), rf = ints(col("l_returnflag", DType::u8));
  const auto ls = ints(col("l_linestatus", DType::i8));
  const auto disc_f = values(col("l_discount", DType::f64));
  std::map<std::int64_t, int> qhist;
  std::int64_t n_r = 0, n_a = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    ++qhist[qty[i]];
    ASSERT_TRUE(qty[i] >= 1 && qty[i] <= 50);
    ASSERT_TRUE(pk[i] >= 1 && pk[i] <= 200000);
    const std::int64_t retail = 90000 + (pk[i] / 10) % 20001 + 100 * (pk[i] % 1000);
    ASSERT_EQ(price[i], qty[i] * retail);
    ASSERT_TRUE(disc[i] >= 0 && disc[i] <= 10);
    ASSERT_TRUE(tax[i] >= 0 && tax[i] <= 8);
    ASSERT_EQ(disc_f[i], disc[i] / 100.0);
    ASSERT_TRUE(ship[i] >= 8036 && ship[i] <= 10591);
    ASSERT_TRUE(receipt[i] > ship[i] && receipt[i] <= ship[i] + 30);
    if (receipt[i] <= 9298) {
      ASSERT_TRUE(rf[i] == 'R' || rf[i] == 'A');
      n_r += rf[i] == 'R';
      n_a += rf[i] == 'A';
    } else {
      ASSERT_EQ(rf[i], 'N');
    }
    ASSERT_EQ(ls[i], ship[i] > 9298 ? 'O' : 'F');
  }
  EXPECT_EQ(qhist.size(), 50u);
  EXPECT_NEAR(double(n_r) / (n_r + n_a), 0.5, 0.02);
}

TEST(Generators, BadRequestsNameTheField) {
  auto has = [](const std::string& msg, const char* part) { return msg.find(part) != std::string::npos; };
  std::string e = error_of(request("gaussian", {}, DType::f32, 10));
  EXPECT_TRUE(has(e, "test: inputs.x.generator.kind") && has(e, "gaussian")) << e;
  e = error_of(request("normal", {{"stdev", 2}}, DType::f32, 10));
  EXPECT_TRUE(has(e, ".stdev") && has(e, "unknown field")) << e;
  e = error_of(request("randint", {{"low", 5}}, DType::i32, 10));
  EXPECT_TRUE(has(e, ".high") && has(e, "missing")) << e;
  e = error_of(request("randint", {{"low", 5}, {"high", 5}}, DType::i32, 10));
  EXPECT_TRUE(has(e, ".high")) << e;
  e = error_of(request("randint", {{"low", 0}, {"high", 300}}, DType::i8, 10));
  EXPECT_TRUE(has(e, "do not fit int8")) << e;
  e = error_of(request("uniform", {{"low", "a"}}, DType::f32, 10));
  EXPECT_TRUE(has(e, ".low: must be a number")) << e;
  e = error_of(request("unique_keys", {{"low", 0}, {"high", 10}}, DType::i32, 11));
  EXPECT_TRUE(has(e, "fewer than the 11")) << e;
  e = error_of(request("join_probe_keys", {{"build", "b"}, {"match_rate", 0.5}}, DType::i32, 10));
  EXPECT_TRUE(has(e, "GenRequest::ref")) << e;
  auto r = request("join_probe_keys", {{"build", "b"}, {"match_rate", 0.5}}, DType::i32, 10);
  r.ref = GenRef{"b", GeneratorSpec{"unique_keys", {{"low", 0}}}, 1, 100};
  e = error_of(r);
  EXPECT_TRUE(has(e, "widen the build's high")) << e;
  e = error_of(request("ragged_offsets", {{"total", 10}}, DType::f32, 5));
  EXPECT_TRUE(has(e, "integer dtype")) << e;
  e = error_of(request("tpch_lineitem", {{"column", "l_price"}}, DType::i64, 5));
  EXPECT_TRUE(has(e, ".column") && has(e, "l_price")) << e;
  EXPECT_THROW(validate_generator(GeneratorSpec{"zipf", {{"n", 0}}}, DType::i32, "w"), std::invalid_argument);
  EXPECT_NO_THROW(validate_generator(GeneratorSpec{"zipf", {{"n", 10}}}, DType::i32, "w"));
  EXPECT_EQ(generator_dependency(GeneratorSpec{"join_probe_keys", {{"build", "bk"}, {"match_rate", 1}}}), "bk");
  EXPECT_FALSE(generator_dependency(GeneratorSpec{"normal", {}}).has_value());
}

// bitsandbytes' dynamic map, entries worked out by hand from create_dynamic_map's definition
// (decade i holds F_i = 2^i signed / 2^(i+1) unsigned midpoints of linspace(0.1, 1, F_i + 1),
// times 10^(i-6)).
TEST(Generators, DynamicMapEntriesFollowBitsandbytes) {
  using data::dynamic_map_value;
  EXPECT_EQ(dynamic_map_value(127, true), 0.0);
  EXPECT_EQ(dynamic_map_value(255, true), 1.0);
  EXPECT_NEAR(dynamic_map_value(128, true), 0.55e-6, 1e-18);         // decade 0: one value
  EXPECT_NEAR(dynamic_map_value(126, true), -0.55e-6, 1e-18);
  EXPECT_NEAR(dynamic_map_value(129, true), 0.325e-5, 1e-17);        // decade 1: 0.1 + 0.9/4
  EXPECT_NEAR(dynamic_map_value(254, true), 1 - 0.9 / 128, 1e-15);    // top of decade 6
  EXPECT_NEAR(dynamic_map_value(0, true), -(1 - 0.9 / 128), 1e-15);   // no -1 in the signed map
  EXPECT_EQ(dynamic_map_value(0, false), 0.0);
  EXPECT_NEAR(dynamic_map_value(1, false), 0.325e-6, 1e-18);          // unsigned decade 0: two values
  EXPECT_NEAR(dynamic_map_value(2, false), 0.775e-6, 1e-18);
  EXPECT_NEAR(dynamic_map_value(254, false), 1 - 0.9 / 256, 1e-15);
  for (bool sgn : {true, false})
    for (int k = 1; k < 256; ++k) EXPECT_LT(dynamic_map_value(k - 1, sgn), dynamic_map_value(k, sgn)) << k;
  EXPECT_EQ(data::dynamic_map_nearest(0.0, true), 127);
  EXPECT_EQ(data::dynamic_map_nearest(-2.0, true), 0);
  EXPECT_EQ(data::dynamic_map_nearest(0.999, false), 255);
  EXPECT_EQ(data::dynamic_map_nearest(0.995, false), 254);
}

// Codes of plausible states: symmetric about the zero code (signed), every element the nearest
// entry to its state, most codes in the top decades (a normal state is rarely far below the max).
TEST(Generators, DynamicMapCodesQuantisePlausibleStates) {
  const auto m = ints(gen(request("dynamic_map_codes", {{"map", "signed"}}, DType::u8, 100000)));
  std::int64_t neg = 0, pos = 0, top = 0;
  for (auto c : m) {
    ASSERT_GE(c, 0);
    ASSERT_LE(c, 255);
    neg += c < 127;
    pos += c > 127;
    top += std::fabs(data::dynamic_map_value(static_cast<int>(c), true)) >= 0.01;
  }
  EXPECT_NEAR(static_cast<double>(neg) / pos, 1.0, 0.03);
  EXPECT_GT(top, 95000);
  const auto v = ints(gen(request("dynamic_map_codes", {{"map", "unsigned"}, {"std", 0.3}}, DType::u8, 100000)));
  std::set<std::int64_t> distinct(v.begin(), v.end());
  EXPECT_GT(distinct.size(), 150u);  // squares spread over many decades
  EXPECT_EQ(*std::min_element(v.begin(), v.end()) >= 0, true);
  // The same draws as the normal kind, quantised: element i is the code nearest to std * z_i.
  const auto z = values(gen(request("normal", {{"std", 0.35}}, DType::f64, 1000)));
  for (std::size_t i = 0; i < z.size(); ++i)
    EXPECT_EQ(m[i], data::dynamic_map_nearest(z[i], true)) << i;
  EXPECT_THROW(gen(request("dynamic_map_codes", {}, DType::i32, 10)), std::invalid_argument);
  EXPECT_THROW(gen(request("dynamic_map_codes", {{"map", "both"}}, DType::u8, 10)), std::invalid_argument);
  EXPECT_THROW(gen(request("dynamic_map_codes", {{"std", 0}}, DType::u8, 10)), std::invalid_argument);
}
