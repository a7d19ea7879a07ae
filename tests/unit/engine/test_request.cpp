// The request API: JSON round trip, field-named errors, device selection, and a request run
// on the host pipeline (no GPU needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine/request.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

EvalRequest sample() {
  EvalRequest r;
  r.dataset = "/data/set";
  r.task = "fused_add_rmsnorm";
  r.targets = {{"naive", "cuda", ""}, {"expert:wide", "cuda", ""}, {"solution", "cutlass", "/tmp/sol"}};
  r.workloads = {"w1", "w2"};
  r.options.seed = 42;
  r.options.time = false;
  r.options.graph = true;
  r.options.max_time_s = 1.5;
  r.options.isolation = "none";
  r.options.call_timeout_s = 12;
  r.options.sample_checks = false;
  r.options.rounds = 5;
  r.options.bench_rounds = 1;
  r.options.dump_dir = "/tmp/dump";
  r.device = 3;
  return r;
}

TEST(RequestJson, RoundTrip) {
  const EvalRequest r = sample();
  const json j = to_json(r);
  EXPECT_EQ(request_from_json(j), r);
  EXPECT_EQ(request_from_json(json::parse(j.dump())), r);
  // Defaults survive too: no seed (fresh secret), no device.
  EvalRequest d;
  d.task = "t";
  d.targets = {{"naive", "cuda", ""}};
  const EvalRequest back = request_from_json(to_json(d));
  EXPECT_EQ(back, d);
  EXPECT_FALSE(back.options.seed.has_value());
  EXPECT_FALSE(back.device.has_value());
}

void expect_error(json j, const std::string& field_prefix) {
  try {
    request_from_json(j);
    ADD_FAILURE() << "accepted: " << j.dump();
  } catch (const RequestError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(field_prefix, 0), 0u) << e.what();
  }
}

TEST(RequestJson, BadFieldsAreNamed) {
  const json good = to_json(sample());
  json j = good;
  j.erase("task");
  expect_error(j, "task: missing");
  j = good;
  j["targets"][1]["track"] = "bogus";
  expect_error(j, "targets[1].track: unknown track 'bogus' (cuda, cutlass");
  j = good;
  j["targets"][0]["name"] = "fastest";
  expect_error(j, "targets[0].name: unknown target 'fastest'");
  j = good;
  j["targets"][2].erase("dir");
  expect_error(j, "targets[2].dir");
  j = good;
  j["options"]["rounds"] = "three";
  expect_error(j, "options.rounds: expected an integer");
  j = good;
  j["options"]["isolation"] = "sideways";
  expect_error(j, "options.isolation");
  j = good;
  j["options"]["colour"] = "red";
  expect_error(j, "options.colour: unknown field");
  j = good;
  j["device"] = -1;
  expect_error(j, "device");
  j = good;
  j["targets"] = json::array();
  expect_error(j, "targets: expected a non-empty array");
  j = good;
  j["workloads"] = {1};
  expect_error(j, "workloads[0]: expected a string");
  expect_error(json::array(), "request: expected an object");
}

TEST(RequestDevice, NarrowsTheVisibleDevices) {
  const char* old = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = old ? old : "";
  ::setenv("CUDA_VISIBLE_DEVICES", "4,6,7", 1);
  select_device(1);
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "6");
  EXPECT_THROW(select_device(1), RequestError);  // only "6" is visible now
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  select_device(2);
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "2");
  select_device(std::nullopt);  // no choice: left alone
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "2");
  if (old) ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(RequestExit, CodesSayWhatHappened) {
  RunSummary s;
  s.records = 3;
  EXPECT_EQ(exit_code(s), kExitPassed);
  s.skipped = {"checking of naive: no CUDA GPU"};
  EXPECT_EQ(exit_code(s), kExitNoGpu);
  s.failed = 1;
  EXPECT_EQ(exit_code(s), kExitFailed);
}

// A bench row SKIPPED on a GPU (its judge, naive, not built or failed) is a stage not run: with
// every other record PASSED the exit status is "not run", never "passed", and the reason is listed.
TEST(RequestExit, ASkippedBenchRowIsAStageNotRun) {
  RunSummary s;
  Trace ok;
  ok.task = "t";
  ok.target = "expert";
  ok.workload_uuid = "t-check-1";
  ok.status = Status::PASSED;
  account(s, ok);
  EXPECT_EQ(exit_code(s), kExitPassed);
  Trace skipped = ok;
  skipped.workload_uuid = "t-bench-1";
  skipped.status = Status::SKIPPED;
  skipped.message = "no naive build of this task (its naive.so): bench outputs are judged against naive's";
  account(s, skipped);
  EXPECT_EQ(s.records, 2);
  EXPECT_EQ(s.failed, 0);
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0], "t expert on t-bench-1: " + skipped.message);
  EXPECT_EQ(exit_code(s), kExitNoGpu);
}

