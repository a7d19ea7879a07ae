// validate_task: every rule of docs/task-format.md that loading alone cannot catch.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_fields.h"
#include "core/task_loader.h"
#include "core/workload.h"

namespace d2k {

namespace {

using detail::FieldReader;
using detail::index_path;
using detail::join_path;

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

struct Checker {
  const Task& task;
  const Definition& def;
  Diagnostics& diag;
  std::string def_file;
  // False when an expr axis cannot be evaluated for any workload (reported once, in definition.json).
  mutable bool axes_resolvable = true;

  std::set<std::string> axis_names() const {
    std::set<std::string> s;
    for (const auto& a : def.axes) s.insert(a.name);
    return s;
  }

  // Every identifier of `e` must be an axis (or a scalar when `scalars_ok`).
  void check_names(const Expr& e, bool scalars_ok, const FieldReader& r, const std::string& field) const {
    for (const auto& id : e.identifiers()) {
      if (find_axis(def, id)) continue;
      if (find_scalar(def, id)) {
        if (!scalars_ok) r.error(field, fmt::format("'{}' is a scalar; only axes may appear here", id));
        continue;
      }
      r.error(field, fmt::format("unknown name '{}' in \"{}\" (not an axis{})", id, e.text(),
                                 scalars_ok ? " or scalar" : ""));
    }
  }

  // ---- Comparison rules ----

  void check_compare(const CompareSpec& c, const std::string& self, const FieldReader& r, const std::string& path) const {
    auto rule = std::find_if(kCompareRules.begin(), kCompareRules.end(),
                             [&](const CompareRuleFields& f) { return f.rule == c.rule; });
    if (rule == kCompareRules.end()) {
      std::string names;
      for (const auto& f : kCompareRules) names += fmt::format("{}{}", names.empty() ? "" : ", ", f.rule);
      r.error(join_path(path, "rule"), fmt::format("unknown rule '{}' ({})", c.rule, names));
      return;
    }
    for (auto it = c.raw.begin(); it != c.raw.end(); ++it) {
      if (it.key() == "rule") continue;
      const auto& used = rule->fields;
      if (it.key().empty() || std::find(used.begin(), used.end(), it.key()) == used.end())
        r.warning(join_path(path, it.key()), fmt::format("field not used by rule '{}'", c.rule));
    }
    auto count_output = [&]() {
      if (c.count.empty()) return;
      const TensorSpec* o = find_output(def, c.count);
      if (!o) r.error(join_path(path, "count"), fmt::format("'{}' is not an output", c.count));
      else if (c.count == self) r.error(join_path(path, "count"), "an output cannot be its own row count");
      else if (!is_integer(o->dtype)) r.error(join_path(path, "count"), fmt::format("output '{}' is not an integer", c.count));
    };
    if (c.rule == "allclose") {
      if (!c.raw.contains("atol") && !c.raw.contains("rtol")) r.error(path, "allclose needs atol or rtol");
      if (c.atol < 0) r.error(join_path(path, "atol"), "must be >= 0");
      if (c.rtol < 0) r.error(join_path(path, "rtol"), "must be >= 0");
      if (!(c.matched_ratio > 0 && c.matched_ratio <= 1)) r.error(join_path(path, "matched_ratio"), "must be in (0, 1]");
      if (c.max_error_cap < 0) r.error(join_path(path, "max_error_cap"), "must be >= 0");
    } else if (c.rule == "ulp") {
      if (!c.raw.contains("ulps")) r.error(path, "ulp needs ulps");
      if (!(c.ulps >= 0)) r.error(join_path(path, "ulps"), "must be >= 0");
      if (!(c.matched_ratio > 0 && c.matched_ratio <= 1)) r.error(join_path(path, "matched_ratio"), "must be in (0, 1]");
      if (c.atol < 0) r.error(join_path(path, "atol"), "must be >= 0");
      if (c.raw.contains("max_ulps") && !(c.max_ulps >= c.ulps))
        r.error(join_path(path, "max_ulps"), "must be >= ulps");
      if (const TensorSpec* o = find_output(def, self); o && !is_floating(o->dtype))
        r.error(join_path(path, "rule"), "ulp compares float outputs only");
    } else if (c.rule == "rel_l2") {
      if (!(c.tol > 0)) r.error(join_path(path, "tol"), "rel_l2 needs tol > 0");
    } else if (c.rule == "multiset" || c.rule == "exact") {
      count_output();
    } else if (c.rule == "topk") {
      const bool has_k = c.raw.contains("k"), has_axis = !c.k_axis.empty();
      if (has_k == has_axis) r.error(path, "topk needs exactly one of k and k_axis");
      if (has_k && c.k <= 0) r.error(join_path(path, "k"), "must be > 0");
      if (has_axis && !find_axis(def, c.k_axis))
        r.error(join_path(path, "k_axis"), fmt::format("unknown axis '{}'", c.k_axis));
      // The judge reads each side's values output ([rows, k]) for ties; an input of scores
      // ([rows, n]) is not passed to it, so naming one would silently drop the tie allowance.
      if (!c.values.empty() && !find_output(def, c.values))
        r.error(join_path(path, "values"), fmt::format("'{}' is not an output (the values [rows, k] of the indices)", c.values));
      count_output();
    }
  }

