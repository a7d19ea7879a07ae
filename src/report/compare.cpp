#include "report/compare.h"

#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace d2k::report {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::SAME: return "SAME";
    case Verdict::FASTER: return "FASTER";
    case Verdict::SLOWER: return "SLOWER";
    case Verdict::UNKNOWN: return "UNKNOWN";
    case Verdict::STATUS_CHANGED: return "STATUS_CHANGED";
    case Verdict::BOTH_FAILED: return "BOTH_FAILED";
    case Verdict::ONLY_A: return "ONLY_A";
    case Verdict::ONLY_B: return "ONLY_B";
  }
  return "?";
}

Verdict compare_times(double a_us, std::optional<double> noise_a, double b_us, std::optional<double> noise_b,
                      std::optional<double>* threshold) {
  auto usable = [](const std::optional<double>& n) { return n && std::isfinite(*n) && *n > 0; };
  // nvbench's rule: the smaller noise where both runs have one, else the one there is.
  std::optional<double> noise;
  if (usable(noise_a) && usable(noise_b)) noise = std::min(*noise_a, *noise_b);
  else if (usable(noise_a)) noise = noise_a;
  else if (usable(noise_b)) noise = noise_b;
  if (threshold) *threshold = noise;
  if (!noise || !(a_us > 0) || !std::isfinite(b_us)) return Verdict::UNKNOWN;
  const double frac = (b_us - a_us) / a_us;
  if (std::abs(frac) <= *noise) return Verdict::SAME;
  return frac < 0 ? Verdict::FASTER : Verdict::SLOWER;
}

namespace {

using Key = std::tuple<std::string, std::string, std::string>;

std::string workload_label(const Trace& t) {
  if (!t.hidden || t.axes.empty()) return t.workload_uuid;
  std::string s = "hidden:";
  for (auto& [k, v] : t.axes) s += fmt::format("{}{}={}", s.size() > 7 ? "," : "", k, v);
  return s;
}

Key key_of(const Trace& t) { return {t.task, t.target, t.workload_uuid.empty() ? workload_label(t) : t.workload_uuid}; }

void fill_side(const Trace& t, std::optional<Status>& st, std::optional<double>& time, std::optional<double>& noise) {
  st = t.status;
  if (t.status == Status::PASSED && t.performance) {
    time = t.performance->median_us;
    noise = t.performance->rel_noise;
  }
}

void judge(CompareRow& r) {
  if (!r.status_a) return void(r.verdict = Verdict::ONLY_B);
  if (!r.status_b) return void(r.verdict = Verdict::ONLY_A);
  if (*r.status_a != *r.status_b) return void(r.verdict = Verdict::STATUS_CHANGED);
  if (*r.status_a != Status::PASSED) return void(r.verdict = Verdict::BOTH_FAILED);
  if (!r.time_a_us || !r.time_b_us) return void(r.verdict = Verdict::UNKNOWN);  // passed, not timed (check runs)
  r.frac_diff = (*r.time_b_us - *r.time_a_us) / *r.time_a_us;
  r.verdict = compare_times(*r.time_a_us, r.noise_a, *r.time_b_us, r.noise_b, &r.threshold);
}

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.2f}%", 100 * *v) : "-"; }
std::string us(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : "-"; }
std::string status(const std::optional<Status>& s) { return s ? std::string(status_name(*s)) : "-"; }

}  // namespace

std::vector<CompareRow> compare_runs(const Run& a, const Run& b) {
  std::vector<CompareRow> rows;
  std::map<Key, std::size_t> index;
  for (const Trace& t : a.traces) {
    const Key k = key_of(t);
    if (index.count(k)) continue;  // a repeated record: the first one counts
    index[k] = rows.size();
    CompareRow r;
    r.task = std::get<0>(k), r.target = std::get<1>(k), r.workload = workload_label(t);
    fill_side(t, r.status_a, r.time_a_us, r.noise_a);
    rows.push_back(std::move(r));
  }
  std::map<Key, bool> seen_b;
  for (const Trace& t : b.traces) {
    const Key k = key_of(t);
    if (seen_b[k]) continue;
    seen_b[k] = true;
    auto it = index.find(k);
    if (it == index.end()) {
      index[k] = rows.size();
      CompareRow r;
      r.task = std::get<0>(k), r.target = std::get<1>(k), r.workload = workload_label(t);
      rows.push_back(std::move(r));
      it = index.find(k);
    }
    CompareRow& r = rows[it->second];
    fill_side(t, r.status_b, r.time_b_us, r.noise_b);
  }
  for (CompareRow& r : rows) judge(r);
  return rows;
}

std::string format_compare(const std::vector<CompareRow>& rows, TableFormat f) {
  const std::vector<std::string> header{"verdict", "task", "target", "workload", "status_A", "status_B",
                                        "A_us", "B_us", "diff", "noise_A", "noise_B"};
  std::vector<std::vector<std::string>> cells;
  std::map<std::string, int> counts;
  for (const CompareRow& r : rows) {
    std::string v = verdict_name(r.verdict);
    ++counts[v];
    if (r.verdict == Verdict::STATUS_CHANGED) v = f == TableFormat::markdown ? fmt::format("**{}**", v) : fmt::format("!! {}", v);
    cells.push_back({v, r.task, r.target, r.workload, status(r.status_a), status(r.status_b), us(r.time_a_us),
                     us(r.time_b_us), r.frac_diff ? fmt::format("{:+.2f}%", 100 * *r.frac_diff) : "-",
                     pct(r.noise_a), pct(r.noise_b)});
  }
  std::vector<std::size_t> w(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) w[c] = header[c].size();
  for (auto& r : cells)
    for (std::size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t c = 0; c < r.size(); ++c)
      out += f == TableFormat::markdown ? fmt::format("| {} ", r[c]) : fmt::format("{:<{}}  ", r[c], w[c]);
    out += f == TableFormat::markdown ? "|\n" : "\n";
  };
  line(header);
  if (f == TableFormat::markdown) {
    out += "|";
    for (std::size_t c = 0; c < header.size(); ++c) out += " --- |";
    out += "\n";
  }
  for (auto& r : cells) line(r);
  std::string tally;
  for (auto& [v, n] : counts) tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", n, v);
  out += fmt::format("\n{}{} rows: {}{}\n", f == TableFormat::markdown ? "_" : "", rows.size(), tally,
                     f == TableFormat::markdown ? "_" : "");
  return out;
}

}  // namespace d2k::report
