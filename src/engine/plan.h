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

/// `plan` with every output's tolerance as it applies against naive's outputs rather than the
/// golden's (bench workloads, timed-sample re-checks, the parent's batch): naive's outputs are
/// themselves within the tolerance of the exact result, so by the triangle inequality an honest
/// result is within twice it of naive's. allclose (atol, rtol, max_error_cap), ulp (ulps,
/// max_ulps, atol) and rel_l2 (tol) double; exact, multiset and topk stay as they are. (A bench
/// row's longest reduction is longer than any check row's: naive's sequential fp32 sum of a
/// power-law row of a million entries is already 1.5e-4 of spmv_csr's 5e-4 off the exact sum.)
WorkloadPlan against_naive(WorkloadPlan plan);

struct GenRequest;
/// What the generators need to draw input `i` of `plan` from `seed` (host and device alike).
GenRequest gen_request(const WorkloadPlan& plan, std::size_t i, std::uint64_t seed);

}  // namespace d2k
