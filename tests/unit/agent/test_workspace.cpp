// d2k workspace build: what a workspace holds (and never holds), the cumulative guidance levels,
// determinism, the Harbor export (task.toml parses as TOML, tests/ only at verification), and
// example_workspace/ regenerated and compared file by file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "agent/harbor.h"
#include "agent/workspace.h"
#include "agent_fixture.h"
#include "core/task_loader.h"

namespace d2k::agent {
namespace {

using namespace testing;

struct Loaded {
  DesignLevels levels;
  Task task;
};

Loaded load(const std::string& name) {
  Diagnostics diag;
  Loaded l;
  l.levels = load_design_levels(kDataset / "design_levels.json", diag);
  l.task = load_and_validate_task(kDataset / name, l.levels, diag);
  EXPECT_TRUE(diag.ok()) << diag.format();
  return l;
}

fs::path build(const Loaded& l, const std::string& level, const fs::path& out) {
  const LevelInfo& info = parse_level(level);
  const fs::path dir = out / WorkspaceKey{l.task.def.name, "cuda", info.level}.folder();
  build_workspace(l.task, l.levels, "cuda", info, dataset_version(l.task, kDataset / "design_levels.json"), dir, false);
  return dir;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Lines of the task's private files (expert, naive, golden reference) long enough to be their
/// own and not also in what a workspace may legitimately hold (the starter, the spec).
std::vector<std::string> private_lines(const Task& task) {
  std::set<std::string> allowed;
  for (const auto& f : {task.dir / "spec.md", task.dir / "starter" / "cuda" / "solution.cu"}) {
    std::istringstream in(slurp(f));
    for (std::string line; std::getline(in, line);) allowed.insert(trim(line));
  }
  std::set<std::string> out;
  for (const char* name : {"expert.cu", "naive.cu", "reference.cpp"}) {
    std::istringstream in(slurp(task.dir / name));
    for (std::string line; std::getline(in, line);) {
      const std::string t = trim(line);
      if (t.size() >= 40 && !allowed.count(t)) out.insert(t);
    }
  }
  return {out.begin(), out.end()};
}

/// Every private line found anywhere in the folder.
std::vector<std::string> leaks(const fs::path& dir, const std::vector<std::string>& lines) {
  std::vector<std::string> found;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    const std::string text = slurp(it->path());
    for (const auto& l : lines)
      if (text.find(l) != std::string::npos) found.push_back(it->path().filename().string() + ": " + l);
  }
  return found;
}

TEST(Workspace, HoldsTheClientSideOnlyAndNoPrivateFile) {
  TempDir tmp;
  const Loaded l = load("fused_add_rmsnorm");
  const auto lines = private_lines(l.task);
  ASSERT_GT(lines.size(), 50u) << "too few distinctive lines to test with";
  for (const auto& level : {"baseline", "L1", "L1+L2", "design"}) {
    const fs::path dir = build(l, level, tmp.path);
    std::set<std::string> files;
    for (const auto& [rel, hash] : hash_tree(dir)) files.insert(rel);
    EXPECT_EQ(files, (std::set<std::string>{"check", "design.md", "instruction.md", "manifest.json", "solution/solution.cu"}))
        << level;
    EXPECT_EQ(leaks(dir, lines), std::vector<std::string>{}) << level;
    EXPECT_EQ(slurp(dir / "solution" / "solution.cu"), slurp(l.task.dir / "starter" / "cuda" / "solution.cu"));
    struct stat st {};
    ASSERT_EQ(::stat((dir / "check").c_str(), &st), 0);
    EXPECT_TRUE(st.st_mode & S_IXUSR) << "check is not executable";
    const std::string check = slurp(dir / "check");
    EXPECT_NE(check.find("bench --task \"$task\""), std::string::npos);
    EXPECT_NE(check.find("submit \"$here/solution\""), std::string::npos);
  }
  // The scan sees a leak where there is one (the control: the expert planted in a workspace).
  const fs::path planted = tmp.path / "planted";
  copy_tree(tmp.path / "fused_add_rmsnorm__cuda__design", planted);
  fs::copy_file(l.task.dir / "expert.cu", planted / "solution" / "solution.cu", fs::copy_options::overwrite_existing);
  EXPECT_GT(leaks(planted, lines).size(), 20u);
}

TEST(Workspace, ManifestHashesEveryFile) {
  TempDir tmp;
  const Loaded l = load("fused_add_rmsnorm");
  const fs::path dir = build(l, "L1", tmp.path);
  const auto m = nlohmann::json::parse(slurp(dir / "manifest.json"));
  EXPECT_EQ(m["task"], "fused_add_rmsnorm");
  EXPECT_EQ(m["track"], "cuda");
  EXPECT_EQ(m["level"], "L1");
  EXPECT_EQ(m["dataset_version"].get<std::string>().size(), 16u);
  const auto files = hash_tree(dir, "manifest.json");
  const auto recorded = m["files"].get<std::map<std::string, std::string>>();
  EXPECT_EQ(recorded, files);
  EXPECT_TRUE(m["check"].contains("local"));
}

TEST(Workspace, GuidanceIsCumulative) {
  TempDir tmp;
  const Loaded l = load("fused_add_rmsnorm");
  ASSERT_TRUE(l.task.design);
  const std::map<std::string, int> shown = {{"baseline", 0}, {"L1", 1}, {"L1+L2", 2}, {"design", 3}};
  for (const auto& [level, n] : shown) {
    const std::string text = slurp(build(l, level, tmp.path) / "instruction.md");
    for (int i = 0; i < 3; ++i)
      for (const auto& item : l.task.design->level[i]) {
        const bool present = text.find("**" + item.id + "**") != std::string::npos;
        EXPECT_EQ(present, i < n) << level << ": " << item.id;
        EXPECT_EQ(text.find(item.statement) != std::string::npos, i < n) << level << ": statement of " << item.id;
        // How the scorer recognises an item is not guidance.
        EXPECT_EQ(text.find(item.recognise), std::string::npos) << level << ": " << item.id;
      }
    EXPECT_EQ(text.find(l.task.design->cross_level_rationale) != std::string::npos, n == 3) << level;
    EXPECT_NE(text.find("## Specification"), std::string::npos);
    EXPECT_NE(text.find("## What is allowed"), std::string::npos);
    EXPECT_NE(text.find("## How to check"), std::string::npos);
    EXPECT_NE(text.find("design.md"), std::string::npos);
    EXPECT_NE(text.find("Vendor kernels (cuBLAS, cuDNN) while timed: not allowed"), std::string::npos);
  }
  EXPECT_EQ(parse_level("L1_L2").name, "L1+L2");
  EXPECT_EQ(parse_level("L1+L2+L3").name, "design");
  EXPECT_THROW(parse_level("L2"), std::invalid_argument);
}

TEST(Workspace, DeterministicAndRefusesToOverwrite) {
  TempDir a, b;
  const Loaded l = load("hash_join");
  const fs::path x = build(l, "design", a.path), y = build(l, "design", b.path);
  EXPECT_EQ(hash_tree(x), hash_tree(y));
  EXPECT_THROW(build(l, "design", a.path), std::runtime_error);
  EXPECT_THROW(build_workspace(l.task, l.levels, "cutlass", parse_level("L1"), "v", a.path / "c", false),
               std::runtime_error);  // hash_join offers no cutlass track
}

TEST(Workspace, HarborTaskParsesAndGetsTestsOnlyAtVerification) {
  TempDir tmp;
  const Loaded l = load("fused_add_rmsnorm");
  const fs::path ws = build(l, "L1+L2", tmp.path);
  const fs::path h = tmp.path / "harbor" / "t";
  export_harbor(l.task, "cuda", parse_level("L1+L2"), "0123456789abcdef", ws, h, false);
  toml::table t;
  ASSERT_NO_THROW(t = toml::parse_file((h / "task.toml").string()));
  EXPECT_EQ(t["schema_version"].value_or(std::string()), "1.1");
  EXPECT_EQ(t["task"]["name"].value_or(std::string()), "d2k-bench/fused_add_rmsnorm__cuda__L1_L2");
  EXPECT_EQ(t["metadata"]["d2k_level"].value_or(std::string()), "L1+L2");
  EXPECT_EQ(t["metadata"]["dataset_version"].value_or(std::string()), "0123456789abcdef");
  EXPECT_GT(t["verifier"]["timeout_sec"].value_or(0.0), 0.0);
  EXPECT_GT(t["agent"]["timeout_sec"].value_or(0.0), 0.0);
  EXPECT_TRUE(t["environment"]["env"].is_table());
  EXPECT_EQ(slurp(h / "instruction.md"), slurp(ws / "instruction.md"));
  EXPECT_TRUE(fs::is_regular_file(h / "environment" / "Dockerfile"));
  EXPECT_TRUE(fs::is_regular_file(h / "environment" / "app" / "check"));
  EXPECT_FALSE(fs::exists(h / "solution"));
  EXPECT_FALSE(fs::exists(h / "tests"));
  EXPECT_EQ(leaks(h, private_lines(l.task)), std::vector<std::string>{});
  write_harbor_tests(h);
  const std::string test_sh = slurp(h / "tests" / "test.sh");
  EXPECT_NE(test_sh.find("/logs/verifier/reward.txt"), std::string::npos);
  EXPECT_NE(test_sh.find("--task fused_add_rmsnorm --track cuda"), std::string::npos);
  EXPECT_EQ(test_sh.find("/app/check"), std::string::npos) << "the verifier must not run the agent's check";
  EXPECT_THROW(write_harbor_tests(tmp.path / "nothing"), std::runtime_error);
}

// example_workspace/ is what `d2k workspace build` writes for the pilots: any drift (a changed
// spec, design, starter, renderer) fails here until it is regenerated.
TEST(Workspace, ExampleWorkspaceMatchesARegeneration) {
  TempDir tmp;
  const fs::path committed = kSource / "example_workspace";
  ASSERT_TRUE(fs::is_directory(committed));
  const int rc = run({kD2k.string(), "--dataset", kDataset.string(), "workspace", "build", "--tasks",
                      "fused_add_rmsnorm,hash_join,muon_optimizer_step", "--tracks", "cuda", "--levels",
                      "baseline,L1,L1+L2,design", "--out", (tmp.path / "ws").string()},
                     {}, tmp.path / "log");
  ASSERT_EQ(rc, 0) << slurp(tmp.path / "log");
  const auto want = hash_tree(tmp.path / "ws"), have = hash_tree(committed);
  std::vector<std::string> drift;
  for (const auto& [rel, h] : want)
    if (!have.count(rel)) drift.push_back("missing: " + rel);
    else if (have.at(rel) != h) drift.push_back("differs: " + rel);
  for (const auto& [rel, h] : have)
    if (!want.count(rel) && rel != "README.md") drift.push_back("extra: " + rel);
  EXPECT_EQ(drift, std::vector<std::string>{})
      << "regenerate: d2k workspace build --tasks fused_add_rmsnorm,hash_join,muon_optimizer_step --tracks cuda "
         "--levels baseline,L1,L1+L2,design --out example_workspace --force";
}

}  // namespace
}  // namespace d2k::agent
