#include "report/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace d2k {

using nlohmann::json;

namespace {

template <class T>
void put_opt(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <class T>
std::optional<T> get_opt(const json& j, const char* key) {
  if (j.contains(key) && !j[key].is_null()) return j[key].get<T>();
  return std::nullopt;
}

json to_json(const OutputCheck& o) {
  return {{"output", o.output},         {"rule", o.rule},
          {"passed", o.passed},         {"max_abs_error", o.max_abs_error},
          {"max_rel_error", o.max_rel_error}, {"rel_l2", o.rel_l2},
          {"mismatches", o.mismatches}, {"first_bad_index", o.first_bad_index},
          {"message", o.message}};
}

OutputCheck output_check_from_json(const json& j) {
  OutputCheck o;
  o.output = j.value("output", "");
  o.rule = j.value("rule", "");
  o.passed = j.value("passed", false);
  o.max_abs_error = j.value("max_abs_error", 0.0);
  o.max_rel_error = j.value("max_rel_error", 0.0);
  o.rel_l2 = j.value("rel_l2", 0.0);
  o.mismatches = j.value("mismatches", std::int64_t{0});
  o.first_bad_index = j.value("first_bad_index", std::int64_t{-1});
  o.message = j.value("message", "");
  return o;
}

}  // namespace

json to_json(const Performance& p) {
  json pj = {{"timer", p.timer},         {"median_us", p.median_us}, {"mean_us", p.mean_us},
             {"min_us", p.min_us},       {"max_us", p.max_us},       {"p10_us", p.p10_us},
             {"p90_us", p.p90_us},       {"rel_noise", p.rel_noise}, {"samples", p.samples},
             {"total_s", p.total_s},     {"stop_reason", p.stop_reason},
             {"event_median_us", p.event_median_us},
             {"sm_clock_min_mhz", p.sm_clock_min_mhz}, {"sm_clock_median_mhz", p.sm_clock_median_mhz},
             {"throttle_reasons", p.throttle_reasons}, {"settle_s", p.settle_s}, {"kernels", p.kernels},
             {"timer_note", p.timer_note}, {"launch_offset_us", p.launch_offset_us}, {"audit_samples", p.audit_samples},
             {"audit_empty", p.audit_empty},
             {"own_kernel_share", p.own_kernel_share}};
  put_opt(pj, "graph_median_us", p.graph_median_us);
  return pj;
}

Performance performance_from_json(const json& pj) {
  Performance p;
  p.timer = pj.value("timer", "");
  p.median_us = pj.value("median_us", 0.0);
  p.mean_us = pj.value("mean_us", 0.0);
  p.min_us = pj.value("min_us", 0.0);
  p.max_us = pj.value("max_us", 0.0);
  p.p10_us = pj.value("p10_us", 0.0);
  p.p90_us = pj.value("p90_us", 0.0);
  p.rel_noise = pj.value("rel_noise", 0.0);
  p.samples = pj.value("samples", std::int64_t{0});
  p.total_s = pj.value("total_s", 0.0);
  p.stop_reason = pj.value("stop_reason", "");
  p.event_median_us = pj.value("event_median_us", 0.0);
  p.graph_median_us = get_opt<double>(pj, "graph_median_us");
  p.sm_clock_min_mhz = pj.value("sm_clock_min_mhz", 0.0);
  p.sm_clock_median_mhz = pj.value("sm_clock_median_mhz", 0.0);
  if (pj.contains("throttle_reasons")) p.throttle_reasons = pj["throttle_reasons"].get<std::vector<std::string>>();
  p.settle_s = pj.value("settle_s", 0.0);
  p.timer_note = pj.value("timer_note", "");
  p.launch_offset_us = pj.value("launch_offset_us", 0.0);
  p.audit_samples = pj.value("audit_samples", std::int64_t{0});
  p.audit_empty = pj.value("audit_empty", std::int64_t{0});
  if (pj.contains("kernels")) p.kernels = pj["kernels"].get<std::vector<std::string>>();
  p.own_kernel_share = pj.value("own_kernel_share", 1.0);
  return p;
}

json to_json(const Trace& t) {
  json j = {{"task", t.task},
            {"target", t.target},
            {"impl_path", t.impl_path},
            {"workload", {{"uuid", t.workload_uuid}, {"role", t.role}, {"hidden", t.hidden}, {"axes", t.axes}}},
            {"status", status_name(t.status)},
            {"message", t.message}};
  if (!t.rule.empty()) j["rule"] = t.rule;
  if (!t.checks_fired.empty()) j["checks_fired"] = t.checks_fired;
  if (t.correctness) {
    json outs = json::array();
    for (auto& o : t.correctness->outputs) outs.push_back(to_json(o));
    j["correctness"] = {{"against", t.correctness->against}, {"rounds", t.correctness->rounds}, {"outputs", outs}};
  }
  if (t.performance) j["performance"] = to_json(*t.performance);
  if (t.roofline) {
    const Roofline& r = *t.roofline;
    json rj = {{"t_sol_us", r.t_sol_us}, {"bound", r.bound}, {"pct_sol", r.pct_sol},
               {"ceilings_source", r.ceilings_source}};
    put_opt(rj, "speedup_vs_naive", r.speedup_vs_naive);
    put_opt(rj, "speedup_vs_expert", r.speedup_vs_expert);
    put_opt(rj, "speedup_vs_library", r.speedup_vs_library);
    put_opt(rj, "sol_score", r.sol_score);
    j["roofline"] = rj;
  }
  if (!t.environment.is_null()) j["environment"] = t.environment;
  return j;
}

Trace trace_from_json(const json& j) {
  Trace t;
  t.task = j.value("task", "");
  t.target = j.value("target", "");
  t.impl_path = j.value("impl_path", "");
  if (j.contains("workload")) {
    const json& w = j["workload"];
    t.workload_uuid = w.value("uuid", "");
    t.role = w.value("role", "");
    t.hidden = w.value("hidden", false);
    if (w.contains("axes")) t.axes = w["axes"].get<std::map<std::string, std::int64_t>>();
  }
  t.status = parse_status(j.value("status", "SKIPPED")).value_or(Status::SKIPPED);
  t.rule = j.value("rule", "");
  t.message = j.value("message", "");
  if (j.contains("checks_fired")) t.checks_fired = j["checks_fired"].get<std::vector<std::string>>();
  if (j.contains("correctness")) {
    Correctness c;
    c.against = j["correctness"].value("against", "");
    c.rounds = j["correctness"].value("rounds", 0);
    for (auto& o : j["correctness"]["outputs"]) c.outputs.push_back(output_check_from_json(o));
    t.correctness = c;
  }
  if (j.contains("performance")) t.performance = performance_from_json(j["performance"]);
  if (j.contains("roofline")) {
    const json& rj = j["roofline"];
    Roofline r;
    r.t_sol_us = rj.value("t_sol_us", 0.0);
    r.bound = rj.value("bound", "");
    r.pct_sol = rj.value("pct_sol", 0.0);
    r.ceilings_source = rj.value("ceilings_source", "");
    r.speedup_vs_naive = get_opt<double>(rj, "speedup_vs_naive");
    r.speedup_vs_expert = get_opt<double>(rj, "speedup_vs_expert");
    r.speedup_vs_library = get_opt<double>(rj, "speedup_vs_library");
    r.sol_score = get_opt<double>(rj, "sol_score");
    t.roofline = r;
  }
  if (j.contains("environment")) t.environment = j["environment"];
  return t;
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

namespace {

std::string fmt_opt(const std::optional<double>& v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

std::string fmt_axes(const std::map<std::string, std::int64_t>& axes) {
  std::string s;
  for (auto& [k, v] : axes) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  return s;
}

std::string render(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                   TableFormat f) {
  std::vector<std::size_t> w(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) w[c] = header[c].size();
  for (auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    if (f == TableFormat::markdown) out += "|";
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (f == TableFormat::markdown)
        out += fmt::format(" {} |", r[c]);
      else
        out += fmt::format("{:<{}}{}", r[c], w[c], c + 1 < r.size() ? "  " : "");
    }
    out += "\n";
  };
  line(header);
  if (f == TableFormat::markdown) {
    out += "|";
    for (std::size_t c = 0; c < header.size(); ++c) out += " --- |";
    out += "\n";
  } else {
    std::string sep;
    for (std::size_t c = 0; c < header.size(); ++c) sep += std::string(w[c], '-') + (c + 1 < header.size() ? "  " : "");
    out += sep + "\n";
  }
  for (auto& r : rows) line(r);
  return out;
}

}  // namespace

std::string format_table(const std::vector<Trace>& traces, TableFormat f) {
  std::vector<std::string> header{"task", "target", "workload", "status", "time_us", "noise",
                                  "%SOL", "vs_naive", "vs_expert", "vs_library", "S"};
  std::vector<std::vector<std::string>> rows;
  for (const Trace& t : traces) {
    std::vector<std::string> r{t.task, t.target, t.hidden ? "hidden:" + fmt_axes(t.axes) : t.workload_uuid,
                               std::string(status_name(t.status))};
    if ((t.status == Status::REWARD_HACK || t.status == Status::COMPILE_ERROR) && !t.rule.empty())
      r[3] += "(" + t.rule + ")";
    if (t.performance && t.status == Status::PASSED) {
      r.push_back(fmt::format("{:.2f}", t.performance->median_us));
      r.push_back(fmt::format("{:.2f}%", 100 * t.performance->rel_noise));
    } else {
      r.insert(r.end(), {"-", "-"});
    }
    if (t.roofline && t.status == Status::PASSED) {
      r.push_back(fmt::format("{:.1f}", t.roofline->pct_sol));
      r.push_back(fmt_opt(t.roofline->speedup_vs_naive, "{:.2f}x"));
      r.push_back(fmt_opt(t.roofline->speedup_vs_expert, "{:.2f}x"));
      r.push_back(fmt_opt(t.roofline->speedup_vs_library, "{:.2f}x"));
      r.push_back(fmt_opt(t.roofline->sol_score, "{:.3f}"));
    } else {
      r.insert(r.end(), {"-", "-", "-", "-", "-"});
    }
    rows.push_back(std::move(r));
  }
  return render(header, rows, f);
}

std::string format_summary(const std::map<std::string, SuiteSummary>& by_target, TableFormat f) {
  std::vector<std::string> header{"target", "records", "passed", "geomean_vs_naive", "mean_S",
                                  "fast_1", "fast_1.5", "fast_2"};
  std::vector<std::vector<std::string>> rows;
  for (auto& [target, s] : by_target) {
    auto fp = [&](double p) {
      auto it = s.fast_p.find(p);
      return it == s.fast_p.end() ? std::string("-") : fmt::format("{:.2f}", it->second);
    };
    rows.push_back({target, std::to_string(s.records), std::to_string(s.passed),
                    fmt_opt(s.geomean_speedup_vs_naive, "{:.2f}x"), fmt_opt(s.mean_sol_score, "{:.3f}"),
                    fp(1.0), fp(1.5), fp(2.0)});
  }
  return render(header, rows, f);
}

}  // namespace d2k
