#include <gtest/gtest.h>

#include <random>

#include "measure/error.h"
#include "measure/stopping.h"

#include <nlohmann/json.hpp>

using namespace d2k::measure;

namespace {

// Feeds samples from `gen` with `wall_per_sample` of wall time each until the rule stops or
// `limit` samples; returns the number of samples taken.
template <typename Gen>
std::size_t run(StoppingRule& rule, Gen gen, double wall_per_sample, std::size_t limit = 1000000) {
  double wall = 0;
  for (std::size_t i = 0; i < limit; ++i) {
    const double x = gen();
    rule.add(x);
    wall += wall_per_sample;
    if (rule.should_stop(wall)) return i + 1;
  }
  return limit;
}

}  // namespace

TEST(Stopping, QuietSequenceStopsOnNoiseAfterMinWallTime) {
  StoppingCriteria c;  // 10 samples, 0.5 s of wall time, 0.5%
  StoppingRule rule(c);
  std::mt19937 rng(1);
  std::normal_distribution<double> noise(0, 1e-6);  // 0.1% of a 1 ms sample
  // Each 1 ms sample costs 1.2 ms of wall time (flush, synchronisations): 0.5 s of wall time is
  // reached after ceil(0.5 / 1.2e-3) = 417 samples, before 0.5 s of measured time.
  const std::size_t n = run(rule, [&] { return 1e-3 + noise(rng); }, 1.2e-3);
  EXPECT_EQ(rule.reason(), StopReason::noise_target);
  EXPECT_GE(n, 416u);
  EXPECT_LE(n, 418u);
  EXPECT_LT(rule.total_s(), 0.5);
}

TEST(Stopping, QuietSequenceStopsOnNoiseAfterMinMeasuredTime) {
  StoppingCriteria c;
  c.min_time_wall = false;  // nvbench's rule: the samples themselves must add up to 0.5 s
  c.max_time_s = 1e9;
  StoppingRule rule(c);
  std::mt19937 rng(1);
  std::normal_distribution<double> noise(0, 1e-6);
  const std::size_t n = run(rule, [&] { return 1e-3 + noise(rng); }, 1.2e-3);
  EXPECT_EQ(rule.reason(), StopReason::noise_target);
  EXPECT_GE(rule.total_s(), 0.5);
  EXPECT_LE(n, 502u);
  EXPECT_GE(n, 499u);
}

TEST(Stopping, MinSamplesRespectedForLongSamples) {
  StoppingCriteria c;
  c.min_samples = 10;
  c.max_time_s = 1e9;  // the default cap (1 s) would end it first: caps are always obeyed
  StoppingRule rule(c);
  // 0.2 s each, identical: noise 0 and min time met after 3, but 10 samples are required.
  const std::size_t n = run(rule, [] { return 0.2; }, 0.2);
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(rule.reason(), StopReason::noise_target);
}

TEST(Stopping, MinTimeRespectedForTinySamples) {
  StoppingCriteria c;
  c.min_time_wall = false;
  c.max_samples = 1000000;
  c.max_time_s = 1e9;
  StoppingRule rule(c);
  // 2 us samples with no noise: must still run until 0.5 s of samples.
  const std::size_t n = run(rule, [] { return 2e-6; }, 1e-7);
  EXPECT_EQ(rule.reason(), StopReason::noise_target);
  EXPECT_GE(rule.total_s(), 0.5 - 1e-9);
  EXPECT_GE(n, 249999u);
}

TEST(Stopping, MinWallTimeBoundsTinySamples) {
  StoppingCriteria c;  // wall-time minimum (the default)
  c.max_samples = 1000000;
  StoppingRule rule(c);
  // 2 us samples, 100 us of wall time each: 0.5 s of wall time is 5000 samples, not 250000.
  const std::size_t n = run(rule, [] { return 2e-6; }, 1e-4);
  EXPECT_EQ(rule.reason(), StopReason::noise_target);
  EXPECT_GE(n, 4999u);
  EXPECT_LE(n, 5001u);
}

