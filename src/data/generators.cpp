#include "data/generators.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "data/gen_internal.h"
#include "data/gen_schema.h"

namespace d2k {

using data::GenKind;
using data::GenPlan;
using data::Bound;
using data::find_generator_schema;
using data::find_param;
using data::GeneratorSchema;
using data::ParamSpec;
using data::ParamType;

std::uint64_t stream_id(std::string_view name, std::uint32_t position) {
  return data::input_stream_id(name, position);
}

std::vector<std::string> generator_kinds() {
  std::vector<std::string> out;
  for (const auto& s : data::generator_schemas()) out.emplace_back(s.kind);
  return out;
}

std::optional<std::string> generator_dependency_field(std::string_view kind) {
  if (kind == "join_probe_keys") return "build";
  if (kind == "layer_stack_offsets") return "buffer";
  if (kind == "ragged_offsets") return "rows_of";
  if (kind == "graph_csr") return "row_ptr";
  return std::nullopt;
}

std::optional<std::string> generator_dependency(const GeneratorSpec& spec) {
  // graph_csr: col_idx depends on its row pointer, a row pointer may take nnz from `entries`.
  if (spec.kind == "graph_csr" && spec.params.is_object() && spec.params.contains("entries") &&
      spec.params["entries"].is_string())
    return spec.params["entries"].get<std::string>();
  const auto field = generator_dependency_field(spec.kind);
  if (!field) return std::nullopt;
  auto it = spec.params.find(*field);
  if (it == spec.params.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

namespace {

/// Reads the fields of one generator's params through its schema (data/gen_schema.h): the
/// constructor checks kind, field names, types and ranges; num/integer fill in the defaults.
/// Every error names `where` and the field.
class Fields {
 public:
  Fields(const GeneratorSpec& spec, std::string_view where) : spec_(spec) {
    prefix_ = where.empty() ? "generator '" + spec.kind + "'" : std::string(where);
    if (!spec.params.is_object() && !spec.params.is_null()) fail("", "params must be a JSON object");
    schema_ = find_generator_schema(spec.kind);
    if (!schema_) {
      std::string list;
      for (const auto& n : generator_kinds()) list += (list.empty() ? "" : ", ") + n;
      fail("kind", "unknown generator kind '" + spec.kind + "' (known: " + list + ")");
    }
    if (schema_->variant_field[0] != '\0') {
      check_field(*find_param(*schema_, schema_->variant_field, ""));
      variant_ = str(schema_->variant_field);
    }
    check_known_fields();
    for (const auto& p : schema_->params)
      if (p.when[0] == '\0' || variant_ == p.when) check_field(p);
  }

  [[noreturn]] void fail(std::string_view field, std::string_view msg) const {
    std::string path = prefix_;
    if (!field.empty()) path += ".";
    path += field;
    throw GeneratorError(path, std::string(msg));
  }

  bool has(const char* f) const { return spec_.params.is_object() && spec_.params.contains(f); }

  /// The field's value, or the schema's default when it is absent.
  double num(const char* f) const {
    if (!has(f)) return default_of(f);
    return spec_.params.at(f).get<double>();
  }

  std::int64_t integer(const char* f) const {
    if (!has(f)) return static_cast<std::int64_t>(default_of(f));
    return *json_int(spec_.params.at(f));
  }

  bool is_integer(const char* f) const { return has(f) && spec_.params.at(f).is_number_integer(); }

  std::string str(const char* f) const {
    if (!has(f)) fail(f, "required field is missing");
    return spec_.params.at(f).get<std::string>();
  }

  const std::string& prefix() const { return prefix_; }

 private:
  static std::optional<std::int64_t> json_int(const ordered_json& v) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
      return v.get<std::int64_t>();
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<std::int64_t>(d);
    }
    return std::nullopt;
  }

  double default_of(const char* f) const {
    const ParamSpec* p = find_param(*schema_, f, variant_);
    if (!p || !p->default_value) fail(f, "required field is missing");
    return *p->default_value;
  }

  // Rejects any field the kind (and variant) does not have: catches typos such as "stdev".
  void check_known_fields() const {
    if (!spec_.params.is_object()) return;
    for (auto it = spec_.params.begin(); it != spec_.params.end(); ++it) {
      if (it.key() == "kind" || find_param(*schema_, it.key(), variant_)) continue;
      std::string list;
      for (const auto& p : schema_->params)
        if (p.when[0] == '\0' || variant_ == p.when) list += (list.empty() ? "" : ", ") + std::string(p.name);
      const std::string where = variant_.empty() ? "kind '" + spec_.kind + "'"
                                                 : "kind '" + spec_.kind + "' with " + schema_->variant_field + " '" + variant_ + "'";
      fail(it.key(), "unknown field for " + where + " (allowed: " + (list.empty() ? "none" : list) + ")");
    }
  }

  void check_field(const ParamSpec& p) const {
    if (!has(p.name)) {
      if (p.required) fail(p.name, "required field is missing");
      return;
    }
    const ordered_json& v = spec_.params.at(p.name);
    double value = 0;
    switch (p.type) {
      case ParamType::number:
        if (!v.is_number()) fail(p.name, "must be a number");
        value = v.get<double>();
        if (!std::isfinite(value)) fail(p.name, "must be finite");
        break;
      case ParamType::integer: {
        const auto i = json_int(v);
        if (!i) fail(p.name, v.is_number_unsigned() ? "is out of the int64 range" : "must be an integer");
        value = static_cast<double>(*i);
        break;
      }
      case ParamType::string:
      case ParamType::input: {
        if (!v.is_string()) fail(p.name, p.type == ParamType::input ? "must be the name of another input" : "must be a string");
        const std::string text = v.get<std::string>();
        if (p.choices.empty()) return;
        std::string list;
        for (const char* c : p.choices) {
          if (text == c) return;
          list += (list.empty() ? "" : ", ") + std::string(c);
        }
        fail(p.name, "'" + text + "' is not one of " + list);
      }
    }
    const bool below = p.min && (p.min->inclusive ? value < p.min->value : value <= p.min->value);
    const bool above = p.max && (p.max->inclusive ? value > p.max->value : value >= p.max->value);
    if (below || above) {
      auto bound = [](const Bound& b) { return fmt::format("{}", b.value); };
      std::string range;
      if (p.min && p.max)
        range = fmt::format("must be in {}{}, {}{}", p.min->inclusive ? "[" : "(", bound(*p.min), bound(*p.max),
                            p.max->inclusive ? "]" : ")");
      else if (p.min) range = fmt::format("must be {} {}", p.min->inclusive ? ">=" : ">", bound(*p.min));
      else range = fmt::format("must be {} {}", p.max->inclusive ? "<=" : "<", bound(*p.max));
      fail(p.name, range);
    }
  }

  const GeneratorSpec& spec_;
  const GeneratorSchema* schema_ = nullptr;
  std::string variant_;
  std::string prefix_;
};

/// Largest integer magnitude a float type holds exactly (0 for integer types).
std::int64_t exact_int_limit(DType t) {
  switch (t) {
    case DType::f64: return std::int64_t{1} << 53;
    case DType::f32: return std::int64_t{1} << 24;
    case DType::f16: return 2048;
    case DType::bf16: return 256;
    case DType::f8e4m3: return 16;
    case DType::f8e5m2: return 8;
    default: return 0;
  }
}

/// Checks that every integer in [lo, hi] is stored exactly in `t`.
void check_int_fits(const Fields& f, const char* field, DType t, std::int64_t lo, std::int64_t hi) {
  std::int64_t tlo, thi;
  if (data::is_float_type(t)) {
    thi = exact_int_limit(t);
    tlo = -thi;
  } else {
    data::int_range(t, &tlo, &thi);
  }
  if (lo < tlo || hi > thi)
    f.fail(field, "values [" + std::to_string(lo) + ", " + std::to_string(hi) + "] do not fit " +
                      std::string(dtype_name(t)) + " exactly");
}

data::FeistelPerm make_perm(data::PhiloxKey key, std::uint64_t domain) {
  data::FeistelPerm p;
  p.domain = domain;
  int bits = 0;
  while (bits < 63 && (std::uint64_t{1} << bits) < domain) ++bits;
  p.lbits = (bits + 1) / 2;
  p.rbits = bits / 2;
  const std::uint64_t k = data::join64(key.k1, key.k0);
  for (int r = 0; r < data::kFeistelRounds; ++r)
    p.rk[r] = data::mix64(k ^ data::mix64(0xD2B74407B1CE6E93ull * static_cast<std::uint64_t>(r + 1)));
  return p;
}

/// unique_keys' domain [low, high) for a build of `count` keys.
void unique_domain(const Fields& f, std::int64_t count, std::int64_t* low, std::int64_t* high) {
  *low = f.integer("low");
  if (*low > INT64_MAX - count) f.fail("low", "low + count overflows int64");
  *high = f.has("high") ? f.integer("high") : *low + count;
  if (*high <= *low) f.fail("high", "must be greater than low");
  const std::uint64_t domain = static_cast<std::uint64_t>(*high) - static_cast<std::uint64_t>(*low);
  if (domain > (std::uint64_t{1} << 63)) f.fail("high", "high - low must be at most 2^63");
  if (static_cast<std::uint64_t>(count) > domain)
    f.fail("high", "the domain [low, high) has " + std::to_string(domain) + " keys, fewer than the " +
                       std::to_string(count) + " distinct keys asked for");
}

std::optional<data::TpchColumn> tpch_column(std::string_view c) {
  using C = data::TpchColumn;
  if (c.substr(0, 2) == "l_") c.remove_prefix(2);
  if (c == "quantity") return C::quantity;
  if (c == "extendedprice") return C::extendedprice;
  if (c == "discount") return C::discount;
  if (c == "tax") return C::tax;
  if (c == "returnflag") return C::returnflag;
  if (c == "linestatus") return C::linestatus;
  if (c == "shipdate") return C::shipdate;
  if (c == "commitdate") return C::commitdate;
  if (c == "receiptdate") return C::receiptdate;
  if (c == "orderdate") return C::orderdate;
  if (c == "partkey") return C::partkey;
  return std::nullopt;
}

}  // namespace

namespace data {
namespace {

void plan_normal(const GenRequest& /*req*/, const Fields& f, GenPlan& p) {
  p.kind = GenKind::normal;
  p.a = f.num("mean");
  p.b = f.num("std");
}

void plan_uniform(const GenRequest& /*req*/, const Fields& f, GenPlan& p) {
  p.kind = GenKind::uniform;
  p.a = f.num("low");
  p.b = f.num("high");
  if (!(p.b >= p.a)) f.fail("high", "must be >= low");
}

void plan_randint(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::randint;
  p.ia = f.integer("low");
  const std::int64_t high = f.integer("high");
  if (high <= p.ia) f.fail("high", "must be greater than low (high is exclusive)");
  p.range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(p.ia);
  if (req.dtype != DType::boolean) check_int_fits(f, "high", req.dtype, p.ia, high - 1);
  else if (p.ia < 0 || high > 2) f.fail("high", "bool inputs need 0 <= low < high <= 2");
}

void plan_const(const GenRequest& /*req*/, const Fields& f, GenPlan& p) {
  p.kind = GenKind::constant;
  if (f.is_integer("value")) {
    p.int_valued = true;
    p.ia = f.integer("value");
  } else {
    p.a = f.num("value");
  }
}

/// Integer-valued when start and step are integers (overflow and dtype range checked), else real.
void plan_arange(const GenRequest& req, const Fields& f, GenPlan& p) {
  const bool int_out = !is_float_type(req.dtype);
  p.kind = GenKind::arange;
  if ((!f.has("start") || f.is_integer("start")) && (!f.has("step") || f.is_integer("step"))) {
    p.int_valued = true;
    p.ia = f.integer("start");
    p.ib = f.integer("step");
    if (req.count > 0) {
      const long double last = static_cast<long double>(p.ia) + static_cast<long double>(p.ib) * (req.count - 1);
      if (last > 9.2e18L || last < -9.2e18L) f.fail("step", "start + step * (count - 1) overflows int64");
      if (int_out && req.dtype != DType::boolean)
        check_int_fits(f, "step", req.dtype, std::min<std::int64_t>(p.ia, static_cast<std::int64_t>(last)),
                       std::max<std::int64_t>(p.ia, static_cast<std::int64_t>(last)));
    }
  } else {
    p.a = f.num("start");
    p.b = f.num("step");
  }
}

/// Distinct keys: a Feistel permutation of the domain [low, high).
void plan_unique_keys(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::unique_keys;
  std::int64_t low, high;
  unique_domain(f, req.count, &low, &high);
  p.ia = low;
  p.perm = make_perm(p.key, static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low));
  check_int_fits(f, "high", req.dtype, low, high - 1);
}

/// Probe keys that hit the build side (a unique_keys input) at match_rate.
void plan_join_probe_keys(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::join_probe_keys;
  const std::string build = f.str("build");
  p.a = f.num("match_rate");
  if (!req.ref) f.fail("build", "the request carries no referenced input '" + build + "' (GenRequest::ref)");
  if (req.ref->spec.kind != "unique_keys")
    f.fail("build", "input '" + build + "' must use the unique_keys generator, not '" + req.ref->spec.kind + "'");
  Fields bf(req.ref->spec, f.prefix() + ".build(" + build + ")");
  std::int64_t low, high;
  unique_domain(bf, req.ref->count, &low, &high);
  if (f.has("low") && f.integer("low") != low)
    f.fail("low", "must equal the build side's low (" + std::to_string(low) + ") or be left out");
  if (f.has("high") && f.integer("high") != high)
    f.fail("high", "must equal the build side's high (" + std::to_string(high) + ") or be left out");
  const std::uint64_t domain = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
  p.ia = low;
  p.build_count = req.ref->count;
  p.perm = make_perm(stream_key(req.seed, req.ref->stream), domain);
  if (p.a > 0 && p.build_count == 0) f.fail("match_rate", "is above 0 but the build side is empty");
  if (p.a < 1 && domain == static_cast<std::uint64_t>(p.build_count))
    f.fail("match_rate", "is below 1 but every key of the build domain [" + std::to_string(low) + ", " +
                             std::to_string(high) + ") is a build key: widen the build's high");
  check_int_fits(f, "build", req.dtype, low, high - 1);
}

void plan_zipf(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::zipf;
  const std::int64_t n = f.integer("n");
  const double s = f.num("s");
  p.zipf = zipf_plan(n, s);
  if (f.has("low") != f.has("high")) f.fail(f.has("low") ? "high" : "low", "low and high come together (both or neither)");
  if (!f.has("low")) {
    check_int_fits(f, "n", req.dtype, 0, n - 1);
    return;
  }
  // Scattered ranks: rank r becomes low + perm(r), the unique_keys permutation of [low, high).
  std::int64_t low, high;
  unique_domain(f, n, &low, &high);
  p.scatter = true;
  p.ia = low;
  p.perm = make_perm(p.key, static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low));
  check_int_fits(f, "high", req.dtype, low, high - 1);
}

/// Offsets of ragged groups (ragged_offsets) or of a power-law CSR matrix (powerlaw_csr: its
/// row_offsets part; its col_indices part is a randint over the columns).
void plan_offsets(const GenRequest& req, const Fields& f, GenPlan& p) {
  const std::string& k = req.spec.kind;
  const bool int_out = !is_float_type(req.dtype);
  p.kind = GenKind::ragged_offsets;
  bool offsets = true;
  if (k == "ragged_offsets") {
    // total is given, or follows the leading dimension of the input named by rows_of (the rows
    // the groups partition), so that the offsets fit every workload's shape.
    if (f.has("total") == f.has("rows_of"))
      f.fail("total", "give exactly one of total and rows_of (an input whose leading dimension is the total)");
    if (f.has("rows_of")) {
      if (!req.ref)
        f.fail("rows_of", "the request carries no referenced input '" + f.str("rows_of") + "' (GenRequest::ref)");
      p.total = req.ref->rows;
    } else {
      p.total = f.integer("total");
    }
    p.skew = f.num("skew");
  } else {
    const std::string part = f.str("part");
    if (part == "row_offsets") {
      p.pareto = true;
      p.total = f.integer("nnz");
      p.alpha = f.num("alpha");
    } else if (part == "col_indices") {
      offsets = false;
      p.kind = GenKind::randint;
      const std::int64_t cols = f.integer("cols");
      p.ia = 0;
      p.range = static_cast<std::uint64_t>(cols);
      check_int_fits(f, "cols", req.dtype, 0, cols - 1);
    } else {
      f.fail("part", "must be \"row_offsets\" or \"col_indices\", not \"" + part + "\"");
    }
  }
  if (offsets) {
    if (!int_out || req.dtype == DType::boolean)
      f.fail("", "offsets need an integer dtype, not " + std::string(dtype_name(req.dtype)));
    if (req.count < 1) f.fail("", "offsets need at least one element (groups + 1)");
    if (req.count - 1 > kMaxRaggedGroups)
      f.fail("", "at most " + std::to_string(kMaxRaggedGroups) + " groups are supported");
    if (req.count == 1 && p.total != 0) f.fail("total", "a single offset must be 0, so total must be 0");
    check_int_fits(f, k == "ragged_offsets" ? "total" : "nnz", req.dtype, 0, p.total);
  }
}

/// Segment offsets of a flat parameter buffer laid out as a transformer's parameter list, over
/// the element count of the input named by `buffer` (docs/generators.md).
void plan_layer_stack_offsets(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::layer_stack_offsets;
  const std::string buffer = f.str("buffer");
  if (!req.ref) f.fail("buffer", "the request carries no referenced input '" + buffer + "' (GenRequest::ref)");
  if (is_float_type(req.dtype) || req.dtype == DType::boolean)
    f.fail("", "offsets need an integer dtype, not " + std::string(dtype_name(req.dtype)));
  if (req.count < 1) f.fail("", "offsets need at least one element (segments + 1)");
  if (req.count - 1 > kMaxRaggedGroups)
    f.fail("", "at most " + std::to_string(kMaxRaggedGroups) + " segments are supported");
  LayerStackPlan& st = p.stack;
  st.groups = req.count - 1;
  st.total = req.ref->count;
  st.hidden = static_cast<std::uint64_t>(f.integer("hidden"));
  st.inter = static_cast<std::uint64_t>(f.integer("intermediate"));
  st.kv = f.has("kv_dim") ? static_cast<std::uint64_t>(f.integer("kv_dim")) : st.hidden;
  st.vocab = static_cast<std::uint64_t>(f.integer("vocab"));
  st.experts = static_cast<std::uint64_t>(f.integer("experts"));
  if (st.total < st.groups)
    f.fail("buffer", "input '" + buffer + "' holds " + std::to_string(st.total) + " elements, fewer than the " +
                         std::to_string(st.groups) + " segments (each segment holds at least one)");
  // The real parameter count, in 128 bits: it must stay below 2^63 for the 64-bit prefixes.
  const u128 layer = static_cast<u128>(layer_prefix(st, layer_tensors(st)));
  const std::int64_t mid = st.groups >= 3 ? st.groups - 3 : 0;
  const u128 sum = 2 * static_cast<u128>(st.vocab) * st.hidden + st.hidden +
                   layer * static_cast<u128>(mid / static_cast<std::int64_t>(layer_tensors(st)) + 1);
  if (sum >= (static_cast<u128>(1) << 63))
    f.fail("", "the model's parameter count over " + std::to_string(st.groups) + " segments reaches 2^63");
  st.sum = st.groups > 0 ? layer_stack_prefix(st, st.groups) : 0;
  check_int_fits(f, "buffer", req.dtype, 0, st.total);
}

/// graph_csr's row pointer: parameters of the heavy rows and of the light rows' Pareto weights.
void plan_graph_row_ptr(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::graph_row_ptr;
  CsrPlan& c = p.csr;
  if (is_float_type(req.dtype) || req.dtype == DType::boolean)
    f.fail("", "a row pointer needs an integer dtype, not " + std::string(dtype_name(req.dtype)));
  if (req.count < 1) f.fail("", "a row pointer needs at least one element (rows + 1)");
  c.rows = req.count - 1;
  if (c.rows > INT32_MAX) f.fail("", "at most 2^31 - 1 rows are supported");
  if (f.has("nnz") == f.has("entries")) f.fail("nnz", "give exactly one of nnz and entries (an input of nnz elements)");
  if (f.has("entries") && !req.ref)
    f.fail("entries", "the request carries no referenced input '" + f.str("entries") + "' (GenRequest::ref)");
  c.nnz = f.has("nnz") ? f.integer("nnz") : req.ref->count;
  c.alpha = f.num("alpha");
  c.heavy = f.integer("heavy_rows");
  c.heavy_len = f.integer("heavy_len");
  if (c.heavy > c.rows) f.fail("heavy_rows", "is more than the " + std::to_string(c.rows) + " rows");
  if (c.heavy > 0 && c.heavy_len > c.nnz / c.heavy)
    f.fail("heavy_len", "heavy_rows * heavy_len exceeds nnz (" + std::to_string(c.nnz) + ")");
  c.stride = c.heavy > 0 ? c.rows / c.heavy : 1;
  c.light_nnz = c.nnz - c.heavy * c.heavy_len;
  if (c.rows == c.heavy && c.light_nnz != 0)
    f.fail("nnz", "every row is heavy, so nnz must be heavy_rows * heavy_len (" +
                      std::to_string(c.heavy * c.heavy_len) + ")");
  // Weights <= 2^20 * quantum + 1 each, so that (rows) of them sum below 2^63.
  int bits = 0;
  while (bits < 40 && (std::int64_t{1} << bits) < c.rows + 1) ++bits;
  c.quantum = std::ldexp(1.0, 42 - bits);
  check_int_fits(f, "nnz", req.dtype, 0, c.nnz);
}

/// graph_csr's column indices: the row pointer is the referenced input (regenerated from its
/// request, never read back), so columns follow the rows it lays out.
void plan_graph_col_idx(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::graph_col_idx;
  CsrPlan& c = p.csr;
  const std::string rp = f.str("row_ptr");
  if (!req.ref) f.fail("row_ptr", "the request carries no referenced input '" + rp + "' (GenRequest::ref)");
  if (req.ref->spec.kind != "graph_csr" || !req.ref->spec.params.is_object() ||
      req.ref->spec.params.value("part", std::string()) != "row_ptr")
    f.fail("row_ptr", "input '" + rp + "' must use the graph_csr generator with part \"row_ptr\"");
  Fields rf(req.ref->spec, f.prefix() + ".row_ptr(" + rp + ")");
  if (rf.has("nnz") && rf.integer("nnz") != req.count)
    f.fail("row_ptr", "input '" + rp + "' lays out nnz = " + std::to_string(rf.integer("nnz")) + " entries but this input holds " +
                          std::to_string(req.count));
  c.rows = req.ref->count - 1;
  c.cols = f.has("cols") ? f.integer("cols") : c.rows;  // square by default: a graph's adjacency
  if (c.cols < 1) f.fail("cols", "a matrix of no rows needs cols given (at least 1)");
  if (c.cols > INT32_MAX) f.fail("cols", "must be below 2^31");
  c.band = f.integer("band");
  c.local_q = static_cast<std::uint64_t>(std::llround(f.num("local") * 1048576.0));
  check_int_fits(f, "cols", req.dtype, 0, c.cols - 1);
}

void plan_graph_csr(const GenRequest& req, const Fields& f, GenPlan& p) {
  if (f.str("part") == "row_ptr") plan_graph_row_ptr(req, f, p);
  else plan_graph_col_idx(req, f, p);
}

/// A lineitem column; every column of one table shares the table's stream so a row's columns agree.
void plan_tpch_lineitem(const GenRequest& req, const Fields& f, GenPlan& p) {
  const bool int_out = !is_float_type(req.dtype);
  p.kind = GenKind::tpch_lineitem;
  const std::string col = f.str("column");
  auto c = tpch_column(col);
  if (!c)
    f.fail("column", "unknown lineitem column '" + col +
                         "' (l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, "
                         "l_shipdate, l_commitdate, l_receiptdate, l_orderdate, l_partkey)");
  p.column = *c;
  const double sf = f.num("sf");
  p.parts = std::max<std::int64_t>(1, std::llround(200000.0 * sf));
  const std::string table = f.has("table") ? f.str("table") : std::string("lineitem");
  // Every column of one table shares the table's stream, so that a row's columns agree.
  p.key = stream_key(req.seed, fnv1a64(table));
  using C = TpchColumn;
  const bool money = p.column == C::extendedprice || p.column == C::discount || p.column == C::tax;
  p.decimal = money && !int_out;
  if (!p.decimal) {
    std::int64_t hi = 0;
    switch (p.column) {
      case C::quantity: hi = 50; break;
      case C::extendedprice: hi = 50 * (90000 + 20000 + 100 * 999); break;
      case C::discount: hi = 10; break;
      case C::tax: hi = 8; break;
      case C::returnflag: case C::linestatus: hi = 'R'; break;
      case C::partkey: hi = p.parts; break;
      default: hi = kTpchEndDate; break;
    }
    check_int_fits(f, "column", req.dtype, 0, hi);
  }
}

/// Codes of an 8-bit optimizer state (an index into bitsandbytes' dynamic map): uint8 only.
void plan_dynamic_map_codes(const GenRequest& req, const Fields& f, GenPlan& p) {
  p.kind = GenKind::dynamic_map_codes;
  if (req.dtype != DType::u8) f.fail("", "dynamic_map_codes writes uint8 map indices, not " + std::string(dtype_name(req.dtype)));
  p.signed_map = !f.has("map") || f.str("map") == "signed";
  p.b = f.num("std");
}

}  // namespace

