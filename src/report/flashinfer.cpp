#include "report/flashinfer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace d2k::report {

using nlohmann::json;

namespace {

constexpr const char* kLogTag = "[d2k] ";

/// Fields of free text: a value "NaN" there is text, not a number.
const std::set<std::string>& text_fields() {
  static const std::set<std::string> s{"message", "output", "rule", "timer", "timer_note", "stop_reason", "bound",
                                       "memory_model", "ceilings_source", "against", "d2k_status", "log",
                                       "hardware", "timestamp", "impl_path", "role"};
  return s;
}

json finite_or_string(const json& j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return j;
  }
  if (j.is_object()) {
    json o = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = finite_or_string(it.value());
    return o;
  }
  if (j.is_array()) {
    json a = json::array();
    for (const json& e : j) a.push_back(finite_or_string(e));
    return a;
  }
  return j;
}

void restore_numbers(json& j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (text_fields().count(it.key())) continue;
      json& v = it.value();
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "NaN") v = std::nan("");
        else if (s == "Infinity") v = HUGE_VAL;
        else if (s == "-Infinity") v = -HUGE_VAL;
      } else {
        restore_numbers(v);
      }
    }
  } else if (j.is_array()) {
    for (json& e : j) restore_numbers(e);  // arrays here hold records or names, not bare numbers
  }
}

double max_of(const Trace& t, double OutputCheck::*field) {
  if (!t.correctness || t.correctness->outputs.empty()) return std::nan("");
  double m = 0;
  for (const OutputCheck& o : t.correctness->outputs) m = std::max(m, o.*field);
  return m;
}

/// The D2K-only pieces every status keeps, on the log's last line.
json log_record(const Trace& t) {
  json d = {{"status", status_name(t.status)}, {"target", t.target}, {"role", t.role}, {"hidden", t.hidden}};
  if (!t.rule.empty()) d["rule"] = t.rule;
  if (!t.impl_path.empty()) d["impl_path"] = t.impl_path;
  if (!t.checks_fired.empty()) d["checks_fired"] = t.checks_fired;
  if (!t.environment.is_null()) d["environment"] = t.environment;
  return d;
}

json flashinfer_environment(const json& env) {
  std::string hw = env.is_object() ? env.value("device", std::string()) : std::string();
  std::replace(hw.begin(), hw.end(), ' ', '_');
  json libs = json::object();
  if (env.is_object()) {
    if (env.contains("cuda_runtime")) libs["cuda_runtime"] = env["cuda_runtime"].dump();
    if (env.contains("cuda_driver")) libs["cuda_driver"] = env["cuda_driver"].dump();
    if (env.contains("d2k_version")) libs["d2k"] = env.value("d2k_version", std::string());
  }
  return {{"hardware", hw.empty() ? "unknown" : hw}, {"libs", libs}};
}

const json& need(const json& j, const char* field, const char* where) {
  if (!j.is_object() || !j.contains(field) || j[field].is_null())
    throw std::runtime_error(fmt::format("{}.{}: missing", where, field));
  return j[field];
}

std::string need_string(const json& j, const char* field, const char* where) {
  const json& v = need(j, field, where);
  if (!v.is_string() || v.get<std::string>().empty())
    throw std::runtime_error(fmt::format("{}.{}: must be a non-empty string", where, field));
  return v.get<std::string>();
}

}  // namespace

