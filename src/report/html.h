#pragma once
/// The HTML report: one self-contained page (inline CSS and SVG, no script, nothing fetched) over
/// one or more runs: suite summary and fast_p curves, leaderboard, per task a table and a
/// roofline plot, per workload the trace details; with a run comparison when one is given.
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/runs.h"

namespace d2k::report {

struct HtmlOptions {
  std::string title = "D2K-Bench report";
  const std::vector<CompareRow>* compare = nullptr;  ///< the comparison section, when set
  std::string compare_a, compare_b;                  ///< its runs' names
};

std::string render_html(const std::vector<Run>& runs, const HtmlOptions& opt = {});

}  // namespace d2k::report
