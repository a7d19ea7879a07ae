#pragma once
/// The timing loop both places that call a target share: the in-process runner and the worker
/// process run the measurement timer over rotation sets and turn its result into a TimedOutcome.
#include <cstddef>
#include <functional>
#include <vector>

#include "core/cuda_util.h"
#include "engine/device_backend.h"
#include "engine/runner.h"
#include "measure/timer.h"

namespace d2k {

/// The performance record of a measurement (the one conversion from the timer's result).
Performance performance_from(const measure::MeasureResult& r);

/// Runs the timer over rotation sets (call i uses set i % sets); `prepare` runs before every
/// call, warm-up included.
TimedOutcome run_timer(measure::Timer& timer, DeviceCall& call, const std::vector<std::vector<void*>>& ins,
                       const std::vector<std::vector<void*>>& outs, measure::MeasureOptions mo,
                       const std::function<void(std::size_t call, std::size_t set)>& prepare, Stream& stream);

/// The calls of a timed batch (runner.h, BatchSpec), captured as one CUDA graph where the calls
/// allow stream capture, else issued one by one. Shared by the in-process runner and the worker.
class CapturedBatch {
 public:
  CapturedBatch() = default;
  ~CapturedBatch();
  CapturedBatch(const CapturedBatch&) = delete;
  CapturedBatch& operator=(const CapturedBatch&) = delete;
  /// Captures `ins.size()` calls (call i on ins[i], outs[i]); nothing runs. A capture that ends
  /// with work on a stream never joined back to `s` sets `unjoined` (the stream_join rule).
  BatchPrepared prepare(DeviceCall& call, std::vector<std::vector<void*>> ins, std::vector<std::vector<void*>> outs, cudaStream_t s);
  /// Issues the batch on `s` (does not synchronise).
  void launch(cudaStream_t s);
  /// Forgets the batch (before its call or buffers go).
  void reset();

 private:
  DeviceCall* call_ = nullptr;
  std::vector<std::vector<void*>> ins_, outs_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// Pointers of a batch's calls: inputs of set i % sets, outputs carved from the slab.
void batch_pointers(const std::vector<std::vector<void*>>& in_sets, void* slab, std::size_t stride,
                    const std::vector<std::size_t>& out_offsets, std::size_t calls, std::vector<std::vector<void*>>& ins,
                    std::vector<std::vector<void*>>& outs);

/// A failed request's outcome.
CallOutcome failed(Status s, std::string error, bool fatal, std::string rule = {});

}  // namespace d2k
