#include "engine/plan.h"

#include <stdexcept>

#include "core/workload.h"
#include "data/generators.h"

namespace d2k {

std::size_t WorkloadPlan::input_bytes() const {
  std::size_t n = 0;
  for (auto& t : inputs) n += t.bytes;
  return n;
}

std::size_t WorkloadPlan::output_bytes() const {
  std::size_t n = 0;
  for (auto& t : outputs) n += t.bytes;
  return n;
}

const TensorPlan* WorkloadPlan::find_input(const std::string& name) const {
  for (auto& t : inputs)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

// The phases of make_plan.

TensorPlan plan_tensor(const TensorSpec& s, const AxisValues& axes) {
  TensorPlan t;
  t.name = s.name;
  t.dtype = s.dtype;
  t.shape = resolve_shape(s, axes);
  t.numel = 1;
  for (auto d : t.shape) t.numel *= d;
  t.bytes = static_cast<std::size_t>(t.numel) * dtype_size(s.dtype);
  return t;
}

/// Inputs with their generator and random stream.
void plan_inputs(const Definition& def, const Workload& w, WorkloadPlan& p) {
  for (std::uint32_t i = 0; i < def.inputs.size(); ++i) {
    TensorPlan t = plan_tensor(def.inputs[i], p.axes);
    t.gen = effective_generator(def, w, t.name);
    t.stream_id = stream_id(t.name, i);
    p.inputs.push_back(std::move(t));
  }
}

/// Outputs with their comparison rule.
void plan_outputs(const Definition& def, const Workload& w, WorkloadPlan& p) {
  for (auto& s : def.outputs) {
    TensorPlan t = plan_tensor(s, p.axes);
    t.cmp = effective_compare(def, w, t.name);
    p.outputs.push_back(std::move(t));
  }
}

/// Scalars (every axis, then the definition's scalars) and the cost they give.
void plan_scalars_and_cost(const Definition& def, const Workload& w, WorkloadPlan& p) {
  for (auto& [name, v] : p.axes) p.scalars.push_back({name, false, v, static_cast<double>(v)});
  auto scalars = effective_scalars(def, w);
  for (auto& s : scalars) p.scalars.push_back(ScalarPlan{s.name, s.is_float, static_cast<std::int64_t>(s.value), s.value});
  CostAt cost = evaluate_cost(def, expr_env(p.axes, scalars));
  p.flops = cost.flops;
  p.bytes = cost.bytes;
}

}  // namespace

WorkloadPlan make_plan(const Task& task, const Workload& w) {
  WorkloadPlan p;
  p.workload = w;
  p.axes = resolve_axes(task.def, w);
  plan_inputs(task.def, w, p);
  plan_outputs(task.def, w, p);
  plan_scalars_and_cost(task.def, w, p);
  return p;
}

}  // namespace d2k

namespace d2k {

GenRequest gen_request(const WorkloadPlan& plan, std::size_t i, std::uint64_t seed) {
  const TensorPlan& t = plan.inputs.at(i);
  GenRequest r;
  r.spec = t.gen;
  r.dtype = t.dtype;
  r.count = t.numel;
  r.shape = t.shape;
  r.seed = seed;
  r.stream = t.stream_id;
  r.where = "inputs." + t.name + ".generator";
  if (auto dep = generator_dependency(t.gen)) {
    const TensorPlan* ref = plan.find_input(*dep);
    if (!ref) throw std::runtime_error(r.where + ": refers to unknown input '" + *dep + "'");
    r.ref = GenRef{ref->name, ref->gen, ref->stream_id, ref->numel, ref->shape.empty() ? ref->numel : ref->shape[0]};
  }
  return r;
}

WorkloadPlan against_naive(WorkloadPlan plan) {
  for (TensorPlan& t : plan.outputs) {
    CompareSpec& c = t.cmp;
    if (c.rule == "allclose") {
      c.atol *= 2;
      c.rtol *= 2;
      c.max_error_cap *= 2;  // 0 (off) stays off
    } else if (c.rule == "ulp") {
      c.ulps *= 2;
      c.atol *= 2;
      if (c.max_ulps >= 0) c.max_ulps *= 2;
    } else if (c.rule == "rel_l2") {
      c.tol *= 2;
    }
  }
  return plan;
}

}  // namespace d2k
