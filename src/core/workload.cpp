#include "core/workload.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "core/json_fields.h"

namespace d2k {

namespace {

template <class T>
const T* find_named(const std::vector<T>& v, std::string_view name) {
  for (const auto& x : v)
    if (x.name == name) return &x;
  return nullptr;
}

std::string workload_label(const Workload& w) {
  return w.uuid.empty() ? std::string("workload") : fmt::format("workload '{}'", w.uuid);
}

const char* kind_word(AxisKind k) {
  switch (k) {
    case AxisKind::const_: return "const";
    case AxisKind::var: return "var";
    case AxisKind::expr: return "expr";
  }
  return "?";
}

std::map<std::string, Value> axis_env(const AxisValues& axes) {
  std::map<std::string, Value> env;
  for (const auto& [k, v] : axes) env[k] = Value::of(v);
  return env;
}

// An expression result used as a size: must be an integer (a float with an integral value is fine).
std::optional<std::int64_t> integral(const Value& v) {
  if (!v.is_float) return v.i;
  if (std::isfinite(v.f) && v.f == std::floor(v.f) && std::fabs(v.f) < 9.2e18) return static_cast<std::int64_t>(v.f);
  return std::nullopt;
}

}  // namespace

const Axis* find_axis(const Definition& def, std::string_view name) { return find_named(def.axes, name); }
const TensorSpec* find_input(const Definition& def, std::string_view name) { return find_named(def.inputs, name); }
const TensorSpec* find_output(const Definition& def, std::string_view name) { return find_named(def.outputs, name); }
const ScalarSpec* find_scalar(const Definition& def, std::string_view name) { return find_named(def.scalars, name); }

AxisValues resolve_axes(const Definition& def, const Workload& w) {
  const std::string who = workload_label(w);
  for (const auto& [name, value] : w.axes) {
    const Axis* a = find_axis(def, name);
    if (!a) throw std::invalid_argument(fmt::format("{}: unknown axis '{}'", who, name));
    if (a->kind != AxisKind::var)
      throw std::invalid_argument(fmt::format("{}: axis '{}' is {} and cannot be set by a workload", who, name,
                                              kind_word(a->kind)));
  }
  AxisValues values;
  std::vector<const Axis*> pending;
  for (const auto& a : def.axes) {
    if (a.kind == AxisKind::const_) {
      values[a.name] = a.value;
    } else if (a.kind == AxisKind::var) {
      auto it = w.axes.find(a.name);
      if (it == w.axes.end()) throw std::invalid_argument(fmt::format("{}: missing value for var axis '{}'", who, a.name));
      values[a.name] = it->second;
    } else {
      if (a.expr.empty()) throw std::invalid_argument(fmt::format("axis '{}' has no valid expression", a.name));
      pending.push_back(&a);
    }
  }
  // Expr axes may refer to each other: evaluate whichever has all its inputs, until none is left.
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const Axis& a = **it;
      bool ready = true;
      for (const auto& id : a.expr.identifiers()) {
        if (!find_axis(def, id))
          throw std::invalid_argument(fmt::format("axis '{}' refers to unknown axis '{}'", a.name, id));
        ready = ready && values.count(id);
      }
      if (!ready) { ++it; continue; }
      Value v;
      try {
        v = a.expr.eval(axis_env(values));
      } catch (const ExprError& e) {
        throw std::invalid_argument(fmt::format("{}: axis '{}': {}", who, a.name, e.what()));
      }
      auto iv = integral(v);
      if (!iv)
        throw std::invalid_argument(fmt::format("{}: axis '{}' = {} is not an integer (wrap it in floor() or ceil())",
                                                who, a.name, v.as_double()));
      values[a.name] = *iv;
      it = pending.erase(it);
      progress = true;
    }
    if (!progress) {
      std::string names;
      for (const Axis* a : pending) names += (names.empty() ? "" : ", ") + a->name;
      throw std::invalid_argument(fmt::format("expr axes depend on each other in a cycle: {}", names));
    }
  }
  return values;
}

