#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/task_loader.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return fs::path(D2K_SOURCE_DIR) / "tests/fixtures/tasks" / name; }

const DesignLevels& levels() {
  static const DesignLevels l = [] {
    Diagnostics diag;
    DesignLevels lv = load_design_levels(fs::path(D2K_SOURCE_DIR) / "dataset/design_levels.json", diag);
    EXPECT_TRUE(diag.ok()) << diag.format();
    return lv;
  }();
  return l;
}

// Loads and validates a fixture; returns the diagnostics.
Diagnostics check(const std::string& name) {
  Diagnostics diag;
  load_and_validate_task(fixture(name), levels(), diag);
  return diag;
}

#define EXPECT_DIAG(diag, text) EXPECT_TRUE((diag).contains(text)) << "missing: " << (text) << "\ngot:\n" << (diag).format()

TEST(Diagnostics, Format) {
  Diagnostics d;
  d.error("dataset/x/workloads.jsonl", 3, "axes.R", "0 is below the axis minimum 1");
  d.error("dataset/x/definition.json", 0, "", "file is missing");
  d.warning("dataset/x/definition.json", 0, "inputs.x.foo", "unknown field (ignored)");
  EXPECT_EQ(d.items()[0].format(), "dataset/x/workloads.jsonl:3: axes.R: 0 is below the axis minimum 1");
  EXPECT_EQ(d.items()[1].format(), "dataset/x/definition.json: file is missing");
  EXPECT_EQ(d.items()[2].format(), "dataset/x/definition.json: inputs.x.foo: warning: unknown field (ignored)");
  EXPECT_EQ(d.error_count(), 2u);
  EXPECT_EQ(d.warning_count(), 1u);
  EXPECT_FALSE(d.ok());
}

TEST(DesignLevels, LoadsAllThree) {
  const DesignLevels& l = levels();
  ASSERT_TRUE(l.loaded);
  EXPECT_EQ(l.level[0].key, "level_1_high_level_algorithmic_insights");
  EXPECT_EQ(l.level[2].workspace, "L1+L2+L3");
  for (const auto& lv : l.level) {
    EXPECT_FALSE(lv.title.empty());
    EXPECT_FALSE(lv.covers.empty());
    EXPECT_FALSE(lv.item_form.empty());
  }
}

TEST(DesignLevels, MissingLevelIsReported) {
  const fs::path dir = fs::temp_directory_path() / "d2k_core_levels_test";
  fs::create_directories(dir);
  std::ofstream(dir / "design_levels.json") << R"J({"level_1_high_level_algorithmic_insights": {"title": "t"}})J";
  Diagnostics diag;
  const DesignLevels l = load_design_levels(dir / "design_levels.json", diag);
  EXPECT_FALSE(l.loaded);
  EXPECT_DIAG(diag, "design_levels.json: level_1_high_level_algorithmic_insights.covers: missing required field");
  EXPECT_DIAG(diag, "design_levels.json: level_2_dataflow_design: missing level");
  fs::remove_all(dir);
}

TEST(Loader, GoodTaskLoadsAndValidates) {
  Diagnostics diag;
  const Task t = load_and_validate_task(fixture("good_task"), levels(), diag);
  EXPECT_TRUE(diag.ok()) << diag.format();
  EXPECT_EQ(diag.warning_count(), 0u) << diag.format();
  EXPECT_EQ(t.def.name, "good_task");
  ASSERT_EQ(t.def.inputs.size(), 3u);
  // Key order of the file is kept: it is the order of tensors in the ABI.
  EXPECT_EQ(t.def.inputs[0].name, "x");
  EXPECT_EQ(t.def.inputs[1].name, "y");
  EXPECT_EQ(t.def.inputs[2].name, "w");
  EXPECT_EQ(t.def.inputs[0].dtype, DType::bf16);
  EXPECT_EQ(t.def.inputs[0].shape, (std::vector<std::string>{"T", "H"}));
  EXPECT_EQ(t.def.inputs[0].generator->kind, "normal");
  EXPECT_EQ(t.def.inputs[0].generator->params.at("std"), 1);
  ASSERT_EQ(t.def.axes.size(), 5u);
  EXPECT_EQ(t.def.axes[0].hidden_max, 3000);
  EXPECT_EQ(t.def.axes[4].kind, AxisKind::const_);
  EXPECT_EQ(t.def.constraint_text[0], "H % 8 == 0");
  EXPECT_EQ(t.def.outputs[0].compare->atol, 0.02);
  EXPECT_EQ(t.def.outputs[1].compare->rule, "rel_l2");
  EXPECT_EQ(t.def.scalars[0].value, 0.5);
  EXPECT_EQ(t.def.cost.flops.count("fp32"), 1u);
  EXPECT_EQ(t.def.tracks.at("cutlass").headers, (std::vector<std::string>{"cutlass"}));
  EXPECT_TRUE(t.def.tracks.at("cutlass").link.empty());
  EXPECT_FALSE(t.def.tracks.at("cutlass").vendor_kernels);
  ASSERT_EQ(t.workloads.size(), 3u);
  EXPECT_EQ(t.workloads[0].role, WorkloadRole::check);
  EXPECT_EQ(t.workloads[2].role, WorkloadRole::bench);
  EXPECT_EQ(t.workloads[2].line, 3);
  EXPECT_EQ(t.workloads[1].axes.at("H"), 1000);
  ASSERT_TRUE(t.design && t.rubric);
  EXPECT_EQ(t.design->level[0][0].id, "L1.one_pass");
  EXPECT_EQ(t.rubric->implementation[2].at(75), "L3 implementation: anchor 75");
  EXPECT_TRUE(t.has_spec && t.has_reference);
  EXPECT_FALSE(t.has_naive || t.has_expert || t.has_library);
}