GenPlan make_gen_plan(const GenRequest& req) {
  using Planner = void (*)(const GenRequest&, const Fields&, GenPlan&);
  static const std::map<std::string, Planner, std::less<>> planners = {
      {"normal", plan_normal},
      {"uniform", plan_uniform},
      {"randint", plan_randint},
      {"const", plan_const},
      {"arange", plan_arange},
      {"unique_keys", plan_unique_keys},
      {"join_probe_keys", plan_join_probe_keys},
      {"zipf", plan_zipf},
      {"ragged_offsets", plan_offsets},
      {"powerlaw_csr", plan_offsets},
      {"tpch_lineitem", plan_tpch_lineitem},
      {"layer_stack_offsets", plan_layer_stack_offsets},
      {"dynamic_map_codes", plan_dynamic_map_codes},
      {"graph_csr", plan_graph_csr},
  };
  const GeneratorSpec& spec = req.spec;
  Fields f(spec, req.where);
  if (req.count < 0) f.fail("", "element count " + std::to_string(req.count) + " is negative");
  GenPlan p;
  p.key = stream_key(req.seed, req.stream);
  const auto it = planners.find(spec.kind);
  if (it == planners.end()) {
    std::string list;
    for (const auto& n : generator_kinds()) list += (list.empty() ? "" : ", ") + n;
    Fields(spec, req.where).fail("kind", "unknown generator kind '" + spec.kind + "' (known: " + list + ")");
  }
  it->second(req, f, p);
  return p;
}

}  // namespace data

