#include "check/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <utility>
#include <cmath>
#include <stdexcept>
#include <unordered_set>

#include "check/compare_internal.h"

namespace d2k {

using check::ElemParams;
using check::ElemRule;
using check::ElemStats;

std::string_view check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::passed: return "PASSED";
    case CheckStatus::incorrect_numerical: return "INCORRECT_NUMERICAL";
    case CheckStatus::incorrect_write: return "INCORRECT_WRITE";
    case CheckStatus::incorrect_shape: return "INCORRECT_SHAPE";
  }
  return "?";
}

PoisonPattern poison_pattern(DType t, int variant) {
  const bool v1 = variant != 0;
  switch (t) {
    case DType::f32: return {t, v1 ? 0xFFA5A5A5ull : 0x7FA5A5A5ull};
    case DType::f64: return {t, v1 ? 0xFFF4A5A5A5A5A5A5ull : 0x7FF4A5A5A5A5A5A5ull};
    case DType::bf16: return {t, v1 ? 0xFFA5ull : 0x7FA5ull};
    case DType::f16: return {t, v1 ? 0xFCA5ull : 0x7CA5ull};
    case DType::f8e4m3: return {t, v1 ? 0xFFull : 0x7Full};
    case DType::f8e5m2: return {t, v1 ? 0xFDull : 0x7Dull};
    default: return poison_from_byte(t, v1 ? 0x5A : 0xA5);
  }
}

PoisonPattern poison_from_byte(DType t, std::uint8_t byte) {
  std::uint64_t bits = 0;
  for (std::size_t b = 0; b < data::elem_bytes(t); ++b) bits |= static_cast<std::uint64_t>(byte) << (8 * b);
  return {t, bits};
}

void fill_poison(const PoisonPattern& p, void* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) data::store_bits(p.dtype, dst, i, p.bits);
}

