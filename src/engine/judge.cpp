#include "engine/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "check/compare.h"
#include "check/compare_device.h"
#include "core/cuda_util.h"
#include "engine/device_backend.h"

namespace d2k {

namespace {

OutputCheck to_check(const std::string& output, const CompareResult& r) {
  OutputCheck c;
  c.output = output;
  c.rule = r.rule;
  c.passed = r.passed;
  c.max_abs_error = r.max_abs_error;
  c.max_rel_error = r.max_rel_error;
  c.rel_l2 = std::isnan(r.rel_l2) ? 0 : r.rel_l2;
  c.mismatches = r.mismatches;
  c.first_bad_index = r.first_bad;
  c.message = r.message;
  return c;
}

std::size_t index_of(const WorkloadPlan& plan, const std::string& output) {
  for (std::size_t i = 0; i < plan.outputs.size(); ++i)
    if (plan.outputs[i].name == output) return i;
  throw std::runtime_error("compare: no output named '" + output + "'");
}

/// Elements of output `i` that must be written: for a multiset column only the reported rows.
std::int64_t must_write(const WorkloadPlan& plan, std::size_t i, const std::vector<HostTensor>& run) {
  const CompareSpec& c = plan.outputs[i].cmp;
  if (c.rule != "multiset" || c.count.empty()) return -1;
  const HostTensor& col = run[i];
  std::int64_t rows = std::clamp<std::int64_t>(read_count(run[index_of(plan, c.count)]), 0, col.shape.empty() ? 0 : col.shape[0]);
  return col.shape.empty() ? rows : rows * (col.numel() / std::max<std::int64_t>(col.shape[0], 1));
}

/// Row sets this large are compared on the GPU (a sort of 1e8 rows on the host takes minutes).
constexpr std::int64_t kDeviceMultisetRows = std::int64_t{1} << 20;

CompareResult multiset(const CompareSpec& spec, const std::vector<const HostTensor*>& e,
                       const std::vector<const HostTensor*>& a, std::int64_t ec, std::int64_t ac) {
  if (std::max(ec, ac) < kDeviceMultisetRows || cuda_device_count() == 0) return compare_multiset(spec, e, a, ec, ac);
  Stream stream;
  std::vector<DeviceBuffer> bufs;
  std::vector<DeviceTensorView> ev, av;
  auto up = [&](const HostTensor* t, std::vector<DeviceTensorView>& views) {
    bufs.emplace_back(t->nbytes());
    D2K_CUDA_CHECK(cudaMemcpyAsync(bufs.back().get(), t->data(), t->nbytes(), cudaMemcpyHostToDevice, stream.get()));
    views.push_back({bufs.back().get(), t->dtype, t->shape, t->name});
  };
  for (auto* t : e) up(t, ev);
  for (auto* t : a) up(t, av);
  return compare_multiset_device(spec, ev, av, ec, ac, stream.get());
}

}  // namespace

OutputsVerdict judge_outputs(const WorkloadPlan& plan, const std::vector<HostTensor>& expected,
                             const std::vector<HostTensor>& run_a, const std::vector<HostTensor>& run_b) {
  OutputsVerdict v;
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    const DType t = plan.outputs[i].dtype;
    WriteCheck w = check_written_two_runs(poison_from_byte(t, kPoisonA), run_a[i], poison_from_byte(t, kPoisonB),
                                          run_b[i], must_write(plan, i, run_a));
    if (w.unwritten > 0) {
      v.status = Status::INCORRECT_WRITE;
      v.message = fmt::format("output {}: {} element(s) never written, the first at index {}", plan.outputs[i].name,
                              w.unwritten, w.first);
      return v;
    }
  }
  OutputsVerdict a = judge_single(plan, expected, run_a);
  if (a.status != Status::PASSED) return a;
  // The second run must be right too: an implementation whose result depends on what the
  // output held before (or on a race) fails here.
  OutputsVerdict b = judge_single(plan, expected, run_b);
  if (b.status != Status::PASSED) b.message = "second run: " + b.message;
  return b.status != Status::PASSED ? b : a;
}

OutputsVerdict judge_single(const WorkloadPlan& plan, const std::vector<HostTensor>& expected,
                            const std::vector<HostTensor>& run) {
  OutputsVerdict v;
  std::map<std::string, std::vector<std::size_t>> groups;  // multiset group -> columns
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    const CompareSpec& spec = plan.outputs[i].cmp;
    if (spec.rule == "multiset") {
      groups[spec.group.empty() ? plan.outputs[i].name : spec.group].push_back(i);
      continue;
    }
    CompareResult r = compare(spec, expected[i], run[i]);
    v.checks.push_back(to_check(plan.outputs[i].name, r));
    if (!r.passed && v.status == Status::PASSED) {
      v.status = r.status == CheckStatus::incorrect_shape ? Status::INCORRECT_SHAPE : Status::INCORRECT_NUMERICAL;
      v.message = fmt::format("output {}: {}", plan.outputs[i].name, r.message);
    }
  }
  for (auto& [group, cols] : groups) {
    const CompareSpec& spec = plan.outputs[cols.front()].cmp;
    std::vector<const HostTensor*> e, a;
    for (auto i : cols) {
      e.push_back(&expected[i]);
      a.push_back(&run[i]);
    }
    std::int64_t ec = -1, ac = -1;
    if (!spec.count.empty()) {
      const std::size_t ci = index_of(plan, spec.count);
      ec = read_count(expected[ci]);
      ac = read_count(run[ci]);
    }
    CompareResult r = multiset(spec, e, a, ec, ac);
    v.checks.push_back(to_check(group, r));
    if (!r.passed && v.status == Status::PASSED) {
      v.status = r.status == CheckStatus::incorrect_shape ? Status::INCORRECT_SHAPE : Status::INCORRECT_NUMERICAL;
      v.message = fmt::format("rows of {}: {}", group, r.message);
    }
  }
  return v;
}

