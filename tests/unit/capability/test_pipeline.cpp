// The scorer end to end on the three pilots, against the fake judge: a run folder with the
// expert's own design and code and the naive baseline per pilot; the judge's fixture encodes
// "expert 75-100, naive <= 25", and the pipeline must report exactly that, with the machine code
// of the built libraries beside it. A judge that credits wgmma to the naive must be flagged.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

#include "capability/attempt.h"
#include "capability/library.h"
#include "capability/prompt.h"
#include "capability/scorer.h"
#include "capability/summary.h"
#include "core/task_loader.h"
#include "unit/capability/fake_judge.h"

namespace d2k::capability {
namespace {

namespace fs = std::filesystem;

// cuobjdump of a large library takes seconds on a shared machine: each library once per binary.
const LibraryEvidence& disassembled(const fs::path& so) {
  static std::map<fs::path, LibraryEvidence> done;
  auto it = done.find(so);
  if (it == done.end()) it = done.emplace(so, disassemble_library(so)).first;
  return it->second;
}


const fs::path kDataset = fs::path(D2K_SOURCE_DIR) / "dataset";
const std::vector<std::string> kPilots = {"fused_add_rmsnorm", "muon_optimizer_step", "topk_topp_mask"};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TaskGuidance guidance(const std::string& task) {
  Diagnostics diag;
  TaskGuidance g;
  g.task = load_task(kDataset / task, diag);
  g.levels = load_design_levels(kDataset / "design_levels.json", diag);
  g.spec = slurp(kDataset / task / "spec.md");
  EXPECT_TRUE(diag.ok()) << diag.format();
  return g;
}

// The expert's design.json written up as an agent would: one section per level.
std::string expert_write_up(const Design& d) {
  std::string md;
  for (int l = 0; l < 3; ++l) {
    md += "## L" + std::to_string(l + 1) + "\n\n";
    for (const auto& it : d.level[l]) md += "- " + it.id + ": " + it.statement + " " + it.rationale + "\n";
  }
  return md;
}

const char* kNaiveWriteUp =
    "## L1\n\nCompute each operation of the reference in its own kernel, as written.\n\n"
    "## L2\n\nOne thread per element; a block per row where a reduction is needed.\n\n"
    "## L3\n\nNo low-level tuning.\n";

// runs/<RUN>/attempts/<task>__cuda__<level>__1/workspace with solution/ and design.md.
AttemptRef make_attempt(const fs::path& run, const std::string& task, const std::string& which) {
  const std::string level = which == "expert" ? "design" : "baseline";
  const fs::path dir = run / "attempts" / (task + "__cuda__" + level + "__1");
  const fs::path ws = dir / "workspace";
  fs::create_directories(ws / "solution");
  fs::copy_file(kDataset / task / (which + ".cu"), ws / "solution" / "solution.cu", fs::copy_options::overwrite_existing);
  for (const auto& e : fs::directory_iterator(kDataset / task))
    if (e.path().extension() == ".cuh" || e.path().extension() == ".h")
      fs::copy_file(e.path(), ws / "solution" / e.path().filename(), fs::copy_options::overwrite_existing);
  std::ofstream(ws / "manifest.json") << nlohmann::json{{"task", task}, {"track", "cuda"}, {"level", level}}.dump();
  const TaskGuidance g = guidance(task);
  std::ofstream(ws / "design.md") << (which == "expert" ? expert_write_up(*g.task.design) : std::string(kNaiveWriteUp));
  AttemptRef a;
  a.name = dir.filename().string();
  a.dir = dir;
  a.workspace = ws;
  a.task = task;
  a.track = "cuda";
  a.level = level;
  a.k = 1;
  a.check_json = dir / "check.json";
  return a;
}

class Pipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = fs::temp_directory_path() / ("d2k-run-" + std::to_string(::getpid()));
    fs::remove_all(run_);
    for (const auto& t : kPilots)
      for (const char* w : {"expert", "naive"}) make_attempt(run_, t, w);
    ::setenv("D2K_TEST_JUDGE_KEY", "test-key", 1);
    prompts_ = load_prompts(prompts_dir(fs::path(D2K_SOURCE_DIR) / "capability" / "prompts"));
  }
  void TearDown() override { fs::remove_all(run_); }

