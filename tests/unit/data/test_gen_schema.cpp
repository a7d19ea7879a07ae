// The one generator schema (data/gen_schema.h): generation reads its fields, defaults and
// ranges, and docs/generators.md prints it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/gen_schema.h"
#include "data/generators.h"

namespace d2k {
namespace {

GenRequest request(const std::string& kind, ordered_json params, DType t, std::int64_t count) {
  GenRequest r;
  r.spec = GeneratorSpec{kind, std::move(params)};
  r.dtype = t;
  r.count = count;
  r.seed = 7;
  r.stream = 3;
  r.where = "inputs.x.generator";
  return r;
}

// The field and message of the GeneratorError a request throws ("" when none).
std::pair<std::string, std::string> error_of(const GenRequest& r) {
  try {
    validate_request(r);
  } catch (const GeneratorError& e) {
    return {e.field, e.message};
  }
  return {"", ""};
}

TEST(GenSchema, DocsTableMatchesTheSchema) {
  std::ifstream in(std::filesystem::path(D2K_SOURCE_DIR) / "docs/generators.md");
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string begin = "<!-- generator-schema:begin -->\n", end = "<!-- generator-schema:end -->";
  const auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), data::generator_schema_markdown())
      << "docs/generators.md is out of date; the table to paste:\n"
      << data::generator_schema_markdown();
}

TEST(GenSchema, EveryKindHasASchemaAndGenerates) {
  for (const auto& kind : generator_kinds()) EXPECT_NE(data::find_generator_schema(kind), nullptr) << kind;
  // Required fields are the only ones a minimal request needs: defaults fill in the rest.
  for (const auto& s : data::generator_schemas()) {
    ordered_json p = ordered_json::object();
    int k = 0;
    for (const auto& f : s.params) {
      ++k;  // distinct values, so that low < high
      if (!f.required && f.when[0] == '\0') continue;
      if (f.type == data::ParamType::string && !f.choices.empty()) p[f.name] = f.choices[0];
      else if (f.type == data::ParamType::input) {
        if (f.when[0] == '\0') p[f.name] = "b";  // a variant's (optional) reference stays out
      }
      else if (f.when[0] == '\0' || (p.contains(s.variant_field) && p[s.variant_field] == f.when)) p[f.name] = f.min ? f.min->value + 1 : 2 + k;
    }
    GenRequest r = request(s.kind, p, DType::i32, 2);
    if (std::string(s.kind) == "join_probe_keys") {
      r.ref = GenRef{"b", GeneratorSpec{"unique_keys", {{"low", 0}, {"high", 10}}}, 1, 4};
      r.spec.params["match_rate"] = 0.5;
    }
    if (std::string(s.kind) == "graph_csr") r.spec.params["nnz"] = 1;  // one of nnz and entries; the one heavy row
    if (std::string(s.kind) == "layer_stack_offsets") r.ref = GenRef{"b", GeneratorSpec{"normal", {}}, 1, 4};
    if (std::string(s.kind) == "ragged_offsets") r.spec.params["total"] = 3;  // one of total and rows_of
    if (std::string(s.kind) == "uniform" || std::string(s.kind) == "normal") r.dtype = DType::f32;
    if (std::string(s.kind) == "dynamic_map_codes") r.dtype = DType::u8;  // indices into a 256-entry map
    const auto [field, msg] = error_of(r);
    EXPECT_EQ(field, "") << s.kind << ": " << msg << " params " << p.dump();
  }
}

TEST(GenSchema, RangesTypesAndVariantsComeFromTheTable) {
  EXPECT_EQ(error_of(request("normal", {{"std", -1}}, DType::f32, 4)),
            std::make_pair(std::string("inputs.x.generator.std"), std::string("must be >= 0")));
  EXPECT_EQ(error_of(request("zipf", {{"n", 10}, {"s", 0}}, DType::i32, 4)).second, "must be in (0, 100]");
  EXPECT_EQ(error_of(request("zipf", {{"n", 10}, {"s", "1"}}, DType::i32, 4)).second, "must be a number");
  EXPECT_EQ(error_of(request("zipf", {{"n", 1.5}}, DType::i32, 4)).second, "must be an integer");
  // Fields of the other variant are refused, the variant's own required field is required.
  EXPECT_EQ(error_of(request("powerlaw_csr", {{"part", "col_indices"}, {"cols", 4}, {"nnz", 3}}, DType::i32, 4)).first,
            "inputs.x.generator.nnz");
  EXPECT_EQ(error_of(request("powerlaw_csr", {{"part", "row_offsets"}}, DType::i32, 4)),
            std::make_pair(std::string("inputs.x.generator.nnz"), std::string("required field is missing")));
  EXPECT_EQ(error_of(request("powerlaw_csr", {{"part", "rows"}}, DType::i32, 4)).first, "inputs.x.generator.part");
  // The names task-format.md once documented and generation never read.
  EXPECT_EQ(error_of(request("tpch_lineitem", {{"column", "l_quantity"}, {"scale_factor", 1}}, DType::i32, 4)).first,
            "inputs.x.generator.scale_factor");
  EXPECT_EQ(error_of(request("tpch_lineitem", {{"column", "l_quantity"}, {"sf", 0.01}}, DType::i32, 4)).first, "");
  // zipf's s is optional with the default 1.
  EXPECT_EQ(error_of(request("zipf", {{"n", 10}}, DType::i32, 4)).first, "");
}

TEST(GenSchema, DefaultsAreTheTablesDefaults) {
  // normal with no fields is normal(0, 1): the same bits as written out in full.
  HostTensor a, b;
  generate_host(request("normal", ordered_json::object(), DType::f32, 64), a);
  generate_host(request("normal", {{"mean", 0.0}, {"std", 1.0}}, DType::f32, 64), b);
  EXPECT_EQ(a.bytes, b.bytes);
  const auto* std_spec = data::find_param(*data::find_generator_schema("normal"), "std", "");
  ASSERT_NE(std_spec, nullptr);
  EXPECT_EQ(std_spec->default_value, 1.0);
}

}  // namespace
}  // namespace d2k
