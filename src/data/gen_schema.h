#pragma once
/// The one schema of the input generators: each kind, its fields, their types, whether each is
/// required or its default, and the range of values allowed. Generation (data::make_gen_plan)
/// reads its fields and defaults through it, `d2k tasks validate` checks task files against it
/// (by dry-running every workload's generator requests), and docs/generators.md prints it
/// (generator_schema_markdown; a unit test keeps the two equal).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace d2k::data {

enum class ParamType {
  number,   ///< any finite JSON number
  integer,  ///< an integer (a float with an integral value such as 1e6 is read too)
  string,   ///< a string, one of `choices` when that is not empty
  input,    ///< the name of another input of the task
};

/// An inclusive or exclusive bound on a number.
struct Bound {
  double value;
  bool inclusive;
};

struct ParamSpec {
  const char* name;
  ParamType type;
  bool required;                       ///< see `when`
  std::optional<double> default_value; ///< used by generation when the field is absent
  const char* default_text;            ///< the default as the docs show it ("" when none)
  std::optional<Bound> min, max;
  std::vector<const char*> choices;    ///< strings: the allowed values
  /// Non-empty: the field belongs to this variant only (`part` of powerlaw_csr): required there
  /// when `required`, refused elsewhere.
  const char* when = "";
};

struct GeneratorSchema {
  const char* kind;
  /// The variant selector field (powerlaw_csr: "part"), "" for single-variant kinds.
  const char* variant_field;
  std::vector<ParamSpec> params;
  const char* notes;  ///< relations checked by generation beyond the table (docs column)
};

/// Every kind, in documentation order.
const std::vector<GeneratorSchema>& generator_schemas();
/// The schema of `kind`, or nullptr.
const GeneratorSchema* find_generator_schema(std::string_view kind);
/// The field `name` of `s` that applies to variant `variant` ("" for single-variant kinds).
const ParamSpec* find_param(const GeneratorSchema& s, std::string_view name, std::string_view variant);
/// The schema as the Markdown table docs/generators.md carries.
std::string generator_schema_markdown();

}  // namespace d2k::data
