#include "engine/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

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

// ---- Reading one output of a view ----

DeviceTensorView device_view(const OutputsView& v, const TensorPlan& t, std::size_t i) {
  return {v.device()->bufs[i].get(), t.dtype, t.shape, t.name};
}

/// Output `i` of `v` on the host: a reference to a host view's tensor, or a copy of a device one.
class HostOutput {
 public:
  HostOutput(const WorkloadPlan& plan, const OutputsView& v, std::size_t i) {
    if (v.host()) ref_ = &(*v.host())[i];
    else copy_ = download(device_view(v, plan.outputs[i], i), v.stream());
  }
  const HostTensor& get() const { return ref_ ? *ref_ : *copy_; }

 private:
  const HostTensor* ref_ = nullptr;
  std::optional<HostTensor> copy_;
};

bool both_on_device(const OutputsView& a, const OutputsView& b) { return a.device() && b.device(); }

std::int64_t count_of(const WorkloadPlan& plan, const OutputsView& v, const std::string& count) {
  const std::size_t ci = index_of(plan, count);
  return read_count(HostOutput(plan, v, ci).get());
}

/// An output whose valid rows are the first `count` (multiset, or exact with a count): the rows
/// past the count are capacity, never read.
bool has_row_count(const CompareSpec& c) { return (c.rule == "multiset" || c.rule == "exact") && !c.count.empty(); }

/// Elements of output `i` that must be written: for an output with a row count only the reported rows.
std::int64_t must_write(const WorkloadPlan& plan, std::size_t i, const OutputsView& run) {
  const CompareSpec& c = plan.outputs[i].cmp;
  if (!has_row_count(c)) return -1;
  const auto& shape = plan.outputs[i].shape;
  const std::int64_t rows0 = shape.empty() ? 0 : shape[0];
  const std::int64_t rows = std::clamp<std::int64_t>(count_of(plan, run, c.count), 0, rows0);
  return shape.empty() ? rows : rows * (plan.outputs[i].numel / std::max<std::int64_t>(rows0, 1));
}

WriteCheck unwritten(const WorkloadPlan& plan, std::size_t i, const OutputsView& a, const OutputsView& b) {
  const TensorPlan& t = plan.outputs[i];
  const PoisonPattern pa = poison_from_byte(t.dtype, kPoisonA), pb = poison_from_byte(t.dtype, kPoisonB);
  const std::int64_t limit = must_write(plan, i, a);
  if (both_on_device(a, b))
    return check_written_two_runs_device(pa, device_view(a, t, i), pb, device_view(b, t, i), limit, a.stream());
  return check_written_two_runs(pa, HostOutput(plan, a, i).get(), pb, HostOutput(plan, b, i).get(), limit);
}

// ---- Comparing ----

/// The first `rows` rows of a host tensor (a copy: host outputs are small check workloads).
HostTensor first_rows(const HostTensor& t, std::int64_t rows) {
  std::vector<std::int64_t> shape = t.shape;
  const std::int64_t rows0 = shape.empty() ? 1 : shape[0];
  if (!shape.empty()) shape[0] = rows;
  HostTensor r(t.name, t.dtype, shape);
  std::memcpy(r.data(), t.data(), rows0 > 0 ? t.nbytes() / rows0 * rows : 0);
  return r;
}

/// exact with a count: the rows are ordered, so the first `count` rows are compared element by
/// element, in place (no sort); the counts must agree (the count output has its own rule too,
/// but a column must not pass on rows the other side does not have).
CompareResult compare_counted_rows(const WorkloadPlan& plan, std::size_t i, const OutputsView& e, const OutputsView& a) {
  const TensorPlan& t = plan.outputs[i];
  const std::int64_t rows0 = t.shape.empty() ? 1 : t.shape[0];
  const std::int64_t ec = count_of(plan, e, t.cmp.count), ac = count_of(plan, a, t.cmp.count);
  if (ec != ac || ec < 0 || ec > rows0) {
    CompareResult r;
    r.rule = t.cmp.rule;
    r.passed = false;
    r.status = CheckStatus::incorrect_numerical;
    r.message = fmt::format("exact: {} row(s) reported by '{}', {} expected (capacity {})", ac, t.cmp.count, ec, rows0);
    return r;
  }
  if (both_on_device(e, a)) {
    DeviceTensorView ev = device_view(e, t, i), av = device_view(a, t, i);
    if (!ev.shape.empty()) ev.shape[0] = av.shape[0] = ec;
    return compare_device(t.cmp, ev, av, a.stream());
  }
  return compare(t.cmp, first_rows(HostOutput(plan, e, i).get(), ec), first_rows(HostOutput(plan, a, i).get(), ec));
}

