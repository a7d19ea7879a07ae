#pragma once
/// Tripwires on the timer's own numbers (issue 24): patterns that an honest call does not
/// produce and a forged timer does. Each is a named rule, a pure function returning the
/// violation or nothing; the timer lists the ones that fire in MeasureResult::violations and the
/// engine turns them into REWARD_HACK(<rule>).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "measure/statistics.h"

namespace d2k::measure {

/// A rule that fired: its name (the REWARD_HACK cause) and the numbers that made it fire.
struct Violation {
  std::string rule;
  std::string detail;
};
void to_json(nlohmann::json& j, const Violation& v);
void from_json(const nlohmann::json& j, Violation& v);

/// CUPTI's kernel instrumentation slows an audited sample by at most this share of its event
/// time (9-10 % measured for one-thread-per-element kernels of 262 144-524 288 blocks on the
/// H200; a grid-stride copy or a GEMM 0 %), so an honest plain sample is never faster than that.
inline constexpr double kMaxInstrumentationSlowdown = 0.15;
/// Absolute allowance for the event times of microsecond calls (event resolution, jitter).
inline constexpr double kEventJitter_s = 0.5e-6;

/// `timer_audit_gap`: the plain (uninstrumented) samples' event median lies below the audit
/// samples' event median by more than instrumentation can explain, plus noise. Both medians come
/// from the same events around the same call, so a gap beyond that means the plain samples'
/// events were shortened (a patched cudaEventElapsedTime on the samples CUPTI does not see).
/// Silent when either side has no samples.
std::optional<Violation> timer_audit_gap(const Summary& plain_events, const Summary& audit_events);

/// `negative_launch_offset`: on audit samples the events hold the window's launch cost (~2.5 us)
/// on top of the work CUPTI sees, so events - span is positive. A median below
/// -max(1 us, 5 % of the span median) means the events were shortened below the work CUPTI saw
/// (forged on every sample), or work ran outside the harness stream's event window (unjoined,
/// which stream_join also reports). Silent without audit samples.
std::optional<Violation> negative_launch_offset(double launch_offset_s, const Summary& audit_spans);

/// Every tripwire over one measurement's numbers.
std::vector<Violation> timer_tripwires(const Summary& plain_events, const Summary& audit_events,
                                       double launch_offset_s, const Summary& audit_spans);

}  // namespace d2k::measure
