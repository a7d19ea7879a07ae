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
#include "engine/impl.h"
#include "engine/plan.h"
#include "measure/timer.h"
#include "report/status.h"
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
  /// `count` calls back to back on one set (no flush, no preparation), then a synchronise;
  /// `wall_s` is measured by the parent around the whole request.
  virtual CallOutcome throughput(const DeviceSet& ins, const DeviceSet& outs, std::size_t count, double& wall_s) = 0;
};

/// Options of a worker.
struct WorkerOptions {
  std::filesystem::path exe;        ///< the d2k binary (runs `d2k __worker`)
  double call_timeout_s = 30;       ///< one untimed call
  double time_timeout_s = 120;      ///< one timing loop (the parent's preparation included)
  double start_timeout_s = 60;      ///< process start, CUDA init and loading the library
  bool pid_namespace = true;        ///< own PID namespace (buffer descriptors work across it)
};

/// Starts a runner for `target`. Worker start-up failures come back as a runner whose first
/// request fails with the cause.
std::unique_ptr<TargetRunner> make_worker_runner(const ImplTarget& target, const WorkerOptions& opt);
std::unique_ptr<TargetRunner> make_in_process_runner(const ImplTarget& target);

}  // namespace d2k