void validate_request(const GenRequest& req) { data::make_gen_plan(req); }

void validate_generator(const GeneratorSpec& spec, DType dtype, std::string_view where) {
  GenRequest req;
  req.spec = spec;
  req.dtype = dtype;
  req.count = 1;
  req.where = std::string(where);
  if (spec.kind == "join_probe_keys" || spec.kind == "layer_stack_offsets" || generator_dependency(spec)) {
    // The referenced input is checked where it is defined; here only this generator's own fields.
    Fields f(spec, where);  // the schema's checks of names, types and ranges
    return;
  }
  if (spec.kind == "unique_keys" && !spec.params.contains("high")) req.count = 1;
  if (spec.kind == "ragged_offsets" || spec.kind == "powerlaw_csr" || spec.kind == "graph_csr") req.count = 2;
  data::make_gen_plan(req);
}

namespace {

/// Runs body(begin, end) over [0, n) on up to hardware_concurrency threads.
template <class F>
void parallel_for(std::int64_t n, F body) {
  const std::int64_t grain = 1 << 16;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::int64_t nthreads = std::clamp<std::int64_t>(n / grain, 1, hw);
  if (nthreads == 1) {
    body(0, n);
    return;
  }
  std::vector<std::thread> threads;
  const std::int64_t chunk = (n + nthreads - 1) / nthreads;
  for (std::int64_t t = 0; t < nthreads; ++t) {
    const std::int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) threads.emplace_back([=] { body(b, e); });
  }
  for (auto& th : threads) th.join();
}

}  // namespace