TEST(Loader, MalformedJsonGivesLineAndByte) {
  const Diagnostics d = check("broken_json");
  EXPECT_DIAG(d, "broken_json/definition.json:7: JSON syntax error at byte");
  EXPECT_DIAG(d, "(line 7, column 7)");
}

TEST(Loader, UnknownDtype) {
  const Diagnostics d = check("broken_dtype");
  EXPECT_DIAG(d, "broken_dtype/definition.json: inputs.x.dtype: unknown dtype 'bfloat17' (one of bfloat16,");
}

TEST(Loader, UnknownAxisInShape) {
  const Diagnostics d = check("broken_axis");
  EXPECT_DIAG(d, "broken_axis/definition.json: inputs.y.shape[1]: unknown axis 'Q'");
}

TEST(Loader, BadConstraints) {
  const Diagnostics d = check("broken_constraint");
  EXPECT_DIAG(d, "broken_constraint/definition.json: constraints[0]: unexpected end of expression at column 9 in \"H % 8 ==\"");
  EXPECT_DIAG(d, "broken_constraint/definition.json: constraints[1]: unknown name 'K' in \"K > 3\"");
  EXPECT_FALSE(d.contains("constraints[2]"));
}

TEST(Loader, DuplicateNames) {
  const Diagnostics d = check("broken_duplicate");
  EXPECT_DIAG(d, "broken_duplicate/definition.json: inputs.y: duplicate key (JSON keeps only the last one)");
  EXPECT_DIAG(d, "broken_duplicate/definition.json: inputs.x: duplicate name 'x' (already the axis 'x')");
}

TEST(Loader, BadWorkloadLines) {
  const Diagnostics d = check("broken_workload");
  const std::string f = "broken_workload/workloads.jsonl";
  EXPECT_DIAG(d, f + ":2: JSON syntax error at column");
  EXPECT_DIAG(d, f + ":3: axes.T: 0 is below the axis minimum 1");
  EXPECT_DIAG(d, f + ":4: axes: constraint \"H % 8 == 0\" does not hold (H=100)");
  EXPECT_DIAG(d, f + ":5: axes.Q: unknown axis 'Q'");
  EXPECT_DIAG(d, f + ":6: uuid: duplicate uuid 'wl-check-1' (first on line 1)");
  EXPECT_DIAG(d, f + ":7: axes.H: missing value for var axis 'H'");
  EXPECT_DIAG(d, f + ":8: role: unknown role 'timing' (check or bench)");
  EXPECT_DIAG(d, f + ":9: axes.G: axis 'G' is const and cannot be set by a workload");
  EXPECT_DIAG(d, f + ":9: inputs.z: unknown input 'z'");
  EXPECT_DIAG(d, f + ":9: compare.out.atol: must be >= 0");
  EXPECT_DIAG(d, f + ":9: scalars.beta: unknown scalar 'beta'");
  EXPECT_DIAG(d, f + ":10: axes.T: expected an integer, found 9.5");
  EXPECT_FALSE(d.contains(f + ":1:")) << d.format();
}

