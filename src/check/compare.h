#pragma once
/// Output comparison: allclose, ulp, rel_l2, exact, multiset, topk; and the write check against a
/// poison pattern. Host versions here; device versions in check/compare_device.h give the same
/// fields for the same data. docs/task-format.md defines the rules; docs/generators.md (section
/// "Poison") the poison patterns.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/task.h"
#include "core/tensor.h"

namespace d2k {

/// Outcome of one comparison, named as in the evaluation statuses.
enum class CheckStatus : std::uint8_t { passed, incorrect_numerical, incorrect_write, incorrect_shape };

/// "PASSED", "INCORRECT_NUMERICAL", "INCORRECT_WRITE", "INCORRECT_SHAPE".
std::string_view check_status_name(CheckStatus s);

/// What one comparison found. Element indices are flat (row-major); multiset and topk report rows.
struct CompareResult {
  bool passed = false;
  CheckStatus status = CheckStatus::incorrect_numerical;
  std::string rule;
  std::int64_t checked = 0;       ///< elements (multiset/topk: rows) compared
  std::int64_t mismatches = 0;    ///< elements (rows) that fail the rule; unwritten ones for INCORRECT_WRITE
  double max_abs_error = 0;       ///< over finite pairs
  double max_rel_error = 0;       ///< |a-e|/|e| over finite pairs with e != 0
  double rel_l2 = std::numeric_limits<double>::quiet_NaN();  ///< ||a-e||2/||e||2 (fp64), NaN where not meaningful
  double max_ulp_error = std::numeric_limits<double>::quiet_NaN();  ///< ulp rule: max |a-e| / ulp(e), else NaN
  std::int64_t first_bad = -1;    ///< first failing element (row), -1 if none
  double first_expected = std::numeric_limits<double>::quiet_NaN();
  double first_actual = std::numeric_limits<double>::quiet_NaN();
  std::string message;            ///< one line for people
};

/// The bit pattern an output element holds before the call. Default patterns (variant 0):
/// float32 0x7FA5A5A5, float64 0x7FF4A5A5A5A5A5A5, bfloat16 0x7FA5, float16 0x7CA5 (signalling
/// NaNs: no arithmetic result has them), float8_e4m3fn 0x7F, float8_e5m2 0x7D (NaNs), integers and
/// bool: every byte 0xA5. Variant 1 (a second run, for values that could be legitimate): floats
/// with the sign bit set, integer bytes 0x5A.
struct PoisonPattern {
  DType dtype = DType::f32;
  std::uint64_t bits = 0;  ///< one element's bits (low elem_bytes bytes)
};

/// The documented pattern of `t` (variant 0 or 1).
PoisonPattern poison_pattern(DType t, int variant = 0);
/// The pattern a byte-wise fill (memset) with `byte` leaves in an element of type `t`.
PoisonPattern poison_from_byte(DType t, std::uint8_t byte);
/// Writes the pattern into n elements at host memory `dst`.
void fill_poison(const PoisonPattern& p, void* dst, std::int64_t n);

/// Elements still holding the poison.
struct WriteCheck {
  std::int64_t unwritten = 0;
  std::int64_t first = -1;  ///< first unwritten element, -1 if none
};

/// Counts the first `limit` elements (-1: all) of `actual` that still hold `p`. Where `expected`
/// is given and holds the same bits at an element, that element counts as written (the pattern
/// is then a legitimate value).
WriteCheck check_written(const PoisonPattern& p, const HostTensor& actual, std::int64_t limit = -1,
                         const HostTensor* expected = nullptr);
/// Two runs of one call, poisoned with `pa` and `pb`: unwritten where both still hold their poison.
WriteCheck check_written_two_runs(const PoisonPattern& pa, const HostTensor& run_a, const PoisonPattern& pb,
                                  const HostTensor& run_b, std::int64_t limit = -1);
/// Index of the first element among the first `limit` (-1: all) still holding `p`, or -1.
std::int64_t first_unwritten(const PoisonPattern& p, const HostTensor& actual, std::int64_t limit = -1);

/// Extra inputs of some rules.
struct CompareOptions {
  /// >= 0: check writes first with poison_pattern(dtype, poison_variant); INCORRECT_WRITE if any
  /// element that must be written still holds it.
  int poison_variant = -1;
  /// multiset / topk: valid rows (the value of the `count` output); -1: all rows.
  std::int64_t expected_rows = -1, actual_rows = -1;
  /// topk: the scores the indices select from ([rows, n]); values of any index are looked up here.
  const HostTensor* scores = nullptr;
  /// topk without scores: the values output ([rows, k]) of each side, for tie handling.
  const HostTensor* expected_values = nullptr;
  const HostTensor* actual_values = nullptr;
};

/// A rule's `matched_ratio` bounds the share of elements an honest computation misses by chance;
/// the count allowed in n elements is what a kernel missing exactly that share exceeds with
/// probability below this (the Poisson tail at mean (1 - matched_ratio) * n).
namespace check {
inline constexpr double kChanceMissRisk = 1e-6;
/// ... but never more than this many times the stated share: a one-element output stays exact,
/// unless the rule bounds each miss (`misses_bounded`: allclose's max_error_cap, ulp's max_ulps);
/// then one miss stays allowed however small the output, since a one-ulp tie is an honest
/// kernel's likeliest miss there and the bound already fails a wholly wrong element.
inline constexpr double kMissShareCap = 10;
std::int64_t allowed_mismatches(double matched_ratio, std::int64_t n, bool misses_bounded = false);
}  // namespace check

/// Compares one output by spec.rule:
///  allclose: element fails only when |a-e| > atol and |a-e| > rtol*|e|; passes when at most
///            check::allowed_mismatches(matched_ratio, n) elements fail and (max_error_cap > 0)
///            max |a-e| <= cap;
///  ulp:      element fails when |a-e| > ulps * ulp(e), ulp(e) the spacing of actual's type at
///            the expected value (check/compare_core.h: ulp_of); passes when at most
///            check::allowed_mismatches(matched_ratio, n) elements fail and (max_ulps >= 0) no element
///            is off by more than max_ulps;
///  rel_l2:   ||a-e||2 / ||e||2 <= tol (fp64 sums); mismatches counts elements with
///            |a-e| > tol * rms(e), for diagnosis;
///  exact:    equal values (integers compared as int64; -0 == 0; NaN matches NaN);
///  multiset: rows (dimension 0) of this one tensor as an unordered set (see compare_multiset);
///  topk:     per-row index sets equal except for indices tied with the k-th value (tolerance
///            atol/rtol, default exact), values from options.scores or the values outputs;
///  none:     passes.
/// All rules: NaN/Inf in actual fail unless expected has the same non-finite value there; an
/// all-zero actual fails where expected is not all zero; shapes must match (INCORRECT_SHAPE).
CompareResult compare(const CompareSpec& spec, const HostTensor& expected, const HostTensor& actual,
                      const CompareOptions& opt = {});

/// multiset over several outputs that form the columns of one row set (each column's dimension
/// 0 is the row; trailing dimensions are part of the row). Only the first `expected_count` /
/// `actual_count` rows are valid (-1: all); counts must be equal and within the capacity. Rows
/// are compared as multisets (both sides sorted): exactly, or with atol/rtol on float columns
/// when the spec sets them. With poison_variant >= 0, valid rows must be written.
CompareResult compare_multiset(const CompareSpec& spec, std::span<const HostTensor* const> expected_cols,
                               std::span<const HostTensor* const> actual_cols, std::int64_t expected_count,
                               std::int64_t actual_count, int poison_variant = -1);

/// The row count held by a count output (element 0, as an integer).
std::int64_t read_count(const HostTensor& t);

}  // namespace d2k
