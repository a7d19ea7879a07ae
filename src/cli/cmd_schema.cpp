// d2k schema dump | check [DIR]: the JSON Schemas of docs/schema/ repeat facts whose one source is
// this code (dtype names, generator kinds and fields, comparison rules, cost units, tracks,
// statuses, trace fields). `dump` prints those facts, with the schema fragments generated from
// them; `check` compares the schema files with them, so that the two cannot drift
// (docs/schema/README.md).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/task.h"
#include "data/gen_schema.h"
#include "data/generators.h"
#include "cli/schema_engine.h"
#include "report/trace.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using data::GeneratorSchema;
using data::ParamSpec;
using data::ParamType;

// ---------------------------------------------------------------- fragments from the C++ lists

json bound_value(double v) {
  if (v == static_cast<double>(static_cast<std::int64_t>(v))) return static_cast<std::int64_t>(v);
  return v;
}

// One generator field: its JSON type, range, choices and default.
json param_schema(const ParamSpec& p) {
  json s;
  switch (p.type) {
    case ParamType::number: s["type"] = "number"; break;
    // JSON Schema's "integer" admits 1e6 (a number with a zero fraction), as the loader does.
    case ParamType::integer: s["type"] = "integer"; break;
    case ParamType::string: s["type"] = "string"; break;
    case ParamType::input:
      s["type"] = "string";
      s["description"] = "the name of another input of the task";
      break;
  }
  if (!p.choices.empty()) s["enum"] = p.choices;
  if (p.min) s[p.min->inclusive ? "minimum" : "exclusiveMinimum"] = bound_value(p.min->value);
  if (p.max) s[p.max->inclusive ? "maximum" : "exclusiveMaximum"] = bound_value(p.max->value);
  if (p.default_value) s["default"] = p.type == ParamType::integer ? bound_value(*p.default_value) : json(*p.default_value);
  else if (p.default_text[0] != '\0') s["description"] = fmt::format("default: {}", p.default_text);
  return s;
}

// The closed object of one kind (and variant): exactly its fields, the required ones required.
json closed_generator(const GeneratorSchema& g, std::string_view variant) {
  json props = {{"kind", {{"const", g.kind}}}};
  json required = {"kind"};
  for (const auto& p : g.params) {
    if (p.when[0] != '\0' && variant != p.when) continue;
    props[p.name] = param_schema(p);
    if (p.required) required.push_back(p.name);
  }
  if (!variant.empty()) props[g.variant_field] = {{"const", variant}};
  return {{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}};
}

json generator_kind_schema(const GeneratorSchema& g) {
  if (g.variant_field[0] == '\0') return closed_generator(g, "");
  const ParamSpec* selector = data::find_param(g, g.variant_field, "");
  json branches = json::array();
  for (const char* v : selector->choices)
    branches.push_back({{"if", {{"required", {g.variant_field}}, {"properties", {{g.variant_field, {{"const", v}}}}}}},
                        {"then", closed_generator(g, v)}});
  return {{"required", {g.variant_field}},
          {"properties", {{g.variant_field, param_schema(*selector)}}},
          {"allOf", branches}};
}

// definition.json's `generator`: a known kind with exactly its fields (data/gen_schema.h).
json generator_schema() {
  json kinds = json::array(), branches = json::array();
  for (const auto& g : data::generator_schemas()) {
    kinds.push_back(g.kind);
    branches.push_back({{"if", {{"required", {"kind"}}, {"properties", {{"kind", {{"const", g.kind}}}}}}},
                        {"then", generator_kind_schema(g)}});
  }
  return {{"type", "object"},
          {"required", {"kind"}},
          {"properties", {{"kind", {{"enum", kinds}}}}},
          {"allOf", branches}};
}

// A workload's generator override: with `kind` it replaces the definition's generator (a whole
// generator); without, its fields merge onto it, so only names and JSON types are known here.
json generator_override_schema() {
  std::map<std::string, std::set<std::string>> types;
  for (const auto& g : data::generator_schemas())
    for (const auto& p : g.params)
      types[p.name].insert(p.type == ParamType::number ? "number" : p.type == ParamType::integer ? "integer" : "string");
  json props = json::object();
  for (auto& [name, t] : types) {
    if (t.count("number")) t.erase("integer");  // integer is a number
    props[name] = t.size() == 1 ? json{{"type", *t.begin()}} : json{{"type", t}};
  }
  return {{"type", "object"},
          {"if", {{"required", {"kind"}}}},
          {"then", {{"$ref", "#/$defs/generator"}}},
          {"else", {{"properties", props}, {"additionalProperties", false}}}};
}

