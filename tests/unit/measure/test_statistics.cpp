#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/statistics.h"

using namespace d2k::measure;

TEST(Statistics, EmptyGivesZeros) {
  const Summary s = summarize(std::vector<double>{});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.rel_noise, 0);
}

TEST(Statistics, SingleSample) {
  const Summary s = summarize(std::vector<double>{2.5e-6});
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.median, 2.5e-6);
  EXPECT_DOUBLE_EQ(s.mean, 2.5e-6);
  EXPECT_DOUBLE_EQ(s.min, 2.5e-6);
  EXPECT_DOUBLE_EQ(s.max, 2.5e-6);
  EXPECT_DOUBLE_EQ(s.p10, 2.5e-6);
  EXPECT_DOUBLE_EQ(s.p90, 2.5e-6);
  EXPECT_EQ(s.stdev, 0);
  EXPECT_EQ(s.rel_noise, 0);
  EXPECT_DOUBLE_EQ(s.total_s, 2.5e-6);
}

TEST(Statistics, KnownValuesUnsorted) {
  const std::vector<double> v = {7, 3, 10, 1, 5, 9, 2, 8, 4, 6};
  const Summary s = summarize(v);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.p10, 1.9, 1e-12);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.stdev, std::sqrt(82.5 / 9.0), 1e-12);
  EXPECT_NEAR(s.rel_noise, std::sqrt(82.5 / 9.0) / 5.5, 1e-12);
  EXPECT_DOUBLE_EQ(s.total_s, 55);
}

TEST(Statistics, OddCountMedianIsMiddle) {
  const Summary s = summarize(std::vector<double>{3, 1, 2});
  EXPECT_DOUBLE_EQ(s.median, 2);
}

TEST(Statistics, RunningStatsMatchesTwoPassOnLargeOffset) {
  // Welford must stay exact where a naive sum of squares would cancel catastrophically.
  RunningStats rs;
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) {
    const double x = 1e6 + (i % 7) * 1e-3;
    v.push_back(x);
    rs.add(x);
  }
  const Summary s = summarize(v);
  double mean = 0;
  for (double x : v) mean += x;
  mean /= v.size();
  double m2 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean);
  const double two_pass = std::sqrt(m2 / (v.size() - 1));
  EXPECT_NEAR(rs.stdev() / two_pass, 1.0, 1e-6);
  EXPECT_NEAR(s.stdev, rs.stdev(), 1e-12);
}

TEST(Statistics, JsonRoundTrip) {
  const Summary s = summarize(std::vector<double>{1e-3, 2e-3, 4e-3});
  nlohmann::json j = s;
  const Summary back = j.get<Summary>();
  EXPECT_DOUBLE_EQ(back.median, s.median);
  EXPECT_DOUBLE_EQ(back.stdev, s.stdev);
  EXPECT_EQ(back.n, 3u);
}

TEST(Statistics, NamedDurationsKeepFirstSeenOrderAndCap) {
  NamedDurations d(3);
  d.add("b", 2.0);
  d.add("a", 1.0);
  d.add("b", 4.0);
  d.add("b", 6.0);
  d.add("b", 100.0);  // past the cap of 3 kept per name: dropped from the summary
  const auto s = d.summaries();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "b");
  EXPECT_EQ(s[0].time.n, 3u);
  EXPECT_DOUBLE_EQ(s[0].time.median, 4.0);
  EXPECT_EQ(s[1].name, "a");
  EXPECT_DOUBLE_EQ(s[1].time.median, 1.0);
  EXPECT_TRUE(NamedDurations().empty());
}