namespace data {

GenRequest graph_row_ptr_request(const GenRequest& req) {
  GenRequest r;
  r.spec = req.ref->spec;
  r.dtype = DType::i64;
  r.count = req.ref->count;
  r.seed = req.seed;
  r.stream = req.ref->stream;
  r.where = req.where + ".row_ptr(" + req.ref->name + ")";
  // A row pointer sized by `entries` lays out this input's entries: nnz = req.count.
  r.ref = GenRef{"entries", GeneratorSpec{}, 0, req.count};
  return r;
}

}  // namespace data

namespace {

void generate_graph_row_ptr_host(const GenPlan& p, DType t, void* dst) {
  const data::CsrPlan& c = p.csr;
  const std::int64_t light = c.rows - c.heavy;
  std::vector<std::uint64_t> prefix(static_cast<std::size_t>(light));
  std::uint64_t sum = 0;
  for (std::int64_t m = 0; m < light; ++m) {
    sum += data::csr_light_weight(c, p.key, static_cast<std::uint64_t>(m));
    prefix[static_cast<std::size_t>(m)] = sum;
  }
  for (std::int64_t r = 0; r <= c.rows; ++r) data::store_int(t, dst, r, data::csr_row_ptr(c, r, prefix.data(), sum));
}

// Rows in parallel: each writes its own entries, element j = row_ptr[r] + k.
void generate_graph_col_idx_host(const GenRequest& req, const GenPlan& p, void* dst);

}  // namespace

