#pragma once
/// Judging one call's outputs: every output written, then compared by its rule. One judge for
/// outputs on the host and on the device (OutputsView); the comparators it calls are one rule
/// from one source on both (check/compare_core.h).
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
  Status status = Status::PASSED;  ///< PASSED, INCORRECT_WRITE, INCORRECT_SHAPE or INCORRECT_NUMERICAL
  std::vector<OutputCheck> checks;
  std::string message;
};

struct DeviceSet;

/// A plan's output tensors as the judge reads them: host tensors, or device buffers read on a
/// stream. Not owning. Where both sides of a comparison are on the device the device
/// comparators run (bench outputs are too large to copy); otherwise device tensors are copied
/// to the host and the host comparators run.
class OutputsView {
 public:
  OutputsView(const std::vector<HostTensor>& host) : host_(&host) {}  // NOLINT: implicit on purpose
  OutputsView(const DeviceSet& device, cudaStream_t stream) : device_(&device), stream_(stream) {}

  const std::vector<HostTensor>* host() const { return host_; }
  const DeviceSet* device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

 private:
  const std::vector<HostTensor>* host_ = nullptr;
  const DeviceSet* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

/// Judges two runs of the same call (outputs poisoned with kPoisonA and kPoisonB) against
/// `expected`: unwritten elements first (INCORRECT_WRITE), then each output's rule on both
/// runs (INCORRECT_NUMERICAL), so that a run that differs from the other fails too.
OutputsVerdict judge_outputs(const WorkloadPlan& plan, const OutputsView& expected, const OutputsView& run_a,
                             const OutputsView& run_b);

/// Judges a single run (timed-sample re-checks): the rules only.
OutputsVerdict judge_single(const WorkloadPlan& plan, const OutputsView& expected, const OutputsView& run);

}  // namespace d2k