  // ---- definition.json ----

  void check_definition() const {
    const FieldReader r(&diag, def_file, 0);
    // Present and a string (the loader reports it missing or mistyped): "" is no identifier either.
    if (auto n = def.raw.find("name"); n != def.raw.end() && n->is_string()) {
      if (!is_identifier(def.name)) r.error("name", fmt::format("'{}' is not an identifier", def.name));
      const std::string folder = task.dir.filename().empty() ? task.dir.parent_path().filename().string()
                                                             : task.dir.filename().string();
      if (!folder.empty() && folder != "." && folder != def.name)
        r.error("name", fmt::format("'{}' differs from the folder name '{}'", def.name, folder));
    }

    // Axes, scalars, inputs and outputs share one namespace: all reach the solution by name.
    std::map<std::string, std::string> owner;
    auto claim = [&](const std::string& name, const std::string& what, const std::string& field) {
      if (!is_identifier(name)) r.error(field, fmt::format("'{}' is not an identifier", name));
      auto [it, fresh] = owner.emplace(name, what);
      if (!fresh) r.error(field, fmt::format("duplicate name '{}' (already the {} '{}')", name, it->second, name));
    };
    for (const auto& a : def.axes) claim(a.name, "axis", join_path("axes", a.name));
    for (const auto& s : def.scalars) claim(s.name, "scalar", join_path("scalars", s.name));
    for (const auto& t : def.inputs) claim(t.name, "input", join_path("inputs", t.name));
    for (const auto& t : def.outputs) claim(t.name, "output", join_path("outputs", t.name));
    if (def.outputs.empty() && def.raw.contains("outputs")) r.error("outputs", "a task needs at least one output");

    for (const auto& a : def.axes) {
      const std::string path = join_path("axes", a.name);
      if (a.kind == AxisKind::const_ && a.value < 0) r.error(join_path(path, "value"), "must be >= 0");
      if (a.kind == AxisKind::var) {
        if (a.min < 0) r.error(join_path(path, "min"), "must be >= 0");
        if (a.max != 0 && a.max < a.min)
          r.error(join_path(path, "max"), fmt::format("{} is below min {}", a.max, a.min));
        if (a.hidden_max != 0 && (a.hidden_max < a.min || (a.max != 0 && a.hidden_max > a.max)))
          r.error(join_path(path, "hidden_max"), fmt::format("{} is outside [min, max]", a.hidden_max));
      }
      if (a.kind == AxisKind::expr) {
        axes_resolvable = axes_resolvable && !a.expr.empty();
        for (const auto& id : a.expr.identifiers()) {
          const bool self = id == a.name, unknown = !find_axis(def, id);
          if (self) r.error(join_path(path, "expr"), "refers to itself");
          else if (unknown) r.error(join_path(path, "expr"), fmt::format("unknown axis '{}'", id));
          axes_resolvable = axes_resolvable && !self && !unknown;
        }
      }
    }
    check_expr_cycles(r);

    for (std::size_t k = 0; k < def.constraints.size(); ++k)
      if (!def.constraints[k].empty()) check_names(def.constraints[k], true, r, index_path("constraints", k));

    for (const auto* list : {&def.inputs, &def.outputs}) {
      const bool inputs = list == &def.inputs;
      for (const auto& t : *list) {
        const std::string path = join_path(inputs ? "inputs" : "outputs", t.name);
        for (std::size_t k = 0; k < t.shape.size(); ++k) {
          const std::string field = index_path(join_path(path, "shape"), k);
          try {
            const Expr e = Expr::parse(t.shape[k]);
            for (const auto& id : e.identifiers())
              if (!find_axis(def, id)) r.error(field, fmt::format("unknown axis '{}'", id));
          } catch (const ExprError& e) {
            r.error(field, e.what());
          }
        }
        if (inputs) {
          // The generator's fields are checked against the one schema in src/data by the dry
          // run of every workload (cli/dataset.cpp), where dtype and element count are known.
          if (!t.generator) r.error(join_path(path, "generator"), "missing: every input needs a generator");
        } else {
          if (!t.compare) r.error(join_path(path, "compare"), "missing: every output needs a compare rule");
          else check_compare(*t.compare, t.name, r, join_path(path, "compare"));
        }
      }
    }
    check_groups(r);

    for (const auto& [unit, e] : def.cost.flops) {
      const std::string field = join_path("cost.flops", unit);
      if (std::find(kCostUnits.begin(), kCostUnits.end(), unit) == kCostUnits.end())
        r.error(field, fmt::format("unknown unit '{}' ({})", unit, fmt::join(kCostUnits, ", ")));
      check_names(e, true, r, field);
    }
    if (!def.cost.bytes.empty()) check_names(def.cost.bytes, true, r, "cost.bytes");
    // Track names and what each may name in headers/link: src/tracks/ (check_definition_tracks).
  }