TEST(Stopping, DefaultsFitTheBenchBudget) {
  const StoppingCriteria c;
  EXPECT_EQ(c.min_samples, 10u);
  EXPECT_DOUBLE_EQ(c.min_time_s, 0.5);
  EXPECT_TRUE(c.min_time_wall);
  EXPECT_DOUBLE_EQ(c.max_noise, 0.005);
  // 15 target-workload pairs under the cap stay within 30 s with room for checks.
  EXPECT_LE(c.max_time_s * 15, 20.0);
  EXPECT_GE(c.max_time_s, c.min_time_s);
  // 5 ms samples drifting upwards (wall 5.5 ms each): the noise never settles, so the rule ends
  // on the cap, after the minimums.
  StoppingRule rule(c);
  std::size_t i = 0;
  const std::size_t n = run(rule, [&] { return 5e-3 * (1 + 0.002 * double(i++)); }, 5.5e-3);
  EXPECT_EQ(rule.reason(), StopReason::time_cap);
  EXPECT_GE(n, c.min_samples);
  EXPECT_LE(n * 5.5e-3, c.max_time_s + 5.5e-3);
}

TEST(Stopping, JsonRoundTripKeepsWallFlag) {
  StoppingCriteria c;
  c.min_time_wall = false;
  c.max_time_s = 2.5;
  nlohmann::json j = c;
  StoppingCriteria d;
  from_json(j, d);
  EXPECT_FALSE(d.min_time_wall);
  EXPECT_DOUBLE_EQ(d.max_time_s, 2.5);
  StoppingCriteria e;
  from_json(nlohmann::json{{"max_noise", 0.01}}, e);  // missing keys keep their defaults
  EXPECT_TRUE(e.min_time_wall);
  EXPECT_DOUBLE_EQ(e.max_noise, 0.01);
}

TEST(Stopping, NoisySequenceStopsWhenNoiseSettles) {
  StoppingCriteria c;
  c.min_time_wall = false;
  c.max_time_s = 1e9;
  c.max_samples = 1000000;
  StoppingRule rule(c);
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1e-4);  // 10% noise: never reaches 0.5%
  const std::size_t n = run(rule, [&] { return 1e-3 + noise(rng); }, 1.1e-3);
  EXPECT_EQ(rule.reason(), StopReason::noise_stable);
  EXPECT_GE(rule.total_s(), 0.5);
  EXPECT_GT(rule.noise(), c.max_noise);
  EXPECT_LT(n, 100000u);
  EXPECT_NE(rule.detail().find("settled"), std::string::npos);
}

TEST(Stopping, SettledNoiseNeedsAFullWindow) {
  // With no minimum time, a noisy sequence may stop as settled only once the window of noise
  // estimates is full (estimates start at the 2nd sample) and at a check point.
  StoppingCriteria c;
  c.min_time_s = 0;
  c.min_samples = 2;
  c.max_time_s = 1e9;
  StoppingRule rule(c);
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0, 2e-4);
  const std::size_t n = run(rule, [&] { return 1e-3 + noise(rng); }, 1e-3);
  EXPECT_EQ(rule.reason(), StopReason::noise_stable);
  EXPECT_GE(n, c.stable_window + 1);
  EXPECT_EQ(n % c.stable_check_every, 0u);
}

TEST(Stopping, TimeCapAlwaysRespected) {
  StoppingCriteria c;
  c.max_time_s = 2.0;
  StoppingRule rule(c);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0.5e-3, 5e-3);  // very noisy
  // Each sample costs 0.3 s of wall time: stops at the first check past 2 s.
  const std::size_t n = run(rule, [&] { return u(rng); }, 0.3);
  EXPECT_EQ(rule.reason(), StopReason::time_cap);
  EXPECT_EQ(n, 7u);  // 7 * 0.3 = 2.1 >= 2.0, and fewer than min_samples
}

TEST(Stopping, SampleCapRespected) {
  StoppingCriteria c;
  c.max_samples = 50;
  c.min_samples = 10;
  StoppingRule rule(c);
  const std::size_t n = run(rule, [] { return 1e-6; }, 1e-6);
  EXPECT_EQ(n, 50u);
  EXPECT_EQ(rule.reason(), StopReason::sample_cap);
}

TEST(Stopping, ValidateNamesField) {
  StoppingCriteria c;
  c.max_samples = 5;
  c.min_samples = 10;
  try {
    StoppingRule rule(c);
    FAIL() << "expected measure_error";
  } catch (const measure_error& e) {
    EXPECT_NE(std::string(e.what()).find("max_samples"), std::string::npos);
  }
  StoppingCriteria d;
  d.max_noise = 0;
  EXPECT_THROW(d.validate(), measure_error);
}

TEST(Stopping, ReasonNames) {
  EXPECT_EQ(to_string(StopReason::noise_target), "noise_target");
  EXPECT_EQ(to_string(StopReason::time_cap), "time_cap");
}
