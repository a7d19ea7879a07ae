// The rules table and each cheat check: every check fires on the pattern it names and stays
// quiet on an honest one; the table, docs/isolation.md and the corpus agree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/rules.h"

namespace d2k {
namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Rules, TableIsComplete) {
  std::set<std::string_view> names;
  for (const Rule& r : rules_table()) {
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate rule " << r.name;
    EXPECT_FALSE(r.meaning.empty()) << r.name;
    EXPECT_NE(r.status, Status::PASSED) << r.name;
  }
  for (const char* n : {"timer_cross_check", "batch_outputs", "timer_audit_gap", "negative_launch_offset", "stream_join",
                        "got_integrity", "out_of_bounds", "illegal_address"})
    EXPECT_NE(find_rule(n), nullptr) << n;
  EXPECT_THROW(violation("no_such_rule", "x"), std::logic_error);
  EXPECT_EQ(violation("out_of_bounds", "x").status, Status::INCORRECT_WRITE);
}

TEST(Rules, EveryRuleIsDocumentedAndShown) {
  const std::filesystem::path src = D2K_SOURCE_DIR;
  const std::string doc = read_text(src / "docs" / "isolation.md");
  ASSERT_FALSE(doc.empty());
  for (const Rule& r : rules_table()) {
    EXPECT_NE(doc.find("`" + std::string(r.name) + "`"), std::string::npos) << r.name << " is not in docs/isolation.md";
    const std::string_view by = r.shown_by;
    if (by.starts_with("unit:")) continue;
    EXPECT_TRUE(std::filesystem::is_directory(src / "tests" / "adversarial" / std::string(by)))
        << r.name << ": corpus case " << by << " does not exist";
  }
}

TEST(Rules, CorpusExpectationsNameRulesOfTheTable) {
  const std::filesystem::path dir = std::filesystem::path(D2K_SOURCE_DIR) / "tests" / "adversarial";
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto f = e.path() / "expect_run.json";
    if (!std::filesystem::exists(f)) continue;
    const std::string text = read_text(f);
    const auto k = text.find("\"rule\"");
    if (k == std::string::npos) continue;
    const auto a = text.find('"', text.find(':', k) + 1), b = text.find('"', a + 1);
    const std::string rule = text.substr(a + 1, b - a - 1);
    ++seen;
    EXPECT_NE(find_rule(rule), nullptr) << f << " expects rule '" << rule << "', which the table lacks";
  }
  EXPECT_GT(seen, 3);
}

TEST(Rules, ThreadsAfterCall) {
  EXPECT_FALSE(check_threads_after_call(5, 5));
  EXPECT_FALSE(check_threads_after_call(-1, 9));
  auto v = check_threads_after_call(5, 6);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "no_threads_after_call");
}

// Issue #14: the worker's thread counts are the candidate's to forge; the parent's own counts of
// the worker's group bound them (a forged report of no new thread does not hide one /proc shows).
TEST(Rules, ParentThreadCountsBoundTheWorkersReport) {
  using P = std::pair<int, int>;
  EXPECT_EQ(bounded_thread_counts(10, 10, 12, 12), P(10, 10));   // both flat: the report
  EXPECT_EQ(bounded_thread_counts(10, 10, 12, 13), P(12, 13));   // forged flat report, parent saw one more
  EXPECT_EQ(bounded_thread_counts(10, 12, 12, 13), P(10, 12));   // the report rose more: it stands
  EXPECT_EQ(bounded_thread_counts(10, 10, -1, 13), P(10, 10));   // no parent count: the report
  EXPECT_EQ(bounded_thread_counts(-1, 10, 12, 13), P(12, 13));   // no report: the parent's
  EXPECT_EQ(bounded_thread_counts(10, 10, 12, 11), P(10, 10));   // a thread ended: nothing to flag
  auto [before, after] = bounded_thread_counts(40, 40, 41, 42);
  EXPECT_TRUE(check_threads_after_call(before, after)) << "the parent's rise is flagged";
}

TEST(Rules, CanaryNamesTheBufferAndTheOffset) {
  std::vector<std::uint8_t> slack(4096, 0x5C);
  EXPECT_FALSE(check_canary("out", slack, 0x5C));
  slack[512] = 0;
  auto v = check_canary("outputs[0] 'out'", slack, 0x5C);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, Status::INCORRECT_WRITE);
  EXPECT_EQ(v->rule, "out_of_bounds");
  EXPECT_NE(v->message.find("'out'"), std::string::npos);
  EXPECT_NE(v->message.find("512 B"), std::string::npos);
}

TimerReport honest_report() {
  TimerReport r;
  r.median_s = 22.8e-6;
  r.audited_event_median_s = 24.0e-6;  // CUPTI adds a little to the samples it records
  r.plain_event_median_s = 23.5e-6;
  r.audited = 40;
  r.plain = 120;
  r.audit_samples = 40;
  r.launch_offset_s = 1.2e-6;
  return r;
}

