// Task files beyond the bounds of core/limits.h and inputs that crashed, exhausted memory or
// validated wrongly before the bounds: each is refused with an error naming file and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

#include <fmt/format.h>

#include "core/limits.h"
#include "core/task_loader.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

#define EXPECT_DIAG(diag, text) EXPECT_TRUE((diag).contains(text)) << "missing: " << (text) << "\ngot:\n" << (diag).format()

fs::path good_dir() { return fs::path(D2K_SOURCE_DIR) / "tests/fixtures/tasks/good_task"; }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t k = 0; k < n; ++k) out += s;
  return out;
}

// A copy of good_task named `name` under a fresh temporary dataset folder; `edit` may change
// definition.json (as JSON text) and workloads.jsonl before they are written.
struct TempTask {
  fs::path root, dir;
  std::string definition = read(good_dir() / "definition.json");
  std::string workloads = read(good_dir() / "workloads.jsonl");
  explicit TempTask(const std::string& name = "good_task") {
    root = fs::temp_directory_path() / fmt::format("d2k_bounds_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(), getpid());
    fs::remove_all(root);
    dir = root / name;
    fs::create_directories(dir);
    for (const char* f : {"design.json", "rubric.json", "spec.md", "reference.cpp"})
      fs::copy_file(good_dir() / f, dir / f);
  }
  ~TempTask() { fs::remove_all(root); }
  Diagnostics validate() {
    if (!definition.empty()) std::ofstream(dir / "definition.json", std::ios::binary) << definition;
    std::ofstream(dir / "workloads.jsonl", std::ios::binary) << workloads;
    Diagnostics diag, levels_diag;
    const DesignLevels levels = load_design_levels(fs::path(D2K_SOURCE_DIR) / "dataset/design_levels.json", levels_diag);
    load_and_validate_task(dir, levels, diag);
    return diag;
  }
  ordered_json def_json() const { return ordered_json::parse(definition); }
  void set_def(const ordered_json& j) { definition = j.dump(1); }
};

TEST(TaskBounds, GoodCopyValidates) {
  TempTask t;
  const Diagnostics d = t.validate();
  EXPECT_TRUE(d.ok()) << d.format();
}

TEST(TaskBounds, NumberBeyondDoubleNamesTheFile) {
  TempTask t;
  const auto at = t.definition.find("\"value\": 0.5");
  ASSERT_NE(at, std::string::npos);
  t.definition.replace(at, 12, "\"value\": 1e309");
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, "good_task/definition.json: invalid JSON: number overflow parsing '1e309'");
  EXPECT_FALSE(d.contains("[json.exception")) << d.format();
}

TEST(TaskBounds, DefinitionThatIsAFolderIsReported) {
  TempTask t;
  t.validate();
  fs::create_directories(t.root / "other" / "definition.json");
  Diagnostics diag;
  const auto tasks = load_dataset(t.root, diag);
  EXPECT_EQ(tasks.size(), 2u);
  EXPECT_DIAG(diag, "other/definition.json: is a folder, not a file");
}

TEST(TaskBounds, DeepJsonRefusedBeforeTheDom) {
  TempTask t;
  // An unknown field holding 60,000 nested arrays (took 5.5 GB before the depth bound).
  const auto at = t.definition.rfind('}');
  t.definition.insert(at, ", \"deep\": " + repeat("[", 60000) + repeat("]", 60000));
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, fmt::format("JSON nested too deep (limit {} levels)", limits::kMaxJsonDepth));
}

TEST(TaskBounds, ObjectWithTooManyKeys) {
  TempTask t;
  std::string keys;
  for (int k = 0; k < 300000; ++k) keys += fmt::format(", \"k{}\": 0", k);
  t.definition.insert(t.definition.rfind('}'), ", \"many\": {\"k\": 0" + keys + "}");
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, fmt::format("definition.json: many: object has too many keys (limit {})", limits::kMaxObjectKeys));
}

TEST(TaskBounds, FileTooLarge) {
  TempTask t;
  t.workloads += std::string(limits::kMaxFileBytes, '\n');
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, "good_task/workloads.jsonl: file too large");
}

TEST(TaskBounds, TooManyWorkloads) {
  TempTask t;
  std::string lines;
  for (std::size_t k = 0; k <= limits::kMaxWorkloads; ++k)
    lines += fmt::format("{{\"uuid\": \"w{}\", \"role\": \"{}\", \"axes\": {{\"T\": 7, \"H\": 264}}}}\n", k, k % 2 ? "bench" : "check");
  t.workloads = lines;
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, fmt::format("workloads.jsonl:{}: too many workloads (limit {})", limits::kMaxWorkloads + 1, limits::kMaxWorkloads));
  EXPECT_EQ(d.error_count(), 1u) << d.format();
}

TEST(TaskBounds, TooManyAxes) {
  TempTask t;
  ordered_json j = t.def_json();
  for (int k = 0; k < 3000; ++k) j["axes"][fmt::format("E{}", k)] = {{"type", "expr"}, {"expr", "H + 1"}};
  t.set_def(j);
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, fmt::format("definition.json: axes: too many axes (3005, limit {})", limits::kMaxAxes));
  EXPECT_EQ(d.error_count(), 1u) << d.format();  // the root error only, no "unknown axis" per use
}

TEST(TaskBounds, ExpressionTooDeepNamesFileAndField) {
  TempTask t;
  ordered_json j = t.def_json();
  j["constraints"].push_back(repeat("(", 1000) + "H" + repeat(")", 1000));
  j["cost"]["bytes"] = "T" + repeat(" + T", 30000);
  t.set_def(j);
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, "good_task/definition.json: constraints[2]: expression too deep (limit 128)");
  EXPECT_DIAG(d, "good_task/definition.json: cost.bytes: expression too long (120001 characters, limit 4096)");
}

TEST(TaskBounds, CostThatIsNotANumberIsRefused) {
  TempTask t;
  ordered_json j = t.def_json();
  j["cost"]["flops"]["fp32"] = "sqrt(0-1)";
  j["cost"]["bytes"] = "0 - T";
  t.set_def(j);
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, "good_task/workloads.jsonl:1: cost: sqrt of negative value -1");
  j["cost"]["flops"]["fp32"] = "T";
  t.set_def(j);
  EXPECT_DIAG(t.validate(), "good_task/workloads.jsonl:1: cost: cost.bytes = -7 at this workload: a cost must be a finite number >= 0");
}

TEST(TaskBounds, ShapeWhoseElementCountOverflows) {
  TempTask t;
  ordered_json j = t.def_json();
  j["inputs"]["w"]["shape"] = {"G", "4294967296", "4294967296"};
  t.set_def(j);
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, "good_task/workloads.jsonl:1: inputs.w.shape: tensor 'w': the element count of the shape overflows int64");
}

TEST(TaskBounds, SyntaxErrorInDefinitionIsReportedOnce) {
  TempTask t;
  t.definition.insert(t.definition.find("\"axes\""), "}}");
  const Diagnostics d = t.validate();
  EXPECT_DIAG(d, "good_task/definition.json:");
  EXPECT_EQ(d.error_count(), 1u) << d.format();
  EXPECT_FALSE(d.contains("unknown axis")) << d.format();
}

}  // namespace
}  // namespace d2k