namespace {

DeviceTensorView view(const DeviceSet& set, const TensorPlan& t, std::size_t i) {
  return {set.bufs[i].get(), t.dtype, t.shape, t.name};
}

/// The count output of a multiset group, read back (a scalar).
std::int64_t device_count(const WorkloadPlan& plan, const DeviceSet& set, const std::string& count, cudaStream_t stream) {
  const std::size_t ci = index_of(plan, count);
  return read_count(download(view(set, plan.outputs[ci], ci), stream));
}

std::int64_t must_write_device(const WorkloadPlan& plan, std::size_t i, const DeviceSet& run, cudaStream_t stream) {
  const CompareSpec& c = plan.outputs[i].cmp;
  if (c.rule != "multiset" || c.count.empty()) return -1;
  const auto& shape = plan.outputs[i].shape;
  const std::int64_t rows0 = shape.empty() ? 0 : shape[0];
  const std::int64_t rows = std::clamp<std::int64_t>(device_count(plan, run, c.count, stream), 0, rows0);
  return shape.empty() ? rows : rows * (plan.outputs[i].numel / std::max<std::int64_t>(rows0, 1));
}

}  // namespace

OutputsVerdict judge_outputs_device(const WorkloadPlan& plan, const DeviceSet& expected, const DeviceSet& run_a,
                                    const DeviceSet& run_b, cudaStream_t stream) {
  OutputsVerdict v;
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    const TensorPlan& t = plan.outputs[i];
    WriteCheck w = check_written_two_runs_device(poison_from_byte(t.dtype, kPoisonA), view(run_a, t, i),
                                                 poison_from_byte(t.dtype, kPoisonB), view(run_b, t, i),
                                                 must_write_device(plan, i, run_a, stream), stream);
    if (w.unwritten > 0) {
      v.status = Status::INCORRECT_WRITE;
      v.message = fmt::format("output {}: {} element(s) never written, the first at index {}", t.name, w.unwritten, w.first);
      return v;
    }
  }
  OutputsVerdict a = judge_single_device(plan, expected, run_a, stream);
  if (a.status != Status::PASSED) return a;
  OutputsVerdict b = judge_single_device(plan, expected, run_b, stream);
  if (b.status != Status::PASSED) b.message = "second run: " + b.message;
  return b.status != Status::PASSED ? b : a;
}

OutputsVerdict judge_single_device(const WorkloadPlan& plan, const DeviceSet& expected, const DeviceSet& run,
                                   cudaStream_t stream) {
  OutputsVerdict v;
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    const TensorPlan& t = plan.outputs[i];
    if (t.cmp.rule == "multiset") {
      groups[t.cmp.group.empty() ? t.name : t.cmp.group].push_back(i);
      continue;
    }
    CompareResult r = compare_device(t.cmp, view(expected, t, i), view(run, t, i), stream);
    v.checks.push_back(to_check(t.name, r));
    if (!r.passed && v.status == Status::PASSED) {
      v.status = r.status == CheckStatus::incorrect_shape ? Status::INCORRECT_SHAPE : Status::INCORRECT_NUMERICAL;
      v.message = fmt::format("output {}: {}", t.name, r.message);
    }
  }
  for (auto& [group, cols] : groups) {
    const CompareSpec& spec = plan.outputs[cols.front()].cmp;
    std::vector<DeviceTensorView> e, a;
    for (auto i : cols) {
      e.push_back(view(expected, plan.outputs[i], i));
      a.push_back(view(run, plan.outputs[i], i));
    }
    std::int64_t ec = -1, ac = -1;
    if (!spec.count.empty()) {
      ec = device_count(plan, expected, spec.count, stream);
      ac = device_count(plan, run, spec.count, stream);
    }
    CompareResult r = compare_multiset_device(spec, e, a, ec, ac, stream);
    v.checks.push_back(to_check(group, r));
    if (!r.passed && v.status == Status::PASSED) {
      v.status = r.status == CheckStatus::incorrect_shape ? Status::INCORRECT_SHAPE : Status::INCORRECT_NUMERICAL;
      v.message = fmt::format("rows of {}: {}", group, r.message);
    }
  }
  return v;
}

}  // namespace d2k
