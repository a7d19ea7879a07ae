#pragma once
/// Every rule the engine can fail a target by, in one table: the REWARD_HACK rules and the causes
/// of the other failing statuses. The engine builds each failure from this table (status and
/// name), docs/isolation.md lists the same rows, and the exploit corpus's expect files name them;
/// tests/unit/engine checks that every row is documented and that every named corpus case exists.
///
/// Each cheat check is a pure function over what the parent observed (or what the worker
/// reported: then it is a tripwire, not a boundary) returning the violation or nothing.
#include <cstdint>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace d2k {

/// One row of the rules table.
struct Rule {
  std::string_view name;      ///< the trace's `rule` (REWARD_HACK) or the cause (other statuses)
  Status status;              ///< the status a violation of it gives
  std::string_view meaning;   ///< what it catches, in a sentence
  std::string_view shown_by;  ///< the unit test or corpus case (tests/adversarial/<case>) that shows it
};

/// The table (rules.cpp).
const std::vector<Rule>& rules_table();
/// The row named `name`; nullptr when there is none.
const Rule* find_rule(std::string_view name);

/// A rule that fired, with what was observed.
struct Violation {
  std::string rule;
  Status status = Status::REWARD_HACK;
  std::string message;
};

/// A violation of the named rule (its status from the table). Throws std::logic_error for a name
/// the table lacks, so that no check can invent a rule.
Violation violation(std::string_view rule, std::string message);

// ---------------------------------------------------------------- checks after untimed calls

/// no_threads_after_call: the worker's thread count after a call above the count before the
/// candidate's library was loaded. A count < 0 is unknown and passes.
std::optional<Violation> check_threads_after_call(int before, int after);

/// The (before, after) pair no_threads_after_call judges: the worker's report (its count before
/// any candidate code ran, its count after the call), unless the parent's own count of the
/// worker's process group at the same two moments rose more; then the parent's pair. The
/// candidate can forge the report, not /proc as the parent reads it. A count < 0 is unknown: an
/// unknown parent pair leaves the report, an unknown report yields to a known parent pair.
std::pair<int, int> bounded_thread_counts(int reported_before, int reported_after, int observed_before,
                                          int observed_after);

/// out_of_bounds: canary bytes in the slack between a buffer's end and its mapping's end must be
/// unchanged after a call. `slack` is the slack's content read back; `canary` the byte written.
std::optional<Violation> check_canary(std::string_view buffer, std::span<const std::uint8_t> slack, std::uint8_t canary);

// ---------------------------------------------------------------- tripwires on the worker's report

/// What the worker's timer reported, as far as the checks need it.
struct TimerReport {
  double median_s = 0;                ///< the reported time (what would score)
  double audited_event_median_s = 0;  ///< CUDA-event median over samples CUPTI recorded
  double plain_event_median_s = 0;    ///< CUDA-event median over samples CUPTI did not record
  std::size_t audited = 0, plain = 0; ///< how many of each
  double launch_offset_s = 0;         ///< median (events - CUPTI span) over audited samples
  std::size_t audit_samples = 0, kernel_set_deviations = 0;
  bool kernel_set_constant = true;
  std::string kernel_set_example;
  std::size_t unjoined_samples = 0;   ///< work ending after the harness stream's join
  std::string unjoined_detail;
  double vendor_busy_s = 0, total_busy_s = 0;
};

/// timer_audit_gap: the events of samples CUPTI did not record are shorter than those it did by
/// more than CUPTI's own overhead can explain: the event timer was patched where nothing audits it.
/// Fires when plain < audited x (1 - kAuditGapShare) - kAuditGapAbs_s, with >= 8 of each. Loose on
/// purpose (CUPTI's recording lengthens the audited samples' events by a few µs at 10 µs calls):
/// the parent's clock, not this tripwire, bounds the smaller forgeries.
inline constexpr double kAuditGapShare = 0.25;
inline constexpr double kAuditGapAbs_s = 2e-6;
std::optional<Violation> check_timer_audit_gap(const TimerReport& r);

/// negative_launch_offset: events shorter than the CUPTI span of the same sample are impossible
/// (the events enclose the launch): the elapsed time was forged. Tolerance kLaunchOffsetTol_s for
/// the conversion of device timestamps.
inline constexpr double kLaunchOffsetTol_s = 1e-6;
std::optional<Violation> check_launch_offset(const TimerReport& r);

/// kernel_set_constant: other kernels ran in >= 2 audit samples and >= 1 % of them. Not applied to
/// a task that says why its honest launches follow its inputs' values (`launches_vary_with_inputs`
/// of definition.json, non-empty): every timed call draws fresh inputs, so a library's per-shape
/// kernel choice (moe_grouped_gemm's group sizes) changes the set from call to call. Every call's
/// outputs are still judged in the parent's batch.
std::optional<Violation> check_kernel_set(const TimerReport& r, const std::string& launches_vary_with_inputs = {});