std::vector<std::int64_t> resolve_shape(const TensorSpec& t, const AxisValues& axes) {
  std::vector<std::int64_t> dims;
  const auto env = axis_env(axes);
  for (std::size_t k = 0; k < t.shape.size(); ++k) {
    const std::string& entry = t.shape[k];
    std::optional<std::int64_t> d;
    if (auto it = axes.find(entry); it != axes.end()) {
      d = it->second;
    } else {
      try {
        d = integral(Expr::parse(entry).eval(env));
      } catch (const ExprError& e) {
        throw std::invalid_argument(fmt::format("tensor '{}' shape[{}]: {}", t.name, k, e.what()));
      }
      if (!d) throw std::invalid_argument(fmt::format("tensor '{}' shape[{}] '{}' is not an integer", t.name, k, entry));
    }
    if (*d < 0)
      throw std::invalid_argument(fmt::format("tensor '{}' shape[{}] '{}' is negative ({})", t.name, k, entry, *d));
    dims.push_back(*d);
  }
  return dims;
}

GeneratorSpec merge_generator(const GeneratorSpec& base, const GeneratorSpec& over) {
  if (!over.kind.empty() && over.kind != base.kind) return over;
  GeneratorSpec g = base;
  for (auto it = over.params.begin(); it != over.params.end(); ++it) g.params[it.key()] = it.value();
  return g;
}

CompareSpec compare_from_json(const ordered_json& j) {
  return detail::parse_compare(j, detail::FieldReader(nullptr, "", 0), "", true);
}

namespace {
// The JSON of a CompareSpec built in code (raw empty): its fields that differ from the defaults.
ordered_json compare_json(const CompareSpec& c) {
  if (!c.raw.empty()) return c.raw;
  const CompareSpec d;
  ordered_json j = ordered_json::object();
  j["rule"] = c.rule;
  if (c.atol != d.atol) j["atol"] = c.atol;
  if (c.rtol != d.rtol) j["rtol"] = c.rtol;
  if (c.ulps != d.ulps) j["ulps"] = c.ulps;
  if (c.max_ulps != d.max_ulps) j["max_ulps"] = c.max_ulps;
  if (c.matched_ratio != d.matched_ratio) j["matched_ratio"] = c.matched_ratio;
  if (c.max_error_cap != d.max_error_cap) j["max_error_cap"] = c.max_error_cap;
  if (c.tol != d.tol) j["tol"] = c.tol;
  if (!c.group.empty()) j["group"] = c.group;
  if (!c.count.empty()) j["count"] = c.count;
  if (c.k != d.k) j["k"] = c.k;
  if (!c.k_axis.empty()) j["k_axis"] = c.k_axis;
  if (!c.values.empty()) j["values"] = c.values;
  return j;
}
}  // namespace

CompareSpec merge_compare(const CompareSpec& base, const CompareSpec& over) {
  const ordered_json o = compare_json(over);
  if (o.contains("rule") && o["rule"].is_string() && o["rule"].get<std::string>() != base.rule)
    return compare_from_json(o);
  ordered_json merged = compare_json(base);
  for (auto it = o.begin(); it != o.end(); ++it) merged[it.key()] = it.value();
  return compare_from_json(merged);
}

GeneratorSpec effective_generator(const Definition& def, const Workload& w, std::string_view input) {
  const TensorSpec* t = find_input(def, input);
  if (!t) throw std::invalid_argument(fmt::format("unknown input '{}'", input));
  if (!t->generator) throw std::invalid_argument(fmt::format("input '{}' has no generator", input));
  auto it = w.generators.find(std::string(input));
  return it == w.generators.end() ? *t->generator : merge_generator(*t->generator, it->second);
}

CompareSpec effective_compare(const Definition& def, const Workload& w, std::string_view output) {
  const TensorSpec* t = find_output(def, output);
  if (!t) throw std::invalid_argument(fmt::format("unknown output '{}'", output));
  if (!t->compare) throw std::invalid_argument(fmt::format("output '{}' has no compare rule", output));
  auto it = w.compare.find(std::string(output));
  return it == w.compare.end() ? *t->compare : merge_compare(*t->compare, it->second);
}

std::vector<ScalarSpec> effective_scalars(const Definition& def, const Workload& w) {
  std::vector<ScalarSpec> out = def.scalars;
  for (auto& s : out)
    if (auto it = w.scalars.find(s.name); it != w.scalars.end()) s.value = it->second;
  return out;
}

std::map<std::string, Value> expr_env(const AxisValues& axes, const std::vector<ScalarSpec>& scalars) {
  auto env = axis_env(axes);
  for (const auto& s : scalars)
    env[s.name] = s.is_float ? Value::of(s.value) : Value::of(static_cast<std::int64_t>(std::llround(s.value)));
  return env;
}

