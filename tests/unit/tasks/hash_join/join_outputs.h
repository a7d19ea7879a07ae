#pragma once
// hash_join's outputs from the rows of a host-emulated join, shared by the task's tests: the
// (build payload, probe payload) pair columns in row order, and the row count.
#include <cstdint>
#include <utility>
#include <vector>

#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {

inline std::vector<HostTensor> join_outputs(const Case& c, const std::vector<std::pair<std::int32_t, std::int32_t>>& rows) {
  std::vector<HostTensor> outs = c.outputs();
  auto* ob = static_cast<std::int32_t*>(outs[c.out_index("out_build_payload")].data());
  auto* op = static_cast<std::int32_t*>(outs[c.out_index("out_probe_payload")].data());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ob[i] = rows[i].first;
    op[i] = rows[i].second;
  }
  *static_cast<std::int64_t*>(outs[c.out_index("count")].data()) = static_cast<std::int64_t>(rows.size());
  return outs;
}

}  // namespace d2k::tolerance_test
