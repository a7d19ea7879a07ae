#include "engine/timed_run.h"

#include <fmt/format.h>

#include "measure/kernel_origin.h"
#include "score/performance.h"

namespace d2k {

namespace {
bool vendor_origin(const std::string& origin) { return origin == "cublas" || origin == "cudnn" || origin == "torch"; }
}  // namespace

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
  t.perf = score::performance_record(r);
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
