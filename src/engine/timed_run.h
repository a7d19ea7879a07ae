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

/// A failed request's outcome.
CallOutcome failed(Status s, std::string error, bool fatal, std::string rule = {});

}  // namespace d2k
