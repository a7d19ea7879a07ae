#pragma once
/// Scores over a run's traces: each passed target's speedups over naive, expert and library and
/// its SOL score (against the naive time of the same run), and the suite aggregates (geomean
/// speedup, mean SOL score, fast_p). Only times from the same run are compared: a trace's
/// anchors are the other targets' traces of the same workload in `traces`, never stored times
/// (docs/measurement.md, "Machine to machine").
#include <string>
#include <vector>

#include "report/trace.h"

namespace d2k {

/// Fills each passed trace's speedups and SOL score from the other targets' traces of the same
/// workload in `traces`.
void score_traces(std::vector<Trace>& traces);

/// Suite aggregates of `target` over `traces` (check workloads left out): geometric mean over
/// workloads within a task, then over tasks; a failure counts as never fast.
SuiteSummary summarize(const std::vector<Trace>& traces, const std::string& target);

}  // namespace d2k
