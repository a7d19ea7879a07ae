#pragma once
/// Both-ways tolerance tests (docs/task-format.md, "Deriving a tolerance"): a task's own
/// workloads, inputs drawn by its own generators, the golden from its built reference.cpp, and
/// the verdict of the engine's judge under the task's own comparison rules. A test emulates a
/// cheaper variant of the computation on the host and asserts that the judge rejects it, and an
/// honest emulation at the stated precision that the judge accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/task_loader.h"
#include "core/workload.h"
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

/// A Case for each of `workloads`, all drawn with `seed` (e.g. a suite's check workloads, or hidden draws).
inline std::vector<Case> make_cases(const Task& t, const LoadedImpl& reference, const std::vector<Workload>& workloads,
                                    std::uint64_t seed) {
  std::vector<Case> out;
  out.reserve(workloads.size());
  for (const Workload& w : workloads) out.push_back(make_case(t, reference, w, seed));
  return out;
}

inline LoadedImpl load_reference(const std::string& task) {
  return load_impl(std::filesystem::path(D2K_BINARY_DIR) / "impl" / task / "reference.so");
}

/// The fixture every tolerance suite shares (CRTP): SetUpTestSuite loads the task named
/// Derived::kTask, its built reference and a Case for each check workload, then for each of
/// Derived::extra_workloads(task) (a static function, e.g. hidden draws or long rows; none where
/// the suite lacks one), drawn with Derived::kSeed (1 where the suite names none);
/// TearDownTestSuite frees them. The suite's tests read task(), ref_ and cases_, and find a case
/// by its uuid's suffix after "<task>-".
template <class Derived>
class TaskSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    task_ = new Task(load_pilot(Derived::kTask));
    ref_ = new LoadedImpl(load_reference(Derived::kTask));
    cases_ = new std::vector<Case>(make_cases(*task_, *ref_, check_workloads(*task_, extra()), seed()));
  }
  static void TearDownTestSuite() {
    delete cases_;
    delete ref_;
    delete task_;
    cases_ = nullptr;
    ref_ = nullptr;
    task_ = nullptr;
  }
  static const Task& task() { return *task_; }
  static const Case& by_suffix(const std::string& suffix) {
    const std::string uuid = std::string(Derived::kTask) + "-" + suffix;
    for (const Case& c : *cases_)
      if (c.plan.workload.uuid == uuid) return c;
    throw std::runtime_error("no check workload " + uuid);
  }

  inline static Task* task_ = nullptr;
  inline static LoadedImpl* ref_ = nullptr;
  inline static std::vector<Case>* cases_ = nullptr;

 private:
  template <class D>
  static auto seed_of(int) -> decltype(D::kSeed, std::uint64_t{}) { return D::kSeed; }
  template <class D>
  static std::uint64_t seed_of(long) { return 1; }
  static std::uint64_t seed() { return seed_of<Derived>(0); }
  template <class D>
  static auto extra_of(int) -> decltype(D::extra_workloads(*task_)) { return D::extra_workloads(*task_); }
  template <class D>
  static std::vector<Workload> extra_of(long) { return {}; }
  static std::vector<Workload> extra() { return extra_of<Derived>(0); }
};

/// The judge's verdict on one run of a variant.
inline OutputsVerdict judge(const Case& c, const std::vector<HostTensor>& run) {
  return judge_single(c.plan, c.expected, run);
}

// bf16 and fp16 arithmetic as a GPU computes it: fp32 values rounded to the narrow type. (Local:
// data/dtype_bits.h's namespace d2k::data cannot meet solution.h's d2k::data<T>() in one file.)

/// v rounded to `sig` significant bits, ties to even, with the spacing of subnormals below 2^emin
/// and infinity from `overflow` up (the first value that rounds past the largest finite one).
inline float round_to(float v, int sig, int emin, double overflow) {
  if (!std::isfinite(v) || v == 0.0f) return v;
  int e = 0;
  std::frexp(static_cast<double>(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int ulp_exp = std::max(e - sig, emin - sig + 1);
  const double q = std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(v), -ulp_exp)), ulp_exp);
  return std::fabs(q) >= overflow ? std::copysign(INFINITY, v) : static_cast<float>(q);
}
/// Round to nearest even on the bits (finite values; overflow carries into infinity), as
/// __float2bfloat16_rn.
inline float bf16_rn(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline float f16_rn(float f) { return round_to(f, 11, -14, 65520.0); }
inline float bf16_rz(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u &= 0xFFFF0000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline float bf16_at(const HostTensor& t, std::int64_t i) {
  const std::uint32_t u = static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(t.data())[i]) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
/// Stores v (already a bf16 value, or rounded here to nearest even) as bf16 bits.
inline void set_bf16(HostTensor& t, std::int64_t i, float v) {
  const float r = bf16_rn(v);
  std::uint32_t u;
  std::memcpy(&u, &r, sizeof u);
  static_cast<std::uint16_t*>(t.data())[i] = static_cast<std::uint16_t>(u >> 16);
}

}  // namespace d2k::tolerance_test