/// stream_join, from the audit samples: work on another stream that ended after the harness
/// stream's join (it escaped the timing). Work on an unjoined stream that ended before the join
/// looks, by timestamps, like a joined fork; the parent's batch capture catches it instead
/// (cudaErrorStreamCaptureUnjoined: parent_clock.cpp), under the same rule.
std::optional<Violation> check_stream_join(const TimerReport& r);

/// vendor_kernels: vendor-library kernels ran on a track that forbids them.
std::optional<Violation> check_vendor_kernels(const TimerReport& r, bool vendor_allowed);

// ---------------------------------------------------------------- the parent's clock

/// The band within which the worker's median is taken as the score's time: it may be below the
/// parent's per-call figure by at most kTrustBand. Back-to-back calls pay for the write-back the
/// previous call left in L2, which an isolated cold sample does not: honest ratios on the H200
/// were 0.908-0.986 (12 traces, cold 0.1 s batches). Evidence: docs/isolation.md ("The timing
/// boundary").
inline constexpr double kTrustBand = 0.12;
/// Below the parent's figure by more than this share, no honest run has been seen: REWARD_HACK.
/// Between kTrustBand and this a compiled target scores the band's edge (bound_time), so a forgery
/// there gains nothing beyond what reporting the edge itself gives.
/// Honest experts once read 0.44-0.60 of the parent's figure (fused_adamw at 1e7 and 1e9
/// parameters, adam_8bit_blockwise at 1e9): the parent charged a whole-slab count to every batch
/// whose outputs are not bitwise naive's. With BatchEnd's held-count fix the same rows read
/// 0.933 / 0.983 / 0.979 on the H200 (docs/isolation.md, "The band").
inline constexpr double kCheatBand = 0.22;
/// Per call, on top of both shares: what a graph's launch of one node can add to a call that the
/// worker's corrected events do not count (a constant, not the worker's kernel count, which it
/// could forge). It loosens the bound only for calls of a few microseconds, where the physical
/// floor stands.
inline constexpr double kBandAbs_s = 2e-6;

/// What the parent's batch timing came to.
struct ParentTiming {
  double batch_s = 0;      ///< the parent's clock, all batches: from each request to its last call seen written
  double check_s = 0;      ///< the parent's own checking time inside batch_s, measured by it
  std::size_t calls = 0;   ///< calls in all batches, each into its own freshly poisoned outputs
  std::size_t batches = 0; ///< batches whose times add up to batch_s
  double after_clock_s = 0;  ///< the parent's checking after the clock stopped (the confirming counts)
  double per_call_s() const;
};

/// The time that scores, and why.
struct TimeVerdict {
  double time_s = 0;
  std::string source;  ///< "worker" (within the band), "parent_band" (the band's edge), "parent" or "parent_draws"
  std::optional<Violation> violation;  ///< timer_cross_check
};

/// timer_cross_check: the worker's median against the parent's per-call figure. Within the band the
/// worker's median scores; below it a compiled target scores the band's edge, (1 - kTrustBand) x
/// the figure less kBandAbs_s; below kCheatBand it is REWARD_HACK. With
/// `host_paced` (a target whose calls run an interpreter: Track::host_paced()), a gap beyond
/// kCheatBand reports the parent's figure instead of REWARD_HACK: back to back, such a call pays
/// its host work, which honest programs have (fused_adamw's PyTorch program, 300 tensor views a
/// call: 0.48 of the parent's figure on the H200, docs/isolation.md); the forgery gains nothing.
/// With `worker_max_s` (the worker's slowest timed sample) at or above the cheat band's edge, a gap
/// beyond kCheatBand reports the parent's figure too (source "parent_draws"): the worker saw calls
/// as long as the parent's, so its median and the parent's batch differ by the draws they timed (the
/// worker draws fresh inputs per call, the batch its own few sets). Honest kernels whose time
/// depends on the random keys do this (a hash group-by's warp tables on 16 Zipf keys: worker median
/// 4.9 ms, slowest samples and the batch's two draws 18.6 ms on the H200); a forger that leaves a
/// slow sample standing is scored at the parent's clock, the time it took.
TimeVerdict bound_time(double worker_median_s, const ParentTiming& p, bool host_paced = false, double worker_max_s = 0);

/// Whether a batch is host-paced: the target's track runs an interpreter, or the batch ran without
/// a graph (a call that cannot be captured: the worker's loop then runs the candidate's host code
/// between launches, which the worker's samples hide behind the blocking kernel). A candidate that
/// breaks capture on purpose gains nothing: the parent's figure is what scores.
inline bool host_paced_batch(bool track_host_paced, bool graph) { return track_host_paced || !graph; }

/// batch_outputs: every call of a batch must have written its own outputs (`unwritten` lists the
/// calls whose outputs still held poison when the parent looked).
std::optional<Violation> check_batch_outputs(const std::vector<std::size_t>& unwritten, std::size_t calls);

/// got_integrity: the hash of the worker's relocation-read-only pages (its GOT among them) must
/// not change after a call.
std::optional<Violation> check_got(std::uint64_t before, std::uint64_t after);

}  // namespace d2k
