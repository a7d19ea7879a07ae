#include "engine/wire.h"

#include <stdexcept>

#include "core/dtype.h"

namespace d2k::wire {

using json = nlohmann::json;

json plan_to_json(const WorkloadPlan& p) {
  auto tensors = [](const std::vector<TensorPlan>& ts) {
    json a = json::array();
    for (auto& t : ts) a.push_back({{"name", t.name}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
    return a;
  };
  json scalars = json::array();
  for (auto& s : p.scalars) scalars.push_back({{"name", s.name}, {"is_float", s.is_float}, {"i", s.i}, {"f", s.f}});
  return {{"uuid", p.workload.uuid}, {"inputs", tensors(p.inputs)}, {"outputs", tensors(p.outputs)}, {"scalars", scalars}};
}

WorkloadPlan plan_from_json(const json& j) {
  WorkloadPlan p;
  p.workload.uuid = j.at("uuid").get<std::string>();
  auto tensors = [](const json& a) {
    std::vector<TensorPlan> ts;
    for (auto& t : a) {
      TensorPlan tp;
      tp.name = t.at("name").get<std::string>();
      auto dt = parse_dtype(t.at("dtype").get<std::string>());
      if (!dt) throw std::runtime_error("plan: unknown dtype " + t.at("dtype").get<std::string>());
      tp.dtype = *dt;
      tp.shape = t.at("shape").get<std::vector<std::int64_t>>();
      tp.numel = 1;
      for (auto d : tp.shape) tp.numel *= d;
      tp.bytes = static_cast<std::size_t>(tp.numel) * dtype_size(tp.dtype);
      ts.push_back(std::move(tp));
    }
    return ts;
  };
  p.inputs = tensors(j.at("inputs"));
  p.outputs = tensors(j.at("outputs"));
  for (auto& s : j.at("scalars")) p.scalars.push_back({s.at("name").get<std::string>(), s.at("is_float").get<bool>(),
                                                       s.at("i").get<std::int64_t>(), s.at("f").get<double>()});
  return p;
}

measure::MeasureOptions options_from_json(const json& j) {
  measure::MeasureOptions mo;
  from_json(j.at("stopping"), mo.stopping);
  mo.graph = j.value("graph", false);
  mo.graph_variants = j.value("graph_variants", std::size_t{1});
  return mo;
}

json options_to_json(const measure::MeasureOptions& mo) {
  json s;
  to_json(s, mo.stopping);
  return {{"stopping", s}, {"graph", mo.graph}, {"graph_variants", mo.graph_variants}};
}

json timed_to_json(const TimedOutcome& t) {
  return {{"type", reply::timed},
          {"performance", to_json(t.perf)},
          {"calls", t.calls},
          {"kernel_set_constant", t.kernel_set_constant},
          {"kernel_set_deviations", t.kernel_set_deviations},
          {"kernel_set_example", t.kernel_set_example},
          {"unjoined_samples", t.unjoined_samples},
          {"unjoined_detail", t.unjoined_detail},
          {"vendor_busy_s", t.vendor_busy_s},
          {"total_busy_s", t.total_busy_s},
          {"audited_event_median_s", t.audited_event_median_s},
          {"plain_event_median_s", t.plain_event_median_s},
          {"audited", t.audited},
          {"plain", t.plain},
          {"launch_offset_s", t.launch_offset_s}};
}

TimedOutcome timed_from_json(const json& j) {
  TimedOutcome t;
  t.perf = performance_from_json(j.at("performance"));
  t.calls = j.at("calls").get<std::size_t>();
  t.kernel_set_constant = j.value("kernel_set_constant", true);
  t.kernel_set_deviations = j.value("kernel_set_deviations", std::size_t{0});
  t.kernel_set_example = j.value("kernel_set_example", "");
  t.unjoined_samples = j.value("unjoined_samples", std::size_t{0});
  t.unjoined_detail = j.value("unjoined_detail", "");
  t.vendor_busy_s = j.value("vendor_busy_s", 0.0);
  t.total_busy_s = j.value("total_busy_s", 0.0);
  t.audited_event_median_s = j.value("audited_event_median_s", 0.0);
  t.plain_event_median_s = j.value("plain_event_median_s", 0.0);
  t.audited = j.value("audited", std::size_t{0});
  t.plain = j.value("plain", std::size_t{0});
  t.launch_offset_s = j.value("launch_offset_s", 0.0);
  return t;
}

}  // namespace d2k::wire
