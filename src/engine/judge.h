#pragma once
/// Judging one call's outputs: every output written, then compared by its rule.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "engine/plan.h"
#include "report/trace.h"

namespace d2k {

/// Poison bytes of the two runs of every check: an element is unwritten when it still holds the
/// poison of each run (one pattern alone could be a legitimate value, e.g. -1 for 0xFF ints).
inline constexpr std::uint8_t kPoisonA = 0xFF;  // NaN for every float type
inline constexpr std::uint8_t kPoisonB = 0xA5;

struct OutputsVerdict {
  Status status = Status::PASSED;  ///< PASSED, INCORRECT_WRITE or INCORRECT_NUMERICAL
  std::vector<OutputCheck> checks;
  std::string message;
};

/// Judges two runs of the same call (outputs poisoned with kPoisonA and kPoisonB) against
/// `expected`: unwritten elements first (INCORRECT_WRITE), then each output's rule on both
/// runs (INCORRECT_NUMERICAL), so that a run that differs from the other fails too.
OutputsVerdict judge_outputs(const WorkloadPlan& plan, const std::vector<HostTensor>& expected,
                             const std::vector<HostTensor>& run_a, const std::vector<HostTensor>& run_b);

/// Judges a single run (timed-sample re-checks): the rules only.
OutputsVerdict judge_single(const WorkloadPlan& plan, const std::vector<HostTensor>& expected,
                            const std::vector<HostTensor>& run);

struct DeviceSet;

/// judge_outputs on device buffers (bench workloads, whose outputs are too large to copy and
/// compare on the host): the same checks, run by the device comparators on `stream`.
OutputsVerdict judge_outputs_device(const WorkloadPlan& plan, const DeviceSet& expected, const DeviceSet& run_a,
                                    const DeviceSet& run_b, cudaStream_t stream);
/// judge_single on device buffers.
OutputsVerdict judge_single_device(const WorkloadPlan& plan, const DeviceSet& expected, const DeviceSet& run,
                                   cudaStream_t stream);

}  // namespace d2k
