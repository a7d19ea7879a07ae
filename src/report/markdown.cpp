#include "report/markdown.h"

#include <fmt/format.h>

namespace d2k::report {

namespace {

std::string opt(const std::optional<double>& v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

std::string summary_table(const std::vector<TargetSummary>& sums) {
  std::string out =
      "| run | target | records | passed | geomean vs naive | vs torch eager | vs torch compile | mean S | fast_1 | fast_2 |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const TargetSummary& s : sums) {
    auto fp = [&](double p) {
      auto it = s.suite.fast_p.find(p);
      return it == s.suite.fast_p.end() ? std::string("-") : fmt::format("{:.2f}", it->second);
    };
    out += fmt::format("| {} | {} | {} | {} ({:.1f}%) | {} | {} | {} | {} | {} | {} |\n", s.run, s.target,
                       s.suite.records, s.suite.passed, 100 * s.suite.pass_rate,
                       opt(s.suite.geomean_speedup_vs_naive, "{:.2f}x"), opt(s.geomean_vs_torch_eager, "{:.2f}x"),
                       opt(s.geomean_vs_torch_compile, "{:.2f}x"), opt(s.suite.mean_sol_score, "{:.3f}"), fp(1.0),
                       fp(2.0));
  }
  return out;
}

}  // namespace

std::string render_markdown(const std::vector<Run>& runs, const std::vector<CompareRow>* compare,
                            const std::string& title) {
  const std::vector<TargetSummary> sums = summarize_runs(runs);
  std::string out = fmt::format("# {}\n\n", title);
  if (compare) out += fmt::format("## Comparison\n\n{}\n", format_compare(*compare, TableFormat::markdown));
  out += "## Suite summary\n\nGeometric means over workloads within a task, then over tasks; S is the SOL score; "
         "check workloads left out.\n\n";
  out += summary_table(sums);
  out += "\n## Leaderboard\n\n| # | run | target | mean S | geomean vs naive | pass rate |\n"
         "| --- | --- | --- | --- | --- | --- |\n";
  int rank = 0;
  for (const TargetSummary& s : leaderboard(sums))
    out += fmt::format("| {} | {} | {} | {} | {} | {:.1f}% |\n", ++rank, s.run, s.target,
                       opt(s.suite.mean_sol_score, "{:.3f}"), opt(s.suite.geomean_speedup_vs_naive, "{:.2f}x"),
                       100 * s.suite.pass_rate);
  for (const std::string& task : tasks_of(runs)) {
    out += fmt::format("\n## {}\n", task);
    for (const Run& run : runs) {
      std::vector<Trace> mine;
      for (const Trace& t : run.traces)
        if (t.task == task) mine.push_back(t);
      if (mine.empty()) continue;
      if (runs.size() > 1) out += fmt::format("\n### {}\n", run.name);
      out += fmt::format("\n{}", format_table(mine, TableFormat::markdown));
    }
  }
  return out;
}

}  // namespace d2k::report
