#pragma once
/// The primary time when CUPTI audits only some samples.
///
/// On GPUs before Blackwell, CUPTI takes kernel timestamps by instrumenting each launch (software
/// timestamps and semaphores), which slows kernels of many short blocks: the naive rmsnorm's
/// one-thread-per-element kernels ran ~10 % slower with kernel activity enabled, while a
/// grid-stride copy or a GEMM did not change. So most samples run with CUPTI off and are timed
/// with CUDA events on the harness stream; a random share of samples (the audit samples) runs
/// with CUPTI on and supplies what only CUPTI sees (every stream, the kernel set, the join). On
/// an audit sample, events and span time the same execution, and their difference is the event
/// window's fixed launch cost (the first launch after the start event, the end record), which
/// is subtracted from the plain samples' event times.
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "measure/statistics.h"

namespace d2k::measure {

struct AuditedTime {
  Summary time;                    ///< the primary time (see use_span)
  double launch_offset_s = 0;      ///< median over audit samples of (events - span)
  std::size_t outside = 0;         ///< audit samples whose span exceeded their events (by > slack)
  bool use_span = false;           ///< time is the audit samples' spans, not corrected events
  bool uncorrected = false;        ///< time is the plain events as they are (no launch offset)
  std::string why;                 ///< when use_span or uncorrected: the reason
};

/// Which timed samples CUPTI records: runs of consecutive audit samples, of random length (mean
/// `mean_run`), starting at random samples, a two-state chain whose long-run share of audit
/// samples is `share`. Runs, not scattered samples, so that recording is switched, and its records
/// delivered, once per run. The first two samples are always audit samples (the stopping rule's
/// correction needs an offset early). share >= 1: every sample.
class AuditSchedule {
 public:
  AuditSchedule(double share, std::size_t mean_run, std::uint64_t seed);
  /// Whether the next timed sample is an audit sample.
  bool audit() const { return audit_; }
  /// Moves on to the sample after it.
  void advance();

 private:
  std::mt19937_64 rng_;
  std::bernoulli_distribution leave_, enter_;
  bool audit_ = true;
  std::size_t drawn_ = 0;
};

/// Above this, the events - span difference is not a launch cost (about 2.5 us on an H200).
inline constexpr double kMaxLaunchOffset_s = 5e-6;
/// p90 - p10 of the differences above max(this, 10 % of the span) is not a steady offset.
inline constexpr double kMaxOffsetSpread_s = 2e-6;

/// `plain_events`: event times of samples run without CUPTI; `audit_events` / `audit_spans`: the
/// audit samples' event times and CUPTI spans, pairwise. The corrected events are the primary
/// time unless the events do not contain the call's work: when at least 10 % of the audit
/// samples have a span longer than their events (by more than max(1 µs, 2 % of the span)), some
/// work ran outside the harness stream's event window (before the start event, or unjoined), and
/// the audit samples' spans are the time. Also spans when there are no plain samples, when the
/// offset is above kMaxLaunchOffset_s or spreads more than max(kMaxOffsetSpread_s, 10 % of the
/// span) between p10 and p90 (host time inside the event window), or when the correction would
/// leave a median <= 0.
///
/// `audit_complete` (empty: every audit sample is complete) marks the audit samples whose CUPTI
/// records hold every expected kernel (measure/kernel_set.h). A sample that lost a record has a
/// span short by that kernel's time; it is missing data, left out of the offset, the outside
/// count and the spans, so a lost record cannot switch an honest call to the spans (on the H200
/// one lost 55 us kernel in a few samples did: "p10 2.3 us, p90 56.0 us"). When no sample is
/// complete, no span holds the whole call and no offset can be measured: the plain events,
/// uncorrected, are the time (the audit events where there are no plain samples). Using the
/// short spans then timed the naive rmsnorm at 128 x 7168 at one kernel of its three (4.37 us
/// for 17.4 us) on the H200, which the parent's clock called a forged median.
AuditedTime combine_audited(std::span<const double> plain_events, std::span<const double> audit_events,
                            std::span<const double> audit_spans, const std::vector<bool>& audit_complete = {});

}  // namespace d2k::measure
