#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "report/trace.h"

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

TEST(Status, NamesRoundTrip) {
  for (Status s : {Status::PASSED, Status::REWARD_HACK, Status::INCORRECT_WRITE, Status::TIMEOUT}) {
    auto back = parse_status(status_name(s));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(parse_status("FAST").has_value());
}

TEST(Trace, JsonRoundTripKeepsEveryField) {
  Trace t = passed("fused_add_rmsnorm", "expert", "w1", 123.5, 3.2, 0.8);
  t.axes = {{"T", 4096}, {"H", 4096}};
  t.checks_fired = {"inputs_checksum: ok"};
  Correctness c;
  c.against = "naive";
  c.rounds = 3;
  OutputCheck o;
  o.output = "out";
  o.rule = "allclose";
  o.passed = true;
  o.max_abs_error = 0.01;
  o.first_bad_index = -1;
  c.outputs.push_back(o);
  t.correctness = c;
  t.performance->settle_s = 0.12;
  t.performance->launch_offset_us = 2.5;
  t.performance->audit_samples = 9;
  t.performance->throttle_reasons = {"sw_power_cap"};
  Trace back = trace_from_json(to_json(t));
  EXPECT_EQ(back.task, t.task);
  EXPECT_EQ(back.axes, t.axes);
  EXPECT_EQ(back.status, Status::PASSED);
  ASSERT_TRUE(back.correctness.has_value());
  EXPECT_EQ(back.correctness->rounds, 3);
  EXPECT_DOUBLE_EQ(back.correctness->outputs.at(0).max_abs_error, 0.01);
  ASSERT_TRUE(back.performance.has_value());
  EXPECT_DOUBLE_EQ(back.performance->median_us, 123.5);
  EXPECT_DOUBLE_EQ(back.performance->settle_s, 0.12);
  EXPECT_DOUBLE_EQ(back.performance->launch_offset_us, 2.5);
  EXPECT_EQ(back.performance->audit_samples, 9);
  EXPECT_EQ(back.performance->throttle_reasons, std::vector<std::string>{"sw_power_cap"});
  ASSERT_TRUE(back.roofline && back.roofline->speedup_vs_naive);
  EXPECT_DOUBLE_EQ(*back.roofline->speedup_vs_naive, 3.2);
  EXPECT_FALSE(back.roofline->speedup_vs_expert.has_value());
}

// A record written before the run's speed-ups were known says so; a final one carries no such
// field, so that its line is what it always was.
TEST(Trace, PartialMarkRoundTripsAndIsAbsentOnFinalRecords) {
  Trace t = passed("fused_add_rmsnorm", "expert", "w1", 10, 2, 0.5);
  EXPECT_FALSE(to_json(t).contains("partial"));
  EXPECT_FALSE(trace_from_json(to_json(t)).partial);
  t.partial = true;
  EXPECT_EQ(to_json(t).at("partial"), true);
  EXPECT_TRUE(trace_from_json(to_json(t)).partial);
}

TEST(Table, NoTimeIsPrintedForAFailure) {
  Trace bad = passed("a", "solution", "1", 42.0, 9.0, 1.0);
  bad.status = Status::REWARD_HACK;
  bad.rule = "physical_floor";
  std::string txt = format_table({bad}, TableFormat::text);
  EXPECT_NE(txt.find("REWARD_HACK(physical_floor)"), std::string::npos);
  EXPECT_EQ(txt.find("42.00"), std::string::npos);
  std::string md = format_table({passed("a", "expert", "1", 42.0, 2.0, 0.6)}, TableFormat::markdown);
  EXPECT_NE(md.find("| 42.00 |"), std::string::npos);
  EXPECT_NE(md.find("| --- |"), std::string::npos);
}

TEST(Table, AFailedRowShowsItsRuleAndOneLineReason) {
  Trace ok = passed("a", "expert", "1", 42.0, 2.0, 0.6);
  Trace bad = passed("a", "solution", "1", 42.0, 9.0, 1.0);
  bad.status = Status::RUNTIME_ERROR;
  bad.message = "d2k_run returned 7: bad shape\nsecond line of the log";
  Trace hack = bad;
  hack.status = Status::REWARD_HACK;
  hack.rule = "input_write";
  hack.message = "input x changed";
  std::string txt = format_table({ok, bad, hack}, TableFormat::text);
  EXPECT_NE(txt.find("    reason: d2k_run returned 7: bad shape\n"), std::string::npos) << txt;
  EXPECT_EQ(txt.find("second line"), std::string::npos) << txt;
  EXPECT_NE(txt.find("    reason: [input_write] input x changed\n"), std::string::npos) << txt;
  // One reason per failed row, none under the row that passed.
  std::size_t n = 0;
  for (auto at = txt.find("reason:"); at != std::string::npos; at = txt.find("reason:", at + 1)) ++n;
  EXPECT_EQ(n, 2u);

  Trace compile = bad;
  compile.status = Status::COMPILE_ERROR;
  compile.message = "compilation failed (exited with code 2)\nsolution.cu(3): warning: unused\nsolution.cu(7): error: expected a \";\"\nmore";
  txt = format_table({compile}, TableFormat::text);
  EXPECT_NE(txt.find("reason: compilation failed (exited with code 2) -- solution.cu(7): error: expected a \";\"\n"),
            std::string::npos) << txt;
}

}  // namespace
}  // namespace d2k

#include <filesystem>
#include <fstream>

#include "report/npy.h"

namespace d2k {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(Npy, HeaderShapeAndDataFollowNumpyFormat1) {
  const auto dir = std::filesystem::temp_directory_path() / "d2k_npy_test";
  std::filesystem::create_directories(dir);
  HostTensor t("x", DType::i32, {2, 3});
  for (int i = 0; i < 6; ++i) t.as<std::int32_t>()[i] = i * 7 - 3;
  write_npy(dir / "x.npy", t);
  const std::string s = read_all(dir / "x.npy");
  ASSERT_GE(s.size(), 10u);
  EXPECT_EQ(s.substr(0, 6), "\x93NUMPY");
  const std::size_t hlen = static_cast<unsigned char>(s[8]) | (static_cast<unsigned char>(s[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);  // data starts 64-byte aligned
  const std::string header = s.substr(10, hlen);
  EXPECT_NE(header.find("'descr': '<i4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (2,3)"), std::string::npos) << header;
  ASSERT_EQ(s.size(), 10 + hlen + 6 * 4);
  std::int32_t back[6];
  std::memcpy(back, s.data() + 10 + hlen, sizeof back);
  EXPECT_EQ(back[5], 32);
  // bfloat16 is widened to float32, exactly; one dimension keeps its trailing comma.
  HostTensor b("b", DType::bf16, {3});
  store_from_double(DType::bf16, b.data(), 1.5);
  store_from_double(DType::bf16, static_cast<char*>(b.data()) + 2, -0.0078125);
  store_from_double(DType::bf16, static_cast<char*>(b.data()) + 4, 3.0e38);
  write_npy(dir / "b.npy", b);
  const std::string sb = read_all(dir / "b.npy");
  const std::size_t hb = static_cast<unsigned char>(sb[8]) | (static_cast<unsigned char>(sb[9]) << 8);
  EXPECT_NE(sb.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(sb.find("'shape': (3,)"), std::string::npos);
  float f[3];
  std::memcpy(f, sb.data() + 10 + hb, sizeof f);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], -0.0078125f);
  EXPECT_EQ(f[2], static_cast<float>(b.at(2)));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace d2k
