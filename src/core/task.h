#pragma once
/// The task model: what definition.json, workloads.jsonl, design.json and rubric.json hold,
/// after loading and validation. docs/task-format.md documents the JSON side field by field.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/expr.h"

namespace d2k {

using ordered_json = nlohmann::ordered_json;

enum class AxisKind { const_, var, expr };

/// One named dimension. `const` axes have a value; `var` axes take one from each workload
/// (with an optional range that hidden workloads are drawn from); `expr` axes are computed.
struct Axis {
  std::string name;
  AxisKind kind = AxisKind::var;
  std::int64_t value = 0;          ///< const
  Expr expr;                       ///< expr
  std::int64_t min = 1;            ///< var: smallest legal value
  std::int64_t max = 0;            ///< var: largest legal value (0 = unbounded)
  std::int64_t hidden_max = 0;     ///< var: largest value a hidden check workload may draw (0 = min(max, 4096))
  bool hidden_long = false;        ///< var: one hidden workload draws this axis from its top quarter
  std::string description;
};

/// How an input is filled. `params` keeps the generator's own fields (mean, std, low, high,
/// match_rate, source input, ...); generators interpret them. See data/generators.h.
struct GeneratorSpec {
  std::string kind;                ///< normal, uniform, randint, const, arange, join_build_keys, ...
  ordered_json params = ordered_json::object();
};

/// How an output is compared with the expected one. Unused fields keep their defaults.
struct CompareSpec {
  std::string rule = "allclose";   ///< allclose | ulp | rel_l2 | exact | multiset | topk | none
  double atol = 0, rtol = 0;       ///< allclose; atol also in ulp: a floor under which an element matches
  double ulps = 0;                 ///< ulp: per-element bound in units in the last place of the output type
  double max_ulps = -1;            ///< ulp: no element may be off by more (-1 = off)
  double matched_ratio = 1.0;      ///< allclose, ulp: share of elements that must match
  double max_error_cap = 0;        ///< allclose: no element may exceed this abs error (0 = off)
  double tol = 0;                  ///< rel_l2: ||a-e|| / ||e|| bound
  std::string group;               ///< multiset: outputs with the same group form the columns of one row set
  std::string count;               ///< multiset/topk: name of the output holding the valid row count
  std::int64_t k = 0;              ///< topk: k (or axis name in k_axis)
  std::string k_axis;
  std::string values;              ///< topk: name of the output holding values, for tie handling
  /// The fields as written (definition, or a workload's override); overrides merge on it.
  ordered_json raw = ordered_json::object();
};

/// Every comparison rule and the fields it reads (beside `rule`): the one list validation,
/// docs/task-format.md and docs/schema/definition.schema.json follow (`d2k schema check`).
struct CompareRuleFields {
  std::string_view rule;
  std::array<std::string_view, 4> fields;  ///< empty entries unused
};
inline constexpr std::array<CompareRuleFields, 7> kCompareRules = {{
    {"allclose", {"atol", "rtol", "matched_ratio", "max_error_cap"}},
    {"ulp", {"ulps", "matched_ratio", "max_ulps", "atol"}},
    {"rel_l2", {"tol", "", "", ""}},
    {"exact", {"count", "", "", ""}},
    {"multiset", {"group", "count", "", ""}},
    {"topk", {"k", "k_axis", "values", "count"}},
    {"none", {"", "", "", ""}},
}};

/// Execution units of a cost model's `flops` (definition.json `cost.flops` keys).
inline constexpr std::array<std::string_view, 7> kCostUnits = {"bf16_tensor", "fp16_tensor", "fp8_tensor",
                                                               "tf32_tensor", "fp32",        "fp64",
                                                               "int32"};

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::string> shape;  ///< axis names (or integer literals as strings)
  std::string description;
  std::optional<GeneratorSpec> generator;  ///< inputs only
  std::optional<CompareSpec> compare;      ///< outputs only
};

/// A task parameter passed to every call as a named scalar (eps, lr, ...).
struct ScalarSpec {
  std::string name;
  bool is_float = true;
  double value = 0;
  std::string description;
};

/// Least work the best known algorithm needs, as expressions of the axes.
struct CostModel {
  /// Operations per execution unit: keys are bf16_tensor, fp16_tensor, fp8_tensor,
  /// tf32_tensor, fp32, fp64, int32.
  std::map<std::string, Expr> flops;
  Expr bytes;                      ///< compulsory DRAM bytes (each input read once, each output written once)
  std::string notes;
};

