#pragma once
/// What one workload means: axis values, shapes, the generators, comparison rules and scalars in
/// effect (definition defaults merged with the workload's overrides), the cost model at those
/// values, and hidden check workloads drawn from the constraints.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/task.h"

namespace d2k {

/// Lookups by name; nullptr when absent.
const Axis* find_axis(const Definition& def, std::string_view name);
const TensorSpec* find_input(const Definition& def, std::string_view name);
const TensorSpec* find_output(const Definition& def, std::string_view name);
const ScalarSpec* find_scalar(const Definition& def, std::string_view name);

/// Every axis value for `w`: const values, the workload's var values, expr axes evaluated in
/// dependency order. Throws std::invalid_argument naming the workload and the axis when a var
/// axis is missing, the workload sets an unknown or non-var axis, an expr axis fails to evaluate
/// or is not an integer, or expr axes form a cycle. Ranges and constraints are validate_task's.
AxisValues resolve_axes(const Definition& def, const Workload& w);

/// Dimensions of `t` at `axes`; each shape entry (axis name, integer literal or expression over
/// axes) is evaluated. Throws std::invalid_argument naming the tensor on an unknown axis or a
/// negative dimension.
std::vector<std::int64_t> resolve_shape(const TensorSpec& t, const AxisValues& axes);

/// The generator in effect for input `input`: the definition's, with the workload's override
/// merged field by field (an override naming a different `kind` replaces it). Throws
/// std::invalid_argument for an unknown input or one without a generator.
GeneratorSpec effective_generator(const Definition& def, const Workload& w, std::string_view input);
/// The comparison rule in effect for output `output`, merged the same way (a different `rule`
/// replaces). Throws std::invalid_argument for an unknown output or one without a rule.
CompareSpec effective_compare(const Definition& def, const Workload& w, std::string_view output);
/// The task's scalars in definition order, with the workload's values where it overrides them.
std::vector<ScalarSpec> effective_scalars(const Definition& def, const Workload& w);

/// Field-by-field merges used by the two functions above. They merge the JSON objects as written
/// (CompareSpec::raw); a CompareSpec built in code (raw empty) counts its rule and every field
/// that differs from the defaults as written.
GeneratorSpec merge_generator(const GeneratorSpec& base, const GeneratorSpec& over);
CompareSpec merge_compare(const CompareSpec& base, const CompareSpec& over);
/// A CompareSpec from its JSON object (silently: validate_task reports problems).
CompareSpec compare_from_json(const ordered_json& j);

/// The environment expressions see: every axis value and every scalar (int scalars as integers).
std::map<std::string, Value> expr_env(const AxisValues& axes, const std::vector<ScalarSpec>& scalars);

/// The index of the first constraint of `def` that is false at `env`, or -1 when all hold.
/// Throws ExprError when one cannot be evaluated.
int first_failed_constraint(const Definition& def, const std::map<std::string, Value>& env);

/// The cost model at one workload: operations per unit and compulsory bytes.
struct CostAt {
  std::map<std::string, double> flops;
  double bytes = 0;
};
/// Evaluates def.cost at `env` (see expr_env). Throws ExprError on an evaluation error.
CostAt evaluate_cost(const Definition& def, const std::map<std::string, Value>& env);

/// The most elements any tensor of a hidden workload may hold (they are judged on the host against
/// the fp64 reference).
inline constexpr std::int64_t kHiddenMaxElements = std::int64_t{1} << 25;

/// Draws `count` hidden check workloads: var axes in [min, hidden_max] (hidden_max defaults to
/// min(max, 4096)), biased to awkward sizes (small, odd, prime, one off a power of two, not a
/// multiple of 8/16/64/128; for an axis a constraint forces to a multiple of m, a multiple of m
/// that is not one of 64 or 128 where possible; workload n draws the n-th axis marked hidden_long
/// from [hidden_max / 4, hidden_max]), each satisfying every constraint and holding at most
/// kHiddenMaxElements elements per tensor (rejection
/// sampling with a cap). Deterministic for (definition name, secret_seed). role = check,
/// hidden = true, uuid = hidden-<n>-<hash>. Returns fewer than `count` when the constraints
/// reject every attempt within the cap.
std::vector<Workload> draw_hidden_workloads(const Definition& def, std::uint64_t secret_seed, int count);

}  // namespace d2k
