#pragma once
/// The timing boundary (docs/isolation.md, "The timing boundary"): the parent times, on its own
/// clock, a batch of back-to-back calls in which every call writes its own freshly poisoned
/// outputs, and the batch ends when the parent has seen every output written, not when the
/// worker says so. Nothing the worker measures is subtracted; only the parent's own checking time.
#include <optional>
#include <string>
#include <vector>

#include "engine/device_backend.h"
#include "engine/plan.h"
#include "engine/rules.h"
#include "engine/runner.h"

namespace d2k {

/// Sizes of a batch.
struct BatchShape {
  std::size_t calls = 0;   ///< calls, each with its own outputs
  std::size_t stride = 0;  ///< bytes of one call's outputs in the slab (each output 256-aligned)
  std::vector<std::size_t> out_offsets;
};

inline constexpr double kBatchTarget_s = 0.1;               ///< a batch long enough to swamp the parent's overhead
inline constexpr std::size_t kBatchMaxCalls = 20000;
inline constexpr std::size_t kBatchBudgetBytes = std::size_t(16) << 30;  ///< device memory for the batch's outputs

/// How many calls (at the worker's median `median_s`) and how the outputs are laid out. The worker's
/// median only sizes the batch: a forged one makes the batch longer or shorter, never the bound looser.
BatchShape batch_shape(const WorkloadPlan& plan, double median_s);

/// What the parent's batch came to.
struct ParentClockResult {
  CallOutcome call;                    ///< a failed request (then nothing else is set)
  ParentTiming timing;
  bool graph = false;
  std::string note;
  std::optional<Violation> violation;  ///< batch_outputs, stream_join
};

/// Runs the batch on `runner` over the rotation input sets `ins`, whose naive outputs are
/// `expected` (one per input set), and judges every call's outputs.
ParentClockResult time_on_parent_clock(TargetRunner& runner, const WorkloadPlan& plan, const std::vector<DeviceSet>& ins,
                                       const std::vector<DeviceSet>& expected, double median_s, double timeout_s, cudaStream_t s);

}  // namespace d2k
