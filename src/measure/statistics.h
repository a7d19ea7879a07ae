#pragma once
/// Summary statistics of a set of timing samples.
#include <cstddef>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace d2k::measure {

/// Summary of n samples (seconds). For n = 0 every field is 0; for n = 1, stdev and rel_noise are 0.
struct Summary {
  double median = 0, mean = 0, min = 0, max = 0;
  double p10 = 0, p90 = 0;  ///< percentiles with linear interpolation between order statistics
  double stdev = 0;         ///< sample standard deviation (n - 1 in the denominator)
  double rel_noise = 0;     ///< stdev / mean (0 when mean is 0)
  std::size_t n = 0;
  double total_s = 0;       ///< sum of the samples
};

/// Summarises `samples` (any order; not modified).
Summary summarize(std::span<const double> samples);

/// Percentile q in [0, 1] of already sorted values, linear interpolation; 0 when empty.
double percentile_sorted(std::span<const double> sorted, double q);

void to_json(nlohmann::json& j, const Summary& s);
void from_json(const nlohmann::json& j, Summary& s);

/// Running mean and variance (Welford), numerically stable for long sequences.
class RunningStats {
 public:
  void add(double x);
  std::size_t count() const { return n_; }
  double mean() const { return mean_; }
  double total() const { return total_; }
  /// Sample standard deviation; 0 for fewer than two values.
  double stdev() const;
  /// stdev / mean; 0 for fewer than two values or a zero mean.
  double rel_noise() const;

 private:
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0, total_ = 0;
};

/// Summary of the durations recorded under one name (a kernel, a copy).
struct NamedSummary {
  std::string name;
  Summary time;  ///< over every occurrence (n = occurrences)
};

void to_json(nlohmann::json& j, const NamedSummary& s);

/// Durations grouped by name, names kept in first-seen order. At most `max_per_name` durations
/// are kept per name (the first ones; later ones are dropped), which bounds the memory of a call
/// with many kernels over many samples.
class NamedDurations {
 public:
  explicit NamedDurations(std::size_t max_per_name = 100000) : max_(max_per_name) {}
  void add(const std::string& name, double seconds);
  /// One summary per name, in first-seen order.
  std::vector<NamedSummary> summaries() const;
  bool empty() const { return order_.empty(); }

 private:
  std::size_t max_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::pair<std::string, std::vector<double>>> order_;
};

}  // namespace d2k::measure
