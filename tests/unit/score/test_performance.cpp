// The one conversion from a measurement to the trace's performance record, and its JSON round
// trip (issue 10: settle_s was written in four files on its way to the trace).
#include <gtest/gtest.h>

#include "score/performance.h"

namespace d2k {
namespace {

TEST(PerformanceRecord, FromMeasurementAndBackThroughJson) {
  measure::MeasureResult r;
  r.timer = "events_corrected";
  r.time.median = 30.88e-6;
  r.time.n = 1234;
  r.events.median = 33.4e-6;
  r.launch_offset_s = 2.5e-6;
  r.settle_s = 0.12;
  r.audit_samples = 300;
  r.empty_samples = 1;
  r.kernel_set_incomplete_samples = 7;
  r.kernel_names = {"rmsnorm()"};
  r.violations = {{"timer_audit_gap", "the uninstrumented samples' event median ..."}};
  const Performance p = score::performance_record(r);
  EXPECT_DOUBLE_EQ(p.median_us, 30.88);
  EXPECT_DOUBLE_EQ(p.launch_offset_us, 2.5);
  EXPECT_EQ(p.samples, 1234);
  EXPECT_EQ(p.audit_incomplete, 7);
  ASSERT_EQ(p.violations.count("timer_audit_gap"), 1u);

  Performance withgraph = p;
  withgraph.graph_median_us = 29.5;
  const Performance back = performance_from_json(to_json(withgraph));
  EXPECT_DOUBLE_EQ(back.median_us, 30.88);
  EXPECT_DOUBLE_EQ(back.settle_s, 0.12);
  EXPECT_EQ(back.audit_incomplete, 7);
  EXPECT_EQ(back.kernels, p.kernels);
  EXPECT_EQ(back.violations, p.violations);
  ASSERT_TRUE(back.graph_median_us);
  EXPECT_DOUBLE_EQ(*back.graph_median_us, 29.5);
  // Fields missing from older traces keep their defaults.
  const Performance old = performance_from_json(nlohmann::json{{"median_us", 5.0}});
  EXPECT_DOUBLE_EQ(old.median_us, 5.0);
  EXPECT_DOUBLE_EQ(old.own_kernel_share, 1.0);
  EXPECT_FALSE(old.graph_median_us);
  EXPECT_TRUE(old.violations.empty());
}

}  // namespace
}  // namespace d2k