int first_failed_constraint(const Definition& def, const std::map<std::string, Value>& env) {
  for (std::size_t k = 0; k < def.constraints.size(); ++k) {
    if (def.constraints[k].empty()) continue;  // unparsable: reported by the loader
    if (!def.constraints[k].eval(env).truthy()) return static_cast<int>(k);
  }
  return -1;
}

CostAt evaluate_cost(const Definition& def, const std::map<std::string, Value>& env) {
  CostAt c;
  for (const auto& [unit, e] : def.cost.flops) c.flops[unit] = e.eval(env).as_double();
  if (!def.cost.bytes.empty()) c.bytes = def.cost.bytes.eval(env).as_double();
  return c;
}

// ---- Hidden workloads ----

namespace {

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xCBF29CE484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

struct Rng {
  std::uint64_t state;
  std::uint64_t next() { return splitmix64(state); }
  /// Uniform in [lo, hi] (the modulo bias is negligible for these ranges).
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Log-uniform in [lo, hi]: small and large sizes equally likely per octave.
  std::int64_t log_uniform(std::int64_t lo, std::int64_t hi) {
    if (hi <= lo) return lo;
    const double a = std::log(static_cast<double>(std::max<std::int64_t>(lo, 1)));
    const double b = std::log(static_cast<double>(hi) + 1.0);
    const auto v = static_cast<std::int64_t>(std::exp(a + (b - a) * unit()));
    return std::clamp(v, lo, hi);
  }
};

bool is_prime(std::int64_t n) {
  if (n < 2) return false;
  if (n % 2 == 0) return n == 2;
  for (std::int64_t d = 3; d * d <= n; d += 2)
    if (n % d == 0) return false;
  return true;
}

// One var axis: the multiplier k ranges over [klo, khi]; the value is k * step.
struct AxisPlan {
  std::string name;
  std::int64_t klo = 0, khi = 0, step = 1;
  bool fixed = false;
  std::int64_t value = 0;
};

AxisPlan plan_axis(const Axis& a, const Definition& def) {
  AxisPlan p;
  p.name = a.name;
  std::int64_t lo = a.min;
  std::int64_t hi = a.hidden_max > 0 ? a.hidden_max : (a.max > 0 ? std::min<std::int64_t>(a.max, 4096) : 4096);
  if (a.max > 0) hi = std::min(hi, a.max);
  // Constraints such as `H % 8 == 0`, `D == 128`, `K <= 1024` narrow the draw directly, so that
  // rejection sampling is left only the constraints that tie axes together.
  for (const auto& c : def.constraints) {
    for (const auto& f : c.facts()) {
      if (f.name != a.name) continue;
      switch (f.kind) {
        case Expr::Fact::Kind::multiple_of: p.step = std::lcm(p.step, f.value); break;
        case Expr::Fact::Kind::equals: p.fixed = true; p.value = f.value; break;
        case Expr::Fact::Kind::at_most: hi = std::min(hi, f.value); break;
        case Expr::Fact::Kind::at_least: lo = std::max(lo, f.value); break;
      }
    }
  }
  hi = std::max(hi, lo);
  p.klo = (lo + p.step - 1) / p.step;  // lo >= 0 for a valid definition
  p.khi = std::max(hi / p.step, p.klo);
  return p;
}

// A value is "aligned" when it is a multiple of a tile-like size its step does not force.
bool aligned(std::int64_t v, std::int64_t step) {
  for (std::int64_t m : {8, 16, 64, 128})
    if (step % m != 0 && v % m == 0) return true;
  return false;
}

std::int64_t draw_multiplier(Rng& rng, const AxisPlan& p) {
  const std::int64_t lo = p.klo, hi = p.khi;
  std::int64_t k = lo;
  const auto strategy = rng.next() % 6;
  switch (strategy) {
    case 0:  // tiny sizes: the edge cases of every tiling
      k = rng.uniform(lo, std::min(hi, lo + 15));
      break;
    case 1: {  // a prime
      k = rng.log_uniform(lo, hi);
      std::int64_t down = k, up = k;
      for (int n = 0; n < 512; ++n, --down, ++up) {
        if (down >= lo && is_prime(down)) { k = down; break; }
        if (up <= hi && is_prime(up)) { k = up; break; }
      }
      break;
    }
    case 2: {  // one below or above a power of two
      std::vector<std::int64_t> c;
      for (std::int64_t p2 = 2; p2 <= hi + 1 && p2 > 0; p2 *= 2)
        for (std::int64_t d : {-1, 1})
          if (p2 + d >= lo && p2 + d <= hi) c.push_back(p2 + d);
      k = c.empty() ? rng.log_uniform(lo, hi) : c[rng.next() % c.size()];
      break;
    }
    case 3:  // odd
      k = rng.log_uniform(lo, hi) | 1;
      if (k > hi) k -= 2;
      if (k < lo) k = lo;
      break;
    default:
      k = rng.log_uniform(lo, hi);
  }
  // Step off values that are multiples of common tile sizes (kept for pure random draws, so
  // aligned sizes still appear now and then).
  if (strategy != 5 && aligned(k * p.step, p.step)) {
    for (std::int64_t d : {1, -1, 2, -2, 3, -3}) {
      if (k + d >= lo && k + d <= hi && !aligned((k + d) * p.step, p.step)) { k += d; break; }
    }
  }
  return k;
}

}  // namespace