  void check_expr_cycles(const FieldReader& r) const {
    // Depth-first search over expr axes; a back edge is a cycle.
    std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
    std::set<std::string> reported;
    std::function<void(const Axis&, std::vector<std::string>&)> visit = [&](const Axis& a, std::vector<std::string>& stack) {
      state[a.name] = 1;
      stack.push_back(a.name);
      for (const auto& id : a.expr.identifiers()) {
        const Axis* b = find_axis(def, id);
        if (!b || b->kind != AxisKind::expr || id == a.name) continue;
        if (state[id] == 1) {
          auto from = std::find(stack.begin(), stack.end(), id);
          std::vector<std::string> cycle(from, stack.end());
          cycle.push_back(id);
          axes_resolvable = false;
          if (reported.insert(id).second) {
            std::string s;
            for (const auto& c : cycle) s += (s.empty() ? "" : " -> ") + c;
            r.error(join_path(join_path("axes", id), "expr"), fmt::format("expr axes form a cycle: {}", s));
          }
        } else if (state[id] == 0) {
          visit(*b, stack);
        }
      }
      stack.pop_back();
      state[a.name] = 2;
    };
    for (const auto& a : def.axes) {
      if (a.kind != AxisKind::expr || state[a.name] != 0) continue;
      std::vector<std::string> stack;
      visit(a, stack);
    }
  }

  // Outputs of one multiset group are columns of the same rows: they must agree on the count.
  void check_groups(const FieldReader& r) const {
    std::map<std::string, const TensorSpec*> first;
    for (const auto& t : def.outputs) {
      if (!t.compare || t.compare->rule != "multiset" || t.compare->group.empty()) continue;
      auto [it, fresh] = first.emplace(t.compare->group, &t);
      if (!fresh && it->second->compare->count != t.compare->count)
        r.error(join_path(join_path("outputs", t.name), "compare.count"),
                fmt::format("group '{}' already uses count '{}' (output '{}')", t.compare->group,
                            it->second->compare->count, it->second->name));
    }
  }

  // ---- workloads.jsonl ----