TEST(Loader, GeneratorAndCompareRules) {
  const Diagnostics d = check("broken_rules");
  const std::string f = "broken_rules/definition.json: ";
  // Generator fields are checked against data/gen_schema.h by the dry run of `d2k tasks
  // validate` (tests/cli: cli_validate_broken_rules_generators).
  EXPECT_DIAG(d, f + "outputs.out.compare: allclose needs atol or rtol");
  EXPECT_DIAG(d, f + "outputs.out.compare.matched_ratio: must be in (0, 1]");
  EXPECT_DIAG(d, f + "outputs.rowsum.compare.tol: rel_l2 needs tol > 0");
  EXPECT_DIAG(d, f + "outputs.ulps_bad.compare.max_ulps: must be >= ulps");
  EXPECT_DIAG(d, f + "outputs.ulps_int.compare: ulp needs ulps");
  EXPECT_DIAG(d, f + "outputs.ulps_int.compare.rule: ulp compares float outputs only");
  EXPECT_DIAG(d, f + "outputs.keys.compare.count: 'nrows' is not an output");
  EXPECT_DIAG(d, "expr axes form a cycle: A -> B -> A");
  EXPECT_DIAG(d, f + "cost.flops.fp33: unknown unit 'fp33'");
  EXPECT_DIAG(d, f + "cost.bytes: unknown name 'alpha_typo'");
}

// `exact` takes a row count (ordered rows of data-dependent length): stream_compaction's columns
// use it without a warning, and a count that is not an integer output is an error.
TEST(Loader, ExactRuleTakesARowCount) {
  Diagnostics ok;
  load_and_validate_task(fs::path(D2K_SOURCE_DIR) / "dataset/stream_compaction", levels(), ok);
  EXPECT_TRUE(ok.ok()) << ok.format();
  EXPECT_EQ(ok.warning_count(), 0u) << ok.format();

  const fs::path dir = fs::path(testing::TempDir()) / "exact_count" / "stream_compaction";
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  fs::copy(fs::path(D2K_SOURCE_DIR) / "dataset/stream_compaction", dir, fs::copy_options::recursive);
  std::ifstream in(dir / "definition.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::string from = R"("compare": {"rule": "exact", "count": "count"}
    },
    "out_extendedprice")";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), R"("compare": {"rule": "exact", "count": "out_extendedprice"}
    },
    "out_extendedprice")");
  std::ofstream(dir / "definition.json") << text;
  Diagnostics bad;
  load_and_validate_task(dir, levels(), bad);
  EXPECT_DIAG(bad, "outputs.out_shipdate.compare.count: output 'out_extendedprice' is not an integer");
  fs::remove_all(dir.parent_path());
}

TEST(Loader, DesignValidation) {
  const Diagnostics d = check("broken_design");
  const std::string f = "broken_design/design.json: ";
  EXPECT_DIAG(d, f + "level_2_dataflow_design: missing or empty");
  EXPECT_DIAG(d, f + "level_3_low_level_optimization_tricks[1].rationale: empty");
  EXPECT_DIAG(d, f + "level_3_low_level_optimization_tricks[1].id: duplicate id 'L1.one_pass'");
  EXPECT_DIAG(d, f + "cross_level_rationale: missing or empty");
  EXPECT_FALSE(d.contains("rubric.json")) << d.format();
}

TEST(Loader, RubricValidation) {
  const Diagnostics d = check("broken_rubric");
  const std::string f = "broken_rubric/rubric.json: ";
  EXPECT_DIAG(d, f + "level_2.implementation.75: missing anchor");
  EXPECT_DIAG(d, f + "level_1.design.50: empty anchor");
  EXPECT_DIAG(d, f + "level_3.design.30: unknown anchor");
  EXPECT_FALSE(d.contains("design.json")) << d.format();
}

TEST(Loader, MissingFilesAreFlagged) {
  const Diagnostics d = check("broken_dtype");
  EXPECT_DIAG(d, "broken_dtype/design.json: file is missing");
  EXPECT_DIAG(d, "broken_dtype/rubric.json: file is missing");
  EXPECT_DIAG(d, "broken_dtype/spec.md: file is missing");
  EXPECT_DIAG(d, "broken_dtype/reference.cpp: file is missing");
}