namespace check {

std::int64_t numel_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string format_index(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  if (shape.size() <= 1 || flat < 0) return fmt::format("[{}]", flat);
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::int64_t dim = std::max<std::int64_t>(shape[d], 1);
    idx[d] = flat % dim;
    flat /= dim;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

bool is_dense_rule(const std::string& rule) {
  return rule == "allclose" || rule == "ulp" || rule == "rel_l2" || rule == "exact";
}

ElemParams dense_params(const CompareSpec& spec, DType et, DType at, int poison_variant) {
  ElemParams p;
  p.rule = spec.rule == "exact"    ? ElemRule::exact
           : spec.rule == "rel_l2" ? ElemRule::none
           : spec.rule == "ulp"    ? ElemRule::ulp
                                   : ElemRule::allclose;
  p.atol = spec.atol;
  p.rtol = spec.rtol;
  p.ulps = spec.ulps;
  p.et = et;
  p.at = at;
  if (poison_variant >= 0) {
    p.check_poison = true;
    p.poison = poison_pattern(at, poison_variant).bits;
    p.poison_vs_expected = et == at;
  }
  return p;
}

double rel_l2_threshold(const CompareSpec& spec, const ElemStats& s, std::int64_t n) {
  return n > 0 ? spec.tol * std::sqrt(s.sum_e2 / static_cast<double>(n)) : 0.0;
}

CompareResult check_shapes(const CompareSpec& spec, const std::vector<std::int64_t>& es,
                           const std::vector<std::int64_t>& as, bool* ok) {
  CompareResult r;
  r.rule = spec.rule;
  *ok = es == as;
  if (!*ok) {
    r.status = CheckStatus::incorrect_shape;
    r.message = fmt::format("shape [{}] differs from the expected [{}]", fmt::join(as, ", "), fmt::join(es, ", "));
  }
  return r;
}

namespace {

std::string rule_text(const CompareSpec& s) {
  if (s.rule == "allclose") {
    std::string t = fmt::format("allclose(atol={:g}, rtol={:g}", s.atol, s.rtol);
    if (s.matched_ratio < 1) t += fmt::format(", matched_ratio={:g}", s.matched_ratio);
    if (s.max_error_cap > 0) t += fmt::format(", max_error_cap={:g}", s.max_error_cap);
    return t + ")";
  }
  if (s.rule == "ulp") {
    std::string t = fmt::format("ulp(ulps={:g}", s.ulps);
    if (s.matched_ratio < 1) t += fmt::format(", matched_ratio={:g}", s.matched_ratio);
    if (s.max_ulps >= 0) t += fmt::format(", max_ulps={:g}", s.max_ulps);
    if (s.atol > 0) t += fmt::format(", atol={:g}", s.atol);
    return t + ")";
  }
  if (s.rule == "rel_l2") return fmt::format("rel_l2(tol={:g})", s.tol);
  return s.rule;
}



}  // namespace

namespace {
/// The count a Poisson variable of mean lambda exceeds with probability below kChanceMissRisk.
std::int64_t poisson_upper_quantile(double lambda) {
  if (lambda > 500) {  // normal approximation with the skew term; exp(-lambda) would underflow
    constexpr double z = 4.7534;  // one-sided normal quantile of kChanceMissRisk
    return static_cast<std::int64_t>(std::ceil(lambda + z * std::sqrt(lambda) + (z * z + 2) / 6));
  }
  double pmf = std::exp(-lambda), tail = 1.0 - pmf;  // P(X = k), P(X > k)
  std::int64_t k = 0;
  while (tail >= kChanceMissRisk) {
    ++k;
    pmf *= lambda / static_cast<double>(k);
    tail -= pmf;
  }
  return k;
}
}  // namespace

/// Elements a rule with `matched_ratio` lets fail. 1 - matched_ratio is the share of elements an
/// honest computation may miss by chance (a value within its arithmetic's error of a rounding
/// boundary: docs/task-format.md), so the count it misses in n elements is Poisson with mean
/// lambda = (1 - matched_ratio) * n, and the rule allows the count that such a kernel exceeds with
/// probability below kChanceMissRisk. floor(lambda) alone failed honest kernels wherever lambda is
/// near 1: the H200 saw fused_add_rmsnorm's expert miss 2 of 1360 elements by one ulp on a hidden
/// 34x40 workload, against an allowance of 1. At large n the allowance is lambda + ~4.8 sqrt(lambda).
/// It never exceeds floor(kMissShareCap * lambda): on a tiny output (lambda << 1) the tail would
/// allow one miss in a handful of elements, so a wholly wrong one-element output would pass.
/// With `misses_bounded` the share cap never takes the allowance below one: the H200-sized
/// example is layernorm_backward's 1 x 8 check, where an fp32 kernel's one-ulp tie with the fp64
/// golden (about 3e-4 of draws, host model) failed 8 bf16 outputs against an allowance of 0.
std::int64_t allowed_mismatches(double matched_ratio, std::int64_t n, bool misses_bounded) {
  const double lambda = (1.0 - matched_ratio) * static_cast<double>(n);
  if (!(lambda > 1e-12)) return 0;
  std::int64_t share_cap = static_cast<std::int64_t>(std::floor(kMissShareCap * lambda + 1e-9));
  if (misses_bounded) share_cap = std::max<std::int64_t>(share_cap, 1);
  return std::min(poisson_upper_quantile(lambda), share_cap);
}

CompareResult finalize_dense(const CompareSpec& spec, const ElemStats& s, const ElemStats* s2, std::int64_t n,
                             const std::vector<std::int64_t>& shape, double first_e, double first_a,
                             std::uint64_t poison_bits) {
  CompareResult r;
  r.rule = spec.rule;
  r.checked = n;
  r.max_abs_error = s.max_abs;
  r.max_rel_error = s.max_rel;
  r.rel_l2 = s.sum_e2 > 0 ? std::sqrt(s.sum_d2 / s.sum_e2) : (s.sum_d2 == 0 ? 0.0 : INFINITY);
  if (spec.rule == "ulp") r.max_ulp_error = s.max_ulps;
  if (s.unwritten > 0) {
    r.status = CheckStatus::incorrect_write;
    r.mismatches = static_cast<std::int64_t>(s.unwritten);
    r.first_bad = s.first_unwritten;
    r.message = fmt::format("{} of {} elements were not written (still hold the poison 0x{:X}); first at {}", s.unwritten,
                            n, poison_bits, format_index(s.first_unwritten, shape));
    return r;
  }
  const ElemStats& m = s2 ? *s2 : s;
  r.mismatches = static_cast<std::int64_t>(m.mismatches);
  r.first_bad = m.first_bad;
  if (r.first_bad >= 0) {
    r.first_expected = first_e;
    r.first_actual = first_a;
  }
  const std::string first =
      r.first_bad >= 0 ? fmt::format("; first at {}: expected {:.9g}, actual {:.9g}", format_index(r.first_bad, shape),
                                     first_e, first_a)
                       : std::string();
  std::string stats = fmt::format("max abs err {:.3g}, max rel err {:.3g}, rel_l2 {:.3g}", r.max_abs_error,
                                  r.max_rel_error, r.rel_l2);
  if (spec.rule == "ulp") stats = fmt::format("max err {:g} ulp, {} elements beyond {:g} ulp; ", s.max_ulps, m.mismatches, spec.ulps) + stats;
  const bool all_zero = n > 0 && s.nonzero_actual == 0 && s.nonzero_expected > 0;
  std::string why;
  if (s.nonfinite_bad > 0) {
    why = fmt::format("{} non-finite values where the expected value differs (NaN/Inf){}", s.nonfinite_bad, first);
  } else if (all_zero) {
    why = "output is all zeros but the expected output is not";
  } else if (spec.rule == "ulp") {
    const std::int64_t allowed = allowed_mismatches(spec.matched_ratio, n, spec.max_ulps >= 0);
    if (r.mismatches > allowed)
      why = fmt::format("{} of {} elements are off by more than {:g} ulp (allowed {}){}", r.mismatches, n, spec.ulps,
                        allowed, first);
    else if (spec.max_ulps >= 0 && s.max_ulps > spec.max_ulps)
      why = fmt::format("an element is off by {:g} ulp, beyond max_ulps {:g}", s.max_ulps, spec.max_ulps);
  } else if (spec.rule == "allclose") {
    const std::int64_t allowed = allowed_mismatches(spec.matched_ratio, n, spec.max_error_cap > 0);
    if (r.mismatches > allowed)
      why = fmt::format("{} of {} elements mismatch (allowed {}){}", r.mismatches, n, allowed, first);
    else if (spec.max_error_cap > 0 && r.max_abs_error > spec.max_error_cap)
      why = fmt::format("max abs err {:.6g} exceeds max_error_cap {:g}", r.max_abs_error, spec.max_error_cap);
  } else if (spec.rule == "rel_l2") {
    if (!(r.rel_l2 <= spec.tol))
      why = fmt::format("rel_l2 {:.6g} > tol {:g}; {} elements off by more than tol*rms(expected){}", r.rel_l2, spec.tol,
                        r.mismatches, first);
  } else if (spec.rule == "exact") {
    if (r.mismatches > 0) why = fmt::format("{} of {} elements differ{}", r.mismatches, n, first);
  }
  r.passed = why.empty();
  r.status = r.passed ? CheckStatus::passed : CheckStatus::incorrect_numerical;
  r.message = rule_text(spec) + ": " + (r.passed ? fmt::format("{} elements match; {}", n, stats) : why + "; " + stats);
  if (spec.rule == "exact" && r.passed) r.message = fmt::format("exact: {} elements equal", n);
  return r;
}

}  // namespace check

namespace {

std::int64_t elems(const HostTensor& t) {
  return static_cast<std::int64_t>(t.bytes.size() / data::elem_bytes(t.dtype));
}

void require_consistent(const HostTensor& t, const char* which) {
  if (check::numel_of(t.shape) != elems(t) && !(t.shape.empty() && elems(t) == 1))
    throw std::invalid_argument(fmt::format("compare: {} tensor '{}' has shape [{}] but holds {} elements", which, t.name,
                                            fmt::join(t.shape, ", "), elems(t)));
}

struct Cell {
  std::int64_t i;
  double d;
};

/// Rows of a multiset side: `width` cells per row, ints exact, floats as double.
struct RowSet {
  std::vector<Cell> cells;
  std::vector<bool> col_is_int;  // per cell position in a row
  std::int64_t width = 0, rows = 0;
};

RowSet gather_rows(std::span<const HostTensor* const> cols, std::int64_t rows) {
  RowSet rs;
  rs.rows = rows;
  std::vector<std::int64_t> widths;
  for (const HostTensor* c : cols) {
    const std::int64_t cap = c->shape.empty() ? 1 : c->shape[0];
    const std::int64_t w = cap > 0 ? elems(*c) / cap : 0;
    widths.push_back(w);
    for (std::int64_t k = 0; k < w; ++k) rs.col_is_int.push_back(!data::is_float_type(c->dtype));
    rs.width += w;
  }
  rs.cells.resize(static_cast<std::size_t>(rows * rs.width));
  std::int64_t off = 0;
  for (std::size_t c = 0; c < cols.size(); ++c) {
    const HostTensor& t = *cols[c];
    const bool is_int = !data::is_float_type(t.dtype);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < widths[c]; ++k) {
        const std::int64_t i = r * widths[c] + k;
        Cell& cell = rs.cells[static_cast<std::size_t>(r * rs.width + off + k)];
        cell.i = is_int ? data::load_i64(t.dtype, t.data(), i) : 0;
        cell.d = data::load_double(t.dtype, t.data(), i);
      }
    off += widths[c];
  }
  return rs;
}

/// Total order on cells: ints by value; floats by value with NaN last (all NaNs equal).
int cmp_cell(const Cell& a, const Cell& b, bool is_int) {
  if (is_int) return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  const bool na = std::isnan(a.d), nb = std::isnan(b.d);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a.d < b.d ? -1 : (a.d > b.d ? 1 : 0);
}

int cmp_row(const RowSet& A, std::int64_t ra, const RowSet& B, std::int64_t rb) {
  const Cell* a = &A.cells[static_cast<std::size_t>(ra * A.width)];
  const Cell* b = &B.cells[static_cast<std::size_t>(rb * B.width)];
  for (std::int64_t k = 0; k < A.width; ++k)
    if (int c = cmp_cell(a[k], b[k], A.col_is_int[static_cast<std::size_t>(k)])) return c;
  return 0;
}

/// Rows of at most two integer cells that each fit in 32 bits, packed into one 64-bit key whose
/// unsigned order is cmp_row's order (the sign bit flipped makes signed order unsigned).
/// nullopt when the rows do not fit that shape.
std::optional<std::vector<std::uint64_t>> packed_row_keys(const RowSet& rs) {
  if (rs.width < 1 || rs.width > 2) return std::nullopt;
  for (bool is_int : rs.col_is_int)
    if (!is_int) return std::nullopt;
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(rs.rows));
  for (std::int64_t r = 0; r < rs.rows; ++r) {
    std::uint64_t k = 0;
    for (std::int64_t c = 0; c < 2; ++c) {
      std::int64_t v = c < rs.width ? rs.cells[static_cast<std::size_t>(r * rs.width + c)].i : INT32_MIN;
      if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
      k = (k << 32) | (static_cast<std::uint32_t>(static_cast<std::int32_t>(v)) ^ 0x80000000u);
    }
    keys[static_cast<std::size_t>(r)] = k;
  }
  return keys;
}