  void check_workloads(bool def_loaded) const {
    const std::string file = (task.dir / "workloads.jsonl").string();
    std::map<std::string, int> uuids;
    bool any_check = false, any_bench = false;
    for (const auto& w : task.workloads) {
      const FieldReader r(&diag, file, w.line);
      any_check = any_check || w.role == WorkloadRole::check;
      any_bench = any_bench || w.role == WorkloadRole::bench;
      if (!w.uuid.empty()) {
        auto [it, fresh] = uuids.emplace(w.uuid, w.line);
        if (!fresh) r.error("uuid", fmt::format("duplicate uuid '{}' (first on line {})", w.uuid, it->second));
      }
      if (def_loaded) check_workload(w, r);
    }
    std::error_code ec;
    if (task.workloads.empty() && std::filesystem::exists(task.dir / "workloads.jsonl", ec))
      diag.error(file, 0, "", "no workloads");
    if (!task.workloads.empty()) {
      if (!any_check) diag.error(file, 0, "role", "no workload has role check (needed for the golden comparison)");
      if (!any_bench) diag.error(file, 0, "role", "no workload has role bench (needed for timing)");
    }
  }

  void check_workload(const Workload& w, const FieldReader& r) const {
    bool axes_ok = true;
    for (const auto& [name, v] : w.axes) {
      const std::string field = join_path("axes", name);
      const Axis* a = find_axis(def, name);
      if (!a) {
        r.error(field, fmt::format("unknown axis '{}'", name));
        axes_ok = false;
      } else if (a->kind != AxisKind::var) {
        r.error(field, fmt::format("axis '{}' is {} and cannot be set by a workload",
                                   name, a->kind == AxisKind::const_ ? "const" : "expr"));
        axes_ok = false;
      } else if (v < a->min) {
        r.error(field, fmt::format("{} is below the axis minimum {}", v, a->min));
      } else if (a->max != 0 && v > a->max) {
        r.error(field, fmt::format("{} is above the axis maximum {}", v, a->max));
      }
    }
    for (const auto& a : def.axes) {
      if (a.kind == AxisKind::var && !w.axes.count(a.name)) {
        if (!diag.has_error(r.file(), r.line(), join_path("axes", a.name)))  // e.g. "expected an integer"
          r.error(join_path("axes", a.name), fmt::format("missing value for var axis '{}'", a.name));
        axes_ok = false;
      }
    }
    for (const auto& [name, v] : w.scalars) {
      const ScalarSpec* s = find_scalar(def, name);
      if (!s) r.error(join_path("scalars", name), fmt::format("unknown scalar '{}'", name));
      else if (!s->is_float && v != std::floor(v))
        r.error(join_path("scalars", name), fmt::format("scalar '{}' is an int; {} is not", name, v));
    }
    for (const auto& [name, g] : w.generators)
      if (!find_input(def, name)) r.error(join_path("inputs", name), fmt::format("unknown input '{}'", name));
    for (const auto& [name, c] : w.compare) {
      const std::string path = join_path("compare", name);
      const TensorSpec* t = find_output(def, name);
      if (!t) r.error(path, fmt::format("unknown output '{}'", name));
      else if (t->compare)
        report_new(r, [&](const FieldReader& q) { check_compare(*t->compare, name, q, path); },
                   [&](const FieldReader& q) { check_compare(merge_compare(*t->compare, c), name, q, path); });
    }
    if (!axes_ok || !axes_resolvable) return;

    AxisValues axes;
    try {
      axes = resolve_axes(def, w);
    } catch (const std::exception& e) {
      r.error("axes", e.what());
      return;
    }
    const auto env = expr_env(axes, effective_scalars(def, w));
    for (std::size_t k = 0; k < def.constraints.size(); ++k) {
      const Expr& c = def.constraints[k];
      const auto ids = c.identifiers();
      // Unparsable constraints and unknown names were reported in definition.json.
      if (c.empty() || std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return !env.count(id); }))
        continue;
      try {
        if (!c.eval(env).truthy()) {
          std::string vals;
          for (const auto& id : c.identifiers())
            if (auto it = axes.find(id); it != axes.end()) vals += fmt::format("{}{}={}", vals.empty() ? "" : ", ", id, it->second);
          r.error("axes", fmt::format("constraint \"{}\" does not hold ({})", c.text(), vals));
        }
      } catch (const ExprError& e) {
        r.error("axes", fmt::format("constraint {}: {}", k, e.what()));
      }
    }
    for (const auto* list : {&def.inputs, &def.outputs}) {
      for (const auto& t : *list) {
        if (!shape_names_known(t)) continue;  // reported in definition.json
        try {
          resolve_shape(t, axes);
        } catch (const std::exception& e) {
          r.error(join_path(join_path(list == &def.inputs ? "inputs" : "outputs", t.name), "shape"), e.what());
        }
      }
    }
    try {
      evaluate_cost(def, env);
    } catch (const ExprError& e) {
      r.error("cost", e.what());
    }
  }

