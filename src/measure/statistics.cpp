#include "measure/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

namespace d2k::measure {

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = percentile_sorted(v, 0.5);
  s.p10 = percentile_sorted(v, 0.1);
  s.p90 = percentile_sorted(v, 0.9);
  RunningStats rs;
  for (double x : samples) rs.add(x);
  s.mean = rs.mean();
  s.total_s = rs.total();
  s.stdev = rs.stdev();
  s.rel_noise = rs.rel_noise();
  return s;
}

void RunningStats::add(double x) {
  ++n_;
  total_ += x;
  const double d = x - mean_;
  mean_ += d / static_cast<double>(n_);
  m2_ += d * (x - mean_);
}

double RunningStats::stdev() const {
  if (n_ < 2) return 0;
  return std::sqrt(std::max(0.0, m2_ / static_cast<double>(n_ - 1)));
}

double RunningStats::rel_noise() const {
  if (n_ < 2 || mean_ == 0) return 0;
  return stdev() / std::abs(mean_);
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = nlohmann::json{{"median", s.median}, {"mean", s.mean},   {"min", s.min},
                     {"max", s.max},       {"p10", s.p10},     {"p90", s.p90},
                     {"stdev", s.stdev},   {"rel_noise", s.rel_noise},
                     {"n", s.n},           {"total_s", s.total_s}};
}

void from_json(const nlohmann::json& j, Summary& s) {
  s.median = j.at("median").get<double>();
  s.mean = j.at("mean").get<double>();
  s.min = j.at("min").get<double>();
  s.max = j.at("max").get<double>();
  s.p10 = j.at("p10").get<double>();
  s.p90 = j.at("p90").get<double>();
  s.stdev = j.at("stdev").get<double>();
  s.rel_noise = j.at("rel_noise").get<double>();
  s.n = j.at("n").get<std::size_t>();
  s.total_s = j.at("total_s").get<double>();
}

void to_json(nlohmann::json& j, const NamedSummary& s) { j = nlohmann::json{{"name", s.name}, {"time", s.time}}; }

void NamedDurations::add(const std::string& name, double seconds) {
  auto [it, fresh] = index_.try_emplace(name, order_.size());
  if (fresh) order_.emplace_back(name, std::vector<double>{});
  auto& v = order_[it->second].second;
  if (v.size() < max_) v.push_back(seconds);
}

std::vector<NamedSummary> NamedDurations::summaries() const {
  std::vector<NamedSummary> out;
  out.reserve(order_.size());
  for (const auto& [name, v] : order_) out.push_back({name, summarize(v)});
  return out;
}

}  // namespace d2k::measure