/// Row order by an LSD radix sort of packed keys (16-bit digits): join outputs have 1e8 rows and
/// more, where a comparison sort of row indices takes minutes.
std::vector<std::int64_t> radix_order(const std::vector<std::uint64_t>& keys) {
  const std::size_t n = keys.size();
  std::vector<std::int64_t> order(n), next(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::int64_t>(i);
  std::vector<std::size_t> count(1 << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0);
    for (std::size_t i = 0; i < n; ++i) ++count[(keys[i] >> shift) & 0xFFFF];
    std::size_t sum = 0;
    for (auto& c : count) sum += std::exchange(c, sum);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t row = order[i];
      next[count[(keys[static_cast<std::size_t>(row)] >> shift) & 0xFFFF]++] = row;
    }
    order.swap(next);
  }
  return order;
}

std::vector<std::int64_t> sorted_rows(const RowSet& rs) {
  if (auto keys = packed_row_keys(rs)) return radix_order(*keys);
  std::vector<std::int64_t> order(static_cast<std::size_t>(rs.rows));
  for (std::int64_t i = 0; i < rs.rows; ++i) order[static_cast<std::size_t>(i)] = i;
  std::sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) { return cmp_row(rs, x, rs, y) < 0; });
  return order;
}

CompareResult fail(const CompareSpec& spec, CheckStatus st, std::string msg) {
  CompareResult r;
  r.rule = spec.rule;
  r.status = st;
  r.message = spec.rule + ": " + std::move(msg);
  return r;
}