std::vector<Workload> draw_hidden_workloads(const Definition& def, std::uint64_t secret_seed, int count) {
  Rng rng{secret_seed ^ fnv1a(def.name)};
  splitmix64(rng.state);
  std::vector<AxisPlan> plans;
  std::vector<std::size_t> long_axes;  // plans of axes marked hidden_long, in definition order
  for (const auto& a : def.axes)
    if (a.kind == AxisKind::var) {
      if (a.hidden_long) long_axes.push_back(plans.size());
      plans.push_back(plan_axis(a, def));
    }

  std::vector<Workload> out;
  std::set<std::map<std::string, std::int64_t>> seen;
  const auto scalars = def.scalars;
  constexpr int kAttemptsPerWorkload = 2000;
  for (int n = 0; n < count; ++n) {
    for (int attempt = 0; attempt < kAttemptsPerWorkload; ++attempt) {
      Workload w;
      w.role = WorkloadRole::check;
      w.hidden = true;
      for (std::size_t q = 0; q < plans.size(); ++q) {
        AxisPlan p = plans[q];
        // Workload n draws the n-th hidden_long axis from its top quarter: a long extent is where
        // accumulation precision and multi-pass tiling show (a row of 65536 in a normalisation).
        if (static_cast<std::size_t>(n) < long_axes.size() && long_axes[static_cast<std::size_t>(n)] == q)
          p.klo = std::max(p.klo, p.khi / 4);
        w.axes[p.name] = p.fixed ? p.value : draw_multiplier(rng, p) * p.step;
      }
      // Prefer distinct draws, but accept a repeat late on (a task may have few legal shapes).
      if (!plans.empty() && seen.count(w.axes) && attempt < kAttemptsPerWorkload / 2) continue;
      bool ok = true;
      for (const auto& p : plans) {
        const Axis* a = find_axis(def, p.name);
        const std::int64_t v = w.axes[p.name];
        ok = ok && v >= a->min && (a->max == 0 || v <= a->max);
      }
      if (!ok) continue;
      try {
        const AxisValues axes = resolve_axes(def, w);
        if (first_failed_constraint(def, expr_env(axes, scalars)) >= 0) continue;
        bool small = true;  // hidden workloads are judged against the host reference: bound their size
        for (const auto* ts : {&def.inputs, &def.outputs})
          for (const auto& t : *ts) {
            std::int64_t elems = 1;
            for (auto d : resolve_shape(t, axes)) elems *= d;
            small = small && elems <= kHiddenMaxElements;
          }
        if (!small) continue;
      } catch (const std::exception&) {
        continue;  // e.g. a negative dimension or a division by zero at this draw
      }
      std::uint64_t h = fnv1a(def.name, secret_seed * 0x100000001B3ull + static_cast<std::uint64_t>(n));
      for (const auto& [k, v] : w.axes) h = fnv1a(fmt::format("{}={};", k, v), h);
      w.uuid = fmt::format("hidden-{}-{:08x}", n + 1, static_cast<std::uint32_t>(h ^ (h >> 32)));
      w.description = "hidden check workload drawn from the constraints";
      seen.insert(w.axes);
      out.push_back(std::move(w));
      break;
    }
    if (static_cast<int>(out.size()) <= n) break;  // the cap was reached: stop rather than spin
  }
  return out;
}

}  // namespace d2k
