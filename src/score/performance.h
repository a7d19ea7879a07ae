#pragma once
/// The one conversion from what the timer measured (measure::MeasureResult) to the trace's
/// performance record (report/trace.h Performance): seconds to microseconds, the timer's
/// diagnostics, the tripwires that fired.
#include "measure/timer.h"
#include "report/trace.h"

namespace d2k::score {

Performance performance_record(const measure::MeasureResult& r);

}  // namespace d2k::score
