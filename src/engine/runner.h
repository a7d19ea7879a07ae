#pragma once
/// How the engine gets a target called. The engine (in the parent) owns every buffer, draws
/// every input, holds every expected output and judges every result; a Runner only issues the
/// target's calls and times them. Two kinds:
///  - WorkerRunner: the target runs in a fresh sandboxed worker process (its own CUDA context)
///    that maps the parent's buffers (shareable device memory, descriptors over the channel);
///    a crash, a trap or a hang ends only the worker. The default. Its parent side is
///    worker_client.cpp, the child is worker_process.cpp, the messages between them wire.h.
///  - InProcessRunner: the target is loaded into this process (`--isolation none`): for
///    debugging and for measuring what the isolation costs (in_process_runner.cpp).
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/device_backend.h"
#include "tracks/target.h"
#include "engine/plan.h"
#include "measure/timer.h"
#include "core/status.h"
#include "report/trace.h"

namespace d2k {

/// What one request to a target came to.
struct CallOutcome {
  bool ok = true;
  Status status = Status::PASSED;  ///< when !ok: RUNTIME_ERROR, TIMEOUT, INVALID_SUBMISSION, REWARD_HACK
  std::string rule;                ///< REWARD_HACK: the rule
  std::string error;
  bool fatal = false;              ///< the target cannot be called again (process or context gone)
  int threads_before = -1, threads_after = -1;  ///< around an untimed call
};

/// A timing run's report.
struct TimedOutcome {
  CallOutcome call;
  Performance perf;
  std::size_t calls = 0;            ///< warm-up + timed calls the timer made
  bool kernel_set_constant = true;
  std::size_t kernel_set_deviations = 0;
  std::string kernel_set_example;   ///< the first deviating sample: its kernels vs the first sample's
  std::size_t unjoined_samples = 0; ///< samples with work still running after the stream synchronised
  std::string unjoined_detail;
  double vendor_busy_s = 0, total_busy_s = 0;  ///< device time of vendor-library kernels / of all
  /// CUDA-event medians of the samples CUPTI recorded and of the others (the timer_audit_gap
  /// tripwire), and the launch offset (negative_launch_offset).
  double audited_event_median_s = 0, plain_event_median_s = 0;
  std::size_t audited = 0, plain = 0;
  double launch_offset_s = 0;
};

/// A timed batch on the parent's clock (engine/parent_clock.h): call i reads input set
/// ins[i % ins.size()] and writes its own outputs, output j at slab + i * stride + out_offsets[j].
struct BatchSpec {
  std::vector<const DeviceSet*> ins;
  const DevMem* slab = nullptr;
  std::size_t stride = 0;
  std::vector<std::size_t> out_offsets;
  std::size_t calls = 0;
};

/// What preparing a batch came to.
struct BatchPrepared {
  CallOutcome call;
  bool graph = false;          ///< the batch was captured as one CUDA graph (no launch gaps)
  bool unjoined = false;       ///< the capture ended with work on a stream never joined back
  std::string note;            ///< why there is no graph
};

/// Parent-side preparation of the call with index `call` (warm-up included), which will use
/// rotation set `set`: draw its inputs, poison its outputs, re-check what the set held.
using PrepareFn = std::function<void(std::size_t call, std::size_t set)>;

/// Where a target is called.
class TargetRunner {
 public:
  virtual ~TargetRunner() = default;
  /// The memory the engine must allocate buffers with for this runner.
  virtual MemKind memory_kind() const = 0;
  /// Binds the target to a workload (asks its workspace size). Buffers of earlier workloads may
  /// be forgotten.
  virtual CallOutcome set_plan(const WorkloadPlan& plan) = 0;
  /// One call, complete (device synchronised) when it returns; counts threads around it.
  virtual CallOutcome call(const DeviceSet& ins, const DeviceSet& outs) = 0;
  /// The timing loop over rotation sets (call i uses set i % sets); `prepare` runs in the parent
  /// before every call.
  virtual TimedOutcome time(const std::vector<DeviceSet>& ins, const std::vector<DeviceSet>& outs,
                            const measure::MeasureOptions& mo, const PrepareFn& prepare) = 0;
  /// Readies a batch (the worker captures it as a CUDA graph where the calls allow); nothing runs.
  virtual BatchPrepared batch_prepare(const BatchSpec& b) = 0;
  /// Starts the prepared batch and returns at once: the parent watches the outputs meanwhile.
  virtual CallOutcome batch_start() = 0;
  /// Waits until the worker says the batch ended (its word bounds nothing: the parent's own
  /// observation of the outputs ends the batch's time).
  virtual CallOutcome batch_wait(double timeout_s) = 0;
  /// Drops whatever the runner still holds of buffers the engine has freed, so that their memory
  /// is free again before the engine sizes its next sets (a worker's mapping of a freed buffer
  /// keeps it allocated: fused_adamw's 1e9 parameters ran out of memory on the H200 that way).
  virtual CallOutcome release_freed() { return {}; }
};

/// Options of a worker.
struct WorkerOptions {
  std::filesystem::path exe;        ///< the d2k binary (runs `d2k __worker`)
  double call_timeout_s = 30;       ///< one untimed call
  double time_timeout_s = 120;      ///< one timing loop (the parent's preparation included)
  double start_timeout_s = 60;      ///< process start, CUDA init and loading the library
  bool pid_namespace = true;        ///< own PID namespace (buffer descriptors work across it)
  /// The workloads' shapes, for the track's prepare step in the worker (before the lockdown).
  std::vector<WorkloadShape> shapes;
};

/// Starts a runner for `target`. Worker start-up failures come back as a runner whose first
/// request fails with the cause.
std::unique_ptr<TargetRunner> make_worker_runner(const ImplTarget& target, const WorkerOptions& opt);
std::unique_ptr<TargetRunner> make_in_process_runner(const ImplTarget& target);

}  // namespace d2k
