#pragma once
/// Runs as the report sees them: a named file of traces (JSON lines, as `d2k bench --json` and
/// `d2k run` write them) and the aggregates the report shows for each (run, target).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/trace.h"

namespace d2k::report {

/// One run: the traces of one file, named after it.
struct Run {
  std::string name;            ///< the file's stem unless given
  std::vector<Trace> traces;
};

/// Reads a JSON-lines trace file; blank lines are skipped. Throws std::runtime_error naming the
/// file and line of anything that is not a trace object.
Run read_run(const std::filesystem::path& file);

/// What the summary and leaderboard show for one target of one run (check workloads left out).
struct TargetSummary {
  std::string run, target;
  SuiteSummary suite;                                    ///< score/suite.h aggregates
  std::optional<double> geomean_vs_torch_eager, geomean_vs_torch_compile;  ///< same averaging as vs naive
  std::optional<double> geomean_pct_sol;                 ///< over passed timed records
};

/// The fast_p curve's abscissae: p from 0 to `p_max` in `steps` equal steps.
std::vector<double> fast_p_grid(double p_max = 4.0, int steps = 40);

/// Share of `target`'s records (check workloads left out) PASSED and at least p x naive, per p.
std::vector<double> fast_p_curve(const std::vector<Trace>& traces, const std::string& target,
                                 const std::vector<double>& ps);

/// One summary per (run, target), in run order then target name order.
std::vector<TargetSummary> summarize_runs(const std::vector<Run>& runs);

/// Leaderboard order: mean SOL score, then geomean speedup vs naive, then pass rate (descending;
/// a missing value sorts last).
std::vector<TargetSummary> leaderboard(std::vector<TargetSummary> rows);

/// Tasks of a run in first-seen order.
std::vector<std::string> tasks_of(const std::vector<Run>& runs);

}  // namespace d2k::report
