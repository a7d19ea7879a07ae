#pragma once
/// The roofline plot of one task (docs/report.md, "Roofline plot"): for a task whose cost model
/// counts operations, arithmetic intensity (operations / compulsory DRAM byte) against achieved
/// operations per second, with the copy-bandwidth slope and each unit's peak as ceilings; for a
/// task that moves data only, bytes moved against achieved bandwidth, with the copy bandwidth as
/// the ceiling. One point per timed (run, target, workload); the cost and the ceilings come
/// from the trace (Roofline::flops, bytes, copy_bw, peaks).
#include <string>
#include <vector>

#include "report/runs.h"

namespace d2k::report {

/// True when the trace can be placed: PASSED, timed, with a cost.
bool plottable(const Trace& t);

/// The plot as an <svg id="roofline-TASK">.
std::string roofline_svg(const std::string& task, const std::vector<Run>& runs);

}  // namespace d2k::report
