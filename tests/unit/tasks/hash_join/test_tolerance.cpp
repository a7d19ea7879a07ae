// hash_join, rules checked both ways: the outputs are an exact multiset of (build payload, probe
// payload) pairs and their count. Any row order passes; a join that drops duplicate matches, one
// that misses the last probe rows, and one that pairs the right payloads with the wrong partners
// fail on every check workload.
#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "unit/tasks/hash_join/join_outputs.h"
#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {
namespace {

enum class Join {
  honest_reversed,   ///< every match, rows in reverse probe order (order is free)
  drop_duplicates,   ///< a build row joins at most once (a semi-join): repeated probe keys lost
  miss_last_rows,    ///< the probe loop stops short of the last 16 rows (an unhandled tail)
  shuffled_pairs,    ///< the right values in each column, the pairs broken (probe column rotated)
};

std::vector<HostTensor> run_variant(const Case& c, Join kind) {
  const std::int64_t R = c.axis("R"), S = c.axis("S");
  const auto* bk = static_cast<const std::int32_t*>(c.in("build_keys").data());
  const auto* bp = static_cast<const std::int32_t*>(c.in("build_payload").data());
  const auto* pk = static_cast<const std::int32_t*>(c.in("probe_keys").data());
  const auto* pp = static_cast<const std::int32_t*>(c.in("probe_payload").data());
  std::unordered_map<std::int32_t, std::int32_t> table;
  for (std::int64_t i = 0; i < R; ++i) table.emplace(bk[i], bp[i]);
  std::vector<std::pair<std::int32_t, std::int32_t>> rows;
  std::unordered_set<std::int32_t> used;
  const std::int64_t probe_end = kind == Join::miss_last_rows ? std::max<std::int64_t>(S - 16, 0) : S;
  for (std::int64_t i = 0; i < probe_end; ++i) {
    auto it = table.find(pk[i]);
    if (it == table.end()) continue;
    if (kind == Join::drop_duplicates && !used.insert(pk[i]).second) continue;
    rows.emplace_back(it->second, pp[i]);
  }
  if (kind == Join::honest_reversed) std::reverse(rows.begin(), rows.end());
  if (kind == Join::shuffled_pairs && rows.size() > 1) {
    const std::int32_t first = rows.front().second;
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) rows[i].second = rows[i + 1].second;
    rows.back().second = first;
  }
  return join_outputs(c, rows);
}

TEST(ToleranceHashJoin, CheaperJoinsFailOnEveryCheckWorkloadAndAnyRowOrderPasses) {
  const Task task = load_pilot("hash_join");
  const LoadedImpl ref = load_reference("hash_join");
  const struct {
    Join kind;
    const char* name;
  } variants[] = {{Join::honest_reversed, "honest, rows reversed"},
                  {Join::drop_duplicates, "drops duplicate matches"},
                  {Join::miss_last_rows, "misses the last 16 probe rows"},
                  {Join::shuffled_pairs, "pairs broken, columns right"}};
  for (const Workload& w : check_workloads(task)) {
    const Case c = make_case(task, ref, w, 0x5EED);
    for (const auto& v : variants) {
      const OutputsVerdict verdict = judge(c, run_variant(c, v.kind));
      if (v.kind == Join::honest_reversed)
        EXPECT_EQ(verdict.status, Status::PASSED) << v.name << " at " << w.uuid << ": " << verdict.message;
      else
        EXPECT_EQ(verdict.status, Status::INCORRECT_NUMERICAL) << v.name << " passes at " << w.uuid;
    }
  }
}

}  // namespace
}  // namespace d2k::tolerance_test
