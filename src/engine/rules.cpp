#include "engine/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace d2k {

namespace {

using S = Status;

// One row per rule. `shown_by`: "unit:<test>" for a CPU unit test (tests/unit/engine), a bare
// name for an exploit-corpus case (tests/adversarial/<name>).
const std::vector<Rule> kRules = {
    // ---- REWARD_HACK: the parent's own observations (boundaries)
    {"inputs_unchanged", S::REWARD_HACK, "an input's device checksum changed across a call, or a re-checked set's inputs differ from a fresh draw", "mutate_inputs"},
    {"timed_sample_recheck", S::REWARD_HACK, "a timed call's outputs (a random one and the last) differ from naive's on the same inputs", "first_call_does_all"},
    {"timer_cross_check", S::REWARD_HACK, "the worker's median is below the parent's per-call time of a batch by more than any honest run shows", "timer_forge_partial"},
    {"batch_outputs", S::REWARD_HACK, "a call of the parent's timed batch left its own poisoned outputs unwritten or wrong", "batch_skip_work"},
    {"result_channel", S::REWARD_HACK, "the worker's channel carried a message out of turn or a report that disagrees with the parent's counts", "forge_result_channel"},
    {"physical_floor", S::REWARD_HACK, "the time is below the speed-of-light time by more than the margin", "unit:Rules.TableIsComplete"},
    // ---- REWARD_HACK: tripwires on what the worker reports (advice: a forger can hide them)
    {"no_threads_after_call", S::REWARD_HACK, "the worker has more threads after a call than before the candidate was loaded", "raw_clone_thread"},
    {"kernel_set_constant", S::REWARD_HACK, "audit samples launched different kernels (>= 2 samples and >= 1 % of them)", "kernel_set_varies"},
    {"stream_join", S::REWARD_HACK, "work on a stream the call never joined to the harness stream, whether it ended after the join or before it", "side_stream_unjoined"},
    {"vendor_kernels", S::REWARD_HACK, "vendor-library kernels ran on a track that forbids them", "dlopen_vendor_library"},
    {"timer_audit_gap", S::REWARD_HACK, "the event median of samples CUPTI did not record is below that of the samples it did by more than CUPTI's overhead", "timer_forge_partial"},
    {"negative_launch_offset", S::REWARD_HACK, "events shorter than the CUPTI span of the same samples: the elapsed time was forged", "timer_forge_audit_aware"},
    {"got_integrity", S::REWARD_HACK, "the worker's relocation-read-only pages (its GOT) changed during a call", "got_patch_raw_syscall"},
    // ---- other statuses, by cause
    {"unwritten", S::INCORRECT_WRITE, "an output element still holds the poison of one of the two calls", "fake_stdout"},
    {"out_of_bounds", S::INCORRECT_WRITE, "the canary bytes between a buffer's end and its mapping's end changed", "oob_write_512"},
    {"nondeterministic", S::INCORRECT_NUMERICAL, "the two poisoned calls disagree", "uninitialised_read"},
    {"tolerance", S::INCORRECT_NUMERICAL, "an output differs from the reference beyond the task's tolerance", "fp16_downgrade"},
    {"illegal_address", S::RUNTIME_ERROR, "a device fault (an access past a buffer's mapping faults on its guard zone); the worker ends and the next workload gets a fresh one", "illegal_address"},
    {"worker_died", S::RUNTIME_ERROR, "the worker process ended (signal, exit, seccomp kill)", "fork_bomb"},
    {"deadline", S::TIMEOUT, "no answer to a request within the parent's deadline; the worker is killed", "hang"},
    {"load_failed", S::INVALID_SUBMISSION, "the library did not load or lacks the ABI's entry points", "unit:Rules.TableIsComplete"},
};

}  // namespace

const std::vector<Rule>& rules_table() { return kRules; }

const Rule* find_rule(std::string_view name) {
  for (const Rule& r : kRules)
    if (r.name == name) return &r;
  return nullptr;
}

Violation violation(std::string_view rule, std::string message) {
  const Rule* r = find_rule(rule);
  if (!r) throw std::logic_error(fmt::format("rule '{}' is not in the rules table (engine/rules.cpp)", rule));
  return Violation{std::string(r->name), r->status, std::move(message)};
}

std::optional<Violation> check_threads_after_call(int before, int after) {
  if (before < 0 || after < 0 || after <= before) return std::nullopt;
  return violation("no_threads_after_call", fmt::format("{} -> {} threads: a thread was left running after the call", before, after));
}

std::pair<int, int> bounded_thread_counts(int reported_before, int reported_after, int observed_before,
                                          int observed_after) {
  if (observed_before < 0 || observed_after < 0) return {reported_before, reported_after};
  if (reported_before < 0 || reported_after < 0) return {observed_before, observed_after};
  if (observed_after - observed_before > reported_after - reported_before) return {observed_before, observed_after};
  return {reported_before, reported_after};
}

std::optional<Violation> check_canary(std::string_view buffer, std::span<const std::uint8_t> slack, std::uint8_t canary) {
  auto it = std::find_if(slack.begin(), slack.end(), [&](std::uint8_t b) { return b != canary; });
  if (it == slack.end()) return std::nullopt;
  const auto first = static_cast<std::size_t>(it - slack.begin());
  const auto changed = static_cast<std::size_t>(std::count_if(slack.begin(), slack.end(), [&](std::uint8_t b) { return b != canary; }));
  return violation("out_of_bounds", fmt::format("{}: {} byte(s) written past its end, the first {} B past it", buffer, changed, first));
}

