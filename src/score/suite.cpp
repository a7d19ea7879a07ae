#include "score/suite.h"

#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "score/roofline.h"

namespace d2k {

using score::sol_score;

namespace {
// The GPU a trace was timed on (environment.gpu.uuid; empty when unknown).
std::string gpu_uuid(const Trace& t) {
  if (!t.environment.is_object() || !t.environment.contains("gpu")) return {};
  const auto& g = t.environment["gpu"];
  return g.is_object() ? g.value("uuid", std::string()) : std::string();
}
}  // namespace

void score_traces(std::vector<Trace>& traces) {
  // Median time and GPU of each (target, workload) that passed, for the speedup columns.
  struct Timed {
    double median_us = 0;
    std::string gpu;
  };
  std::map<std::pair<std::string, std::string>, Timed> time;
  for (auto& t : traces)
    if (t.status == Status::PASSED && t.performance)
      time[{t.target, t.workload_uuid}] = {t.performance->median_us, gpu_uuid(t)};
  // Same GPU only: the same binaries differ by 2-5 % between H200s, several times the noise.
  auto lookup = [&](const std::string& target, const Trace& mine) -> std::optional<double> {
    auto it = time.find({target, mine.workload_uuid});
    if (it == time.end() || it->second.gpu != gpu_uuid(mine)) return std::nullopt;
    return it->second.median_us;
  };
  for (auto& t : traces) {
    if (t.status != Status::PASSED || !t.performance || !t.roofline) continue;
    const double mine = t.performance->median_us;
    if (auto n = lookup("naive", t)) {
      t.roofline->speedup_vs_naive = *n / mine;
      t.roofline->sol_score = sol_score(mine, t.roofline->t_sol_us, *n).score;
    }
    if (auto e = lookup("expert", t)) t.roofline->speedup_vs_expert = *e / mine;
    if (auto l = lookup("library", t)) t.roofline->speedup_vs_library = *l / mine;
    if (auto e = lookup("torch_eager", t)) t.roofline->speedup_vs_torch_eager = *e / mine;
    if (auto c = lookup("torch_compile", t)) t.roofline->speedup_vs_torch_compile = *c / mine;
  }
}

SuiteSummary summarize(const std::vector<Trace>& traces, const std::string& target) {
  SuiteSummary s;
  // Geometric mean over workloads within a task, then over tasks, so that a task with many
  // workloads does not outweigh one with few.
  std::map<std::string, std::vector<double>> log_speedups_by_task;
  double score_sum = 0;
  int score_n = 0;
  std::vector<double> speedups;
  for (const Trace& t : traces) {
    if (t.target != target || t.role == "check") continue;
    ++s.records;
    if (t.status != Status::PASSED) {
      speedups.push_back(0);  // a failure is never fast
      continue;
    }
    ++s.passed;
    if (t.roofline && t.roofline->speedup_vs_naive) {
      log_speedups_by_task[t.task].push_back(std::log(*t.roofline->speedup_vs_naive));
      speedups.push_back(*t.roofline->speedup_vs_naive);
    }
    if (t.roofline && t.roofline->sol_score) {
      score_sum += *t.roofline->sol_score;
      ++score_n;
    }
  }
  if (s.records) s.pass_rate = double(s.passed) / s.records;
  if (!log_speedups_by_task.empty()) {
    double acc = 0;
    for (auto& [task, logs] : log_speedups_by_task) {
      double m = 0;
      for (double l : logs) m += l;
      acc += m / logs.size();
    }
    s.geomean_speedup_vs_naive = std::exp(acc / log_speedups_by_task.size());
  }
  if (score_n) s.mean_sol_score = score_sum / score_n;
  for (double p : {1.0, 1.5, 2.0}) {
    if (!s.records) break;
    int n = 0;
    for (double v : speedups) n += v >= p;
    s.fast_p[p] = double(n) / s.records;
  }
  return s;
}

}  // namespace d2k