  JudgeConfig config(const test::FakeJudge& fake) const {
    JudgeConfig c;
    c.api = JudgeApi::openai;
    c.base_url = fake.openai_url();
    c.model = "fake";
    c.api_key_env = "D2K_TEST_JUDGE_KEY";
    c.backoff_s = 0;
    c.cache_dir = run_ / "judge-cache";
    return c;
  }

  // Scores every attempt of the run with the built-in libraries' machine code.
  std::vector<AttemptScore> score_all(Judge& judge, int samples) {
    std::vector<AttemptScore> out;
    for (const auto& a : find_run_attempts(run_)) {
      const TaskGuidance g = guidance(a.task);
      const std::string impl = a.level == "design" ? "expert" : "naive";
      const LibraryEvidence& lib = disassembled(fs::path(D2K_BINARY_DIR) / "impl" / a.task / (impl + ".so"));
      EXPECT_TRUE(lib.listing) << a.name << ": " << lib.note;
      out.push_back(score_attempt(a, read_attempt_material(a), g, lib, judge, prompts_, {samples}));
    }
    return out;
  }

  fs::path run_;
  Prompts prompts_;
};

TEST_F(Pipeline, ExpertScoresHighNaiveLowAndNothingIsFlagged) {
  test::FakeJudge fake(std::string(D2K_SOURCE_DIR) + "/tests/fixtures/judge/pilots.json");
  auto judge = make_judge(config(fake));
  const auto scores = score_all(*judge, 3);
  ASSERT_EQ(scores.size(), 6u);
  EXPECT_EQ(fake.requests(), 6 * 2 * 3 * 3) << "6 attempts x 2 parts x 3 levels x 3 samples";
  for (const auto& s : scores) {
    const bool expert = s.ref.level == "design";
    for (int l = 0; l < 3; ++l)
      for (const auto* part : {&s.design, &s.impl}) {
        const auto& lj = (*part)[l];
        ASSERT_TRUE(lj.score) << s.ref.name;
        if (expert) {
          EXPECT_GE(*lj.score, 75) << s.ref.name << " L" << l + 1;
        } else {
          EXPECT_LE(*lj.score, 25) << s.ref.name << " L" << l + 1;
        }
        ASSERT_EQ(lj.samples.size(), 3u);
        // Each sample saw its own anchor order, and the chosen anchor maps back to its position.
        for (const auto& smp : lj.samples) {
          ASSERT_TRUE(smp.verdict);
          EXPECT_EQ(balanced_order(smp.sample + l).score[smp.position], smp.verdict->score);
        }
      }
    EXPECT_EQ(s.flag_count(), 0) << s.ref.name;
    ASSERT_TRUE(s.js_design && s.js_impl);
    if (expert) {
      EXPECT_GE(*s.js_impl, 75);
    }
    // The expert's signatures are all present in its own library; the naive lacks them.
    for (const auto& e : s.evidence) EXPECT_EQ(e.status, expert ? "built" : "not_built") << s.ref.name << " " << e.id;
    EXPECT_FALSE(s.evidence.empty()) << s.ref.task << " has evidence entries";
  }
  // The run summary: per task and per level means, and the Markdown says so.
  const auto sum = summarize("fake-run", scores, {"openai", "fake", 3, judge->calls()});
  EXPECT_EQ(sum["overall"]["attempts"], 6);
  EXPECT_EQ(sum["overall"]["flags"], 0);
  EXPECT_GE(sum["task_levels"]["muon_optimizer_step"]["design"]["js_impl"].get<double>(), 75);
  EXPECT_LE(sum["task_levels"]["muon_optimizer_step"]["baseline"]["js_impl"].get<double>(), 25);
  const std::string md = summary_markdown(sum);
  EXPECT_NE(md.find("| muon_optimizer_step | design | 1 | "), std::string::npos) << md;
  EXPECT_NE(md.find("None: no level the judge credits"), std::string::npos);
  const auto j = to_json(scores[0]);
  EXPECT_TRUE(j["design"][0]["reason"].is_string());
  EXPECT_EQ(j["implementation"].size(), 3u);
  EXPECT_TRUE(j["library"]["sass"]["mnemonics"].is_object());

  // Scoring the same run again costs no call: every prompt is in the cache.
  auto again = make_judge(config(fake));
  const int before = fake.requests();
  score_all(*again, 3);
  EXPECT_EQ(again->calls(), 0u);
  EXPECT_EQ(fake.requests(), before);
}

