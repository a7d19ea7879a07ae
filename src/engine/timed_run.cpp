#include "engine/timed_run.h"

#include <fmt/format.h>

#include "measure/kernel_origin.h"

namespace d2k {

namespace {
bool vendor_origin(const std::string& origin) { return origin == "cublas" || origin == "cudnn" || origin == "torch"; }
}  // namespace

Performance performance_from(const measure::MeasureResult& r) {
  Performance p;
  p.timer = r.timer;
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
  p.timer_note = r.timer_note;
  p.launch_offset_us = r.launch_offset_s * 1e6;
  p.audit_samples = static_cast<std::int64_t>(r.audit_samples);
  p.audit_empty = static_cast<std::int64_t>(r.empty_samples);
  p.kernels = r.kernel_names;
  p.own_kernel_share = r.own_share;
  return p;
}

TimedOutcome run_timer(measure::Timer& timer, DeviceCall& call, const std::vector<std::vector<void*>>& ins,
                       const std::vector<std::vector<void*>>& outs, measure::MeasureOptions mo,
                       const std::function<void(std::size_t call, std::size_t set)>& prepare, Stream& stream) {
  const std::size_t n = ins.size();
  TimedOutcome t;
  auto launch = [&](std::size_t i, cudaStream_t s) { call.launch(ins[i % n], outs[i % n], s); };
  mo.prepare = [&](std::size_t i) {
    prepare(i, i % n);
    ++t.calls;
  };
  measure::MeasureResult r = timer.measure(launch, stream.get(), mo);
  t.perf = performance_from(r);
  t.kernel_set_constant = r.kernel_set_constant;
  t.kernel_set_deviations = r.kernel_set_deviation_count;
  if (!r.kernel_set_deviations.empty()) {
    auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (auto& n : v) s += (s.empty() ? "" : ", ") + n.substr(0, 60);
      return "[" + s + "]";
    };
    t.kernel_set_example = fmt::format("sample {} of {} (empty samples {}): {} vs first {}", r.kernel_set_deviations[0].sample_index,
                                       r.time.n, r.empty_samples, names(r.kernel_set_deviations[0].names),
                                       names(r.kernel_names));
  }
  t.unjoined_samples = r.unjoined_samples;
  t.unjoined_detail = r.unjoined_example;
  for (auto& [origin, ot] : r.attribution) {
    t.total_busy_s += ot.busy_s;
    if (vendor_origin(origin)) t.vendor_busy_s += ot.busy_s;
  }
  return t;
}

CallOutcome failed(Status s, std::string error, bool fatal, std::string rule) {
  CallOutcome o;
  o.ok = false;
  o.status = s;
  o.error = std::move(error);
  o.fatal = fatal;
  o.rule = std::move(rule);
  return o;
}

}  // namespace d2k
