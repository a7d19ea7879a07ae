#include "measure/audited_time.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace d2k::measure {

namespace {
double checked_share(double share) {
  if (!(share > 0)) throw std::invalid_argument("AuditSchedule: share must be > 0");
  return share;
}

double enter_probability(double share, double run) {
  if (share >= 1) return 1.0;
  // Stationary share of the chain: enter / (enter + leave), with leave = 1 / run.
  return std::min(1.0, share / (1 - share) / run);
}
}  // namespace

AuditSchedule::AuditSchedule(double share, std::size_t mean_run, std::uint64_t seed)
    : rng_(seed),
      leave_(checked_share(share) >= 1 ? 0.0 : 1.0 / std::max(1.0, static_cast<double>(mean_run))),
      enter_(enter_probability(share, std::max(1.0, static_cast<double>(mean_run)))) {}

void AuditSchedule::advance() {
  ++drawn_;
  audit_ = drawn_ < 2 || (audit_ ? !leave_(rng_) : enter_(rng_));
}

AuditedTime combine_audited(std::span<const double> plain_events, std::span<const double> audit_events_all,
                            std::span<const double> audit_spans_all, const std::vector<bool>& audit_complete) {
  if (audit_events_all.size() != audit_spans_all.size())
    throw std::invalid_argument("combine_audited: audit_events and audit_spans differ in length");
  if (!audit_complete.empty() && audit_complete.size() != audit_spans_all.size())
    throw std::invalid_argument("combine_audited: audit_complete and audit_spans differ in length");
  // Samples with lost records are missing data.
  std::vector<double> kept_events, kept_spans;
  for (std::size_t i = 0; i < audit_spans_all.size(); ++i)
    if (audit_complete.empty() || audit_complete[i]) {
      kept_events.push_back(audit_events_all[i]);
      kept_spans.push_back(audit_spans_all[i]);
    }
  AuditedTime a;
  // Nothing to correct with: the events as they are (the audit events where there are no plain
  // samples).
  auto uncorrected = [&](std::string why) {
    a.uncorrected = true;
    a.why = std::move(why);
    a.time = summarize(plain_events.empty() ? audit_events_all : plain_events);
    return a;
  };
  if (audit_spans_all.empty()) return uncorrected("CUPTI recorded no activity in any audit sample: events, uncorrected");
  // Every span is short by a lost kernel: only the events hold the whole call.
  if (kept_spans.empty())
    return uncorrected("every one of " + std::to_string(audit_spans_all.size()) +
                       " audit samples lost a kernel's CUPTI record (its span is short by that kernel): events, uncorrected");
  const std::span<const double> audit_events(kept_events), audit_spans(kept_spans);
  std::vector<double> offsets;
  offsets.reserve(audit_spans.size());
  for (std::size_t i = 0; i < audit_spans.size(); ++i) {
    const double d = audit_events[i] - audit_spans[i];
    offsets.push_back(d);
    if (-d > std::max(1e-6, 0.02 * audit_spans[i])) ++a.outside;
  }
  const Summary off = summarize(offsets);
  const Summary span = summarize(audit_spans);
  a.launch_offset_s = off.median;
  auto spans = [&](std::string why) {
    a.use_span = true;
    a.why = std::move(why);
    a.time = span;
    return a;
  };
  if (a.outside > 0 && a.outside * 10 >= audit_spans.size())
    return spans("work ran outside the harness stream's event window (before its start event or after its "
                 "end) in " + std::to_string(a.outside) + " of " + std::to_string(audit_spans.size()) +
                 " audit samples: the CUPTI spans are the time");
  if (plain_events.empty()) return spans("every sample was an audit sample");
  // The offset is the event window's launch cost, a few microseconds and steady. More, or a
  // wide spread, means host time is inside the window (the call waits for its stream, so the
  // blocking kernel could not hold it; or it calls the runtime between launches): the
  // difference then varies from sample to sample and cannot be subtracted.
  if (off.median > kMaxLaunchOffset_s)
    return spans("the events hold " + std::to_string(off.median * 1e6) +
                 " us more than the CUPTI span (host time inside the event window): the CUPTI spans are the time");
  if (off.p90 - off.p10 > std::max(kMaxOffsetSpread_s, 0.1 * span.median))
    return spans("the difference between events and CUPTI span varies between samples (p10 " +
                 std::to_string(off.p10 * 1e6) + " us, p90 " + std::to_string(off.p90 * 1e6) +
                 " us): the CUPTI spans are the time");
  std::vector<double> corrected(plain_events.begin(), plain_events.end());
  for (double& t : corrected) t -= a.launch_offset_s;
  a.time = summarize(corrected);
  if (!(a.time.median > 0)) return spans("the launch offset is not below the event times");
  return a;
}

}  // namespace d2k::measure
