#pragma once
/// When to stop taking timing samples: a relative-noise rule with minimum samples, minimum
/// measured time, a wall-clock cap and a sample cap; it also stops once the noise estimate has
/// settled above the target (an inherently noisy workload would otherwise run to the cap).
/// Pure host logic: feed it samples and the elapsed wall time.
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "measure/statistics.h"

namespace d2k::measure {

/// Parameters of the stopping rule. The noise target, minimum samples and minimum time follow
/// nvbench's `stdrel` criterion; the minimum time counts wall time by default and the cap is short,
/// so that one task's bench (about 15 target-workload pairs) fits in 30 s (docs/measurement.md).
struct StoppingCriteria {
  std::size_t min_samples = 10;        ///< never stop on noise before this many samples
  double min_time_s = 0.5;             ///< nor before this much time (see min_time_wall)
  /// true: min_time_s counts wall time of the sampling loop (flush, synchronisations and CUPTI
  /// included); false: the sum of the measured sample times (nvbench's rule), which makes a 3 us
  /// kernel take ~170k samples.
  bool min_time_wall = true;
  double max_noise = 0.005;            ///< target relative noise (stdev / mean)
  double max_time_s = 1.0;             ///< wall-clock cap for the sampling loop, the caller's hooks excluded (always obeyed)
  std::size_t max_samples = 10000;     ///< sample cap (always obeyed)
  std::size_t stable_window = 64;      ///< how many recent noise estimates the stability test looks at
  std::size_t stable_check_every = 16; ///< run the stability test every this many samples
  double stable_rel_spread = 0.05;     ///< noise counts as settled when its own rel. spread is below this

  /// Throws measure_error naming the first field out of range.
  void validate() const;
};

void to_json(nlohmann::json& j, const StoppingCriteria& c);
void from_json(const nlohmann::json& j, StoppingCriteria& c);

/// Why sampling stopped.
enum class StopReason {
  not_stopped,
  noise_target,  ///< relative noise reached max_noise (with min samples and min time met)
  noise_stable,  ///< noise settled above the target (with min samples and min time met)
  time_cap,      ///< max_time_s of wall time spent
  sample_cap,    ///< max_samples taken
};

std::string_view to_string(StopReason r);

/// The stopping rule's state over one sampling loop.
class StoppingRule {
 public:
  explicit StoppingRule(StoppingCriteria c);

  /// Adds one sample (seconds).
  void add(double sample_s);
  /// True when sampling should stop, given the wall time spent so far in the loop.
  /// Caps are checked after the noise tests, so a loop that converges exactly at a cap
  /// reports the noise reason.
  bool should_stop(double wall_elapsed_s);

  StopReason reason() const { return reason_; }
  /// One line saying why it stopped (or the current state), with the numbers.
  std::string detail() const;
  /// Current relative noise of all samples.
  double noise() const { return stats_.rel_noise(); }
  std::size_t samples() const { return stats_.count(); }
  double total_s() const { return stats_.total(); }

 private:
  bool noise_settled() const;

  StoppingCriteria c_;
  RunningStats stats_;
  std::deque<double> recent_noise_;
  StopReason reason_ = StopReason::not_stopped;
  double wall_s_ = 0;
};

}  // namespace d2k::measure
