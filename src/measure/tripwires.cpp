#include "measure/tripwires.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace d2k::measure {

void to_json(nlohmann::json& j, const Violation& v) { j = nlohmann::json{{"rule", v.rule}, {"detail", v.detail}}; }
void from_json(const nlohmann::json& j, Violation& v) {
  v.rule = j.at("rule").get<std::string>();
  v.detail = j.value("detail", std::string());
}

std::optional<Violation> timer_audit_gap(const Summary& plain, const Summary& audit) {
  if (plain.n == 0 || audit.n == 0 || !(audit.median > 0)) return std::nullopt;
  // Noise: three relative standard errors of each median's side, at least the event jitter.
  const double noise = std::max(kEventJitter_s, 3 * std::max(plain.rel_noise, audit.rel_noise) * audit.median);
  const double floor = audit.median * (1 - kMaxInstrumentationSlowdown) - noise;
  if (plain.median >= floor) return std::nullopt;
  return Violation{"timer_audit_gap",
                   fmt::format("the uninstrumented samples' event median {:.3f} us is {:.1f} % below the audit "
                               "samples' {:.3f} us (instrumentation explains at most {:.0f} %, noise {:.3f} us)",
                               plain.median * 1e6, 100 * (1 - plain.median / audit.median), audit.median * 1e6,
                               100 * kMaxInstrumentationSlowdown, noise * 1e6)};
}

std::optional<Violation> negative_launch_offset(double offset_s, const Summary& spans) {
  if (spans.n == 0) return std::nullopt;
  const double bound = std::max(1e-6, 0.05 * spans.median);
  if (offset_s >= -bound) return std::nullopt;
  return Violation{"negative_launch_offset",
                   fmt::format("the events of the audit samples are {:.3f} us shorter than the work CUPTI saw (span "
                               "median {:.3f} us; honest calls read +2 to +3 us, bound -{:.3f} us)",
                               -offset_s * 1e6, spans.median * 1e6, bound * 1e6)};
}

std::vector<Violation> timer_tripwires(const Summary& plain_events, const Summary& audit_events,
                                       double launch_offset_s, const Summary& audit_spans) {
  std::vector<Violation> out;
  if (auto v = timer_audit_gap(plain_events, audit_events)) out.push_back(std::move(*v));
  if (auto v = negative_launch_offset(launch_offset_s, audit_spans)) out.push_back(std::move(*v));
  return out;
}

}  // namespace d2k::measure