TEST_F(Pipeline, AJudgeCreditingWgmmaToTheNaiveIsFlaggedByTheMachineCode) {
  test::FakeJudge fake(std::string(D2K_SOURCE_DIR) + "/tests/fixtures/judge/muon_naive_wgmma.json");
  auto judge = make_judge(config(fake));
  for (const auto& s : score_all(*judge, 1)) {
    if (s.ref.task != "muon_optimizer_step") continue;
    ASSERT_TRUE(s.impl[2].score);
    EXPECT_EQ(*s.impl[2].score, 100) << "the fixture credits L3 to both";
    if (s.ref.level == "baseline") {
      ASSERT_EQ(s.impl[2].flags.size(), 1u) << s.ref.name;
      EXPECT_NE(s.impl[2].flags[0].find("L3.wgmma_tma_warp_specialised"), std::string::npos) << s.impl[2].flags[0];
      EXPECT_NE(s.impl[2].flags[0].find("no HGMMA"), std::string::npos) << s.impl[2].flags[0];
      const auto j = to_json(s);
      EXPECT_EQ(j["flags"].size(), 1u);
    } else {
      EXPECT_TRUE(s.impl[2].flags.empty()) << "the expert's library has HGMMA";
    }
  }
}

TEST_F(Pipeline, TheImplementationPromptCarriesTheEvidence) {
  test::FakeJudge fake(std::string(D2K_SOURCE_DIR) + "/tests/fixtures/judge/muon_naive_wgmma.json");
  auto judge = make_judge(config(fake));
  score_all(*judge, 1);
  bool saw_absent = false, saw_present = false;
  for (const auto& p : fake.prompts()) {
    if (p.find("at level 3 only") == std::string::npos || p.find("<<<CODE") == std::string::npos) continue;
    saw_absent = saw_absent || p.find("L3.wgmma_tma_warp_specialised [SASS: one of HGMMA]: NOT present") != std::string::npos;
    saw_present = saw_present || p.find("L3.wgmma_tma_warp_specialised [SASS: one of HGMMA]: present in the built library: HGMMA") != std::string::npos;
  }
  EXPECT_TRUE(saw_absent);
  EXPECT_TRUE(saw_present);
}

TEST(Attempts, FolderNamesAndManifests) {
  const fs::path run = fs::temp_directory_path() / ("d2k-names-" + std::to_string(::getpid()));
  fs::remove_all(run);
  fs::create_directories(run / "attempts" / "t__cutlass__L1_L2__2" / "workspace");
  auto found = find_run_attempts(run);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].task, "t");
  EXPECT_EQ(found[0].track, "cutlass");
  EXPECT_EQ(found[0].level, "L1+L2");
  EXPECT_EQ(found[0].k, 2);
  fs::create_directories(run / "attempts" / "badname");
  EXPECT_THROW(find_run_attempts(run), std::runtime_error);
  EXPECT_THROW(find_run_attempts(run / "attempts"), std::runtime_error);
  fs::remove_all(run);
}

}  // namespace
}  // namespace d2k::capability
