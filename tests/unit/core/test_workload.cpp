#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>

#include "core/loader.h"
#include "core/workload.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

Task good_task() {
  Diagnostics diag;
  Task t = load_task(fs::path(D2K_SOURCE_DIR) / "tests/fixtures/tasks/good_task", diag);
  EXPECT_TRUE(diag.ok()) << diag.format();
  return t;
}

Definition def_from(const char* json) {
  Diagnostics diag;
  Definition d = definition_from_json(ordered_json::parse(json), diag);
  EXPECT_TRUE(diag.ok()) << diag.format();
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Workload, ResolveAxesEvaluatesExprAxesInDependencyOrder) {
  const Task t = good_task();
  const AxisValues a = resolve_axes(t.def, t.workloads[0]);  // T=7, H=264
  EXPECT_EQ(a.at("T"), 7);
  EXPECT_EQ(a.at("H"), 264);
  EXPECT_EQ(a.at("HB"), 528);
  EXPECT_EQ(a.at("HQ"), 176);  // ceil_div(HB, 3), declared before HB
  EXPECT_EQ(a.at("G"), 4);
}

TEST(Workload, ResolveAxesErrors) {
  const Task t = good_task();
  Workload w;
  w.uuid = "w1";
  w.axes = {{"T", 3}};
  EXPECT_EQ(error_of([&] { resolve_axes(t.def, w); }), "workload 'w1': missing value for var axis 'H'");
  w.axes = {{"T", 3}, {"H", 8}, {"G", 2}};
  EXPECT_EQ(error_of([&] { resolve_axes(t.def, w); }), "workload 'w1': axis 'G' is const and cannot be set by a workload");
  w.axes = {{"T", 3}, {"H", 8}, {"Z", 2}};
  EXPECT_EQ(error_of([&] { resolve_axes(t.def, w); }), "workload 'w1': unknown axis 'Z'");

  const Definition cyc = def_from(R"J({"name": "c", "op_type": "t", "description": "d",
    "axes": {"N": {"type": "var"}, "A": {"type": "expr", "expr": "B + N"}, "B": {"type": "expr", "expr": "A * 2"}},
    "inputs": {}, "outputs": {}, "cost": {"bytes": "N"}})J");
  Workload wn;
  wn.axes = {{"N", 4}};
  EXPECT_NE(error_of([&] { resolve_axes(cyc, wn); }).find("cycle: A, B"), std::string::npos);

  const Definition frac = def_from(R"J({"name": "f", "op_type": "t", "description": "d",
    "axes": {"N": {"type": "var"}, "R": {"type": "expr", "expr": "sqrt(N)"}},
    "inputs": {}, "outputs": {}, "cost": {"bytes": "N"}})J");
  wn.axes = {{"N", 16}};
  EXPECT_EQ(resolve_axes(frac, wn).at("R"), 4);
  wn.axes = {{"N", 15}};
  EXPECT_NE(error_of([&] { resolve_axes(frac, wn); }).find("is not an integer"), std::string::npos);
}

TEST(Workload, ResolveShape) {
  const Task t = good_task();
  const AxisValues a = resolve_axes(t.def, t.workloads[0]);
  EXPECT_EQ(resolve_shape(t.def.inputs[0], a), (std::vector<std::int64_t>{7, 264}));
  EXPECT_EQ(resolve_shape(t.def.inputs[2], a), (std::vector<std::int64_t>{4}));
  TensorSpec s;
  s.name = "s";
  s.shape = {"T", "HB / 2", "3"};
  EXPECT_EQ(resolve_shape(s, a), (std::vector<std::int64_t>{7, 264, 3}));
  s.shape = {"T", "Q"};
  EXPECT_NE(error_of([&] { resolve_shape(s, a); }).find("tensor 's' shape[1]: unknown identifier 'Q'"), std::string::npos);
  s.shape = {"T - 10"};
  EXPECT_NE(error_of([&] { resolve_shape(s, a); }).find("is negative (-3)"), std::string::npos);
}