CompareResult compare_topk(const CompareSpec& spec, const HostTensor& expected, const HostTensor& actual,
                           const CompareOptions& opt) {
  if (expected.shape.size() != 2)
    throw std::invalid_argument(fmt::format("topk: index output '{}' must be 2-D [rows, k]", expected.name));
  const std::int64_t rows_cap = expected.shape[0], k = expected.shape[1];
  const std::int64_t erows = opt.expected_rows >= 0 ? opt.expected_rows : rows_cap;
  const std::int64_t arows = opt.actual_rows >= 0 ? opt.actual_rows : rows_cap;
  if (arows > rows_cap || erows > rows_cap)
    return fail(spec, CheckStatus::incorrect_numerical, fmt::format("row count {} is beyond the capacity {}", arows, rows_cap));
  if (arows != erows)
    return fail(spec, CheckStatus::incorrect_numerical, fmt::format("row count {} differs from the expected {}", arows, erows));
  if (opt.poison_variant >= 0) {
    const auto p = poison_pattern(actual.dtype, opt.poison_variant);
    const WriteCheck w = check_written(p, actual, arows * k, &expected);
    if (w.unwritten > 0) {
      CompareResult r = fail(spec, CheckStatus::incorrect_write,
                             fmt::format("{} of {} indices were not written; first at {}", w.unwritten, arows * k,
                                         check::format_index(w.first, actual.shape)));
      r.mismatches = w.unwritten;
      r.first_bad = w.first;
      return r;
    }
  }
  const HostTensor* sc = opt.scores;
  const std::int64_t n = sc && sc->shape.size() == 2 ? sc->shape[1] : -1;
  if (sc && (sc->shape.size() != 2 || sc->shape[0] < erows))
    throw std::invalid_argument("topk: scores must be [rows, n] with at least the compared rows");
  const double tie_atol = spec.atol, tie_rtol = spec.rtol;
  CompareResult r;
  r.rule = spec.rule;
  r.checked = arows;
  std::string first_reason;
  std::int64_t zero_rows_actual = 0, zero_rows_expected = 0;
  for (std::int64_t row = 0; row < arows; ++row) {
    std::vector<std::int64_t> E(static_cast<std::size_t>(k)), A(static_cast<std::size_t>(k));
    bool a_zero = true, e_zero = true;
    for (std::int64_t j = 0; j < k; ++j) {
      E[static_cast<std::size_t>(j)] = data::load_i64(expected.dtype, expected.data(), row * k + j);
      A[static_cast<std::size_t>(j)] = data::load_i64(actual.dtype, actual.data(), row * k + j);
      a_zero &= A[static_cast<std::size_t>(j)] == 0;
      e_zero &= E[static_cast<std::size_t>(j)] == 0;
    }
    zero_rows_actual += a_zero;
    zero_rows_expected += e_zero;
    auto value_e = [&](std::int64_t j) {  // value of expected's j-th index
      return sc ? data::load_double(sc->dtype, sc->data(), row * n + E[static_cast<std::size_t>(j)])
                : opt.expected_values ? data::load_double(opt.expected_values->dtype, opt.expected_values->data(), row * k + j)
                                      : NAN;
    };
    auto value_a = [&](std::int64_t j) {
      return sc ? data::load_double(sc->dtype, sc->data(), row * n + A[static_cast<std::size_t>(j)])
                : opt.actual_values ? data::load_double(opt.actual_values->dtype, opt.actual_values->data(), row * k + j)
                                    : NAN;
    };
    std::string reason;
    double bad_e = NAN, bad_a = NAN;
    std::unordered_set<std::int64_t> aset, eset(E.begin(), E.end());
    for (std::int64_t j = 0; j < k && reason.empty(); ++j) {
      const std::int64_t a = A[static_cast<std::size_t>(j)];
      if (a < 0 || (n >= 0 && a >= n)) reason = fmt::format("index {} out of range", a), bad_a = static_cast<double>(a);
      else if (!aset.insert(a).second) reason = fmt::format("index {} repeated", a), bad_a = static_cast<double>(a);
    }
    if (reason.empty()) {
      double kth = INFINITY;
      for (std::int64_t j = 0; j < k; ++j) kth = std::min(kth, value_e(j));
      auto ties = [&](double v) {
        return std::isfinite(v) && std::isfinite(kth) && std::fabs(v - kth) <= tie_atol + tie_rtol * std::fabs(kth);
      };
      for (std::int64_t j = 0; j < k && reason.empty(); ++j) {
        const std::int64_t a = A[static_cast<std::size_t>(j)];
        if (!eset.count(a) && !ties(value_a(j))) {
          reason = fmt::format("index {} (value {:.6g}) is not in the expected top-{} (k-th value {:.6g})", a, value_a(j), k, kth);
          bad_a = static_cast<double>(a);
        }
      }
      for (std::int64_t j = 0; j < k && reason.empty(); ++j) {
        const std::int64_t e = E[static_cast<std::size_t>(j)];
        if (!aset.count(e) && !ties(value_e(j))) {
          reason = fmt::format("expected index {} (value {:.6g}) is missing", e, value_e(j));
          bad_e = static_cast<double>(e);
        }
      }
    }
    if (!reason.empty()) {
      if (r.mismatches++ == 0) {
        r.first_bad = row;
        r.first_expected = bad_e;
        r.first_actual = bad_a;
        first_reason = reason;
      }
    }
  }
  const bool all_zero = arows > 0 && zero_rows_actual == arows && zero_rows_expected < arows;
  r.passed = r.mismatches == 0 && !all_zero;
  r.status = r.passed ? CheckStatus::passed : CheckStatus::incorrect_numerical;
  if (r.passed) r.message = fmt::format("topk: {} rows of {} indices match (ties allowed)", arows, k);
  else if (r.mismatches) r.message = fmt::format("topk: {} of {} rows differ; first row {}: {}", r.mismatches, arows, r.first_bad, first_reason);
  else r.message = "topk: output is all zeros but the expected output is not";
  return r;
}

}  // namespace

