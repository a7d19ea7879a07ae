#include "measure/stopping.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "measure/error.h"

namespace d2k::measure {

void StoppingCriteria::validate() const {
  auto bad = [](const char* field, const std::string& why) {
    throw measure_error(fmt::format("stopping criteria: {} {}", field, why));
  };
  if (min_samples < 1) bad("min_samples", "must be at least 1");
  if (max_samples < min_samples) bad("max_samples", "must be >= min_samples");
  if (!(min_time_s >= 0) || !std::isfinite(min_time_s)) bad("min_time_s", "must be a finite value >= 0");
  if (!(max_time_s > 0)) bad("max_time_s", "must be > 0");
  if (!(max_noise > 0)) bad("max_noise", "must be > 0");
  if (stable_window < 2) bad("stable_window", "must be at least 2");
  if (stable_check_every < 1) bad("stable_check_every", "must be at least 1");
  if (!(stable_rel_spread > 0)) bad("stable_rel_spread", "must be > 0");
}

void to_json(nlohmann::json& j, const StoppingCriteria& c) {
  j = nlohmann::json{{"min_samples", c.min_samples},
                     {"min_time_s", c.min_time_s},
                     {"min_time_wall", c.min_time_wall},
                     {"max_noise", c.max_noise},
                     {"max_time_s", c.max_time_s},
                     {"max_samples", c.max_samples},
                     {"stable_window", c.stable_window},
                     {"stable_check_every", c.stable_check_every},
                     {"stable_rel_spread", c.stable_rel_spread}};
}

void from_json(const nlohmann::json& j, StoppingCriteria& c) {
  // Missing keys keep their defaults so that a partial override is enough.
  c.min_samples = j.value("min_samples", c.min_samples);
  c.min_time_s = j.value("min_time_s", c.min_time_s);
  c.min_time_wall = j.value("min_time_wall", c.min_time_wall);
  c.max_noise = j.value("max_noise", c.max_noise);
  c.max_time_s = j.value("max_time_s", c.max_time_s);
  c.max_samples = j.value("max_samples", c.max_samples);
  c.stable_window = j.value("stable_window", c.stable_window);
  c.stable_check_every = j.value("stable_check_every", c.stable_check_every);
  c.stable_rel_spread = j.value("stable_rel_spread", c.stable_rel_spread);
}

std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::not_stopped: return "not_stopped";
    case StopReason::noise_target: return "noise_target";
    case StopReason::noise_stable: return "noise_stable";
    case StopReason::time_cap: return "time_cap";
    case StopReason::sample_cap: return "sample_cap";
  }
  return "unknown";
}

StoppingRule::StoppingRule(StoppingCriteria c) : c_(c) { c_.validate(); }

void StoppingRule::add(double sample_s) {
  stats_.add(sample_s);
  if (stats_.count() >= 2) {
    recent_noise_.push_back(stats_.rel_noise());
    if (recent_noise_.size() > c_.stable_window) recent_noise_.pop_front();
  }
}

bool StoppingRule::noise_settled() const {
  if (recent_noise_.size() < c_.stable_window) return false;
  // Checking only every few samples keeps the test cheap and lets the window move on
  // between checks, as nvbench does.
  if (stats_.count() % c_.stable_check_every != 0) return false;
  RunningStats rs;
  for (double v : recent_noise_) rs.add(v);
  if (rs.mean() <= 0) return false;
  return rs.stdev() / rs.mean() < c_.stable_rel_spread;
}

bool StoppingRule::should_stop(double wall_elapsed_s) {
  wall_s_ = wall_elapsed_s;
  if (reason_ != StopReason::not_stopped) return true;
  const double min_time_clock = c_.min_time_wall ? wall_elapsed_s : stats_.total();
  const bool minimums_met = stats_.count() >= c_.min_samples && min_time_clock >= c_.min_time_s;
  if (minimums_met) {
    if (stats_.rel_noise() <= c_.max_noise) {
      reason_ = StopReason::noise_target;
      return true;
    }
    if (noise_settled()) {
      reason_ = StopReason::noise_stable;
      return true;
    }
  }
  if (stats_.count() >= c_.max_samples) {
    reason_ = StopReason::sample_cap;
    return true;
  }
  if (wall_elapsed_s >= c_.max_time_s) {
    reason_ = StopReason::time_cap;
    return true;
  }
  return false;
}

std::string StoppingRule::detail() const {
  const std::string state = fmt::format(
      "{} samples, {:.4g} s measured, {:.3g} s wall, rel noise {:.3f}%", stats_.count(),
      stats_.total(), wall_s_, 100.0 * stats_.rel_noise());
  switch (reason_) {
    case StopReason::not_stopped: return "sampling: " + state;
    case StopReason::noise_target:
      return fmt::format("noise target {:.3f}% reached: {}", 100.0 * c_.max_noise, state);
    case StopReason::noise_stable:
      return fmt::format("noise settled above the {:.3f}% target over the last {} estimates: {}",
                         100.0 * c_.max_noise, c_.stable_window, state);
    case StopReason::time_cap:
      return fmt::format("wall-time cap {:.3g} s reached: {}", c_.max_time_s, state);
    case StopReason::sample_cap:
      return fmt::format("sample cap {} reached: {}", c_.max_samples, state);
  }
  return state;
}

}  // namespace d2k::measure
