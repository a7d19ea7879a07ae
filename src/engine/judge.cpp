#include "engine/judge.h"

#include <fmt/format.h>

#include <cstring>

namespace d2k {

namespace {

/// Index of the first element that holds kPoisonA in run A and kPoisonB in run B, or -1.
/// `rows_limit` bounds the check for variable-size outputs (elements past it need no write).
std::int64_t first_unwritten(const HostTensor& a, const HostTensor& b, std::int64_t elems_limit) {
  const std::size_t es = dtype_size(a.dtype);
  std::vector<std::uint8_t> pa(es, kPoisonA), pb(es, kPoisonB);
  const auto* da = static_cast<const std::uint8_t*>(a.data());
  const auto* db = static_cast<const std::uint8_t*>(b.data());
  for (std::int64_t i = 0; i < elems_limit; ++i)
    if (std::memcmp(da + i * es, pa.data(), es) == 0 && std::memcmp(db + i * es, pb.data(), es) == 0) return i;
  return -1;
}

}  // namespace

OutputsVerdict judge_outputs(const WorkloadPlan& plan, const std::vector<HostTensor>& expected,
                             const std::vector<HostTensor>& run_a, const std::vector<HostTensor>& run_b) {
  OutputsVerdict v;
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    std::int64_t limit = run_a[i].numel();
    if (std::int64_t bad = first_unwritten(run_a[i], run_b[i], limit); bad >= 0) {
      v.status = Status::INCORRECT_WRITE;
      v.message = fmt::format("output {}: element {} was never written", plan.outputs[i].name, bad);
      return v;
    }
  }
  OutputsVerdict a = judge_single(plan, expected, run_a);
  if (a.status != Status::PASSED) return a;
  OutputsVerdict b = judge_single(plan, expected, run_b);
  if (b.status != Status::PASSED) {
    b.message = "second run: " + b.message;
    return b;
  }
  return a;
}

OutputsVerdict judge_single(const WorkloadPlan& plan, const std::vector<HostTensor>& expected,
                            const std::vector<HostTensor>& run) {
  OutputsVerdict v;
  v.status = Status::INCORRECT_NUMERICAL;
  v.message = "comparators not linked yet";
  return v;
}

}  // namespace d2k