/// What a solution on one track may use (docs/task-format.md, "tracks"). The track itself
/// (src/tracks/) decides what the names mean.
struct TrackSpec {
  std::vector<std::string> headers;  ///< header packages added at compile time (cutlass), never linked
  std::vector<std::string> link;     ///< vendor libraries linked and callable (cublas, cublasLt, ...)
  bool vendor_kernels = false;       ///< whether vendor-library kernels (cuBLAS, cuDNN) may run timed
};

struct Definition {
  std::string name, op_type, description;
  std::vector<Axis> axes;
  std::vector<Expr> constraints;   ///< each must evaluate true for a workload
  std::vector<std::string> constraint_text;
  std::vector<ScalarSpec> scalars;
  std::vector<TensorSpec> inputs, outputs;
  CostModel cost;
  /// Track name -> what a solution on it may use; which names exist is src/tracks/'s registry.
  std::map<std::string, TrackSpec> tracks;
  /// Why an honest call's kernels depend on its inputs' values (group sizes that pick a library's
  /// GEMM kernels): every timed call draws fresh inputs, so its kernel set may differ from the
  /// last one's and the kernel-set rule is not applied. Empty: the rule applies.
  std::string launches_vary_with_inputs;
  ordered_json raw;                ///< the file as loaded, for traces
};

enum class WorkloadRole { check, bench };

struct Workload {
  std::string uuid;
  WorkloadRole role = WorkloadRole::bench;
  std::map<std::string, std::int64_t> axes;       ///< var axes as given
  std::map<std::string, double> scalars;          ///< overrides of task scalars
  std::map<std::string, GeneratorSpec> generators;  ///< overrides per input
  std::map<std::string, CompareSpec> compare;     ///< overrides per output
  std::string description;
  int line = 0;                                   ///< 1-based line in workloads.jsonl
  bool hidden = false;                            ///< drawn from constraints, never published
};

/// Keys of the three guidance levels in design.json and dataset/design_levels.json.
inline constexpr std::array<std::string_view, 3> kDesignLevelKeys = {
    "level_1_high_level_algorithmic_insights", "level_2_dataflow_design",
    "level_3_low_level_optimization_tricks"};
/// Keys of the three levels in rubric.json.
inline constexpr std::array<std::string_view, 3> kRubricLevelKeys = {"level_1", "level_2", "level_3"};
/// The rubric anchors every level has, for a design and for an implementation.
inline constexpr std::array<int, 5> kRubricAnchors = {0, 25, 50, 75, 100};

/// One guidance level as dataset/design_levels.json defines it for every task.
struct DesignLevel {
  std::string key;        ///< kDesignLevelKeys[i]
  std::string id;         ///< "L1", "L2", "L3": design items of this level have ids "<id>.<name>"
  std::string title;
  std::string covers;     ///< what the level is about
  std::string item_form;  ///< what one guidance item at this level looks like
  std::string workspace;  ///< the workspace where this level first appears (L1, L1+L2, L1+L2+L3)
  /// The shared scale of the level: what a score of 0/25/50/75/100 means for every task (each
  /// task's rubric.json makes it concrete). Keys are kRubricAnchors.
  std::map<int, std::string> anchors;
};

/// dataset/design_levels.json.
struct DesignLevels {
  std::array<DesignLevel, 3> level;
  bool loaded = false;    ///< all three levels present and complete
};

/// How to recognise a design item in a candidate's machine code (design.json `evidence`,
/// docs/task-format.md): SASS opcode prefixes of which at least one must appear for the item to
/// count as built, and prefixes that must not appear.
struct DesignEvidence {
  std::vector<std::string> sass, sass_absent;
  ordered_json raw;  ///< the field as written (null when absent), for the validator
};

/// One guidance item of design.json.
struct DesignItem {
  std::string id, statement, rationale, recognise;
  DesignEvidence evidence;
};

struct Design {
  std::vector<DesignItem> level[3];
  std::string cross_level_rationale;
};

/// rubric.json: per level, the 0/25/50/75/100 anchors for a design and for an implementation.
struct Rubric {
  std::map<int, std::string> design[3];
  std::map<int, std::string> implementation[3];
};

/// A whole task folder.
struct Task {
  std::filesystem::path dir;
  Definition def;
  std::vector<Workload> workloads;
  std::optional<Design> design;
  std::optional<Rubric> rubric;
  bool has_reference = false, has_naive = false, has_expert = false, has_library = false;
  bool has_spec = false;
};

/// Values of every axis (const, var and expr) for one workload.
using AxisValues = std::map<std::string, std::int64_t>;

}  // namespace d2k