TEST(Rules, AuditGapFiresOnForgeryOfPlainSamplesOnly) {
  EXPECT_FALSE(check_timer_audit_gap(honest_report()));
  TimerReport r = honest_report();
  r.plain_event_median_s = 0.5 * r.audited_event_median_s;  // x0.5 where CUPTI does not look
  auto v = check_timer_audit_gap(r);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "timer_audit_gap");
  TimerReport cupti_overhead = honest_report();
  cupti_overhead.audited_event_median_s = 14e-6;  // CUPTI's recording lengthens audited samples
  cupti_overhead.plain_event_median_s = 11e-6;
  EXPECT_FALSE(check_timer_audit_gap(cupti_overhead));
  r.plain = 3;  // too few samples to say
  EXPECT_FALSE(check_timer_audit_gap(r));
}

TEST(Rules, NegativeLaunchOffset) {
  EXPECT_FALSE(check_launch_offset(honest_report()));
  TimerReport r = honest_report();
  r.launch_offset_s = -0.5e-6;  // within the timestamp conversion's tolerance
  EXPECT_FALSE(check_launch_offset(r));
  r.launch_offset_s = -9.9e-6;  // the audit-aware forgery of issue #24
  auto v = check_launch_offset(r);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "negative_launch_offset");
  r.audit_samples = 0;  // no CUPTI: no offset measured
  EXPECT_FALSE(check_launch_offset(r));
}

TEST(Rules, StreamJoinFiresOnUnjoinedSamples) {
  EXPECT_FALSE(check_stream_join(honest_report()));
  TimerReport r = honest_report();
  r.unjoined_samples = 1;
  r.unjoined_detail = "side_kernel (latest end 7.8 us after the join, of 40 audit samples)";
  auto v = check_stream_join(r);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "stream_join");
  EXPECT_NE(v->message.find("side_kernel"), std::string::npos);
}

TEST(Rules, KernelSetNeedsRepeatedDeviations) {
  TimerReport r = honest_report();
  r.kernel_set_constant = false;
  r.kernel_set_deviations = 1;  // one CUPTI glitch
  EXPECT_FALSE(check_kernel_set(r));
  r.kernel_set_deviations = 2;
  EXPECT_TRUE(check_kernel_set(r));
}

// The H200 run of moe_grouped_gemm: naive's cuBLAS picked other GEMM kernels for the group sizes
// each call's fresh inputs drew (26 to 50 deviating samples): not a rule where the task says why.
TEST(Rules, KernelSetIsNotARuleWhereLaunchesFollowTheInputs) {
  TimerReport r = honest_report();
  r.kernel_set_constant = false;
  r.kernel_set_deviations = 50;
  EXPECT_TRUE(check_kernel_set(r, ""));
  EXPECT_FALSE(check_kernel_set(r, "group sizes pick the GEMM kernels"));
}

TEST(Rules, VendorKernels) {
  TimerReport r = honest_report();
  r.vendor_busy_s = 1e-3;
  r.total_busy_s = 2e-3;
  EXPECT_TRUE(check_vendor_kernels(r, false));
  EXPECT_FALSE(check_vendor_kernels(r, true));
}

TEST(Rules, BoundTimeTakesTheWorkerOnlyWithinTheBand) {
  ParentTiming p{0.2, 0.0, 10000};  // 20 us per call on the parent's clock
  TimeVerdict honest = bound_time(22.85e-6, p);  // cold median above the warm batch
  EXPECT_EQ(honest.source, "worker");
  EXPECT_DOUBLE_EQ(honest.time_s, 22.85e-6);
  EXPECT_FALSE(honest.violation);
  EXPECT_EQ(bound_time(18.0e-6, p).source, "worker");  // 10 % below: within the band and its 2 us
  // Just below the band's edge (0.88 x 20 - 2 = 15.6 us): the edge scores, not the whole figure,
  // so an honest ratio that crosses the edge moves the score continuously (layernorm_backward's
  // 0.855 on the H200 once scored 17 % above its cold median).
  TimeVerdict slight = bound_time(15.5e-6, p);
  EXPECT_EQ(slight.source, "parent_band");
  EXPECT_NEAR(slight.time_s, 15.6e-6, 1e-12);
  EXPECT_FALSE(slight.violation);
  EXPECT_GT(slight.time_s, 15.5e-6);  // never below the worker's own median
  TimeVerdict launch_bound = bound_time(1.7e-6, ParentTiming{0.0045, 0.0, 1000});  // 4.5 us per call in the graph
  EXPECT_EQ(launch_bound.source, "parent_band");  // 1.7 us is within the per-call allowance of REWARD_HACK
  EXPECT_NEAR(launch_bound.time_s, 0.88 * 4.5e-6 - 2e-6, 1e-12);
  EXPECT_FALSE(launch_bound.violation);
  // x0.70: between the bands (0.88 and 0.78 of the figure, each less 2 us): the band's edge
  // scores, the least time a worker is trusted with anyway, so a forgery this shallow gains
  // nothing that reporting the edge would not, and it is not a verdict of cheating.
  TimeVerdict deep = bound_time(14.0e-6, p);
  EXPECT_EQ(deep.source, "parent_band");
  EXPECT_NEAR(deep.time_s, 15.6e-6, 1e-12);
  EXPECT_FALSE(deep.violation);
  EXPECT_NEAR(bound_time(15.6e-6, p).time_s, deep.time_s, 1e-12);  // the same as reporting the edge
  // x0.5: the corpus's halving forgery, beyond any honest run once the parent's count was
  // discounted (the deepest honest ratio on the H200 is 0.884).
  TimeVerdict halved = bound_time(10.0e-6, p);
  ASSERT_TRUE(halved.violation);
  EXPECT_EQ(halved.violation->rule, "timer_cross_check");
  EXPECT_EQ(halved.source, "parent");
  TimeVerdict forged = bound_time(2.0e-6, p);  // x0.1
  ASSERT_TRUE(forged.violation);
  EXPECT_EQ(forged.violation->rule, "timer_cross_check");
  EXPECT_EQ(forged.source, "parent");
}

