#include <gtest/gtest.h>

#include "measure/check.h"
#include "measure/roofline.h"

using namespace d2k::measure;

namespace {

Ceilings test_ceilings() {
  Ceilings c;
  c.device.name = "Test GPU";
  c.source = "calibrated";
  c.copy_bw = 4e12;
  c.peak = {{"bf16_tensor", 800e12}, {"fp32", 60e12}, {"tf32_tensor", 400e12}};
  c.l2_bytes = 50u << 20;
  return c;
}

}  // namespace

TEST(Roofline, MemoryBound) {
  CostInputs cost{{{"fp32", 5e9}}, 8e9};  // 2 ms of bytes, 83 us of FMA
  const SolTime s = sol_time(cost, test_ceilings());
  EXPECT_DOUBLE_EQ(s.memory_s, 2e-3);
  EXPECT_NEAR(s.compute_s.at("fp32"), 5e9 / 60e12, 1e-18);
  EXPECT_DOUBLE_EQ(s.t_sol_s, 2e-3);
  EXPECT_EQ(s.bound, "memory");
}

TEST(Roofline, ComputeBoundTakesTheSlowestUnit) {
  // 2*8192^3 bf16 FLOPs plus an fp32 epilogue; the tensor term dominates.
  const double f = 2.0 * 8192.0 * 8192.0 * 8192.0;
  CostInputs cost{{{"bf16_tensor", f}, {"fp32", 1e9}, {"tf32_tensor", 0}}, 3 * 8192.0 * 8192.0 * 2};
  const SolTime s = sol_time(cost, test_ceilings());
  EXPECT_EQ(s.bound, "bf16_tensor");
  EXPECT_NEAR(s.t_sol_s, f / 800e12, 1e-15);
  EXPECT_EQ(s.compute_s.count("tf32_tensor"), 0u);  // zero work: ignored
}

TEST(Roofline, UnknownUnitNamesTheUnit) {
  CostInputs cost{{{"fp8_tensor", 1e12}}, 0};
  try {
    (void)sol_time(cost, test_ceilings());
    FAIL() << "expected measure_error";
  } catch (const measure_error& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_tensor"), std::string::npos);
  }
}

TEST(Roofline, NegativeInputsRejected) {
  EXPECT_THROW(sol_time(CostInputs{{}, -1}, test_ceilings()), measure_error);
  EXPECT_THROW(sol_time(CostInputs{{{"fp32", -5}}, 1}, test_ceilings()), measure_error);
}

TEST(Roofline, PercentOfSol) {
  EXPECT_DOUBLE_EQ(percent_of_sol(4e-3, 2e-3), 50.0);
  EXPECT_THROW(percent_of_sol(0, 1e-3), measure_error);
}

TEST(SolScore, Anchors) {
  const double t_sol = 1e-3, t_naive = 5e-3;
  EXPECT_DOUBLE_EQ(sol_score(t_naive, t_sol, t_naive).score, 0.5);
  EXPECT_DOUBLE_EQ(sol_score(t_sol, t_sol, t_naive).score, 1.0);
  // Halfway between SOL and naive: 1 / (1 + 0.5).
  EXPECT_NEAR(sol_score(3e-3, t_sol, t_naive).score, 1.0 / 1.5, 1e-12);
  // Slower than naive: below 0.5, positive, decreasing.
  const double s9 = sol_score(9e-3, t_sol, t_naive).score;
  const double s20 = sol_score(20e-3, t_sol, t_naive).score;
  EXPECT_LT(s9, 0.5);
  EXPECT_LT(s20, s9);
  EXPECT_GT(s20, 0);
}

TEST(SolScore, BelowSolIsCappedAndFlagged) {
  const SolScore s = sol_score(0.5e-3, 1e-3, 5e-3);
  EXPECT_DOUBLE_EQ(s.score, 1.0);
  EXPECT_TRUE(s.below_sol);
  EXPECT_FALSE(s.degenerate);
}

TEST(SolScore, NaiveAtOrBelowSolIsDegenerate) {
  const SolScore at = sol_score(2e-3, 2e-3, 2e-3);
  EXPECT_TRUE(at.degenerate);
  EXPECT_DOUBLE_EQ(at.score, 0.5);  // the naive time still scores 0.5
  const SolScore faster = sol_score(1e-3, 3e-3, 2e-3);
  EXPECT_TRUE(faster.degenerate);
  EXPECT_NEAR(faster.score, 1.0 / 1.5, 1e-12);
  EXPECT_THROW(sol_score(1e-3, 1e-3, 0), measure_error);
}

TEST(Floor, HonestKernelsNotFlagged) {
  const Ceilings c = test_ceilings();
  CostInputs cost{{}, 8e9};  // 2 ms at copy bandwidth
  // A read-heavy kernel 10% faster than copy bandwidth is honest.
  const FloorVerdict v = physical_floor_check(0.9 * 2e-3, cost, c);
  EXPECT_FALSE(v.below_floor) << v.message;
  EXPECT_NEAR(v.t_sol_s, 2e-3, 1e-15);
  // Right at SOL and slower: not flagged.
  EXPECT_FALSE(physical_floor_check(2e-3, cost, c).below_floor);
  EXPECT_FALSE(physical_floor_check(5e-3, cost, c).below_floor);
}

TEST(Floor, FarBelowSolFlagged) {
  const Ceilings c = test_ceilings();
  CostInputs cost{{}, 8e9};
  const FloorVerdict v = physical_floor_check(0.5e-3, cost, c);
  EXPECT_TRUE(v.below_floor);
  EXPECT_NEAR(v.ratio, 0.25, 1e-12);
  EXPECT_NE(v.message.find("below"), std::string::npos);
  // Compute-bound floors work the same way.
  CostInputs gemm{{{"bf16_tensor", 800e12 * 1e-3}}, 1e6};
  EXPECT_TRUE(physical_floor_check(0.3e-3, gemm, c).below_floor);
  EXPECT_FALSE(physical_floor_check(0.95e-3, gemm, c).below_floor);
}

TEST(Floor, SmallWorkingSetHasNoMemoryFloor) {
  // 40 MB fits the 50 MiB L2: its writes need not reach DRAM inside the span.
  const Ceilings c = test_ceilings();
  CostInputs cost{{}, 40e6};
  const FloorVerdict v = physical_floor_check(1e-9, cost, c);
  EXPECT_FALSE(v.below_floor);
  EXPECT_EQ(v.floor_s, 0);
  // Without the L2 discount the same time is flagged.
  FloorOptions strict;
  strict.discount_l2 = false;
  EXPECT_TRUE(physical_floor_check(1e-9, cost, c, strict).below_floor);
}

TEST(Floor, MarginValidated) {
  FloorOptions o;
  o.margin = 1.0;
  EXPECT_THROW(physical_floor_check(1e-3, CostInputs{{}, 1e9}, test_ceilings(), o), measure_error);
}