TEST(Loader, NeverThrowsOnGarbage) {
  const fs::path dir = fs::temp_directory_path() / "d2k_core_garbage_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "definition.json", std::ios::binary) << std::string("\x00\xff{\"name\":", 9);
  std::ofstream(dir / "workloads.jsonl") << "[1, 2]\n\n{\"uuid\": 5, \"role\": \"check\", \"axes\": [1]}\n";
  std::ofstream(dir / "design.json") << "\"just a string\"";
  std::ofstream(dir / "rubric.json") << R"J({"level_1": {"design": {"zero": "x"}}})J";
  Diagnostics diag;
  EXPECT_NO_THROW(load_and_validate_task(dir, levels(), diag));
  EXPECT_DIAG(diag, "definition.json:1: JSON syntax error at byte 1");
  EXPECT_DIAG(diag, "workloads.jsonl:1: expected an object, found an array");
  EXPECT_DIAG(diag, "workloads.jsonl:3: uuid: expected a string, found a number");
  EXPECT_DIAG(diag, "workloads.jsonl:3: axes: expected an object, found an array");
  EXPECT_DIAG(diag, "design.json: expected an object, found a string");
  EXPECT_DIAG(diag, "rubric.json: level_1.design.zero: anchor keys are scores");
  fs::remove_all(dir);

  Diagnostics none;
  EXPECT_NO_THROW(load_and_validate_task(fixture("no_such_task"), levels(), none));
  EXPECT_DIAG(none, "no_such_task/definition.json: file is missing");
  EXPECT_DIAG(none, "no_such_task/workloads.jsonl: file is missing");
}

TEST(Loader, DefinitionFromJsonReportsTypes) {
  Diagnostics diag;
  const auto j = ordered_json::parse(R"J({"name": 3, "op_type": "x", "description": "d",
    "axes": {"T": {"type": "var", "min": "one"}, "U": {"type": "vary"}, "V": {"type": "expr", "expr": "T +"}},
    "inputs": {"x": {"shape": "T", "dtype": "float32"}},
    "outputs": {"y": {"shape": ["T"], "dtype": "float32", "compare": {"rule": "exact"}}},
    "cost": {"bytes": "4 * T"}})J");
  const Definition d = definition_from_json(j, diag, "mem.json");
  EXPECT_DIAG(diag, "mem.json: name: expected a string, found a number");
  EXPECT_DIAG(diag, "mem.json: axes.T.min: expected an integer, found a string");
  EXPECT_DIAG(diag, "mem.json: axes.U.type: unknown axis type 'vary' (const, var or expr)");
  EXPECT_DIAG(diag, "mem.json: axes.V.expr: unexpected end of expression");
  EXPECT_DIAG(diag, "mem.json: inputs.x.shape: expected an array of axis names");
  EXPECT_EQ(d.outputs.size(), 1u);
}

TEST(Loader, DatasetListsEveryTaskFolder) {
  Diagnostics diag;
  const auto tasks = load_dataset(fs::path(D2K_SOURCE_DIR) / "tests/fixtures/tasks", diag);
  std::size_t folders = 0;
  for (const auto& e : fs::directory_iterator(fs::path(D2K_SOURCE_DIR) / "tests/fixtures/tasks"))
    folders += fs::exists(e.path() / "definition.json");
  ASSERT_EQ(tasks.size(), folders);
  EXPECT_TRUE(std::is_sorted(tasks.begin(), tasks.end(),
                             [](const Task& a, const Task& b) { return a.dir.filename() < b.dir.filename(); }));
  EXPECT_EQ(tasks.back().def.name, "good_task");
  EXPECT_DIAG(diag, "broken_json/definition.json:7: JSON syntax error");
}

// launches_vary_with_inputs: a reason, never an empty string (docs/task-format.md).
TEST(Loader, LaunchesVaryWithInputsNeedsAReason) {
  std::ifstream in(fixture("good_task") / "definition.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const fs::path dir = fs::temp_directory_path() / "d2k_loader_launches_vary" / "good_task";
  for (const std::string value : {"\"\"", "\"group sizes pick the GEMM kernels\""}) {
    fs::remove_all(dir.parent_path());
    fs::create_directories(dir.parent_path());
    fs::copy(fixture("good_task"), dir, fs::copy_options::recursive);
    const std::size_t at = text.find('{');
    std::ofstream(dir / "definition.json", std::ios::trunc)
        << text.substr(0, at + 1) << "\"launches_vary_with_inputs\": " << value << ", " << text.substr(at + 1);
    Diagnostics diag;
    const Task t = load_and_validate_task(dir, levels(), diag);
    if (value == "\"\"") {
      EXPECT_DIAG(diag, "definition.json: launches_vary_with_inputs: say why");
    } else {
      EXPECT_TRUE(diag.ok()) << diag.format();
      EXPECT_EQ(t.def.launches_vary_with_inputs, "group sizes pick the GEMM kernels");
    }
  }
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace d2k
