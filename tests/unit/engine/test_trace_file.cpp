// The --json file of check/bench/suite (engine/trace_file.h): records are on disk the moment
// they are put, partial ones marked; commit() replaces the partial lines by the final records.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/trace_file.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_file(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("d2k_trace_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

/// Every line of the file, parsed (what a reader sees at this moment).
std::vector<json> lines_of(const fs::path& p) {
  std::vector<json> out;
  std::ifstream f(p);
  for (std::string line; std::getline(f, line);) out.push_back(json::parse(line));
  return out;
}

Trace record(const std::string& target, const std::string& uuid, Status s = Status::PASSED) {
  Trace t;
  t.task = "fused_add_rmsnorm";
  t.target = target;
  t.workload_uuid = uuid;
  t.role = "bench";
  t.status = s;
  Performance p;
  p.median_us = 10;
  t.performance = p;
  t.roofline = Roofline{};
  return t;
}

/// What the engine hands put_partial: a record marked partial, without the speed-ups.
Trace early(const std::string& target, const std::string& uuid) {
  Trace t = record(target, uuid);
  t.partial = true;
  return t;
}

Trace scored(Trace t, double vs_naive) {
  t.roofline->speedup_vs_naive = vs_naive;
  return t;
}

TEST(TraceFile, RecordsAreOnDiskAsTheyFinishBeforeTheRunEnds) {
  const fs::path p = temp_file("cut.jsonl");
  {
    std::ofstream(p) << "a stale line of an earlier run\n";
  }
  TraceFileSink sink(p.string());
  EXPECT_TRUE(lines_of(p).empty()) << "an earlier run's lines must not survive";
  Trace build_failure = record("solution", "*", Status::COMPILE_ERROR);
  sink.put(build_failure);  // final at once: no partial form
  sink.put_partial(early("expert", "w1"));
  sink.put_partial(early("expert", "w2"));
  // The run is cut here: no commit(), the sink is never destroyed in a killed process.
  const std::vector<json> on_disk = lines_of(p);
  ASSERT_EQ(on_disk.size(), 3u);
  EXPECT_EQ(on_disk[0].at("status"), "COMPILE_ERROR");
  EXPECT_FALSE(on_disk[0].contains("partial"));
  EXPECT_EQ(on_disk[1].at("workload").at("uuid"), "w1");
  EXPECT_EQ(on_disk[1].at("partial"), true);
  EXPECT_FALSE(on_disk[1].at("roofline").contains("speedup_vs_naive"));
  EXPECT_EQ(on_disk[2].at("partial"), true);
}

TEST(TraceFile, CommitReplacesPartialLinesByTheFinalRecords) {
  const fs::path p = temp_file("final.jsonl");
  TraceFileSink sink(p.string());
  sink.put(record("reference", "c1"));
  sink.put_partial(early("expert", "w1"));
  sink.put_partial(early("expert", "w2"));
  // The final records of the partial ones are not appended beside them (one line per record).
  sink.put(scored(record("expert", "w1"), 2.5));
  sink.put(scored(record("expert", "w2"), 3.5));
  EXPECT_EQ(lines_of(p).size(), 3u);
  sink.commit();
  EXPECT_FALSE(fs::exists(p.string() + ".tmp"));
  std::vector<json> on_disk = lines_of(p);
  ASSERT_EQ(on_disk.size(), 3u);
  for (const json& j : on_disk) EXPECT_FALSE(j.contains("partial")) << j.dump();
  EXPECT_EQ(on_disk[1].at("roofline").at("speedup_vs_naive"), 2.5);
  EXPECT_EQ(on_disk[2].at("roofline").at("speedup_vs_naive"), 3.5);
  // Exactly the final traces, in order, as a run that ended always wrote them.
  ASSERT_EQ(sink.traces().size(), 3u);
  for (std::size_t i = 0; i < on_disk.size(); ++i) EXPECT_EQ(on_disk[i], to_json(sink.traces()[i]));

  // A suite goes on after a task's commit: its next records append to the rewritten file.
  sink.put_partial(early("naive", "w9"));
  on_disk = lines_of(p);
  ASSERT_EQ(on_disk.size(), 4u);
  EXPECT_EQ(on_disk[3].at("partial"), true);
  sink.put(scored(record("naive", "w9"), 1.0));
  sink.commit();
  on_disk = lines_of(p);
  ASSERT_EQ(on_disk.size(), 4u);
  EXPECT_FALSE(on_disk[3].contains("partial"));
}

TEST(TraceFile, AFileThatCannotBeWrittenIsNamed) {
  try {
    TraceFileSink sink("/nonexistent-dir/x.jsonl");
    ADD_FAILURE() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--json: cannot write /nonexistent-dir/x.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace d2k
