#pragma once
/// The Markdown report, for READMEs and pull requests: the summary, the leaderboard and one
/// table per task (and the comparison, when given). No plots: those are in the HTML report.
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/runs.h"

namespace d2k::report {

std::string render_markdown(const std::vector<Run>& runs, const std::vector<CompareRow>* compare = nullptr,
                            const std::string& title = "D2K-Bench report");

}  // namespace d2k::report