  bool shape_names_known(const TensorSpec& t) const {
    for (const auto& entry : t.shape) {
      try {
        for (const auto& id : Expr::parse(entry).identifiers())
          if (!find_axis(def, id)) return false;
      } catch (const ExprError&) {
        return false;
      }
    }
    return true;
  }

  // Runs a check of the definition's spec and of the spec a workload override makes from it;
  // records only the override's new findings, so a definition error is not repeated per line.
  template <class Base, class Merged>
  void report_new(const FieldReader& r, Base base, Merged merged) const {
    Diagnostics before, after;
    base(FieldReader(&before, r.file(), r.line()));
    merged(FieldReader(&after, r.file(), r.line()));
    for (const auto& d : after.items()) {
      const bool old = std::any_of(before.items().begin(), before.items().end(), [&](const Diagnostic& b) {
        return b.field == d.field && b.message == d.message;
      });
      if (old) continue;
      if (d.severity == Diagnostic::Severity::error) r.error(d.field, d.message);
      else r.warning(d.field, d.message);
    }
  }

  // ---- design.json, rubric.json, other files ----

  void check_design(const DesignLevels& levels) const {
    const std::string file = (task.dir / "design.json").string();
    if (!levels.loaded)
      diag.error(file, 0, "", "the design levels (dataset/design_levels.json) did not load; cannot check the levels");
    if (!task.design) {
      diag.error(file, 0, "", "file is missing");
      return;
    }
    const Design& d = *task.design;
    std::map<std::string, std::string> ids;
    for (std::size_t l = 0; l < 3; ++l) {
      const std::string key = levels.loaded ? levels.level[l].key : std::string(kDesignLevelKeys[l]);
      if (d.level[l].empty()) diag.error(file, 0, key, "missing or empty: each level needs at least one item");
      for (std::size_t k = 0; k < d.level[l].size(); ++k) {
        const DesignItem& it = d.level[l][k];
        const std::string path = index_path(key, k);
        std::pair<const char*, const std::string*> fields[] = {
            {"id", &it.id}, {"statement", &it.statement}, {"rationale", &it.rationale}, {"recognise", &it.recognise}};
        for (const auto& [name, value] : fields)
          if (value->find_first_not_of(" \t\n") == std::string::npos) diag.error(file, 0, join_path(path, name), "empty");
        check_evidence(it.evidence.raw, file, join_path(path, "evidence"));
        if (it.id.empty()) continue;
        // The level's id prefixes its items (L2.tile_per_warp), so a scorer's or a reader's
        // reference to an item names its level too.
        const std::string& id = levels.level[l].id;  // read even when another field of the levels failed
        const std::string prefix = (id.empty() ? fmt::format("L{}", l + 1) : id) + ".";
        if (it.id.rfind(prefix, 0) != 0 || it.id.size() == prefix.size())
          diag.error(file, 0, join_path(path, "id"), fmt::format("'{}' must start with '{}' (the level's id)", it.id, prefix));
        auto [prev, fresh] = ids.emplace(it.id, path);
        if (!fresh) diag.error(file, 0, join_path(path, "id"), fmt::format("duplicate id '{}' (also {})", it.id, prev->second));
      }
    }
    if (d.cross_level_rationale.find_first_not_of(" \t\n") == std::string::npos)
      diag.error(file, 0, "cross_level_rationale", "missing or empty");
  }

