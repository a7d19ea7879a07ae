// Design drafting: extracting the judge's JSON, the design rules applied to a draft (the evidence
// field's shape among them), the unified diff, the expert's variant table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "capability/draft.h"
#include "core/task_loader.h"

namespace d2k::capability {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

const fs::path kDataset = fs::path(D2K_SOURCE_DIR) / "dataset";

struct Loaded {
  Task task;
  DesignLevels levels;
  ordered_json design;
};

Loaded rmsnorm() {
  Diagnostics diag;
  Loaded l;
  l.task = load_task(kDataset / "fused_add_rmsnorm", diag);
  l.levels = load_design_levels(kDataset / "design_levels.json", diag);
  std::ifstream in(kDataset / "fused_add_rmsnorm" / "design.json");
  l.design = ordered_json::parse(in);
  return l;
}

TEST(Draft, ExtractsTheObjectFromAFenceOrProse) {
  EXPECT_EQ((*extract_json_object(R"({"a": 1})"))["a"], 1);
  EXPECT_EQ((*extract_json_object("Here it is:\n```json\n{\"a\": 2}\n```\nEdit as needed."))["a"], 2);
  EXPECT_EQ((*extract_json_object("The draft: {\"a\": {\"b\": 3}} (end)"))["a"]["b"], 3);
  EXPECT_FALSE(extract_json_object("no json here"));
  EXPECT_FALSE(extract_json_object("[1, 2]"));
}

TEST(Draft, ThePilotsOwnDesignPassesTheRules) {
  const Loaded l = rmsnorm();
  const Diagnostics d = validate_draft(l.task, l.levels, l.design, "draft.json");
  EXPECT_TRUE(d.ok()) << d.format();
  EXPECT_EQ(d.warning_count(), 0u) << d.format();
}

TEST(Draft, EvidenceShapeIsChecked) {
  const Loaded l = rmsnorm();
  const std::string item = "level_3_low_level_optimization_tricks[0]";
  auto check = [&](const char* evidence) {
    ordered_json d = l.design;
    d["level_3_low_level_optimization_tricks"][0]["evidence"] = ordered_json::parse(evidence);
    return validate_draft(l.task, l.levels, d, "draft.json");
  };
  EXPECT_TRUE(check(R"({"sass": ["HGMMA", "LDG.E.128"], "sass_absent": ["LDL"]})").ok());
  EXPECT_TRUE(check("[]").has_error("draft.json", 0, item + ".evidence"));
  EXPECT_TRUE(check("{}").has_error("draft.json", 0, item + ".evidence"));
  EXPECT_TRUE(check(R"({"ptx": ["wgmma"]})").has_error("draft.json", 0, item + ".evidence.ptx"));
  EXPECT_TRUE(check(R"({"sass": []})").has_error("draft.json", 0, item + ".evidence.sass"));
  EXPECT_TRUE(check(R"({"sass": "HGMMA"})").has_error("draft.json", 0, item + ".evidence.sass"));
  EXPECT_TRUE(check(R"({"sass": ["hgmma"]})").has_error("draft.json", 0, item + ".evidence.sass[0]"));
  EXPECT_TRUE(check(R"({"sass": ["HGMMA", ""]})").has_error("draft.json", 0, item + ".evidence.sass[1]"));
  EXPECT_TRUE(check(R"({"sass_absent": [7]})").has_error("draft.json", 0, item + ".evidence.sass_absent[0]"));
  EXPECT_TRUE(check(R"({"sass": ["LDG E"]})").has_error("draft.json", 0, item + ".evidence.sass[0]"));
}

TEST(Draft, OtherDesignRulesApplyToo) {
  const Loaded l = rmsnorm();
  ordered_json d = l.design;
  d["level_2_dataflow_design"][0]["id"] = d["level_1_high_level_algorithmic_insights"][0]["id"];
  d.erase("cross_level_rationale");
  const Diagnostics diag = validate_draft(l.task, l.levels, d, "draft.json");
  EXPECT_TRUE(diag.contains("duplicate id")) << diag.format();
  EXPECT_TRUE(diag.has_error("draft.json", 0, "cross_level_rationale")) << diag.format();
  for (const auto& x : diag.items()) EXPECT_EQ(x.file, "draft.json") << "only the draft's findings";
}

TEST(Draft, UnifiedDiffShowsTheChangedLines) {
  const std::string diff = unified_diff("a\nb\nc\n", "a\nB\nc\n", "old.json", "new.json");
  EXPECT_NE(diff.find("--- old.json"), std::string::npos) << diff;
  EXPECT_NE(diff.find("+++ new.json"), std::string::npos);
  EXPECT_NE(diff.find("\n-b\n+B\n"), std::string::npos) << diff;
  EXPECT_EQ(unified_diff("same\n", "same\n", "a", "b"), "");
}

TEST(Draft, ExpertMaterialHasTheSourcesAndTheVariantTable) {
  Diagnostics diag;
  const Task t = load_task(kDataset / "topk_topp_mask", diag);
  const ExpertMaterial m = read_expert_material(t);
  EXPECT_NE(m.code.find("=== expert.cu ==="), std::string::npos);
  EXPECT_NE(m.code.find("=== select.cuh ==="), std::string::npos);
  EXPECT_NE(m.variants.find("| matchany | `-DTOPK_WARP_AGGREGATED_ATOMICS"), std::string::npos) << m.variants;
  const Task r = load_task(kDataset / "muon_optimizer_step", diag);
  EXPECT_NE(read_expert_material(r, 100).code.find("(cut)"), std::string::npos) << "the size bound holds";
}

}  // namespace
}  // namespace d2k::capability
