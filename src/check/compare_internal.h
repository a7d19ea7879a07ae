#pragma once
/// Pieces shared by the host comparators and the device ones (compare_device.cu): parameters
/// from a CompareSpec, the verdict from accumulated statistics, messages.
#include <string>
#include <vector>

#include "check/compare.h"
#include "check/compare_core.h"

namespace d2k::check {

/// Rules evaluated element by element (allclose, rel_l2, exact).
bool is_dense_rule(const std::string& rule);

/// Element parameters of the first pass of a dense rule.
ElemParams dense_params(const CompareSpec& spec, DType et, DType at, int poison_variant);

/// Threshold of rel_l2's diagnostic second pass: tol * rms(expected).
double rel_l2_threshold(const CompareSpec& spec, const ElemStats& s, std::int64_t n);

/// Verdict of a dense rule. `s` is the first pass; `s2` rel_l2's second pass (else nullptr);
/// first_e/first_a the values at the first bad element (if any).
CompareResult finalize_dense(const CompareSpec& spec, const ElemStats& s, const ElemStats* s2, std::int64_t n,
                             const std::vector<std::int64_t>& shape, double first_e, double first_a,
                             std::uint64_t poison_bits);

/// A shape-mismatch result, or nullopt-equivalent (passed=true) when shapes and dtypes agree.
CompareResult check_shapes(const CompareSpec& spec, const std::vector<std::int64_t>& es,
                           const std::vector<std::int64_t>& as, bool* ok);

/// "[i, j, k]" for a flat index in `shape`.
std::string format_index(std::int64_t flat, const std::vector<std::int64_t>& shape);

/// Product of dimensions.
std::int64_t numel_of(const std::vector<std::int64_t>& shape);

}  // namespace d2k::check