TEST(Workload, EffectiveSpecsMergeOverridesFieldByField) {
  const Task t = good_task();
  const Workload& bench = t.workloads[2];  // x std 3, out atol 0.03
  const GeneratorSpec g = effective_generator(t.def, bench, "x");
  EXPECT_EQ(g.kind, "normal");
  EXPECT_EQ(g.params.at("std"), 3);
  EXPECT_EQ(g.params.at("mean"), 0);
  EXPECT_EQ(effective_generator(t.def, bench, "y").params.at("low"), -1);
  const CompareSpec c = effective_compare(t.def, bench, "out");
  EXPECT_EQ(c.rule, "allclose");
  EXPECT_DOUBLE_EQ(c.atol, 0.03);
  EXPECT_DOUBLE_EQ(c.rtol, 0.02);
  EXPECT_DOUBLE_EQ(effective_compare(t.def, t.workloads[0], "out").atol, 0.02);

  Workload w = bench;
  w.generators["x"] = GeneratorSpec{"uniform", ordered_json{{"low", 0}, {"high", 2}}};
  const GeneratorSpec r = effective_generator(t.def, w, "x");
  EXPECT_EQ(r.kind, "uniform");
  EXPECT_FALSE(r.params.contains("std"));  // another kind replaces, not merges
  CompareSpec over;
  over.rule = "rel_l2";
  over.tol = 0.01;
  w.compare["out"] = over;
  const CompareSpec rc = effective_compare(t.def, w, "out");
  EXPECT_EQ(rc.rule, "rel_l2");
  EXPECT_DOUBLE_EQ(rc.tol, 0.01);
  EXPECT_DOUBLE_EQ(rc.atol, 0.0);

  EXPECT_DOUBLE_EQ(effective_scalars(t.def, t.workloads[1])[0].value, 2.0);
  EXPECT_DOUBLE_EQ(effective_scalars(t.def, t.workloads[0])[0].value, 0.5);
  EXPECT_THROW(effective_generator(t.def, bench, "nope"), std::invalid_argument);
  EXPECT_THROW(effective_compare(t.def, bench, "x"), std::invalid_argument);
}

TEST(Workload, CostModel) {
  const Task t = good_task();
  const Workload& w = t.workloads[0];
  const auto env = expr_env(resolve_axes(t.def, w), effective_scalars(t.def, w));
  const CostAt c = evaluate_cost(t.def, env);
  EXPECT_DOUBLE_EQ(c.flops.at("fp32"), 3.0 * 7 * 264);
  EXPECT_DOUBLE_EQ(c.bytes, 6.0 * 7 * 264 + 4 * 7 + 4 * 4);
  EXPECT_EQ(first_failed_constraint(t.def, env), -1);
  Workload bad = w;
  bad.axes["H"] = 100;
  EXPECT_EQ(first_failed_constraint(t.def, expr_env(resolve_axes(t.def, bad), {})), 0);
}

TEST(Hidden, DrawsSatisfyConstraintsAndAreAwkward) {
  const Task t = good_task();
  const auto hidden = draw_hidden_workloads(t.def, 0xC0FFEE, 40);
  ASSERT_EQ(hidden.size(), 40u);
  int h_not_64 = 0, t_odd = 0, t_not_8 = 0;
  std::set<std::string> uuids;
  for (const auto& w : hidden) {
    EXPECT_EQ(w.role, WorkloadRole::check);
    EXPECT_TRUE(w.hidden);
    EXPECT_EQ(w.uuid.rfind("hidden-", 0), 0u) << w.uuid;
    uuids.insert(w.uuid);
    const auto axes = resolve_axes(t.def, w);
    EXPECT_EQ(first_failed_constraint(t.def, expr_env(axes, t.def.scalars)), -1);
    const std::int64_t T = w.axes.at("T"), H = w.axes.at("H");
    EXPECT_GE(T, 1);
    EXPECT_LE(T, 3000);  // hidden_max
    EXPECT_GE(H, 8);
    EXPECT_LE(H, 4096);  // min(max, 4096)
    EXPECT_EQ(H % 8, 0);
    h_not_64 += H % 64 != 0;
    t_odd += T % 2 == 1;
    t_not_8 += T % 8 != 0;
  }
  EXPECT_EQ(uuids.size(), hidden.size());
  EXPECT_GE(h_not_64, 30);
  EXPECT_GE(t_odd, 20);
  EXPECT_GE(t_not_8, 30);
}

