#include "agent/batch_status.h"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>

#include "agent/batch_run.h"

namespace d2k::agent {

namespace fs = std::filesystem;
using nlohmann::json;

std::map<std::string, Usage> read_usage(const fs::path& file, const std::string& run, int* skipped) {
  std::map<std::string, Usage> out;
  std::ifstream f(file);
  for (std::string line; std::getline(f, line);) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("attempt") || !j["attempt"].is_string()) {
      if (skipped) ++*skipped;
      continue;
    }
    if (j.contains("run") && j["run"].is_string() && j["run"].get<std::string>() != run) continue;
    auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
    Usage& u = out[j["attempt"].get<std::string>()];
    u.input_tokens += static_cast<long long>(num("input_tokens"));
    u.output_tokens += static_cast<long long>(num("output_tokens"));
    u.cost_usd += num("cost_usd");
    u.calls += 1;
  }
  return out;
}

RunStatus read_status(const fs::path& run_dir) {
  RunStatus s;
  const fs::path file = run_dir / "run.json";
  if (!fs::exists(file))
    throw std::runtime_error(fmt::format("{}: no such run (no run.json; `d2k batch setup` makes one)", run_dir.string()));
  s.config = run_config_from_json(read_json(file), file.string());
  const auto usage = read_usage(run_dir / "usage.jsonl", s.config.name, &s.usage_lines_skipped);
  for (const auto& state : {"pending", "running", "done", "infra_error"}) s.counts[state] = 0;
  s.counts["passed"] = 0;
  for (const auto& d : attempt_dirs(run_dir)) {
    StatusRow row{read_attempt(d), std::nullopt};
    if (auto it = usage.find(row.attempt.id); it != usage.end()) row.usage = it->second;
    ++s.counts[std::string(state_name(row.attempt.state))];
    if (row.attempt.verdict == "PASSED") ++s.counts["passed"];
    s.rows.push_back(std::move(row));
  }
  s.counts["total"] = static_cast<int>(s.rows.size());
  return s;
}

namespace {

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::vector<std::string> cells(const StatusRow& r) {
  const AttemptRecord& a = r.attempt;
  std::string verdict = a.verdict;
  if (a.failure) verdict = or_dash(verdict) + " (" + *a.failure + ")";
  return {a.task,
          a.track,
          a.level,
          std::to_string(a.k),
          std::string(state_name(a.state)),
          or_dash(verdict),
          a.speedup_vs_naive ? fmt::format("{:.2f}x", *a.speedup_vs_naive) : "-",
          a.wall_s ? fmt::format("{:.1f}", *a.wall_s) : "-",
          r.usage ? std::to_string(r.usage->input_tokens + r.usage->output_tokens) : "-",
          r.usage ? fmt::format("{:.4f}", r.usage->cost_usd) : "-"};
}

}  // namespace

std::string format_status(const RunStatus& s) {
  const std::vector<std::string> head = {"task", "track", "level", "k", "state", "verdict", "vs_naive", "wall_s",
                                         "tokens", "cost_usd"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const auto& r : s.rows) rows.push_back(cells(r));
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (std::size_t i = 0; i < row.size(); ++i) l += fmt::format("{:<{}}", row[i], i + 1 < row.size() ? w[i] + 2 : 0);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(rows[0]);
  std::vector<std::string> rule;
  for (auto n : w) rule.push_back(std::string(n, '-'));
  line(rule);
  for (std::size_t i = 1; i < rows.size(); ++i) line(rows[i]);
  // Reasons under the table, one line per attempt that has one.
  bool any_reason = false;
  for (const auto& r : s.rows)
    if (!r.attempt.reason.empty()) {
      if (!any_reason) out += "\n";
      any_reason = true;
      out += fmt::format("{}: {}\n", r.attempt.id, r.attempt.reason);
    }
  const auto c = [&](const char* k) { return s.counts.count(k) ? s.counts.at(k) : 0; };
  const int finished = c("done") + c("infra_error");
  out += fmt::format("\nrun {}: {}/{} finished (done {}, infra_error {}), running {}, pending {}; passed {}\n",
                     s.config.name, finished, c("total"), c("done"), c("infra_error"), c("running"), c("pending"),
                     c("passed"));
  if (s.usage_lines_skipped) out += fmt::format("usage.jsonl: {} line(s) skipped (not JSON objects with an attempt)\n", s.usage_lines_skipped);
  return out;
}

nlohmann::ordered_json status_json(const RunStatus& s) {
  nlohmann::ordered_json j;
  j["run"] = s.config.name;
  j["counts"] = s.counts;
  j["attempts"] = nlohmann::ordered_json::array();
  for (const auto& r : s.rows) {
    nlohmann::ordered_json a = to_json(r.attempt);
    if (r.usage)
      a["usage"] = {{"input_tokens", r.usage->input_tokens}, {"output_tokens", r.usage->output_tokens},
                    {"calls", r.usage->calls}, {"cost_usd", r.usage->cost_usd}};
    else
      a["usage"] = nullptr;
    j["attempts"].push_back(a);
  }
  return j;
}

}  // namespace d2k::agent