WriteCheck check_written(const PoisonPattern& p, const HostTensor& actual, std::int64_t limit, const HostTensor* expected) {
  WriteCheck w;
  const std::int64_t n = limit >= 0 ? std::min(limit, elems(actual)) : elems(actual);
  const bool vs_e = expected && expected->dtype == actual.dtype && elems(*expected) >= n;
  for (std::int64_t i = 0; i < n; ++i) {
    if (data::load_bits(actual.dtype, actual.data(), i) != p.bits) continue;
    if (vs_e && data::load_bits(expected->dtype, expected->data(), i) == p.bits) continue;
    if (w.unwritten++ == 0) w.first = i;
  }
  return w;
}

WriteCheck check_written_two_runs(const PoisonPattern& pa, const HostTensor& run_a, const PoisonPattern& pb,
                                  const HostTensor& run_b, std::int64_t limit) {
  if (run_a.dtype != run_b.dtype || run_a.bytes.size() != run_b.bytes.size())
    throw std::invalid_argument("check_written_two_runs: the two runs differ in dtype or size");
  WriteCheck w;
  const std::int64_t n = limit >= 0 ? std::min(limit, elems(run_a)) : elems(run_a);
  for (std::int64_t i = 0; i < n; ++i)
    if (check::unwritten_two_runs(run_a.dtype, run_a.data(), pa.bits, run_b.data(), pb.bits, i) && w.unwritten++ == 0)
      w.first = i;
  return w;
}

