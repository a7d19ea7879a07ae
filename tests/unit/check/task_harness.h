#pragma once
/// Both-ways tolerance tests (docs/task-format.md, "Deriving a tolerance"): a task's own
/// workloads, inputs drawn by its own generators, the golden from its built reference.cpp, and
/// the verdict of the engine's judge under the task's own comparison rules. A test emulates a
/// cheaper variant of the computation on the host and asserts that the judge rejects it, and an
/// honest emulation at the stated precision that the judge accepts.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/loader.h"
#include "core/workload.h"
#include "data/dtype_bits.h"
#include "engine/host_backend.h"
#include "engine/judge.h"
#include "engine/plan.h"
#include "exec/loader.h"

namespace d2k::tolerance_test {

inline Task load_pilot(const std::string& name) {
  Diagnostics diag;
  Task t = load_task(std::filesystem::path(D2K_SOURCE_DIR) / "dataset" / name, diag);
  EXPECT_TRUE(diag.ok()) << diag.format();
  return t;
}

/// The check workloads of the task's workloads.jsonl, then `extra` (e.g. long rows).
inline std::vector<Workload> check_workloads(const Task& t, const std::vector<Workload>& extra = {}) {
  std::vector<Workload> out;
  for (const auto& w : t.workloads)
    if (w.role == WorkloadRole::check) out.push_back(w);
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

inline Workload shape(const std::string& uuid, std::map<std::string, std::int64_t> axes) {
  Workload w;
  w.uuid = uuid;
  w.role = WorkloadRole::check;
  w.axes = std::move(axes);
  return w;
}

/// One workload made concrete: plan, inputs from `seed`, and the golden outputs.
struct Case {
  WorkloadPlan plan;
  std::vector<HostTensor> inputs, expected;
  const HostTensor& in(const std::string& name) const {
    for (std::size_t i = 0; i < plan.inputs.size(); ++i)
      if (plan.inputs[i].name == name) return inputs[i];
    throw std::runtime_error("no input " + name);
  }
  std::int64_t axis(const std::string& name) const { return plan.axes.at(name); }
  /// Fresh output tensors shaped as the plan's (zero-filled).
  std::vector<HostTensor> outputs() const { return poisoned_outputs(plan, 0); }
  std::size_t out_index(const std::string& name) const {
    for (std::size_t i = 0; i < plan.outputs.size(); ++i)
      if (plan.outputs[i].name == name) return i;
    throw std::runtime_error("no output " + name);
  }
};

inline Case make_case(const Task& t, const LoadedImpl& reference, const Workload& w, std::uint64_t seed) {
  Case c;
  c.plan = make_plan(t, w);
  c.inputs = generate_inputs_host(c.plan, seed);
  c.expected = c.outputs();
  run_host(reference, c.plan, c.inputs, c.expected);
  return c;
}

inline LoadedImpl load_reference(const std::string& task) {
  return load_impl(std::filesystem::path(D2K_BINARY_DIR) / "impl" / task / "reference.so");
}

/// The judge's verdict on one run of a variant.
inline OutputsVerdict judge(const Case& c, const std::vector<HostTensor>& run) {
  return judge_single(c.plan, c.expected, run);
}

// bf16 and fp16 arithmetic as a GPU computes it: fp32 values rounded to the narrow type.
inline float bf16_rn(float f) { return data::bf16_bits_to_f32(data::f32_to_bf16_bits(f)); }
inline float bf16_rz(float f) { return data::float_of(data::bits_of_f(f) & 0xFFFF0000u); }
inline float f16_rn(float f) {
  return data::small_bits_to_f32(data::f32_to_small_bits(f, data::kF16), data::kF16);
}
inline float bf16_at(const HostTensor& t, std::int64_t i) {
  return data::bf16_bits_to_f32(static_cast<const std::uint16_t*>(t.data())[i]);
}
inline void set_bf16(HostTensor& t, std::int64_t i, float v) {
  static_cast<std::uint16_t*>(t.data())[i] = data::f32_to_bf16_bits(v);
}

}  // namespace d2k::tolerance_test
