#pragma once
/// Run comparison (`d2k report --compare A B`): each (task, target, workload) of either run gets
/// a verdict. Times are compared as nvbench's compare script does: the relative difference
/// (B - A) / A is SAME when within the smaller of the two runs' relative noises, else FASTER
/// or SLOWER; UNKNOWN when neither run has a noise figure. A status change outranks the time.
#include <optional>
#include <string>
#include <vector>

#include "report/runs.h"
#include "report/trace.h"

namespace d2k::report {

enum class Verdict { SAME, FASTER, SLOWER, UNKNOWN, STATUS_CHANGED, BOTH_FAILED, ONLY_A, ONLY_B };
const char* verdict_name(Verdict v);

struct CompareRow {
  std::string task, target, workload;   ///< workload: uuid (axes for hidden ones)
  std::optional<Status> status_a, status_b;
  std::optional<double> time_a_us, time_b_us;   ///< median, PASSED only
  std::optional<double> noise_a, noise_b;       ///< relative noise, PASSED only
  std::optional<double> frac_diff;              ///< (B - A) / A
  std::optional<double> threshold;              ///< the noise the difference was held against
  Verdict verdict = Verdict::UNKNOWN;
};

/// Pure comparison of two timed results (exposed for tests).
Verdict compare_times(double a_us, std::optional<double> noise_a, double b_us, std::optional<double> noise_b,
                      std::optional<double>* threshold = nullptr);

/// Rows in A's order, then those only in B.
std::vector<CompareRow> compare_runs(const Run& a, const Run& b);

/// Text (status changes marked "!!") or Markdown (status changes in bold) table, with a
/// count line per verdict.
std::string format_compare(const std::vector<CompareRow>& rows, TableFormat fmt);

}  // namespace d2k::report