// Which fields each comparison rule reads (core/task.h kCompareRules); a field a rule does not
// read is a warning of `d2k tasks validate` and an error of the schema.
json compare_rules_schema() {
  json rules = json::array(), branches = json::array(), all = {"rule"};
  for (const auto& r : kCompareRules) {
    rules.push_back(r.rule);
    json names = {"rule"};
    for (auto f : r.fields)
      if (!f.empty()) names.push_back(f);
    for (auto f : r.fields)
      if (!f.empty() && std::find(all.begin(), all.end(), json(f)) == all.end()) all.push_back(f);
    branches.push_back({{"if", {{"required", {"rule"}}, {"properties", {{"rule", {{"const", r.rule}}}}}}},
                        {"then", {{"propertyNames", {{"enum", names}}}}}});
  }
  return {{"properties", {{"rule", {{"enum", rules}}}}}, {"propertyNames", {{"enum", all}}}, {"allOf", branches}};
}

template <class Range>
std::vector<std::string> strings(const Range& r) {
  std::vector<std::string> out;
  for (const auto& v : r) out.emplace_back(v);
  return out;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> out;
  for (int t = 0; t <= static_cast<int>(DType::boolean); ++t) out.emplace_back(dtype_name(static_cast<DType>(t)));
  return out;
}

std::vector<std::string> status_names() {
  std::vector<std::string> out;
  for (int s = 0; s <= static_cast<int>(Status::SKIPPED); ++s) out.emplace_back(status_name(static_cast<Status>(s)));
  return out;
}

std::vector<std::string> performance_fields() {
  std::vector<std::string> out;
  Performance p;
  visit_fields(p, [&](const char* name, auto&) { out.emplace_back(name); });
  return out;
}

std::vector<std::string> anchor_names() {
  std::vector<std::string> out;
  for (int a : kRubricAnchors) out.push_back(std::to_string(a));
  return out;
}

// ---------------------------------------------------------------- what the schema files must say

// One fact a schema file repeats: the value at `pointer` in `file`, and how it must match.
struct Expectation {
  std::string file, pointer;
  std::function<std::string(const json&)> check;  ///< "" when the value agrees, else why not
};

// The value must equal the generated fragment exactly.
std::function<std::string(const json&)> equals(json expected) {
  return [expected](const json& v) -> std::string {
    if (v == expected) return "";
    return "differs from the fragment the C++ generates; replace it with `d2k schema dump`'s";
  };
}

// The value must be an array (or, with `keys`, an object) naming exactly `names`.
std::function<std::string(const json&)> names_exactly(std::vector<std::string> names, bool keys = false) {
  return [names, keys](const json& v) -> std::string {
    std::set<std::string> have, want(names.begin(), names.end());
    if (keys && v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) have.insert(it.key());
    } else if (!keys && v.is_array()) {
      for (const auto& e : v)
        if (!e.is_null()) have.insert(e.is_string() ? e.get<std::string>() : e.dump());  // null: "absent" in a request
    } else {
      return keys ? "expected an object" : "expected an array";
    }
    std::vector<std::string> missing, extra;
    for (const auto& n : want)
      if (!have.count(n)) missing.push_back(n);
    for (const auto& n : have)
      if (!want.count(n)) extra.push_back(n);
    if (missing.empty() && extra.empty()) return "";
    return fmt::format("missing [{}], not in the C++ list [{}] (C++: {})", fmt::join(missing, ", "),
                       fmt::join(extra, ", "), fmt::join(names, ", "));
  };
}

// The value must list every one of `names` and only entries that `accepted` takes (aliases).
std::function<std::string(const json&)> names_accepted(std::vector<std::string> names,
                                                        std::function<bool(const std::string&)> accepted) {
  return [names, accepted](const json& v) -> std::string {
    if (!v.is_array()) return "expected an array";
    std::vector<std::string> missing, refused;
    for (const auto& n : names)
      if (std::find(v.begin(), v.end(), json(n)) == v.end()) missing.push_back(n);
    for (const auto& e : v)
      if (!e.is_string() || !accepted(e.get<std::string>())) refused.push_back(e.dump());
    if (missing.empty() && refused.empty()) return "";
    return fmt::format("missing [{}], refused by the C++ [{}]", fmt::join(missing, ", "), fmt::join(refused, ", "));
  };
}

