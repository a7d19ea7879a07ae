// The timer's tripwires (issue 24) on synthetic summaries: the honest numbers measured on the
// H200 pass, the forged ones of the table fire.
#include <gtest/gtest.h>

#include <vector>

#include "measure/tripwires.h"

namespace d2k::measure {
namespace {

Summary around(double median, double rel_noise = 0.005, std::size_t n = 100) {
  Summary s;
  s.median = s.mean = median;
  s.rel_noise = rel_noise;
  s.n = n;
  return s;
}

TEST(Tripwires, TimerAuditGapPassesInstrumentationSlowdown) {
  // Naive rmsnorm 4096x4096: plain events 135.0 us, audited events 146.5 us (instrumentation).
  EXPECT_FALSE(timer_audit_gap(around(135.0e-6), around(146.5e-6)));
  // A copy: no instrumentation cost, equal medians.
  EXPECT_FALSE(timer_audit_gap(around(535.9e-6), around(535.8e-6)));
  // 3 us call with jitter.
  EXPECT_FALSE(timer_audit_gap(around(5.4e-6, 0.05), around(5.9e-6, 0.05)));
  // No samples on one side: nothing to compare.
  EXPECT_FALSE(timer_audit_gap(Summary{}, around(1e-3)));
  EXPECT_FALSE(timer_audit_gap(around(1e-3), Summary{}));
}

TEST(Tripwires, TimerAuditGapFiresOnShortenedPlainEvents) {
  // Issue 24: x0.8 on the non-audited samples of the rmsnorm expert (58.4 us honest).
  const auto v = timer_audit_gap(around(0.8 * 58.4e-6), around(58.9e-6));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "timer_audit_gap");
  EXPECT_NE(v->detail.find("below"), std::string::npos);
  // x0.5 at 128x7168 (22.85 us honest).
  EXPECT_TRUE(timer_audit_gap(around(0.5 * 22.85e-6, 0.02), around(23.3e-6, 0.02)));
  // x0.8 on a many-block kernel whose audits ran 10 % slow.
  EXPECT_TRUE(timer_audit_gap(around(0.8 * 135e-6), around(146.5e-6)));
}

TEST(Tripwires, NegativeLaunchOffset) {
  // Honest: +2.5 us.
  EXPECT_FALSE(negative_launch_offset(2.5e-6, around(132e-6)));
  // A little negative from timestamp conversion on a long call: within 5 %.
  EXPECT_FALSE(negative_launch_offset(-3e-6, around(1030e-6)));
  // Issue 24: every sample shortened, offsets -9.9 to -261 us.
  const auto v = negative_launch_offset(-9.9e-6, around(22e-6));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "negative_launch_offset");
  EXPECT_TRUE(negative_launch_offset(-261e-6, around(517e-6)));
  EXPECT_FALSE(negative_launch_offset(-261e-6, Summary{}));
}

TEST(Tripwires, AllRulesTogether) {
  EXPECT_TRUE(timer_tripwires(around(135e-6), around(146e-6), 2.5e-6, around(144e-6)).empty());
  const auto both = timer_tripwires(around(60e-6), around(146e-6), -50e-6, around(144e-6));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].rule, "timer_audit_gap");
  EXPECT_EQ(both[1].rule, "negative_launch_offset");
}

}  // namespace
}  // namespace d2k::measure
