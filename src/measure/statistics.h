#pragma once
/// Summary statistics of a set of timing samples.
#include <cstddef>
#include <span>
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

}  // namespace d2k::measure
