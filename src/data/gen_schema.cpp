#include "data/gen_schema.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace d2k::data {

namespace {

constexpr double kTwo52 = 4503599627370496.0;  // zipf's rank bound: ranks stay exact in double

ParamSpec number(const char* name, std::optional<double> def, const char* def_text,
                 std::optional<Bound> min = std::nullopt, std::optional<Bound> max = std::nullopt) {
  return {name, ParamType::number, !def && def_text[0] == '\0', def, def_text, min, max, {}};
}
ParamSpec integer(const char* name, std::optional<double> def, const char* def_text,
                  std::optional<Bound> min = std::nullopt, std::optional<Bound> max = std::nullopt) {
  return {name, ParamType::integer, !def && def_text[0] == '\0', def, def_text, min, max, {}};
}
ParamSpec with_variant(ParamSpec p, const char* when) {
  p.when = when;
  return p;
}

}  // namespace

const std::vector<GeneratorSchema>& generator_schemas() {
  static const std::vector<GeneratorSchema> kSchemas = {
      {"normal", "", {number("mean", 0.0, "0"), number("std", 1.0, "1", Bound{0, true})}, ""},
      {"uniform", "", {number("low", 0.0, "0"), number("high", 1.0, "1")}, "high >= low"},
      {"randint", "", {integer("low", {}, ""), integer("high", {}, "")},
       "high > low (high exclusive); [low, high) fits the dtype exactly"},
      {"const", "", {number("value", {}, "")}, "an integer value is written with integer arithmetic"},
      {"arange", "", {number("start", 0.0, "0"), number("step", 1.0, "1")},
       "integer start and step: start + step·(count - 1) fits the dtype exactly"},
      {"unique_keys", "", {integer("low", 0.0, "0"), integer("high", {}, "low + count")},
       "high > low; [low, high) holds at least count keys and fits the dtype exactly"},
      {"join_probe_keys", "",
       {{"build", ParamType::input, true, {}, "", {}, {}, {}},
        number("match_rate", {}, "", Bound{0, true}, Bound{1, true}), integer("low", {}, "the build's"),
        integer("high", {}, "the build's")},
       "build names a unique_keys input; low and high, if given, equal the build's"},
      {"zipf", "",
       {integer("n", {}, "", Bound{1, true}, Bound{kTwo52, true}), number("s", 1.0, "1", Bound{0, false}, Bound{100, true}),
        integer("low", {}, "none: the rank itself"), integer("high", {}, "none: the rank itself")},
       "ranks [0, n) fit the dtype exactly; with low and high (both or neither), rank r is written as low + perm(r), perm a unique_keys bijection of [0, high - low), which holds at least n keys and fits the dtype"},
      {"ragged_offsets", "",
       {integer("total", {}, "rows_of's leading dimension", Bound{0, true}),
        number("skew", 1.0, "1", Bound{0, true}, Bound{20, true}),
        {"rows_of", ParamType::input, false, {}, "none", {}, {}, {}}},
       "count = groups + 1 integer offsets; exactly one of total and rows_of (an input whose leading dimension, "
       "e.g. the tokens of x [T, K], is the total, so the offsets follow every workload's shape, hidden draws "
       "included)"},
      {"powerlaw_csr", "part",
       {{"part", ParamType::string, true, {}, "", {}, {}, {"row_offsets", "col_indices"}},
        with_variant(integer("nnz", {}, "", Bound{0, true}), "row_offsets"),
        with_variant(number("alpha", 1.5, "1.5", Bound{0.05, false}), "row_offsets"),
        with_variant(integer("cols", {}, "", Bound{1, true}), "col_indices")},
       "row_offsets: an integer dtype, count = rows + 1"},
      {"graph_csr", "part",
       {{"part", ParamType::string, true, {}, "", {}, {}, {"row_ptr", "col_idx"}},
        with_variant(integer("nnz", {}, "the `entries` input's count", Bound{0, true}), "row_ptr"),
        with_variant({"entries", ParamType::input, false, {}, "none", {}, {}, {}}, "row_ptr"),
        with_variant(number("alpha", 1.5, "1.5", Bound{0, true}, Bound{100, true}), "row_ptr"),
        with_variant(integer("heavy_rows", 0.0, "0", Bound{0, true}), "row_ptr"),
        with_variant(integer("heavy_len", 0.0, "0", Bound{0, true}), "row_ptr"),
        with_variant({"row_ptr", ParamType::input, true, {}, "", {}, {}, {}}, "col_idx"),
        with_variant(integer("cols", {}, "the row pointer's rows (square)", Bound{1, true}), "col_idx"),
        with_variant(number("local", 0.5, "0.5", Bound{0, true}, Bound{1, true}), "col_idx"),
        with_variant(integer("band", 32.0, "32", Bound{0, true}, Bound{1073741824, true}), "col_idx")},
       "row_ptr: an integer dtype, count = rows + 1, at most 2^31 - 1 rows; exactly one of nnz and entries "
       "(an input of nnz elements, e.g. the values); heavy_rows <= rows, heavy_rows * heavy_len <= nnz; alpha 0: "
       "equal row lengths. col_idx: row_ptr names a graph_csr row_ptr input laying out this input's count of "
       "entries; [0, cols) fits the dtype, cols < 2^31"},
      {"layer_stack_offsets", "",
       {{"buffer", ParamType::input, true, {}, "", {}, {}, {}},
        integer("hidden", {}, "", Bound{1, true}, Bound{1048576, true}),
        integer("intermediate", {}, "", Bound{1, true}, Bound{1048576, true}),
        integer("kv_dim", {}, "hidden", Bound{1, true}, Bound{1048576, true}),
        integer("vocab", {}, "", Bound{1, true}, Bound{4194304, true}),
        integer("experts", 0.0, "0", Bound{0, true}, Bound{1024, true})},
       "count = segments + 1 offsets over the buffer's elements, at least one per segment; the model's "
       "parameter count stays below 2^63"},
      {"dynamic_map_codes", "",
       {{"map", ParamType::string, false, {}, "\"signed\"", {}, {}, {"signed", "unsigned"}},
        number("std", 0.35, "0.35", Bound{0, false}, Bound{10, true})},
       "uint8: index of the nearest entry of bitsandbytes' dynamic map to std·z (signed) or (std·z)² (unsigned), z standard normal"},
      {"tpch_lineitem", "",
       {{"column", ParamType::string, true, {}, "", {}, {},
         {"l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate",
          "l_commitdate", "l_receiptdate", "l_orderdate", "l_partkey"}},
        number("sf", 1.0, "1", Bound{0, false}, Bound{1e5, true}),
        {"table", ParamType::string, false, {}, "\"lineitem\"", {}, {}, {}}},
       "columns of one `table` share its stream, so a row's columns agree"},
  };
  return kSchemas;
}