std::int64_t first_unwritten(const PoisonPattern& p, const HostTensor& actual, std::int64_t limit) {
  const std::int64_t n = limit >= 0 ? std::min(limit, elems(actual)) : elems(actual);
  for (std::int64_t i = 0; i < n; ++i)
    if (data::load_bits(actual.dtype, actual.data(), i) == p.bits) return i;
  return -1;
}

std::int64_t read_count(const HostTensor& t) {
  if (elems(t) < 1) throw std::invalid_argument(fmt::format("count output '{}' is empty", t.name));
  return data::load_i64(t.dtype, t.data(), 0);
}

CompareResult compare(const CompareSpec& spec, const HostTensor& expected, const HostTensor& actual,
                      const CompareOptions& opt) {
  if (spec.rule == "none") {
    CompareResult r;
    r.rule = spec.rule;
    r.passed = true;
    r.status = CheckStatus::passed;
    r.message = "none: not compared";
    return r;
  }
  require_consistent(expected, "expected");
  require_consistent(actual, "actual");
  bool ok = false;
  CompareResult shape = check::check_shapes(spec, expected.shape, actual.shape, &ok);
  if (!ok) return shape;
  if (spec.rule == "multiset") {
    const HostTensor* e[] = {&expected};
    const HostTensor* a[] = {&actual};
    return compare_multiset(spec, e, a, opt.expected_rows, opt.actual_rows, opt.poison_variant);
  }
  if (spec.rule == "topk") return compare_topk(spec, expected, actual, opt);
  if (!check::is_dense_rule(spec.rule))
    throw std::invalid_argument("compare: unknown rule '" + spec.rule +
                                "' (allclose, rel_l2, exact, multiset, topk, none)");
  const std::int64_t n = elems(actual);
  const ElemParams p = check::dense_params(spec, expected.dtype, actual.dtype, opt.poison_variant);
  ElemStats s;
  for (std::int64_t i = 0; i < n; ++i) check::accumulate(s, p, expected.data(), actual.data(), i);
  ElemStats s2;
  const bool two = spec.rule == "rel_l2" && s.unwritten == 0;
  if (two) {
    ElemParams p2 = p;
    p2.rule = ElemRule::allclose;
    p2.atol = check::rel_l2_threshold(spec, s, n);
    p2.rtol = 0;
    p2.check_poison = false;
    for (std::int64_t i = 0; i < n; ++i) check::accumulate(s2, p2, expected.data(), actual.data(), i);
  }
  const std::int64_t fb = two ? s2.first_bad : s.first_bad;
  const double fe = fb >= 0 ? data::load_double(expected.dtype, expected.data(), fb) : NAN;
  const double fa = fb >= 0 ? data::load_double(actual.dtype, actual.data(), fb) : NAN;
  return check::finalize_dense(spec, s, two ? &s2 : nullptr, n, actual.shape, fe, fa, p.poison);
}

