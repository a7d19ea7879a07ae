// Speedups, SOL scores and suite aggregates over a run's traces (score/suite.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "score/suite.h"

namespace d2k {
namespace {

Trace passed(const std::string& task, const std::string& target, const std::string& uuid, double us,
             double vs_naive, double score) {
  Trace t;
  t.task = task;
  t.target = target;
  t.workload_uuid = uuid;
  t.role = "bench";
  t.status = Status::PASSED;
  Performance p;
  p.timer = "cupti";
  p.median_us = us;
  p.rel_noise = 0.004;
  p.samples = 12;
  t.performance = p;
  Roofline r;
  r.t_sol_us = us / 2;
  r.pct_sol = 50;
  r.speedup_vs_naive = vs_naive;
  r.sol_score = score;
  t.roofline = r;
  return t;
}

TEST(Summary, GeomeanIsPerTaskThenAcrossTasksAndFailuresCount) {
  std::vector<Trace> ts{passed("a", "expert", "1", 1, 4.0, 0.9), passed("a", "expert", "2", 1, 1.0, 0.7),
                        passed("b", "expert", "1", 1, 8.0, 1.0)};
  Trace failed = passed("b", "expert", "2", 1, 100.0, 1.0);
  failed.status = Status::INCORRECT_NUMERICAL;
  ts.push_back(failed);
  ts.push_back(passed("a", "naive", "1", 1, 1.0, 0.5));  // other target: ignored
  SuiteSummary s = summarize(ts, "expert");
  EXPECT_EQ(s.records, 4);
  EXPECT_EQ(s.passed, 3);
  EXPECT_DOUBLE_EQ(s.pass_rate, 0.75);
  // task a: geomean(4,1)=2; task b: 8 -> geomean(2,8) = 4
  ASSERT_TRUE(s.geomean_speedup_vs_naive.has_value());
  EXPECT_NEAR(*s.geomean_speedup_vs_naive, 4.0, 1e-12);
  EXPECT_NEAR(*s.mean_sol_score, (0.9 + 0.7 + 1.0) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.fast_p.at(1.0), 0.75);  // the failure is not fast even at 100x
  EXPECT_DOUBLE_EQ(s.fast_p.at(2.0), 0.5);
}

TEST(Scores, SpeedupsAndSolScoreFromTheSameRun) {
  Trace naive = passed("a", "naive", "w", 100, 0, 0);
  Trace expert = passed("a", "expert", "w", 25, 0, 0);
  naive.roofline = Roofline{};
  naive.roofline->t_sol_us = 20;
  expert.roofline = Roofline{};
  expert.roofline->t_sol_us = 20;
  std::vector<Trace> ts{naive, expert};
  score_traces(ts);
  ASSERT_TRUE(ts[1].roofline->speedup_vs_naive);
  EXPECT_DOUBLE_EQ(*ts[1].roofline->speedup_vs_naive, 4.0);
  // S = 1 / (1 + (25 - 20) / (100 - 20))
  EXPECT_NEAR(*ts[1].roofline->sol_score, 1.0 / (1.0 + 5.0 / 80.0), 1e-12);
}

// Machine to machine (issue 12): lent H200s differ by 2-5 % for the same binaries. A candidate
// is scored only against a naive time taken on the same GPU.
TEST(Scores, NoSpeedupAgainstAnotherGpu) {
  Trace naive = passed("a", "naive", "w", 100, 0, 0);
  Trace expert = passed("a", "expert", "w", 25, 0, 0);
  expert.roofline->speedup_vs_naive.reset();
  expert.roofline->sol_score.reset();
  naive.environment["gpu"]["uuid"] = "GPU-aaaa";
  expert.environment["gpu"]["uuid"] = "GPU-bbbb";
  std::vector<Trace> ts{naive, expert};
  score_traces(ts);
  EXPECT_FALSE(ts[1].roofline->speedup_vs_naive);
  EXPECT_FALSE(ts[1].roofline->sol_score);
  ts[1].environment["gpu"]["uuid"] = "GPU-aaaa";
  score_traces(ts);
  EXPECT_TRUE(ts[1].roofline->speedup_vs_naive);
}

}  // namespace
}  // namespace d2k