std::optional<Violation> check_timer_audit_gap(const TimerReport& r) {
  if (r.audited < 8 || r.plain < 8 || r.audited_event_median_s <= 0) return std::nullopt;
  const double floor_s = r.audited_event_median_s * (1 - kAuditGapShare) - kAuditGapAbs_s;
  if (r.plain_event_median_s >= floor_s) return std::nullopt;
  return violation("timer_audit_gap", fmt::format("event median {:.2f} us on {} samples CUPTI did not record vs {:.2f} us on the {} it did",
                                                  r.plain_event_median_s * 1e6, r.plain, r.audited_event_median_s * 1e6, r.audited));
}

std::optional<Violation> check_launch_offset(const TimerReport& r) {
  if (r.audit_samples == 0 || r.launch_offset_s >= -kLaunchOffsetTol_s) return std::nullopt;
  return violation("negative_launch_offset",
                   fmt::format("the events were {:.2f} us shorter than the CUPTI span of the same samples", -r.launch_offset_s * 1e6));
}

std::optional<Violation> check_kernel_set(const TimerReport& r, const std::string& launches_vary_with_inputs) {
  if (r.kernel_set_constant || !launches_vary_with_inputs.empty()) return std::nullopt;
  const auto need = std::max<std::size_t>(2, r.audit_samples / 100);
  if (r.kernel_set_deviations < need) return std::nullopt;
  return violation("kernel_set_constant", fmt::format("{} samples launched other kernels; {}", r.kernel_set_deviations, r.kernel_set_example));
}

std::optional<Violation> check_stream_join(const TimerReport& r) {
  if (r.unjoined_samples > 0)
    return violation("stream_join", fmt::format("{} samples had work running after the harness stream's join: {}", r.unjoined_samples, r.unjoined_detail));
  return std::nullopt;
}

std::optional<Violation> check_vendor_kernels(const TimerReport& r, bool vendor_allowed) {
  if (vendor_allowed || r.vendor_busy_s <= 0) return std::nullopt;
  return violation("vendor_kernels", fmt::format("{:.1f}% of device time in vendor-library kernels", 100 * r.vendor_busy_s / std::max(r.total_busy_s, 1e-12)));
}

double ParentTiming::per_call_s() const {
  if (calls == 0) return 0;
  return std::max(0.0, batch_s - check_s) / static_cast<double>(calls);
}

TimeVerdict bound_time(double worker_median_s, const ParentTiming& p, bool host_paced, double worker_max_s) {
  TimeVerdict v;
  const double parent_s = p.per_call_s();
  if (parent_s <= 0) {  // no batch: the worker's median stands (and says so)
    v.time_s = worker_median_s;
    v.source = "worker";
    return v;
  }
  if (worker_median_s >= parent_s * (1 - kTrustBand) - kBandAbs_s) {
    v.time_s = worker_median_s;
    v.source = "worker";
    return v;
  }
  // Below the band. A host-paced target scores the parent's figure: back to back it pays its
  // interpreter, which is its time. A compiled target scores the band's edge, the least time a
  // worker is trusted with anyway (a forger gains nothing here that reporting the edge itself
  // would not give it); the parent's whole figure once scored here, and honest write-heavy calls
  // whose back-to-back ratio fell just past the edge (layernorm_backward 0.853-0.861, the same
  // kernel 0.875-0.894 one shape over) scored 14-17 % above their cold median, a step no kernel
  // change made (docs/isolation.md, "The band"). Below the cheat band it is REWARD_HACK.
  v.time_s = parent_s;
  v.source = "parent";
  if (host_paced) return v;
  const double cheat_edge_s = parent_s * (1 - kCheatBand) - kBandAbs_s;
  if (worker_median_s < cheat_edge_s && worker_max_s >= cheat_edge_s) {
    v.source = "parent_draws";  // the worker's own samples reach the figure: a draw-dependent time
    return v;
  }
  if (worker_median_s < cheat_edge_s) {
    v.violation = violation("timer_cross_check", fmt::format("median {:.2f} us, but {} back-to-back calls took {:.2f} us each on the parent's clock "
                                                             "(below by {:.0f} %, honest runs stay within {:.0f} %)",
                                                             worker_median_s * 1e6, p.calls, parent_s * 1e6,
                                                             100 * (1 - worker_median_s / parent_s), 100 * kCheatBand));
    return v;
  }
  v.time_s = parent_s * (1 - kTrustBand) - kBandAbs_s;
  v.source = "parent_band";
  return v;
}

std::optional<Violation> check_batch_outputs(const std::vector<std::size_t>& unwritten, std::size_t calls) {
  if (unwritten.empty()) return std::nullopt;
  std::string which;
  for (std::size_t i = 0; i < unwritten.size() && i < 8; ++i) which += (i ? ", " : "") + std::to_string(unwritten[i]);
  if (unwritten.size() > 8) which += ", ...";
  return violation("batch_outputs", fmt::format("{} of {} calls of the timed batch left outputs unwritten, or wrote outputs that "
                                                "are neither bitwise equal to the first call's on the same inputs nor "
                                                "within the task's rule against naive's (calls {})", unwritten.size(), calls, which));
}

std::optional<Violation> check_got(std::uint64_t before, std::uint64_t after) {
  if (before == after) return std::nullopt;
  return violation("got_integrity", fmt::format("the relocation-read-only pages changed during the call (hash {:016x} -> {:016x})", before, after));
}

}  // namespace d2k