namespace {

/// Phase 1 of the multiset rule: every column has the expected shape and all have one row count
/// (the capacity). Returns the capacity, or a failed result in `fail_out`.
std::int64_t multiset_capacity(const CompareSpec& sp, std::span<const HostTensor* const> expected_cols,
                               std::span<const HostTensor* const> actual_cols, std::optional<CompareResult>& fail_out) {
  std::int64_t cap = -1;
  for (std::size_t c = 0; c < actual_cols.size(); ++c) {
    const HostTensor& e = *expected_cols[c];
    const HostTensor& a = *actual_cols[c];
    require_consistent(e, "expected");
    require_consistent(a, "actual");
    bool ok = false;
    CompareResult sh = check::check_shapes(sp, e.shape, a.shape, &ok);
    if (!ok) {
      sh.message = "multiset column '" + a.name + "': " + sh.message;
      fail_out = sh;
      return cap;
    }
    const std::int64_t rows = a.shape.empty() ? 1 : a.shape[0];
    if (cap >= 0 && rows != cap) {
      fail_out = fail(sp, CheckStatus::incorrect_shape, fmt::format("column '{}' has {} rows, other columns {}", a.name, rows, cap));
      return cap;
    }
    cap = rows;
  }
  return cap;
}

/// Phase 2: every element of the `acount` valid rows was written (the poison pattern is gone).
std::optional<CompareResult> multiset_unwritten(const CompareSpec& sp, std::span<const HostTensor* const> expected_cols,
                                                std::span<const HostTensor* const> actual_cols, std::int64_t cap,
                                                std::int64_t acount, int poison_variant) {
  for (std::size_t c = 0; c < actual_cols.size(); ++c) {
    const HostTensor& a = *actual_cols[c];
    const std::int64_t w = cap > 0 ? elems(a) / cap : 0;
    const WriteCheck wc = check_written(poison_pattern(a.dtype, poison_variant), a, acount * w, expected_cols[c]);
    if (wc.unwritten == 0) continue;
    CompareResult r = fail(sp, CheckStatus::incorrect_write,
                           fmt::format("column '{}': {} elements of the {} valid rows were not written; first at {}",
                                       a.name, wc.unwritten, acount, check::format_index(wc.first, a.shape)));
    r.mismatches = wc.unwritten;
    r.first_bad = w > 0 ? wc.first / w : -1;
    return r;
  }
  return std::nullopt;
}

/// What matching the two row sets found.
struct MultisetTally {
  std::int64_t first_unmatched_actual = -1, first_missing_expected = -1, unmatched_a = 0, unmatched_e = 0;
  double max_abs = 0, max_rel = 0;
};

/// Phase 3, with a tolerance and equal counts: the sorted lists pair up row by row; ints exact,
/// floats with allclose semantics.
MultisetTally match_sorted_pairs(const CompareSpec& spec, const RowSet& E, const RowSet& A,
                                 const std::vector<std::int64_t>& eo, const std::vector<std::int64_t>& ao) {
  MultisetTally t;
  for (std::size_t q = 0; q < ao.size(); ++q) {
    const Cell* a = &A.cells[static_cast<std::size_t>(ao[q] * A.width)];
    const Cell* e = &E.cells[static_cast<std::size_t>(eo[q] * E.width)];
    bool bad = false;
    for (std::int64_t k = 0; k < A.width; ++k) {
      if (A.col_is_int[static_cast<std::size_t>(k)]) {
        bad |= a[k].i != e[k].i;
        continue;
      }
      if (!std::isfinite(a[k].d) || !std::isfinite(e[k].d)) {
        bad |= !((std::isnan(a[k].d) && std::isnan(e[k].d)) || a[k].d == e[k].d);
        continue;
      }
      const double d = std::fabs(a[k].d - e[k].d);
      t.max_abs = std::max(t.max_abs, d);
      if (e[k].d != 0) t.max_rel = std::max(t.max_rel, d / std::fabs(e[k].d));
      bad |= d > spec.atol && d > spec.rtol * std::fabs(e[k].d);
    }
    if (bad) {
      ++t.unmatched_a;
      ++t.unmatched_e;
      t.first_unmatched_actual = check::min_index(t.first_unmatched_actual, ao[q]);
      t.first_missing_expected = check::min_index(t.first_missing_expected, eo[q]);
    }
  }
  return t;
}

/// Phase 3, exact: the multiset difference by a merge of the two sorted lists.
MultisetTally match_exact(const RowSet& E, const RowSet& A, const std::vector<std::int64_t>& eo,
                          const std::vector<std::int64_t>& ao) {
  MultisetTally t;
  std::size_t x = 0, y = 0;
  while (x < eo.size() || y < ao.size()) {
    const int c = x == eo.size() ? 1 : y == ao.size() ? -1 : cmp_row(E, eo[x], A, ao[y]);
    if (c == 0) {
      ++x;
      ++y;
    } else if (c < 0) {
      ++t.unmatched_e;
      t.first_missing_expected = check::min_index(t.first_missing_expected, eo[x++]);
    } else {
      ++t.unmatched_a;
      t.first_unmatched_actual = check::min_index(t.first_unmatched_actual, ao[y++]);
    }
  }
  return t;
}

std::string row_text(const RowSet& rs, std::int64_t row) {
  std::vector<std::string> cells;
  for (std::int64_t k = 0; k < rs.width; ++k) {
    const Cell& c = rs.cells[static_cast<std::size_t>(row * rs.width + k)];
    cells.push_back(rs.col_is_int[static_cast<std::size_t>(k)] ? std::to_string(c.i) : fmt::format("{:.9g}", c.d));
  }
  return fmt::format("({})", fmt::join(cells, ", "));
}

/// Phase 4: the verdict and a message that shows the first unmatched rows of both sides.
CompareResult multiset_verdict(const MultisetTally& t, const RowSet& E, const RowSet& A, std::int64_t ecount,
                               std::int64_t acount) {
  CompareResult r;
  r.rule = "multiset";
  r.checked = acount;
  r.mismatches = std::max(t.unmatched_a, t.unmatched_e);
  r.max_abs_error = t.max_abs;
  r.max_rel_error = t.max_rel;
  bool all_zero_a = acount > 0, all_zero_e = true;
  for (const Cell& c : A.cells) all_zero_a &= c.d == 0;
  for (const Cell& c : E.cells) all_zero_e &= c.d == 0;
  std::string why;
  if (acount != ecount) why = fmt::format("row count {} differs from the expected {}", acount, ecount);
  if (r.mismatches > 0) {
    if (!why.empty()) why += "; ";
    why += fmt::format("{} rows of actual not in expected, {} expected rows missing", t.unmatched_a, t.unmatched_e);
    if (t.first_unmatched_actual >= 0) {
      r.first_bad = t.first_unmatched_actual;
      r.first_actual = A.cells[static_cast<std::size_t>(t.first_unmatched_actual * A.width)].d;
      why += fmt::format("; first unmatched actual row {}: {}", t.first_unmatched_actual, row_text(A, t.first_unmatched_actual));
    }
    if (t.first_missing_expected >= 0) {
      r.first_expected = E.cells[static_cast<std::size_t>(t.first_missing_expected * E.width)].d;
      why += fmt::format("; first missing expected row {}: {}", t.first_missing_expected, row_text(E, t.first_missing_expected));
    }
  }
  if (why.empty() && all_zero_a && !all_zero_e && ecount > 0) why = "output is all zeros but the expected output is not";
  r.passed = why.empty();
  r.status = r.passed ? CheckStatus::passed : CheckStatus::incorrect_numerical;
  r.message = r.passed ? fmt::format("multiset: {} rows match as a multiset", acount) : "multiset: " + why;
  return r;
}

}  // namespace

