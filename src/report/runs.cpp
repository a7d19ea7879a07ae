#include "report/runs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "score/suite.h"

namespace d2k::report {

using nlohmann::json;

Run read_run(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read the trace file", file.string()));
  Run run{file.stem().string(), {}};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      json j = json::parse(line);
      if (!j.is_object() || !j.contains("task") || !j.contains("target"))
        throw std::runtime_error("not a trace object (needs 'task' and 'target')");
      run.traces.push_back(trace_from_json(j));
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", file.string(), n, e.what()));
    }
  }
  return run;
}

namespace {

/// Geometric mean of a speedup over workloads within a task, then over tasks (the averaging of
/// score/suite.cpp, so that every column of a summary row means the same).
template <class Get>
std::optional<double> geomean_by_task(const std::vector<Trace>& traces, const std::string& target, Get get) {
  std::map<std::string, std::vector<double>> logs;
  for (const Trace& t : traces) {
    if (t.target != target || t.role == "check" || t.status != Status::PASSED || !t.roofline) continue;
    if (std::optional<double> v = get(t); v && *v > 0) logs[t.task].push_back(std::log(*v));
  }
  if (logs.empty()) return std::nullopt;
  double acc = 0;
  for (auto& [task, l] : logs) {
    double m = 0;
    for (double x : l) m += x;
    acc += m / l.size();
  }
  return std::exp(acc / logs.size());
}

}  // namespace

std::vector<double> fast_p_grid(double p_max, int steps) {
  std::vector<double> ps;
  for (int i = 0; i <= steps; ++i) ps.push_back(p_max * i / steps);
  return ps;
}

std::vector<double> fast_p_curve(const std::vector<Trace>& traces, const std::string& target,
                                 const std::vector<double>& ps) {
  std::vector<double> speedups;  // 0 for a failure: never fast
  for (const Trace& t : traces) {
    if (t.target != target || t.role == "check") continue;
    const bool timed = t.status == Status::PASSED && t.roofline && t.roofline->speedup_vs_naive;
    speedups.push_back(timed ? *t.roofline->speedup_vs_naive : 0.0);
  }
  std::vector<double> out;
  for (double p : ps) {
    const auto n = std::count_if(speedups.begin(), speedups.end(), [&](double s) { return s > 0 && s >= p; });
    out.push_back(speedups.empty() ? 0.0 : double(n) / speedups.size());
  }
  return out;
}

std::vector<TargetSummary> summarize_runs(const std::vector<Run>& runs) {
  std::vector<TargetSummary> out;
  for (const Run& run : runs) {
    std::set<std::string> targets;
    for (const Trace& t : run.traces) targets.insert(t.target);
    for (const std::string& target : targets) {
      TargetSummary s{run.name, target, summarize(run.traces, target), {}, {}, {}};
      s.geomean_vs_torch_eager =
          geomean_by_task(run.traces, target, [](const Trace& t) { return t.roofline->speedup_vs_torch_eager; });
      s.geomean_vs_torch_compile =
          geomean_by_task(run.traces, target, [](const Trace& t) { return t.roofline->speedup_vs_torch_compile; });
      s.geomean_pct_sol = geomean_by_task(run.traces, target, [](const Trace& t) -> std::optional<double> {
        return t.roofline->pct_sol > 0 ? std::optional<double>(t.roofline->pct_sol) : std::nullopt;
      });
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<TargetSummary> leaderboard(std::vector<TargetSummary> rows) {
  auto key = [](const std::optional<double>& v) { return v ? *v : -1.0; };
  std::stable_sort(rows.begin(), rows.end(), [&](const TargetSummary& a, const TargetSummary& b) {
    if (key(a.suite.mean_sol_score) != key(b.suite.mean_sol_score))
      return key(a.suite.mean_sol_score) > key(b.suite.mean_sol_score);
    if (key(a.suite.geomean_speedup_vs_naive) != key(b.suite.geomean_speedup_vs_naive))
      return key(a.suite.geomean_speedup_vs_naive) > key(b.suite.geomean_speedup_vs_naive);
    return a.suite.pass_rate > b.suite.pass_rate;
  });
  return rows;
}

std::vector<std::string> tasks_of(const std::vector<Run>& runs) {
  std::vector<std::string> tasks;
  for (const Run& r : runs)
    for (const Trace& t : r.traces)
      if (std::find(tasks.begin(), tasks.end(), t.task) == tasks.end()) tasks.push_back(t.task);
  return tasks;
}

}  // namespace d2k::report