const GeneratorSchema* find_generator_schema(std::string_view kind) {
  for (const auto& s : generator_schemas())
    if (kind == s.kind) return &s;
  return nullptr;
}

const ParamSpec* find_param(const GeneratorSchema& s, std::string_view name, std::string_view variant) {
  for (const auto& p : s.params)
    if (name == p.name && (p.when[0] == '\0' || variant == p.when)) return &p;
  return nullptr;
}

namespace {

std::string number_text(double v) {
  if (v == kTwo52) return "2^52";
  return fmt::format("{}", v);
}

std::string range_text(const ParamSpec& p) {
  if (!p.choices.empty()) {
    std::string s;
    for (const char* c : p.choices) s += fmt::format("{}`{}`", s.empty() ? "one of " : ", ", c);
    return s;
  }
  if (p.min && p.max)
    return fmt::format("{}{}, {}{}", p.min->inclusive ? "[" : "(", number_text(p.min->value), number_text(p.max->value),
                       p.max->inclusive ? "]" : ")");
  if (p.min) return fmt::format("{} {}", p.min->inclusive ? ">=" : ">", number_text(p.min->value));
  if (p.max) return fmt::format("{} {}", p.max->inclusive ? "<=" : "<", number_text(p.max->value));
  return "";
}

const char* type_text(ParamType t) {
  switch (t) {
    case ParamType::number: return "number";
    case ParamType::integer: return "integer";
    case ParamType::string: return "string";
    case ParamType::input: return "input name";
  }
  return "";
}

}  // namespace

std::string generator_schema_markdown() {
  std::string s =
      "| kind | field | type | required / default | range | when | also checked |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& g : generator_schemas()) {
    bool first = true;
    for (const auto& p : g.params) {
      const std::string req = p.required ? "**required**" : p.default_text[0] ? std::string(p.default_text) : "optional";
      const std::string when = p.when[0] ? fmt::format("`{}: {}`", g.variant_field, p.when) : "";
      s += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} |\n", first ? fmt::format("`{}`", g.kind) : "", p.name,
                       type_text(p.type), req, range_text(p), when, first ? g.notes : "");
      first = false;
    }
  }
  return s;
}

}  // namespace d2k::data