/// topk with a values output: each side's values ([rows, k], the scores of its own indices) let
/// an index that ties with the k-th expected value pass (compare_topk). Without them every tie
/// would have to be broken as the reference breaks it.
CompareResult compare_topk_output(const WorkloadPlan& plan, std::size_t i, const OutputsView& e, const OutputsView& a) {
  const TensorPlan& t = plan.outputs[i];
  CompareOptions opt;
  if (!t.cmp.count.empty()) {
    opt.expected_rows = count_of(plan, e, t.cmp.count);
    opt.actual_rows = count_of(plan, a, t.cmp.count);
  }
  std::optional<HostOutput> ev, av;
  if (!t.cmp.values.empty()) {
    const std::size_t vi = index_of(plan, t.cmp.values);
    opt.expected_values = &ev.emplace(plan, e, vi).get();
    opt.actual_values = &av.emplace(plan, a, vi).get();
  }
  return compare(t.cmp, HostOutput(plan, e, i).get(), HostOutput(plan, a, i).get(), opt);
}

CompareResult compare_output(const WorkloadPlan& plan, std::size_t i, const OutputsView& e, const OutputsView& a) {
  const TensorPlan& t = plan.outputs[i];
  if (has_row_count(t.cmp)) return compare_counted_rows(plan, i, e, a);
  if (t.cmp.rule == "topk") return compare_topk_output(plan, i, e, a);
  if (both_on_device(e, a)) return compare_device(t.cmp, device_view(e, t, i), device_view(a, t, i), a.stream());
  return compare(t.cmp, HostOutput(plan, e, i).get(), HostOutput(plan, a, i).get());
}

/// Row sets this large are compared on the GPU (a sort of 1e8 rows on the host takes minutes).
constexpr std::int64_t kDeviceMultisetRows = std::int64_t{1} << 20;

CompareResult multiset_on_host(const CompareSpec& spec, const std::vector<const HostTensor*>& e,
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

CompareResult compare_group(const WorkloadPlan& plan, const std::vector<std::size_t>& cols, const OutputsView& e,
                            const OutputsView& a) {
  const CompareSpec& spec = plan.outputs[cols.front()].cmp;
  std::int64_t ec = -1, ac = -1;
  if (!spec.count.empty()) {
    ec = count_of(plan, e, spec.count);
    ac = count_of(plan, a, spec.count);
  }
  if (both_on_device(e, a)) {
    std::vector<DeviceTensorView> ev, av;
    for (auto i : cols) {
      ev.push_back(device_view(e, plan.outputs[i], i));
      av.push_back(device_view(a, plan.outputs[i], i));
    }
    return compare_multiset_device(spec, ev, av, ec, ac, a.stream());
  }
  std::vector<HostOutput> eh, ah;
  eh.reserve(cols.size());
  ah.reserve(cols.size());
  std::vector<const HostTensor*> ep, ap;
  for (auto i : cols) {
    ep.push_back(&eh.emplace_back(plan, e, i).get());
    ap.push_back(&ah.emplace_back(plan, a, i).get());
  }
  return multiset_on_host(spec, ep, ap, ec, ac);
}

/// Records one comparison of `name` (an output, or a multiset group: `what` says which); the
/// first failure sets the verdict.
void note(OutputsVerdict& v, const std::string& name, const char* what, const CompareResult& r) {
  v.checks.push_back(to_check(name, r));
  if (r.passed || v.status != Status::PASSED) return;
  v.status = r.status == CheckStatus::incorrect_shape ? Status::INCORRECT_SHAPE : Status::INCORRECT_NUMERICAL;
  v.message = fmt::format("{} {}: {}", what, name, r.message);
}

}  // namespace

OutputsVerdict judge_outputs(const WorkloadPlan& plan, const OutputsView& expected, const OutputsView& run_a,
                             const OutputsView& run_b) {
  OutputsVerdict v;
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    const WriteCheck w = unwritten(plan, i, run_a, run_b);
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

OutputsVerdict judge_single(const WorkloadPlan& plan, const OutputsView& expected, const OutputsView& run) {
  OutputsVerdict v;
  std::map<std::string, std::vector<std::size_t>> groups;  // multiset group -> columns
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    const TensorPlan& t = plan.outputs[i];
    if (t.cmp.rule == "multiset") groups[t.cmp.group.empty() ? t.name : t.cmp.group].push_back(i);
    else note(v, t.name, "output", compare_output(plan, i, expected, run));
  }
  for (auto& [group, cols] : groups) note(v, group, "rows of", compare_group(plan, cols, expected, run));
  return v;
}

}  // namespace d2k
