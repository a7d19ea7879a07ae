#pragma once
/// The evaluation pipeline: check each target against the golden reference (check workloads,
/// hidden ones too) and against naive (bench workloads), then time what passed and score it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "tracks/target.h"
#include "engine/runner.h"
#include "measure/stopping.h"
#include "report/trace.h"

namespace d2k {

struct EvalOptions {
  std::uint64_t secret_seed = 0;     ///< mixed into every input seed; never given to an implementation
  int check_rounds = 3;              ///< fresh-input rounds on check workloads
  int bench_rounds = 2;              ///< fresh-input rounds on bench workloads before timing
  int hidden_workloads = 4;          ///< drawn from the constraints per task
  bool time = true;                  ///< false: correctness only (d2k check)
  bool graph = false;                ///< also time CUDA-graph replay
  /// The stopping rule of every timing (the measure library's defaults unless overridden).
  measure::StoppingCriteria stopping;
  /// Run every target in its own sandboxed worker process (false: load it into this process,
  /// for debugging and for measuring what the isolation costs).
  bool isolate = true;
  WorkerOptions worker;
  /// The checks that cost time per timed call: inputs drawn fresh for every call, random and
  /// last-call re-checks, the clock cross-check. Off only to measure what they cost.
  bool sample_checks = true;              ///< deadlines and the d2k binary the workers run
  std::vector<std::string> workloads;  ///< only these uuids (empty: all)
  /// Non-empty: write each workload's inputs, expected and actual outputs (first round) as .npy
  /// files under <dump_dir>/<task>/<workload>/ (d2k check --dump).
  std::string dump_dir;
};

/// Progress callback: a short line per step ("expert 3/7 rmsnorm-16384x8192 timing").
using Progress = std::function<void(const std::string&)>;
/// Called with each (target, workload) record the moment it is final except for the columns
/// that compare targets (speed-ups, sol_score: score_traces, once every target ran), so that a
/// caller can keep it before the run ends (docs/report.md, "Trace files").
using RecordDone = std::function<void(const Trace&)>;

/// Runs every target of `targets` over the task's workloads on the GPU, one target after the
/// other, each in its own worker (EvalOptions::isolate). This process draws the inputs, holds
/// the expected outputs and judges: `reference` (the fp64 host golden) for check workloads,
/// `naive` (trusted, run here) for bench workloads once naive matched golden. `done` sees every
/// returned record as soon as it is complete (naive's untimed reference checks excluded),
/// marked `partial` (its speed-ups come with the returned records).
std::vector<Trace> evaluate_cuda(const Task& task, const std::vector<ImplTarget>& targets,
                                 const ImplTarget& reference, const std::optional<ImplTarget>& naive,
                                 const EvalOptions& opt, const Progress& progress, const RecordDone& done = {});

/// The host pipeline (no GPU needed): runs `target` (a host implementation, normally the fp64
/// reference) on every check workload through the ABI on host memory: outputs poisoned and
/// checked all-written and finite, inputs checked unmodified, a second run with other poison
/// must agree (determinism). Compared with `golden` when one is given. `done` sees each record
/// as its workload finishes (host records are final when made).
std::vector<Trace> evaluate_host(const Task& task, const ImplTarget& target,
                                 const std::optional<ImplTarget>& golden, const EvalOptions& opt,
                                 const Progress& progress, const RecordDone& done = {});

/// Environment facts for traces: device, driver, CUDA runtime, d2k version, date.
nlohmann::json environment_json();

}  // namespace d2k
