// against_naive: the tolerances that apply when the expected outputs are naive's (engine/plan.h).
#include <gtest/gtest.h>

#include "engine/plan.h"

namespace d2k {
namespace {

TensorPlan output(const std::string& rule) {
  TensorPlan t;
  t.name = rule;
  t.cmp.rule = rule;
  return t;
}

TEST(AgainstNaive, TolerancesDoubleByTheTriangleInequality) {
  WorkloadPlan p;
  TensorPlan a = output("allclose");
  a.cmp.atol = 1e-6;
  a.cmp.rtol = 5e-4;
  a.cmp.matched_ratio = 0.999;
  a.cmp.max_error_cap = 1;
  TensorPlan u = output("ulp");
  u.cmp.ulps = 2;
  u.cmp.max_ulps = 4;
  u.cmp.atol = 2e-8;
  TensorPlan l = output("rel_l2");
  l.cmp.tol = 1e-3;
  TensorPlan off = output("allclose");  // max_error_cap 0 is "off" and stays off
  off.cmp.rtol = 1e-3;
  p.outputs = {a, u, l, off};
  const WorkloadPlan n = against_naive(p);
  EXPECT_DOUBLE_EQ(n.outputs[0].cmp.atol, 2e-6);
  EXPECT_DOUBLE_EQ(n.outputs[0].cmp.rtol, 1e-3);
  EXPECT_DOUBLE_EQ(n.outputs[0].cmp.matched_ratio, 0.999);  // a share of elements, not a distance
  EXPECT_DOUBLE_EQ(n.outputs[0].cmp.max_error_cap, 2);
  EXPECT_DOUBLE_EQ(n.outputs[1].cmp.ulps, 4);
  EXPECT_DOUBLE_EQ(n.outputs[1].cmp.max_ulps, 8);
  EXPECT_DOUBLE_EQ(n.outputs[1].cmp.atol, 4e-8);
  EXPECT_DOUBLE_EQ(n.outputs[2].cmp.tol, 2e-3);
  EXPECT_DOUBLE_EQ(n.outputs[3].cmp.max_error_cap, 0);
  // The plan judged against the golden keeps its own tolerances.
  EXPECT_DOUBLE_EQ(p.outputs[0].cmp.rtol, 5e-4);
}

TEST(AgainstNaive, ExactAndSetRulesStayExact) {
  WorkloadPlan p;
  TensorPlan e = output("exact");
  TensorPlan u = output("ulp");
  u.cmp.max_ulps = -1;  // off stays off
  u.cmp.ulps = 1;
  p.outputs = {e, u};
  const WorkloadPlan n = against_naive(p);
  EXPECT_EQ(n.outputs[0].cmp.rule, "exact");
  EXPECT_DOUBLE_EQ(n.outputs[0].cmp.atol, 0);
  EXPECT_DOUBLE_EQ(n.outputs[1].cmp.max_ulps, -1);
}

}  // namespace
}  // namespace d2k