TEST(Hidden, DeterministicForASeed) {
  const Task t = good_task();
  const auto a = draw_hidden_workloads(t.def, 7, 10);
  const auto b = draw_hidden_workloads(t.def, 7, 10);
  const auto c = draw_hidden_workloads(t.def, 8, 10);
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), 10u);
  bool differs = false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].uuid, b[k].uuid);
    EXPECT_EQ(a[k].axes, b[k].axes);
    differs = differs || a[k].axes != c[k].axes;
  }
  EXPECT_TRUE(differs);
}

// An axis marked hidden_long gets one draw from its top quarter whatever the seed (a long row is
// where a normalisation's accumulation precision shows), and no hidden tensor exceeds the size
// the host golden judges.
TEST(Hidden, HiddenLongAxisDrawsALongExtentAndSizesStayBounded) {
  const Definition d = def_from(R"J({"name": "norm", "op_type": "t", "description": "d",
    "axes": {"T": {"type": "var", "min": 1, "max": 1048576, "hidden_max": 2048},
             "H": {"type": "var", "min": 8, "max": 65536, "hidden_max": 65536, "hidden_long": true}},
    "constraints": ["H % 8 == 0"],
    "inputs": {"x": {"shape": ["T", "H"], "dtype": "bfloat16", "generator": {"kind": "normal", "mean": 0, "std": 1}}},
    "outputs": {"y": {"shape": ["T", "H"], "dtype": "bfloat16", "compare": {"rule": "exact"}}},
    "cost": {"bytes": "T * H"}})J");
  for (std::uint64_t seed = 1; seed <= 64; ++seed) {
    const auto hidden = draw_hidden_workloads(d, seed, 4);
    ASSERT_EQ(hidden.size(), 4u);
    EXPECT_GE(hidden[0].axes.at("H"), 16384) << "seed " << seed;
    EXPECT_EQ(hidden[0].axes.at("H") % 8, 0);
    for (const auto& w : hidden) EXPECT_LE(w.axes.at("T") * w.axes.at("H"), kHiddenMaxElements);
  }
}

TEST(Hidden, CoupledFixedAndImpossibleConstraints) {
  const Definition d = def_from(R"J({"name": "gemm", "op_type": "t", "description": "d",
    "axes": {"M": {"type": "var", "min": 1, "max": 100000}, "N": {"type": "var", "min": 1, "hidden_max": 512},
             "D": {"type": "var", "min": 1}, "K": {"type": "var", "min": 16}},
    "constraints": ["N <= M", "D == 128", "K % 16 == 0 && K < 1024", "(M + N) % 2 == 1"],
    "inputs": {}, "outputs": {}, "cost": {"bytes": "M"}})J");
  const auto hidden = draw_hidden_workloads(d, 1, 25);
  ASSERT_EQ(hidden.size(), 25u);
  for (const auto& w : hidden) {
    EXPECT_LE(w.axes.at("N"), w.axes.at("M"));
    EXPECT_LE(w.axes.at("N"), 512);
    EXPECT_EQ(w.axes.at("D"), 128);
    EXPECT_EQ(w.axes.at("K") % 16, 0);
    EXPECT_LT(w.axes.at("K"), 1024);
    EXPECT_EQ((w.axes.at("M") + w.axes.at("N")) % 2, 1);
  }
  const Definition never = def_from(R"J({"name": "never", "op_type": "t", "description": "d",
    "axes": {"T": {"type": "var"}}, "constraints": ["T < 0"], "inputs": {}, "outputs": {}, "cost": {"bytes": "T"}})J");
  EXPECT_TRUE(draw_hidden_workloads(never, 1, 3).empty());
}

}  // namespace
}  // namespace d2k