  // `evidence` (docs/task-format.md): an object with `sass` and/or `sass_absent`, each a list of
  // SASS opcode prefixes: non-empty, upper case (opcodes are printed so), letters, digits, '.'
  // and '_'. A lower-case prefix would never match and silently mark the item not built.
  void check_evidence(const ordered_json& e, const std::string& file, const std::string& path) const {
    if (e.is_null()) return;
    if (!e.is_object()) {
      diag.error(file, 0, path, "expected an object with 'sass' and/or 'sass_absent' (lists of SASS opcode prefixes)");
      return;
    }
    if (e.empty()) diag.error(file, 0, path, "empty: give 'sass' and/or 'sass_absent'");
    for (auto it = e.begin(); it != e.end(); ++it) {
      const std::string field = join_path(path, it.key());
      if (it.key() != "sass" && it.key() != "sass_absent") {
        diag.error(file, 0, field, "unknown key (sass, sass_absent)");
        continue;
      }
      if (!it->is_array() || it->empty()) {
        diag.error(file, 0, field, "expected a non-empty list of SASS opcode prefixes (e.g. [\"HGMMA\"])");
        continue;
      }
      for (std::size_t k = 0; k < it->size(); ++k) {
        const auto& v = (*it)[k];
        const bool ok = v.is_string() && !v.get<std::string>().empty() &&
                        std::all_of(v.get_ref<const std::string&>().begin(), v.get_ref<const std::string&>().end(), [](char c) {
                          return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                                 c == '.' || c == '_';
                        });
        if (!ok)
          diag.error(file, 0, index_path(field, k),
                     "expected a non-empty upper-case SASS opcode prefix (letters, digits, '.', '_'), e.g. \"LDG.E.128\"");
      }
    }
  }

  void check_rubric() const {
    const std::string file = (task.dir / "rubric.json").string();
    if (!task.rubric) {
      diag.error(file, 0, "", "file is missing");
      return;
    }
    for (std::size_t l = 0; l < 3; ++l) {
      for (const char* part : {"design", "implementation"}) {
        const auto& anchors = std::string_view(part) == "design" ? task.rubric->design[l] : task.rubric->implementation[l];
        const std::string path = join_path(kRubricLevelKeys[l], part);
        for (int a : kRubricAnchors) {
          auto it = anchors.find(a);
          if (it == anchors.end()) diag.error(file, 0, join_path(path, std::to_string(a)), "missing anchor");
          else if (it->second.find_first_not_of(" \t\n") == std::string::npos)
            diag.error(file, 0, join_path(path, std::to_string(a)), "empty anchor");
        }
        for (const auto& [score, text] : anchors)
          if (std::find(kRubricAnchors.begin(), kRubricAnchors.end(), score) == kRubricAnchors.end())
            diag.error(file, 0, join_path(path, std::to_string(score)), "unknown anchor (0, 25, 50, 75, 100)");
      }
    }
  }

  void check_files() const {
    if (!task.has_spec) diag.error((task.dir / "spec.md").string(), 0, "", "file is missing");
    if (!task.has_reference) diag.error((task.dir / "reference.cpp").string(), 0, "", "file is missing");
  }
};

}  // namespace

void validate_design_and_rubric(const Task& task, const DesignLevels& levels, Diagnostics& diag) {
  const Checker c{task, task.def, diag, (task.dir / "definition.json").string()};
  c.check_design(levels);
  c.check_rubric();
}

void validate_task(const Task& task, const DesignLevels& levels, Diagnostics& diag) {
  const Checker c{task, task.def, diag, (task.dir / "definition.json").string()};
  // A definition that did not load (syntax error, missing file) was reported once by the loader;
  // checking workloads against its empty shell would report every axis of every line again.
  const bool def_loaded = task.def.raw.is_object();
  if (def_loaded) c.check_definition();
  c.check_workloads(def_loaded);
  c.check_design(levels);
  c.check_rubric();
  c.check_files();
}

}  // namespace d2k
