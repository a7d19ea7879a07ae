#pragma once
/// Evaluation traces: one record per (target, workload), data first (JSON lines), text second.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace d2k {

/// What the comparison of one output found.
struct OutputCheck {
  std::string output, rule;
  bool passed = false;
  double max_abs_error = 0, max_rel_error = 0, rel_l2 = 0;
  std::int64_t mismatches = 0, first_bad_index = -1;
  std::string message;
};

struct Correctness {
  std::string against;          ///< "reference" (fp64 golden) or "naive"
  int rounds = 0;               ///< rounds run with fresh inputs
  std::vector<OutputCheck> outputs;  ///< the worst round's per-output results
};

/// The performance record of one timed (target, workload): what the timer measured, as the
/// trace carries it. Filled from measure::MeasureResult by score::performance_record(); its JSON
/// names are listed once, in visit_fields() below (to_json and performance_from_json use it).
struct Performance {
  std::string timer;            ///< "events_corrected", "cupti", "events" or "parent_clock" (measure::MeasureResult::timer)
  std::string timer_note;       ///< why the time is not events_corrected, when it was asked for
  double launch_offset_us = 0;  ///< subtracted from the events (median events - CUPTI span on audit samples)
  std::int64_t audit_samples = 0;  ///< samples CUPTI recorded
  std::int64_t audit_empty = 0;    ///< of those, samples whose records were all missing
  std::int64_t audit_incomplete = 0;  ///< of those, samples that lost a kernel's record (missing data)
  double median_us = 0, mean_us = 0, min_us = 0, max_us = 0, p10_us = 0, p90_us = 0;
  double rel_noise = 0;
  std::int64_t samples = 0;
  double total_s = 0;
  std::string stop_reason;
  double event_median_us = 0;   ///< CUDA events on the harness stream, beside CUPTI
  std::optional<double> graph_median_us;  ///< CUDA-graph replay column, where asked for
  double sm_clock_min_mhz = 0, sm_clock_median_mhz = 0;
  std::vector<std::string> throttle_reasons;
  double settle_s = 0;          ///< waited for throttling (left by earlier work) to end before warm-up
  std::vector<std::string> kernels;  ///< kernel names one call launched
  double own_kernel_share = 1;  ///< device time in the solution's own kernels vs vendor libraries
  /// Timer tripwires that fired (measure/tripwires.h): rule -> detail. The engine reports
  /// REWARD_HACK(rule).
  std::map<std::string, std::string> violations;
};

/// Calls f(json_name, field) for every field of a Performance record, in one place.
template <class P, class F>
void visit_fields(P& p, F&& f) {
  f("timer", p.timer);
  f("timer_note", p.timer_note);
  f("launch_offset_us", p.launch_offset_us);
  f("audit_samples", p.audit_samples);
  f("audit_empty", p.audit_empty);
  f("audit_incomplete", p.audit_incomplete);
  f("median_us", p.median_us);
  f("mean_us", p.mean_us);
  f("min_us", p.min_us);
  f("max_us", p.max_us);
  f("p10_us", p.p10_us);
  f("p90_us", p.p90_us);
  f("rel_noise", p.rel_noise);
  f("samples", p.samples);
  f("total_s", p.total_s);
  f("stop_reason", p.stop_reason);
  f("event_median_us", p.event_median_us);
  f("graph_median_us", p.graph_median_us);
  f("sm_clock_min_mhz", p.sm_clock_min_mhz);
  f("sm_clock_median_mhz", p.sm_clock_median_mhz);
  f("throttle_reasons", p.throttle_reasons);
  f("settle_s", p.settle_s);
  f("kernels", p.kernels);
  f("own_kernel_share", p.own_kernel_share);
  f("violations", p.violations);
}

struct Roofline {
  double t_sol_us = 0;
  std::string bound;            ///< "memory" or a flops unit such as bf16_tensor
  std::string memory_model;     ///< "stream" (read/write rates, deferred write-back) or "copy" (docs/measurement.md)
  double pct_sol = 0;
  std::optional<double> speedup_vs_naive, speedup_vs_expert, speedup_vs_library;
  /// vs the task's pytorch.py as written and under torch.compile (targets torch_eager, torch_compile)
  std::optional<double> speedup_vs_torch_eager, speedup_vs_torch_compile;
  std::optional<double> sol_score;
  std::string ceilings_source;  ///< "calibrated" or "datasheet"
  /// The workload's cost and the ceilings T_SOL was computed from, for the roofline plot
  /// (docs/report.md): operations per unit (cost model), compulsory DRAM bytes, copy bandwidth
  /// (bytes/s) and the peak rate (ops/s) of each unit with operations. Empty/0 in older traces.
  std::map<std::string, double> flops;
  double bytes = 0;
  double copy_bw = 0;
  std::map<std::string, double> peaks;
};

/// One (target, workload) record.
struct Trace {
  std::string task, target, impl_path, workload_uuid, role;
  bool hidden = false;
  std::map<std::string, std::int64_t> axes;
  Status status = Status::SKIPPED;
  std::string rule;             ///< REWARD_HACK: the rule that fired; COMPILE_ERROR: a resource limit
  std::string message;          ///< why, in a sentence; compile log excerpt for COMPILE_ERROR
  std::vector<std::string> checks_fired;  ///< named anti-cheat checks that fired (with detail)
  std::optional<Correctness> correctness;
  std::optional<Performance> performance;  ///< only when status == PASSED
  std::optional<Roofline> roofline;
  nlohmann::json environment;   ///< device, driver, CUDA, clocks, d2k version, date
  /// Written while the run goes on, before its cross-target columns (the speed-ups, sol_score)
  /// were known: a run cut by a deadline or a signal keeps such records (docs/report.md, "Trace
  /// files"). The final record of the same (task, target, workload) replaces it.
  bool partial = false;
};

nlohmann::json to_json(const Trace& t);
nlohmann::json to_json(const Performance& p);
/// Missing fields keep their defaults.
Performance performance_from_json(const nlohmann::json& j);
Trace trace_from_json(const nlohmann::json& j);

/// Suite aggregates (docs/design.md, "Scores"; computed by score/suite.h, rendered by format_summary).
struct SuiteSummary {
  int records = 0, passed = 0;
  double pass_rate = 0;
  std::optional<double> geomean_speedup_vs_naive;  ///< over workloads, then over tasks
  std::optional<double> mean_sol_score;
  std::map<double, double> fast_p;                  ///< p -> share of records PASSED and >= p x naive
};

/// Output formats of a results table.
enum class TableFormat { text, markdown };
/// One row per trace: task, target, workload, status, time, noise, % SOL, speedups.
std::string format_table(const std::vector<Trace>& traces, TableFormat fmt);
std::string format_summary(const std::map<std::string, SuiteSummary>& by_target, TableFormat fmt);

}  // namespace d2k