// A Python target pays its interpreter between calls: honest PyTorch programs ran at 0.48 of the
// parent's figure back to back. Its gap reports the parent's figure, never REWARD_HACK.
TEST(Rules, BoundTimeOfAHostPacedTargetReportsTheParentFigure) {
  ParentTiming p{0.2, 0.0, 10000};  // 20 us per call
  TimeVerdict paced = bound_time(2.0e-6, p, true);
  EXPECT_FALSE(paced.violation);
  EXPECT_EQ(paced.source, "parent");
  EXPECT_DOUBLE_EQ(paced.time_s, 20e-6);
  EXPECT_EQ(bound_time(19e-6, p, true).source, "worker");  // within the band: unchanged
  EXPECT_TRUE(bound_time(2.0e-6, p, false).violation);  // a compiled target: still REWARD_HACK
}

// An honest kernel whose time depends on the random keys (the group-by's warp tables on 16 Zipf
// keys, H200: worker median 4.9 ms, the parent's two draws 18.6 ms per call) has worker samples
// as slow as the parent's figure: that gap reports the parent's figure, not REWARD_HACK. A
// forgery that scales every sample (max too) stays REWARD_HACK.
TEST(Rules, BoundTimeOfADrawDependentTimeReportsTheParentFigure) {
  ParentTiming p{0.2, 0.0, 10000};  // 20 us per call
  const double edge = 0.78 * 20e-6 - 2e-6;  // the cheat band's edge: 13.6 us
  TimeVerdict draws = bound_time(5.0e-6, p, false, 24e-6);
  EXPECT_FALSE(draws.violation);
  EXPECT_EQ(draws.source, "parent_draws");
  EXPECT_DOUBLE_EQ(draws.time_s, 20e-6);  // the whole figure: the batch's draws took that long
  EXPECT_EQ(bound_time(5.0e-6, p, false, edge).source, "parent_draws");  // at the edge
  TimeVerdict halved = bound_time(5.0e-6, p, false, 0.5 * 24e-6);  // every sample scaled: max below the edge
  ASSERT_TRUE(halved.violation);
  EXPECT_EQ(halved.violation->rule, "timer_cross_check");
  EXPECT_TRUE(bound_time(5.0e-6, p).violation);  // no max given: as before
  // Within the bands the max changes nothing.
  EXPECT_EQ(bound_time(19e-6, p, false, 40e-6).source, "worker");
  EXPECT_EQ(bound_time(15.5e-6, p, false, 40e-6).source, "parent_band");
}

// A compiled call that cannot be captured runs back to back from the worker's loop, its host code
// between launches, as an interpreter's does. Such a batch is bounded as a host-paced one; a
// captured batch is not.
TEST(Rules, ABatchWithoutAGraphIsHostPaced) {
  EXPECT_TRUE(host_paced_batch(false, false));
  EXPECT_TRUE(host_paced_batch(true, true));
  EXPECT_FALSE(host_paced_batch(false, true));
  ParentTiming p{0.2, 0.0, 10000};  // 20 us per call
  TimeVerdict uncaptured = bound_time(2.0e-6, p, host_paced_batch(false, false));
  EXPECT_FALSE(uncaptured.violation);
  EXPECT_EQ(uncaptured.source, "parent");
  EXPECT_TRUE(bound_time(2.0e-6, p, host_paced_batch(false, true)).violation);
}

TEST(Rules, ParentCheckTimeIsTakenOffButNotBelowZero) {
  ParentTiming p{0.2, 0.05, 1000};
  EXPECT_DOUBLE_EQ(p.per_call_s(), 150e-6);
  p.check_s = 1.0;
  EXPECT_DOUBLE_EQ(p.per_call_s(), 0.0);
  EXPECT_EQ(bound_time(5e-6, p).source, "worker");  // no usable batch: nothing to bound with
}

TEST(Rules, BatchOutputsAndGot) {
  EXPECT_FALSE(check_batch_outputs({}, 100));
  auto v = check_batch_outputs({3, 7}, 100);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "batch_outputs");
  EXPECT_NE(v->message.find("2 of 100"), std::string::npos);
  EXPECT_FALSE(check_got(42, 42));
  EXPECT_TRUE(check_got(42, 43));
}

}  // namespace
}  // namespace d2k
