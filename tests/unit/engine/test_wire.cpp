// The worker protocol (engine/wire.h): what crosses the channel comes back as it was sent.
#include <gtest/gtest.h>

#include <set>

#include "engine/wire.h"

namespace d2k {
namespace {

TEST(Wire, TimedOutcomeRoundTripKeepsTheTripwireFields) {
  TimedOutcome t;
  t.calls = 321;
  t.perf.median_us = 22.85;
  t.audited_event_median_s = 24e-6;
  t.plain_event_median_s = 12e-6;
  t.audited = 40;
  t.plain = 120;
  t.launch_offset_s = -9.9e-6;
  t.unjoined_samples = 2;
  t.unjoined_detail = "side";
  const nlohmann::json j = wire::timed_to_json(t);
  EXPECT_EQ(j.at("type"), wire::reply::timed);
  const TimedOutcome u = wire::timed_from_json(j);
  EXPECT_EQ(u.calls, 321u);
  EXPECT_DOUBLE_EQ(u.perf.median_us, 22.85);
  EXPECT_DOUBLE_EQ(u.audited_event_median_s, 24e-6);
  EXPECT_DOUBLE_EQ(u.plain_event_median_s, 12e-6);
  EXPECT_EQ(u.audited, 40u);
  EXPECT_EQ(u.plain, 120u);
  EXPECT_DOUBLE_EQ(u.launch_offset_s, -9.9e-6);
  EXPECT_EQ(u.unjoined_samples, 2u);
}

TEST(Wire, PlanRoundTrip) {
  WorkloadPlan p;
  p.workload.uuid = "w";
  TensorPlan t;
  t.name = "x";
  t.dtype = DType::bf16;
  t.shape = {128, 7168};
  p.inputs.push_back(t);
  p.outputs.push_back(t);
  p.scalars.push_back({"eps", true, 0, 1e-6});
  const WorkloadPlan q = wire::plan_from_json(wire::plan_to_json(p));
  EXPECT_EQ(q.workload.uuid, "w");
  ASSERT_EQ(q.inputs.size(), 1u);
  EXPECT_EQ(q.inputs[0].numel, 128 * 7168);
  EXPECT_EQ(q.inputs[0].bytes, std::size_t(128) * 7168 * 2);
  ASSERT_EQ(q.scalars.size(), 1u);
  EXPECT_DOUBLE_EQ(q.scalars[0].f, 1e-6);
}

TEST(Wire, MessageNamesAreDistinctWithinADirection) {
  const std::vector<std::string> cmds = {wire::cmd::map, wire::cmd::plan, wire::cmd::call, wire::cmd::time,
                                         wire::cmd::prepared, wire::cmd::batch, wire::cmd::batch_run, wire::cmd::exit};
  const std::set<std::string> unique(cmds.begin(), cmds.end());
  EXPECT_EQ(unique.size(), cmds.size());
}

}  // namespace
}  // namespace d2k
