#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "report/flashinfer.h"
#include "unit/report/fixtures.h"

namespace d2k::report {
namespace {

using nlohmann::json;

/// Their documented rules for an exported record (flashinfer-trace/trace.mdx: required fields,
/// the status set and the nullable table).
void expect_their_schema(const json& j) {
  static const std::set<std::string> statuses{"PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE",
                                              "RUNTIME_ERROR", "COMPILE_ERROR", "TIMEOUT"};
  ASSERT_TRUE(j.at("definition").is_string());
  ASSERT_TRUE(j.at("workload").at("uuid").is_string());
  ASSERT_TRUE(j.at("workload").at("axes").is_object());
  ASSERT_TRUE(j.at("workload").at("inputs").is_object());
  ASSERT_TRUE(j.at("solution").is_string());
  const json& e = j.at("evaluation");
  const std::string st = e.at("status");
  ASSERT_TRUE(statuses.count(st)) << st;
  EXPECT_TRUE(e.at("log").is_string());
  EXPECT_FALSE(e.at("environment").at("hardware").get<std::string>().empty());
  EXPECT_TRUE(e.at("environment").at("libs").is_object());
  for (auto& [k, v] : e.at("environment").at("libs").items()) EXPECT_TRUE(v.is_string()) << k;
  EXPECT_FALSE(e.at("timestamp").get<std::string>().empty());
  const bool corr = st == "PASSED" || st == "INCORRECT_NUMERICAL";
  EXPECT_EQ(!e.at("correctness").is_null(), corr) << st;
  EXPECT_EQ(!e.at("performance").is_null(), st == "PASSED") << st;
  if (corr) {
    EXPECT_TRUE(e["correctness"].contains("max_relative_error"));
    EXPECT_TRUE(e["correctness"].contains("max_absolute_error"));
  }
  if (st == "PASSED") {
    const json& p = e["performance"];
    EXPECT_GE(p.at("latency_ms").get<double>(), 0);
    EXPECT_GE(p.at("reference_latency_ms").get<double>(), 0);
    if (p["reference_latency_ms"].get<double>() > 0) {
      EXPECT_NEAR(p["speedup_factor"].get<double>(),
                  p["reference_latency_ms"].get<double>() / p["latency_ms"].get<double>(), 1e-9);
    }
  }
}

TEST(FlashInfer, ExportFollowsTheirSchema) {
  for (const report::Run& r : {testing::run_a(), testing::run_b()}) {
    const FlashInferSet set = to_flashinfer(r.traces, {{"tpch_q6", {"l_shipdate", "l_discount"}}});
    std::size_t n = 0;
    for (auto& [task, records] : set.traces)
      for (const json& j : records) {
        expect_their_schema(parse_flashinfer(dump_flashinfer(j)));
        ++n;
      }
    EXPECT_EQ(n, r.traces.size());
    EXPECT_EQ(set.workloads.at("tpch_q6").size(), 2u);  // each workload once
    EXPECT_EQ(set.workloads.at("tpch_q6")[0]["workload"]["inputs"]["l_discount"]["type"], "random");
    EXPECT_TRUE(set.workloads.at("tpch_q6")[0]["evaluation"].is_null());
  }
}

TEST(FlashInfer, RoundTripIsExact) {
  for (const report::Run& r : {testing::run_a(), testing::run_b()})
    for (const Trace& t : r.traces) {
      const std::string line = dump_flashinfer(to_flashinfer_trace(t, 12.5));
      const std::optional<Trace> back = from_flashinfer_trace(parse_flashinfer(line));
      ASSERT_TRUE(back);
      EXPECT_EQ(to_json(*back), to_json(t)) << line;
    }
}

TEST(FlashInfer, StatusesMapOntoTheirs) {
  EXPECT_EQ(flashinfer_status(Status::REWARD_HACK), "RUNTIME_ERROR");
  EXPECT_EQ(flashinfer_status(Status::INVALID_SUBMISSION), "COMPILE_ERROR");
  EXPECT_EQ(flashinfer_status(Status::INCORRECT_WRITE), "INCORRECT_NUMERICAL");
  EXPECT_FALSE(flashinfer_status(Status::SKIPPED));
  EXPECT_EQ(status_from_flashinfer("INCORRECT_DTYPE"), Status::INCORRECT_SHAPE);
  EXPECT_FALSE(status_from_flashinfer("REWARD_HACK"));  // not theirs
  // A REWARD_HACK keeps its status and rule through their RUNTIME_ERROR.
  const report::Run b = testing::run_b();
  auto it = std::find_if(b.traces.begin(), b.traces.end(), [](const Trace& t) { return t.status == Status::REWARD_HACK; });
  ASSERT_NE(it, b.traces.end());
  const Trace& hack = *it;
  const json j = to_flashinfer_trace(hack, std::nullopt);
  EXPECT_EQ(j["evaluation"]["status"], "RUNTIME_ERROR");
  EXPECT_TRUE(j["evaluation"]["correctness"].is_null());
  const auto back = from_flashinfer_trace(j);
  EXPECT_EQ(back->status, Status::REWARD_HACK);
  EXPECT_EQ(back->rule, "timer_cross_check");
  EXPECT_EQ(back->message, "CUDA events and CUPTI disagree by 41%");
}

TEST(FlashInfer, NanIsTheString) {
  Trace t = testing::run_a().traces[0];
  t.status = Status::INCORRECT_WRITE;
  t.correctness.reset();
  t.performance.reset();
  t.roofline.reset();
  const std::string line = dump_flashinfer(to_flashinfer_trace(t, std::nullopt));
  EXPECT_NE(line.find("\"max_relative_error\":\"NaN\""), std::string::npos) << line;
  const json back = parse_flashinfer(line);
  EXPECT_TRUE(std::isnan(back["evaluation"]["correctness"]["max_relative_error"].get<double>()));
}

TEST(FlashInfer, ExtraCarriesD2kMetrics) {
  const Trace t = testing::run_a().traces[0];
  ASSERT_EQ(t.status, Status::PASSED);
  const json j = to_flashinfer_trace(t, t.performance->mean_us * 2);
  const json& extra = j["evaluation"]["correctness"]["extra"];
  EXPECT_EQ(extra["d2k_status"], "PASSED");
  EXPECT_DOUBLE_EQ(extra["performance"]["median_us"].get<double>(), t.performance->median_us);
  EXPECT_DOUBLE_EQ(extra["performance"]["rel_noise"].get<double>(), t.performance->rel_noise);
  EXPECT_DOUBLE_EQ(extra["roofline"]["pct_sol"].get<double>(), t.roofline->pct_sol);
  EXPECT_NEAR(j["evaluation"]["performance"]["speedup_factor"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(j["evaluation"]["environment"]["hardware"], "NVIDIA_H200");
}

TEST(FlashInfer, ImportsTheirDocumentedRecords) {
  std::ifstream in(testing::fixture("flashinfer/rmsnorm_traces.jsonl"));
  std::vector<Trace> traces;
  int workloads = 0;
  for (std::string line; std::getline(in, line);) {
    auto t = from_flashinfer_trace(parse_flashinfer(line));
    if (t) traces.push_back(*t);
    else ++workloads;
  }
  EXPECT_EQ(workloads, 1);
  ASSERT_EQ(traces.size(), 4u);
  EXPECT_EQ(traces[0].task, "rmsnorm_d4096");
  EXPECT_EQ(traces[0].target, "rmsnorm_triton_v1");
  EXPECT_EQ(traces[0].axes.at("batch_size"), 32);
  EXPECT_EQ(traces[0].status, Status::PASSED);
  ASSERT_TRUE(traces[0].performance);
  EXPECT_NEAR(traces[0].performance->median_us, 8.0, 1e-9);
  EXPECT_NEAR(traces[0].correctness->outputs.at(0).max_rel_error, 1.15e-5, 1e-12);
  EXPECT_EQ(traces[0].environment["device"], "NVIDIA_H100");
  EXPECT_EQ(traces[1].status, Status::INCORRECT_NUMERICAL);
  EXPECT_TRUE(std::isnan(traces[1].correctness->outputs.at(0).max_rel_error));
  EXPECT_TRUE(std::isinf(traces[1].correctness->outputs.at(0).max_abs_error));
  EXPECT_FALSE(traces[1].performance);
  EXPECT_EQ(traces[2].status, Status::COMPILE_ERROR);
  EXPECT_NE(traces[2].message.find("__hfma3"), std::string::npos);
  EXPECT_EQ(traces[3].status, Status::INCORRECT_SHAPE);
}

TEST(FlashInfer, BadRecordsNameTheField) {
  auto error_of = [](const std::string& line) -> std::string {
    try {
      from_flashinfer_trace(parse_flashinfer(line));
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of(R"({"workload":{"uuid":"u"}})").find("trace.definition"), std::string::npos);
  EXPECT_NE(error_of(R"({"definition":"d","workload":{}})").find("workload.uuid"), std::string::npos);
  EXPECT_NE(error_of(R"({"definition":"d","workload":{"uuid":"u","axes":{"M":1.5}}})").find("workload.axes.M"),
            std::string::npos);
  const std::string bad_status =
      R"({"definition":"d","solution":"s","workload":{"uuid":"u"},"evaluation":{"status":"GREAT"}})";
  EXPECT_NE(error_of(bad_status).find("evaluation.status: 'GREAT'"), std::string::npos);
  EXPECT_NE(error_of(R"({"definition":"d","solution":"s","workload":{"uuid":"u"}})").find("trace.evaluation"),
            std::string::npos);
}

}  // namespace
}  // namespace d2k::report