/// A request on a pilot task, run on the host pipeline (RunContext::gpu false).
EvalRequest host_request(std::vector<RequestTarget> targets) {
  EvalRequest r;
  r.dataset = fs::path(D2K_SOURCE_DIR) / "dataset";
  r.task = "fused_add_rmsnorm";
  r.targets = std::move(targets);
  r.options.seed = 11;
  r.options.rounds = 1;
  return r;
}

TEST(RequestRun, ReferenceRunsOnTheHostPipeline) {
  CollectingSink sink;
  RunContext ctx;  // no GPU
  RunSummary s = run(host_request({{"reference", "cuda", ""}}), sink, ctx);
  ASSERT_FALSE(sink.traces.empty());
  int checks = 0;
  for (const Trace& t : sink.traces) {
    EXPECT_EQ(t.task, "fused_add_rmsnorm");
    EXPECT_EQ(t.target, "reference");
    EXPECT_EQ(t.status, Status::PASSED) << t.workload_uuid << ": " << t.message;
    EXPECT_EQ(t.role, "check");
    ++checks;
  }
  EXPECT_EQ(s.records, checks);
  EXPECT_EQ(s.failed, 0);
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_EQ(exit_code(s), kExitPassed);
}

TEST(RequestRun, ReferenceStaysOnTheHostEvenWithAGpu) {
  // With a GPU the device pipeline would hand it device tensors; the request must keep the
  // fp64 golden on the host pipeline whatever the machine (no device work is asked for here,
  // so this runs without one).
  CollectingSink sink;
  RunContext ctx;
  ctx.gpu = true;
  RunSummary s = run(host_request({{"reference", "cuda", ""}}), sink, ctx);
  ASSERT_FALSE(sink.traces.empty());
  for (const Trace& t : sink.traces) EXPECT_EQ(t.status, Status::PASSED) << t.message;
  EXPECT_EQ(exit_code(s), kExitPassed);
}

// Each host record reaches the sink as its workload finishes, not when the run ends: a run cut
// later keeps it (docs/report.md, "Trace files"). The progress lines seen before the first put
// name the first workload only.
TEST(RequestRun, HostRecordsReachTheSinkAsEachWorkloadFinishes) {
  std::vector<std::string> progress;
  std::vector<std::size_t> progress_at_put;
  struct Watch final : TraceSink {
    const std::vector<std::string>& progress;
    std::vector<std::size_t>& at_put;
    Watch(const std::vector<std::string>& p, std::vector<std::size_t>& a) : progress(p), at_put(a) {}
    void put(const Trace&) override { at_put.push_back(progress.size()); }
  } sink(progress, progress_at_put);
  RunContext ctx;  // no GPU
  ctx.progress = [&](const std::string& s) { progress.push_back(s); };
  run(host_request({{"reference", "cuda", ""}}), sink, ctx);
  ASSERT_GE(progress_at_put.size(), 2u);
  ASSERT_FALSE(progress.empty());
  // One round per workload (host_request: rounds = 1): one progress line before each put.
  for (std::size_t i = 0; i < progress_at_put.size(); ++i) EXPECT_EQ(progress_at_put[i], i + 1) << "record " << i;
}

TEST(RequestRun, GpuStagesWithoutAGpuAreReportedNotRun) {
  CollectingSink sink;
  RunSummary s = run(host_request({{"naive", "cuda", ""}, {"expert", "cuda", ""}}), sink, RunContext{});
  // The golden still runs on the host; naive and expert each get one SKIPPED record that says why.
  int skipped = 0, golden = 0;
  for (const Trace& t : sink.traces) {
    if (t.target == "reference") {
      ++golden;
      EXPECT_EQ(t.status, Status::PASSED);
    }
    if (t.status == Status::SKIPPED) {
      ++skipped;
      EXPECT_NE(t.message.find("no CUDA GPU"), std::string::npos);
    }
  }
  EXPECT_GT(golden, 0);
  EXPECT_EQ(skipped, 2);
  ASSERT_EQ(s.skipped.size(), 2u);
  for (const std::string& line : s.skipped) EXPECT_NE(line.find("no CUDA GPU"), std::string::npos) << line;
  EXPECT_EQ(exit_code(s), kExitNoGpu);
}

TEST(RequestRun, ABrokenSolutionFailsWithoutAGpu) {
  CollectingSink sink;
  RunSummary s = run(host_request({{"solution", "cuda", "/nonexistent/solution"}}), sink, RunContext{});
  bool seen = false;
  for (const Trace& t : sink.traces)
    if (t.target == "solution") {
      seen = true;
      EXPECT_EQ(t.status, Status::INVALID_SUBMISSION);
      EXPECT_NE(t.message.find("/nonexistent/solution"), std::string::npos) << t.message;
    }
  EXPECT_TRUE(seen);
  EXPECT_EQ(exit_code(s), kExitFailed);
}

}  // namespace
}  // namespace d2k
