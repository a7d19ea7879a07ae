#pragma once
/// The per-element rule evaluation and its accumulator, shared by the host comparators and the
/// device kernels so that both give the same counts, maxima and first indices.
#include <cstdint>

#include "core/dtype.h"
#include "data/dtype_bits.h"
#include "data/exact_math.h"
#include "data/hd.h"

namespace d2k::check {

enum class ElemRule : std::uint8_t {
  allclose,  ///< bad when |a-e| > atol and |a-e| > rtol*|e|
  exact,     ///< bad when values differ
  ulp,       ///< bad when |a-e| > ulps units in the last place of the output type at e
  none,      ///< only non-finite mismatches are bad (rel_l2's first pass)
};

/// The spacing of the representable values of float type `t` at the magnitude of `v` (a unit in
/// the last place): 2^(max(exponent(v), emin(t)) - mantissa_bits(t)). Below the smallest normal
/// number it is the subnormal spacing; at 0 too. Exact (a power of two).
D2K_HD double ulp_of(DType t, double v) {
  int man = 23, emin = -126;
  switch (t) {
    case DType::bf16: man = 7; emin = -126; break;
    case DType::f16: man = 10; emin = -14; break;
    case DType::f64: man = 52; emin = -1022; break;
    case DType::f8e4m3: man = 3; emin = -6; break;
    case DType::f8e5m2: man = 2; emin = -14; break;
    default: break;  // f32
  }
  const int biased = static_cast<int>((data::bits_of(v) >> 52) & 0x7FF);
  const int e = biased == 0 ? -1023 : biased - 1023;  // zero and double subnormals: below every emin
  return data::ldexp_exact(1.0, (e > emin ? e : emin) - man);
}

/// Parameters of one element pass.
struct ElemParams {
  ElemRule rule = ElemRule::allclose;
  double atol = 0, rtol = 0;
  double ulps = 0;  ///< ulp: the per-element bound, in units of the actual's type at the expected value
  DType et = DType::f32, at = DType::f32;
  bool check_poison = false;
  std::uint64_t poison = 0;  ///< actual's poison bits
  bool poison_vs_expected = false;  ///< an element whose expected bits equal the poison counts as written
};

/// What a pass over elements found; merge() combines two in any grouping with the same result
/// except for the floating sums (order-dependent in the last bits).
struct ElemStats {
  std::uint64_t mismatches = 0, nonfinite_bad = 0, nonzero_actual = 0, nonzero_expected = 0, unwritten = 0;
  double max_abs = 0, max_rel = 0, sum_d2 = 0, sum_e2 = 0;
  double max_ulps = 0;  ///< largest |a-e| / ulp(e) (ulp rule only)
  std::int64_t first_bad = -1, first_unwritten = -1;
};

D2K_HD std::int64_t min_index(std::int64_t a, std::int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return a < b ? a : b;
}

D2K_HD void merge(ElemStats& s, const ElemStats& o) {
  s.mismatches += o.mismatches;
  s.nonfinite_bad += o.nonfinite_bad;
  s.nonzero_actual += o.nonzero_actual;
  s.nonzero_expected += o.nonzero_expected;
  s.unwritten += o.unwritten;
  s.max_abs = s.max_abs > o.max_abs ? s.max_abs : o.max_abs;
  s.max_rel = s.max_rel > o.max_rel ? s.max_rel : o.max_rel;
  s.max_ulps = s.max_ulps > o.max_ulps ? s.max_ulps : o.max_ulps;
  s.sum_d2 = (data::xd(s.sum_d2) + o.sum_d2).v;
  s.sum_e2 = (data::xd(s.sum_e2) + o.sum_e2).v;
  s.first_bad = min_index(s.first_bad, o.first_bad);
  s.first_unwritten = min_index(s.first_unwritten, o.first_unwritten);
}

/// Evaluates element i of expected `e` and actual `a` into `s`.
D2K_HD void accumulate(ElemStats& s, const ElemParams& p, const void* e, const void* a, std::int64_t i) {
  using data::xd;
  if (p.check_poison && data::load_bits(p.at, a, i) == p.poison &&
      !(p.poison_vs_expected && data::load_bits(p.et, e, i) == p.poison)) {
    ++s.unwritten;
    s.first_unwritten = min_index(s.first_unwritten, i);
    return;
  }
  const double ev = data::load_double(p.et, e, i), av = data::load_double(p.at, a, i);
  if (av != 0) ++s.nonzero_actual;  // NaN counts as non-zero
  if (ev != 0) ++s.nonzero_expected;
  if (!data::is_finite(av) || !data::is_finite(ev)) {
    const bool same = (data::is_nan(av) && data::is_nan(ev)) || av == ev;
    if (!same) {
      ++s.nonfinite_bad;
      ++s.mismatches;
      s.first_bad = min_index(s.first_bad, i);
    }
    return;
  }
  const double diff = data::abs_d((xd(av) - ev).v), mag = data::abs_d(ev);
  if (diff > s.max_abs) s.max_abs = diff;
  if (mag != 0) {
    const double r = (xd(diff) / mag).v;
    if (r > s.max_rel) s.max_rel = r;
  }
  s.sum_d2 = (xd(s.sum_d2) + xd(diff) * diff).v;
  s.sum_e2 = (xd(s.sum_e2) + xd(ev) * ev).v;
  bool bad = false;
  switch (p.rule) {
    case ElemRule::allclose: bad = diff > p.atol && diff > (xd(p.rtol) * mag).v; break;
    case ElemRule::exact:
      if (!data::is_float_type(p.et) && !data::is_float_type(p.at))
        bad = data::load_i64(p.et, e, i) != data::load_i64(p.at, a, i);  // exact beyond 2^53 too
      else
        bad = av != ev;
      break;
    case ElemRule::ulp: {
      // An element within atol counts as matched: a value that cancels to near zero (an update
      // p - lr*u) carries the absolute error of its operands, which is many ulps of the result.
      const double u = diff <= p.atol ? 0.0 : (xd(diff) / ulp_of(p.at, ev)).v;  // exact: a power of two
      if (u > s.max_ulps) s.max_ulps = u;
      bad = u > p.ulps;
      break;
    }
    case ElemRule::none: break;
  }
  if (bad) {
    ++s.mismatches;
    s.first_bad = min_index(s.first_bad, i);
  }
}

/// Two runs poisoned with pa and pb: element i is unwritten when both still hold their poison.
D2K_HD bool unwritten_two_runs(DType t, const void* a, std::uint64_t pa, const void* b, std::uint64_t pb,
                               std::int64_t i) {
  return data::load_bits(t, a, i) == pa && data::load_bits(t, b, i) == pb;
}

}  // namespace d2k::check
