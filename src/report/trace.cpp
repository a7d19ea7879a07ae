#include "report/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <type_traits>

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
  json pj = json::object();
  visit_fields(p, [&](const char* key, const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::optional<double>>) put_opt(pj, key, v);
    else pj[key] = v;
  });
  return pj;
}

Performance performance_from_json(const json& pj) {
  Performance p;  // missing fields keep their defaults
  visit_fields(p, [&](const char* key, auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::optional<double>>) v = get_opt<double>(pj, key);
    else if (pj.contains(key) && !pj[key].is_null()) pj[key].get_to(v);
  });
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
    json rj = {{"t_sol_us", r.t_sol_us}, {"bound", r.bound}, {"memory_model", r.memory_model}, {"pct_sol", r.pct_sol},
               {"ceilings_source", r.ceilings_source}};
    put_opt(rj, "speedup_vs_naive", r.speedup_vs_naive);
    put_opt(rj, "speedup_vs_expert", r.speedup_vs_expert);
    put_opt(rj, "speedup_vs_library", r.speedup_vs_library);
    put_opt(rj, "speedup_vs_torch_eager", r.speedup_vs_torch_eager);
    put_opt(rj, "speedup_vs_torch_compile", r.speedup_vs_torch_compile);
    put_opt(rj, "sol_score", r.sol_score);
    if (!r.flops.empty()) rj["flops"] = r.flops;
    if (r.bytes > 0) rj["bytes"] = r.bytes;
    if (r.copy_bw > 0) rj["copy_bw"] = r.copy_bw;
    if (!r.peaks.empty()) rj["peaks"] = r.peaks;
    j["roofline"] = rj;
  }
  if (!t.environment.is_null()) j["environment"] = t.environment;
  if (t.partial) j["partial"] = true;  // absent on final records: their lines stay as before
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
  t.partial = j.value("partial", false);
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
    r.memory_model = rj.value("memory_model", "");
    r.pct_sol = rj.value("pct_sol", 0.0);
    r.ceilings_source = rj.value("ceilings_source", "");
    r.speedup_vs_naive = get_opt<double>(rj, "speedup_vs_naive");
    r.speedup_vs_expert = get_opt<double>(rj, "speedup_vs_expert");
    r.speedup_vs_library = get_opt<double>(rj, "speedup_vs_library");
    r.speedup_vs_torch_eager = get_opt<double>(rj, "speedup_vs_torch_eager");
    r.speedup_vs_torch_compile = get_opt<double>(rj, "speedup_vs_torch_compile");
    r.sol_score = get_opt<double>(rj, "sol_score");
    if (rj.contains("flops")) r.flops = rj["flops"].get<std::map<std::string, double>>();
    r.bytes = rj.value("bytes", 0.0);
    r.copy_bw = rj.value("copy_bw", 0.0);
    if (rj.contains("peaks")) r.peaks = rj["peaks"].get<std::map<std::string, double>>();
    t.roofline = r;
  }
  if (j.contains("environment")) t.environment = j["environment"];
  return t;
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

/// A table row; `note` (text format only) is printed on its own line under the row.
struct Row {
  std::vector<std::string> cells;
  std::string note;
};

/// Why a record did not pass, on one line: the rule that fired, the first line of the message,
/// and the first line of a log below it that names an error (a compiler's).
std::string reason_line(const Trace& t) {
  const std::size_t eol = t.message.find('\n');
  std::string msg = t.message.substr(0, eol);
  if (eol != std::string::npos) {
    std::istringstream rest(t.message.substr(eol + 1));
    for (std::string line; std::getline(rest, line);)
      if (line.find("error") != std::string::npos) {
        msg += " -- " + line;
        break;
      }
  }
  if (msg.empty() && !t.checks_fired.empty()) msg = t.checks_fired.front();
  if (msg.empty()) msg = "(no reason recorded)";
  constexpr std::size_t kMax = 200;
  if (msg.size() > kMax) msg = msg.substr(0, kMax - 3) + "...";
  return t.rule.empty() ? msg : fmt::format("[{}] {}", t.rule, msg);
}

std::string render(const std::vector<std::string>& header, const std::vector<Row>& rows, TableFormat f) {
  std::vector<std::size_t> w(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) w[c] = header[c].size();
  for (auto& r : rows)
    for (std::size_t c = 0; c < r.cells.size(); ++c) w[c] = std::max(w[c], r.cells[c].size());
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
  for (auto& r : rows) {
    line(r.cells);
    if (f == TableFormat::text && !r.note.empty()) out += "    reason: " + r.note + "\n";
  }
  return out;
}

}  // namespace

std::string format_table(const std::vector<Trace>& traces, TableFormat f) {
  std::vector<std::string> header{"task", "target", "workload", "status", "time_us", "noise",
                                  "%SOL", "vs_naive", "vs_expert", "vs_library", "vs_eager", "vs_compile", "S"};
  std::vector<Row> rows;
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
      r.push_back(fmt_opt(t.roofline->speedup_vs_torch_eager, "{:.2f}x"));
      r.push_back(fmt_opt(t.roofline->speedup_vs_torch_compile, "{:.2f}x"));
      r.push_back(fmt_opt(t.roofline->sol_score, "{:.3f}"));
    } else {
      r.insert(r.end(), {"-", "-", "-", "-", "-", "-", "-"});
    }
    rows.push_back({std::move(r), t.status == Status::PASSED ? std::string() : reason_line(t)});
  }
  return render(header, rows, f);
}

std::string format_summary(const std::map<std::string, SuiteSummary>& by_target, TableFormat f) {
  std::vector<std::string> header{"target", "records", "passed", "geomean_vs_naive", "mean_S",
                                  "fast_1", "fast_1.5", "fast_2"};
  std::vector<Row> rows;
  for (auto& [target, s] : by_target) {
    auto fp = [&](double p) {
      auto it = s.fast_p.find(p);
      return it == s.fast_p.end() ? std::string("-") : fmt::format("{:.2f}", it->second);
    };
    rows.push_back({{target, std::to_string(s.records), std::to_string(s.passed),
                     fmt_opt(s.geomean_speedup_vs_naive, "{:.2f}x"), fmt_opt(s.mean_sol_score, "{:.3f}"),
                     fp(1.0), fp(1.5), fp(2.0)},
                    {}});
  }
  return render(header, rows, f);
}

}  // namespace d2k
