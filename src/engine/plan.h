#pragma once
/// A workload made concrete: every axis value, every tensor's shape, generator and comparison
/// rule after the workload's overrides, the scalars a call receives, and the cost model's numbers.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/task.h"

namespace d2k {

struct TensorPlan {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::int64_t numel = 0;
  std::size_t bytes = 0;
  GeneratorSpec gen;   ///< inputs
  CompareSpec cmp;     ///< outputs
  std::uint64_t stream_id = 0;  ///< generator stream of this input (from its name)
};

struct ScalarPlan {
  std::string name;
  bool is_float = false;
  std::int64_t i = 0;
  double f = 0;
};

struct WorkloadPlan {
  Workload workload;
  AxisValues axes;
  std::vector<TensorPlan> inputs, outputs;
  std::vector<ScalarPlan> scalars;       ///< axis values first, then task scalars
  std::map<std::string, double> flops;   ///< cost model evaluated
  double bytes = 0;
  std::size_t input_bytes() const;
  std::size_t output_bytes() const;
  const TensorPlan* find_input(const std::string& name) const;
};

/// Resolves `w` against `task`'s definition. Throws std::runtime_error naming the field on a
/// workload the definition cannot satisfy.
WorkloadPlan make_plan(const Task& task, const Workload& w);

struct GenRequest;
/// What the generators need to draw input `i` of `plan` from `seed` (host and device alike).
GenRequest gen_request(const WorkloadPlan& plan, std::size_t i, std::uint64_t seed);

}  // namespace d2k
