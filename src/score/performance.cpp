#include "score/performance.h"

namespace d2k::score {

Performance performance_record(const measure::MeasureResult& r) {
  Performance p;
  p.timer = r.timer;
  p.timer_note = r.timer_note;
  p.launch_offset_us = r.launch_offset_s * 1e6;
  p.audit_samples = static_cast<std::int64_t>(r.audit_samples);
  p.audit_empty = static_cast<std::int64_t>(r.empty_samples);
  p.audit_incomplete = static_cast<std::int64_t>(r.kernel_set_incomplete_samples);
  p.median_us = r.time.median * 1e6;
  p.mean_us = r.time.mean * 1e6;
  p.min_us = r.time.min * 1e6;
  p.max_us = r.time.max * 1e6;
  p.p10_us = r.time.p10 * 1e6;
  p.p90_us = r.time.p90 * 1e6;
  p.rel_noise = r.time.rel_noise;
  p.samples = static_cast<std::int64_t>(r.time.n);
  p.total_s = r.wall_s;
  p.stop_reason = r.stop_detail;
  p.event_median_us = r.events.median * 1e6;
  p.sm_clock_min_mhz = r.clocks.sm_mhz_min;
  p.sm_clock_median_mhz = r.clocks.sm_mhz_median;
  p.throttle_reasons = r.clocks.reason_names;
  p.settle_s = r.settle_s;
  p.kernels = r.kernel_names;
  p.own_kernel_share = r.own_share;
  for (const auto& v : r.violations) p.violations[v.rule] = v.detail;
  return p;
}

}  // namespace d2k::score