void generate_host(const GenRequest& req, void* dst) {
  const GenPlan p = data::make_gen_plan(req);
  const DType t = req.dtype;
  if (req.count == 0) return;
  if (p.kind == GenKind::graph_row_ptr) return generate_graph_row_ptr_host(p, t, dst);
  if (p.kind == GenKind::graph_col_idx) return generate_graph_col_idx_host(req, p, dst);
  if (p.kind == GenKind::ragged_offsets) {
    const std::int64_t groups = req.count - 1;
    std::vector<std::uint64_t> prefix(static_cast<std::size_t>(groups));
    std::uint64_t sum = 0;
    for (std::int64_t g = 0; g < groups; ++g) {
      sum += data::ragged_weight(p, static_cast<std::uint64_t>(g));
      prefix[static_cast<std::size_t>(g)] = sum;
    }
    data::store_int(t, dst, 0, 0);
    for (std::int64_t g = 0; g < groups; ++g)
      data::store_int(t, dst, g + 1, data::ragged_offset(p.total, prefix[static_cast<std::size_t>(g)], sum));
    return;
  }
  parallel_for(req.count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) data::store_value(t, dst, i, data::gen_value(p, static_cast<std::uint64_t>(i)));
  });
}

namespace {

void generate_graph_col_idx_host(const GenRequest& req, const GenPlan& p, void* dst) {
  std::vector<std::int64_t> rp(static_cast<std::size_t>(req.ref->count));
  generate_host(data::graph_row_ptr_request(req), rp.data());
  const std::int64_t rows = req.ref->count - 1;
  parallel_for(rows, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const std::int64_t o = rp[static_cast<std::size_t>(r)], len = rp[static_cast<std::size_t>(r) + 1] - o;
      for (std::int64_t k = 0; k < len; ++k)
        data::store_int(req.dtype, dst, o + k, data::csr_col(p.csr, p.key, r, k, len, static_cast<std::uint64_t>(o + k)));
    }
  });
}

}  // namespace

void generate_host(const GenRequest& req, HostTensor& out) {
  out.dtype = req.dtype;
  out.shape = req.shape.empty() ? std::vector<std::int64_t>{req.count} : req.shape;
  std::int64_t n = 1;
  for (auto d : out.shape) n *= d;
  if (n != req.count)
    throw std::invalid_argument((req.where.empty() ? std::string("generate_host") : req.where) + ": shape holds " +
                                std::to_string(n) + " elements but count is " + std::to_string(req.count));
  out.bytes.assign(static_cast<std::size_t>(req.count) * data::elem_bytes(req.dtype), std::byte{0});
  generate_host(req, out.data());
}

}  // namespace d2k