std::vector<Expectation> expectations() {
  const auto levels = strings(kDesignLevelKeys);
  auto design_keys = levels;
  design_keys.push_back("cross_level_rationale");
  return {
      {"definition.schema.json", "/$defs/generator", equals(generator_schema())},
      {"definition.schema.json", "/$defs/generator_override", equals(generator_override_schema())},
      {"definition.schema.json", "/$defs/compare_rules", equals(compare_rules_schema())},
      {"definition.schema.json", "/$defs/dtype/enum",
       names_accepted(dtype_names(), [](const std::string& s) { return parse_dtype(s).has_value(); })},
      {"definition.schema.json", "/$defs/cost/properties/flops/propertyNames/enum", names_exactly(strings(kCostUnits))},
      {"definition.schema.json", "/$defs/tracks/propertyNames/enum", names_exactly(track_list())},
      {"design.schema.json", "/required", names_exactly(design_keys)},
      {"design_levels.schema.json", "/required", names_exactly(levels)},
      {"design_levels.schema.json", "/$defs/level/properties/anchors/required", names_exactly(anchor_names())},
      {"rubric.schema.json", "/required", names_exactly(strings(kRubricLevelKeys))},
      {"rubric.schema.json", "/$defs/anchors/required", names_exactly(anchor_names())},
      {"trace.schema.json", "/properties/status/enum", names_exactly(status_names())},
      {"trace.schema.json", "/$defs/performance/properties", names_exactly(performance_fields(), true)},
      {"request.schema.json", "/$defs/target/properties/track/enum", names_exactly(track_list())},
      {"request.schema.json", "/$defs/builtin_target/enum", names_accepted(builtin_target_list(), is_builtin_target)},
  };
}

json dump() {
  return {{"dtypes", dtype_names()},
          {"generator_kinds", generator_kinds()},
          {"compare_rules", [] {
             json j = json::object();
             for (const auto& r : kCompareRules) {
               json f = json::array();
               for (auto n : r.fields)
                 if (!n.empty()) f.push_back(n);
               j[std::string(r.rule)] = f;
             }
             return j;
           }()},
          {"cost_units", strings(kCostUnits)},
          {"tracks", track_list()},
          {"design_level_keys", strings(kDesignLevelKeys)},
          {"rubric_level_keys", strings(kRubricLevelKeys)},
          {"rubric_anchors", anchor_names()},
          {"statuses", status_names()},
          {"builtin_targets", builtin_target_list()},
          {"performance_fields", performance_fields()},
          {"fragments",
           {{"definition.schema.json#/$defs/generator", generator_schema()},
            {"definition.schema.json#/$defs/generator_override", generator_override_schema()},
            {"definition.schema.json#/$defs/compare_rules", compare_rules_schema()}}},
          {"examples", {{"request", example_request()}, {"trace", example_trace()}}}};
}

// Compares every expectation; prints `file: pointer: message` per disagreement.
int check(const fs::path& dir) {
  int bad = 0;
  std::map<std::string, json> files;
  for (const auto& e : expectations()) {
    const fs::path path = dir / e.file;
    if (!files.count(e.file)) {
      std::ifstream in(path);
      try {
        files[e.file] = in ? json::parse(in) : json();
      } catch (const json::exception& ex) {
        fmt::print(stderr, "{}: not JSON: {}\n", path.string(), ex.what());
        files[e.file] = json();
      }
    }
    const json& doc = files[e.file];
    std::string why;
    if (doc.is_null()) why = "cannot read the file";
    else if (!doc.contains(json::json_pointer(e.pointer))) why = "missing";
    else why = e.check(doc.at(json::json_pointer(e.pointer)));
    if (why.empty()) continue;
    ++bad;
    fmt::print(stderr, "{}: {}: {}\n", path.string(), e.pointer, why);
  }
  if (bad) {
    fmt::print(stderr, "schema check: {} disagreement(s) with the C++ lists\n", bad);
    return 1;
  }
  fmt::print("schema check: {} fact(s) of {} agree with the C++ lists\n", expectations().size(), dir.string());
  return 0;
}

}  // namespace

void add_schema(CLI::App& app, Globals&, Runner& run) {
  auto* schema = app.add_subcommand("schema", "the facts docs/schema/*.schema.json repeat from the C++ code");
  schema->require_subcommand(1);
  auto* d = schema->add_subcommand("dump", "print the C++ lists, the generated schema fragments and example documents (JSON)");
  d->callback([&] {
    run = [] {
      std::cout << dump().dump(2) << "\n";
      return 0;
    };
  });
  auto* c = schema->add_subcommand("check", "compare the schema files with the C++ lists; non-zero exit on a disagreement");
  static std::string dir = std::string(D2K_SOURCE_DIR) + "/docs/schema";
  c->add_option("dir", dir, "the folder of the schema files")->capture_default_str();
  c->callback([&] { run = [] { return check(dir); }; });
}

}  // namespace d2k::cli