std::optional<std::string> flashinfer_status(Status s) {
  switch (s) {
    case Status::PASSED: return "PASSED";
    case Status::INCORRECT_SHAPE: return "INCORRECT_SHAPE";
    case Status::INCORRECT_NUMERICAL: return "INCORRECT_NUMERICAL";
    case Status::INCORRECT_WRITE: return "INCORRECT_NUMERICAL";  // the outputs' memory is wrong
    case Status::COMPILE_ERROR: return "COMPILE_ERROR";
    case Status::INVALID_SUBMISSION: return "COMPILE_ERROR";     // rejected before it could run
    case Status::RUNTIME_ERROR: return "RUNTIME_ERROR";
    case Status::REWARD_HACK: return "RUNTIME_ERROR";            // the run was rejected: no result
    case Status::TIMEOUT: return "TIMEOUT";
    case Status::SKIPPED: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Status> status_from_flashinfer(const std::string& s) {
  if (s == "INCORRECT_DTYPE") return Status::INCORRECT_SHAPE;  // D2K checks dtype with the layout
  if (s == "PASSED" || s == "INCORRECT_SHAPE" || s == "INCORRECT_NUMERICAL" || s == "RUNTIME_ERROR" ||
      s == "COMPILE_ERROR" || s == "TIMEOUT")
    return parse_status(s);
  return std::nullopt;
}

json to_flashinfer_trace(const Trace& t, std::optional<double> reference_us) {
  const std::optional<std::string> st = flashinfer_status(t.status);
  if (!st) throw std::invalid_argument(fmt::format("{} / {}: a SKIPPED trace has no evaluation to export", t.task, t.target));
  json full = to_json(t);  // the one serialization of D2K's records
  json eval = {{"status", *st},
               {"log", t.message + (t.message.empty() ? "" : "\n") + kLogTag + log_record(t).dump()},
               {"environment", flashinfer_environment(t.environment)},
               {"timestamp", t.environment.is_object() ? t.environment.value("date", std::string("unknown")) : "unknown"},
               {"correctness", nullptr},
               {"performance", nullptr}};
  const bool has_correctness = *st == "PASSED" || *st == "INCORRECT_NUMERICAL";
  if (!has_correctness) {
    // Their schema has no place for these with this status: the log's record keeps them.
    json rec = log_record(t);
    for (const char* k : {"correctness", "performance", "roofline"})
      if (full.contains(k)) rec[k] = full[k];
    eval["log"] = t.message + (t.message.empty() ? "" : "\n") + kLogTag + rec.dump();
  }
  if (has_correctness) {
    json extra = {{"d2k_status", status_name(t.status)}};
    for (const char* k : {"correctness", "performance", "roofline"})
      if (full.contains(k)) extra[k] = full[k];
    eval["correctness"] = {{"max_relative_error", max_of(t, &OutputCheck::max_rel_error)},
                           {"max_absolute_error", max_of(t, &OutputCheck::max_abs_error)},
                           {"extra", extra}};
  }
  if (*st == "PASSED") {
    const double lat = t.performance ? t.performance->mean_us : 0, ref = reference_us.value_or(0);
    eval["performance"] = {{"latency_ms", lat / 1000},
                           {"reference_latency_ms", ref / 1000},
                           {"speedup_factor", lat > 0 && ref > 0 ? ref / lat : 0.0}};
  }
  return {{"definition", t.task},
          {"workload", to_flashinfer_workload(t, {})["workload"]},
          {"solution", t.target},
          {"evaluation", eval}};
}

json to_flashinfer_workload(const Trace& t, const std::vector<std::string>& inputs) {
  json in = json::object();
  for (const std::string& name : inputs) in[name] = {{"type", "random"}};
  return {{"definition", t.task},
          {"workload", {{"uuid", t.workload_uuid}, {"axes", t.axes}, {"inputs", in}}},
          {"solution", nullptr},
          {"evaluation", nullptr}};
}

FlashInferSet to_flashinfer(const std::vector<Trace>& traces,
                            const std::map<std::string, std::vector<std::string>>& inputs_by_task) {
  FlashInferSet out;
  // Their reference latency is a baseline's mean on the same data and hardware: D2K's naive.
  std::map<std::pair<std::string, std::string>, double> naive_mean;
  for (const Trace& t : traces)
    if (t.target == "naive" && t.status == Status::PASSED && t.performance)
      naive_mean[{t.task, t.workload_uuid}] = t.performance->mean_us;
  std::set<std::pair<std::string, std::string>> written;
  static const std::vector<std::string> none;
  for (const Trace& t : traces) {
    if (t.status == Status::SKIPPED) {
      ++out.skipped;
      continue;
    }
    std::optional<double> ref;
    if (auto it = naive_mean.find({t.task, t.workload_uuid}); it != naive_mean.end()) ref = it->second;
    out.traces[t.task].push_back(to_flashinfer_trace(t, ref));
    if (written.insert({t.task, t.workload_uuid}).second) {
      auto it = inputs_by_task.find(t.task);
      out.workloads[t.task].push_back(to_flashinfer_workload(t, it == inputs_by_task.end() ? none : it->second));
    }
  }
  return out;
}

std::optional<Trace> from_flashinfer_trace(const json& j) {
  if (!j.is_object()) throw std::runtime_error("trace: must be a JSON object");
  Trace t;
  t.task = need_string(j, "definition", "trace");
  const json& w = need(j, "workload", "trace");
  t.workload_uuid = need_string(w, "uuid", "workload");
  if (w.contains("axes")) {
    if (!w["axes"].is_object()) throw std::runtime_error("workload.axes: must be an object of integers");
    for (auto it = w["axes"].begin(); it != w["axes"].end(); ++it) {
      if (!it.value().is_number_integer())
        throw std::runtime_error(fmt::format("workload.axes.{}: must be an integer", it.key()));
      t.axes[it.key()] = it.value().get<std::int64_t>();
    }
  }
  const bool has_solution = j.contains("solution") && !j["solution"].is_null();
  const bool has_eval = j.contains("evaluation") && !j["evaluation"].is_null();
  if (!has_solution && !has_eval) return std::nullopt;  // a workload record
  t.target = has_solution ? need_string(j, "solution", "trace") : "unknown";
  t.role = "bench";
  if (!has_eval) throw std::runtime_error("trace.evaluation: missing (a trace with a solution needs one)");
  const json& e = j["evaluation"];
  const std::string st = need_string(e, "status", "evaluation");
  const std::optional<Status> status = status_from_flashinfer(st);
  if (!status) throw std::runtime_error(fmt::format("evaluation.status: '{}' is not a FlashInfer-Bench status", st));
  t.status = *status;
  // The log: free text, and D2K's own record on its last line when D2K wrote it.
  std::string log = e.contains("log") && e["log"].is_string() ? e["log"].get<std::string>() : "";
  const std::size_t nl = log.rfind('\n'), tag = nl == std::string::npos ? 0 : nl + 1;
  if (log.compare(tag, std::string(kLogTag).size(), kLogTag) == 0) {
    json d = json::parse(log.substr(tag + std::string(kLogTag).size()), nullptr, false);
    if (d.is_object()) {
      if (auto s = parse_status(d.value("status", std::string()))) t.status = *s;
      t.rule = d.value("rule", std::string());
      t.role = d.value("role", t.role);
      t.hidden = d.value("hidden", false);
      t.impl_path = d.value("impl_path", std::string());
      if (d.contains("checks_fired")) t.checks_fired = d["checks_fired"].get<std::vector<std::string>>();
      if (d.contains("environment")) t.environment = d["environment"];
      const Trace kept = trace_from_json(d);  // correctness etc. that their schema had no place for
      t.correctness = kept.correctness;
      t.performance = kept.performance;
      t.roofline = kept.roofline;
      log.erase(tag == 0 ? 0 : tag - 1);
    }
  }
  t.message = log;
  const json* extra = nullptr;
  if (e.contains("correctness") && e["correctness"].is_object()) {
    const json& c = e["correctness"];
    if (c.contains("extra") && c["extra"].is_object()) extra = &c["extra"];
    if (extra && extra->contains("correctness")) {
      t.correctness = trace_from_json({{"correctness", (*extra)["correctness"]}}).correctness;
    } else if (!(extra && extra->contains("d2k_status"))) {  // theirs: one summary check
      Correctness corr{"reference", 1, {}};
      OutputCheck o;
      o.output = "*";
      o.passed = t.status == Status::PASSED;
      o.max_rel_error = c.value("max_relative_error", 0.0);
      o.max_abs_error = c.value("max_absolute_error", 0.0);
      corr.outputs.push_back(o);
      t.correctness = corr;
    }
  }
  if (extra && extra->contains("performance")) {
    t.performance = performance_from_json((*extra)["performance"]);
  } else if (e.contains("performance") && e["performance"].is_object()) {
    const json& p = e["performance"];
    Performance perf;
    perf.timer = "flashinfer";
    perf.mean_us = perf.median_us = 1000 * p.value("latency_ms", 0.0);
    if (!(perf.mean_us >= 0)) throw std::runtime_error("evaluation.performance.latency_ms: must be >= 0");
    t.performance = perf;
  }
  if (extra && extra->contains("roofline")) t.roofline = trace_from_json({{"roofline", (*extra)["roofline"]}}).roofline;
  if (t.environment.is_null() && e.contains("environment")) {
    const json& env = e["environment"];
    t.environment = {{"device", env.value("hardware", std::string())},
                     {"date", e.value("timestamp", std::string())},
                     {"flashinfer_libs", env.value("libs", json::object())}};
  }
  return t;
}

std::string dump_flashinfer(const json& j) { return finite_or_string(j).dump(); }

json parse_flashinfer(const std::string& line) {
  json j = json::parse(line);
  restore_numbers(j);
  return j;
}

}  // namespace d2k::report