CompareResult compare_multiset(const CompareSpec& spec, std::span<const HostTensor* const> expected_cols,
                               std::span<const HostTensor* const> actual_cols, std::int64_t expected_count,
                               std::int64_t actual_count, int poison_variant) {
  CompareSpec sp = spec;
  sp.rule = "multiset";
  if (expected_cols.empty() || expected_cols.size() != actual_cols.size())
    throw std::invalid_argument(fmt::format("multiset: {} expected columns but {} actual ones", expected_cols.size(),
                                            actual_cols.size()));
  std::optional<CompareResult> failed;
  const std::int64_t cap = multiset_capacity(sp, expected_cols, actual_cols, failed);
  if (failed) return *failed;
  const std::int64_t ecount = expected_count >= 0 ? expected_count : cap;
  const std::int64_t acount = actual_count >= 0 ? actual_count : cap;
  if (actual_count > cap || actual_count < -1)
    return fail(sp, CheckStatus::incorrect_numerical, fmt::format("row count {} is outside [0, {}]", actual_count, cap));
  if (ecount > cap) throw std::invalid_argument(fmt::format("multiset: expected count {} exceeds capacity {}", ecount, cap));
  if (poison_variant >= 0)
    if (auto unwritten = multiset_unwritten(sp, expected_cols, actual_cols, cap, acount, poison_variant)) return *unwritten;
  const RowSet E = gather_rows(expected_cols, ecount), A = gather_rows(actual_cols, acount);
  const auto eo = sorted_rows(E), ao = sorted_rows(A);
  const bool tolerant = spec.atol > 0 || spec.rtol > 0;
  const MultisetTally t = tolerant && ecount == acount ? match_sorted_pairs(spec, E, A, eo, ao) : match_exact(E, A, eo, ao);
  return multiset_verdict(t, E, A, ecount, acount);
}

}  // namespace d2k
