#pragma once
/// The kernel-set rule: every timed call launches the same kernels. A call that sometimes runs
/// another code path (a cache rebuilt every k-th call, deferred work) shows up as a sample with a
/// kernel the others lack.
///
/// Time windows lose records (a record whose converted timestamp falls outside its sample's
/// window; on the H200 one kernel of naive rmsnorm was missing in up to 59 % of the audit
/// samples). So the expected set cannot come from the timed samples alone: when a lost record
/// is the common case, the incomplete set is the most common one and every complete sample looks
/// like an extra kernel. The expected set also takes the kernels of *reference calls*: warm-up
/// calls whose records were drained one call at a time, after a device synchronisation, so each
/// holds every record of its call and nothing else. A kernel in most reference calls is
/// expected; a kernel in few of them (every k-th call) is not, so amortised work still deviates.
#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace d2k::measure {

/// Kernel names of one sample or call, in start order (copies "[...]" and harness kernels are
/// ignored by the rule).
using KernelNames = std::vector<std::string>;

/// The rule's verdict over a measurement's audit samples.
struct KernelSetVerdict {
  std::vector<std::string> names;      ///< a sample of the expected set (empty: no samples)
  std::set<std::string> expected;      ///< most common non-empty sample set ∪ reference majority
  std::vector<std::size_t> deviating;  ///< positions (in the input) of samples that ran a kernel outside `expected`
  /// Positions of non-deviating samples that lack an expected kernel: their records were lost
  /// (missing data). Their CUPTI spans do not time the whole call.
  std::vector<std::size_t> incomplete;
};

/// Harness kernels the rule never counts (the blocking kernel, the in-graph flush kernels).
bool is_harness_kernel(const std::string& name);
/// A sample's distinct kernels: copies ("[memcpy ...]", "[memset]") and harness kernels left out.
std::set<std::string> distinct_kernels(const KernelNames& names);
/// Kernels present in more than half of the reference calls (empty when there are none).
std::set<std::string> reference_kernels(const std::vector<KernelNames>& reference);

/// Each sample's distinct kernels are compared with the expected set: the most common non-empty
/// sample set, joined with the kernels present in most `reference` calls. A sample deviates when
/// it ran a kernel outside it; one with fewer kernels (a lost record) or a kernel counted twice
/// is missing data, not a deviation, and is listed in `incomplete` when it lacks one.
KernelSetVerdict judge_kernel_sets(const std::vector<KernelNames>& samples,
                                   const std::vector<KernelNames>& reference = {});

}  // namespace d2k::measure
