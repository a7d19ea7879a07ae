#include "core/task_loader.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/json_fields.h"
#include "core/limits.h"

namespace d2k {

namespace fs = std::filesystem;
using detail::FieldReader;
using detail::index_path;
using detail::join_path;

namespace {

std::string all_dtype_names() {
  std::string s;
  for (int t = 0; t <= static_cast<int>(DType::boolean); ++t) {
    if (!s.empty()) s += ", ";
    s += dtype_name(static_cast<DType>(t));
  }
  return s;
}

// An expression given as a string, or as a plain number (written as text).
std::optional<std::string> expr_text(const ordered_json& obj, std::string_view key, const std::string& path,
                                     const FieldReader& r, bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) r.error(join_path(path, key), "missing required field");
    return std::nullopt;
  }
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  r.error(join_path(path, key), "expected an expression (a string or a number)");
  return std::nullopt;
}

Expr parse_expr(const std::string& text, const FieldReader& r, const std::string& field) {
  try {
    return Expr::parse(text);
  } catch (const ExprError& e) {
    r.error(field, e.what());
    return Expr{};
  }
}

void parse_axes(const ordered_json& j, Definition& d, const FieldReader& r) {
  if (!r.object(j, "axes")) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = join_path("axes", it.key());
    Axis a;
    a.name = it.key();
    const ordered_json& v = it.value();
    if (!r.object(v, path)) continue;
    r.known_keys(v, path, {"type", "value", "min", "max", "hidden_max", "hidden_long", "expr", "description"});
    a.description = r.string(v, "description", path, false).value_or("");
    const auto type = r.string(v, "type", path, true);
    if (!type) continue;
    if (*type == "const") {
      a.kind = AxisKind::const_;
      a.value = r.integer(v, "value", path, true).value_or(0);
    } else if (*type == "var") {
      a.kind = AxisKind::var;
      a.min = r.integer(v, "min", path, false).value_or(1);
      a.max = r.integer(v, "max", path, false).value_or(0);
      a.hidden_max = r.integer(v, "hidden_max", path, false).value_or(0);
      a.hidden_long = r.boolean(v, "hidden_long", path, false).value_or(false);
    } else if (*type == "expr") {
      a.kind = AxisKind::expr;
      if (auto t = expr_text(v, "expr", path, r, true)) a.expr = parse_expr(*t, r, join_path(path, "expr"));
    } else {
      r.error(join_path(path, "type"), fmt::format("unknown axis type '{}' (const, var or expr)", *type));
      continue;
    }
    d.axes.push_back(std::move(a));
  }
}

void parse_scalars(const ordered_json& j, Definition& d, const FieldReader& r) {
  if (!r.object(j, "scalars")) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = join_path("scalars", it.key());
    const ordered_json& v = it.value();
    if (!r.object(v, path)) continue;
    r.known_keys(v, path, {"type", "value", "description"});
    ScalarSpec s;
    s.name = it.key();
    s.description = r.string(v, "description", path, false).value_or("");
    const auto type = r.string(v, "type", path, true);
    if (type && *type != "float" && *type != "int")
      r.error(join_path(path, "type"), fmt::format("unknown scalar type '{}' (float or int)", *type));
    s.is_float = !type || *type != "int";
    if (s.is_float) {
      s.value = r.number(v, "value", path, true).value_or(0);
    } else if (auto iv = r.integer(v, "value", path, true)) {
      s.value = static_cast<double>(*iv);
    }
    d.scalars.push_back(std::move(s));
  }
}

void parse_tensors(const ordered_json& j, const char* section, bool inputs, std::vector<TensorSpec>& out,
                   const FieldReader& r) {
  if (!r.object(j, section)) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = join_path(section, it.key());
    const ordered_json& v = it.value();
    if (!r.object(v, path)) continue;
    if (inputs) r.known_keys(v, path, {"shape", "dtype", "description", "generator"});
    else r.known_keys(v, path, {"shape", "dtype", "description", "compare"});
    TensorSpec t;
    t.name = it.key();
    t.description = r.string(v, "description", path, false).value_or("");
    if (auto dt = r.string(v, "dtype", path, true)) {
      if (auto parsed = parse_dtype(*dt)) t.dtype = *parsed;
      else r.error(join_path(path, "dtype"), fmt::format("unknown dtype '{}' (one of {})", *dt, all_dtype_names()));
    }
    auto sh = v.find("shape");
    if (sh == v.end()) {
      r.error(join_path(path, "shape"), "missing required field");
    } else if (!sh->is_array()) {
      r.error(join_path(path, "shape"), "expected an array of axis names");
    } else {
      for (std::size_t k = 0; k < sh->size(); ++k) {
        const ordered_json& e = (*sh)[k];
        if (e.is_string()) t.shape.push_back(e.get<std::string>());
        else if (auto iv = detail::json_integer(e)) t.shape.push_back(std::to_string(*iv));
        else r.error(index_path(join_path(path, "shape"), k), "expected an axis name or an integer");
      }
    }
    if (inputs) {
      if (auto g = v.find("generator"); g != v.end())
        t.generator = detail::parse_generator(*g, r, join_path(path, "generator"), false);
    } else if (auto c = v.find("compare"); c != v.end()) {
      t.compare = detail::parse_compare(*c, r, join_path(path, "compare"), false);
    }
    out.push_back(std::move(t));
  }
}

void parse_cost(const ordered_json& j, Definition& d, const FieldReader& r) {
  if (!r.object(j, "cost")) return;
  r.known_keys(j, "cost", {"flops", "bytes", "notes"});
  d.cost.notes = r.string(j, "notes", "cost", false).value_or("");
  if (auto t = expr_text(j, "bytes", "cost", r, true)) d.cost.bytes = parse_expr(*t, r, "cost.bytes");
  if (auto f = j.find("flops"); f != j.end() && r.object(*f, "cost.flops")) {
    for (auto it = f->begin(); it != f->end(); ++it) {
      if (auto t = expr_text(*f, it.key(), "cost.flops", r, true)) {
        Expr e = parse_expr(*t, r, join_path("cost.flops", it.key()));
        if (!e.empty()) d.cost.flops[it.key()] = e;
      }
    }
  }
}

void parse_tracks(const ordered_json& j, Definition& d, const FieldReader& r) {
  if (!r.object(j, "tracks")) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = join_path("tracks", it.key());
    if (!r.object(it.value(), path)) continue;
    if (it.value().contains("libraries"))
      r.error(join_path(path, "libraries"), "replaced by headers, link and vendor_kernels (docs/task-format.md)");
    r.known_keys(it.value(), path, {"headers", "link", "vendor_kernels", "libraries"});
    TrackSpec& spec = d.tracks[it.key()];
    auto names = [&](const char* key, std::vector<std::string>& out) {
      auto l = it.value().find(key);
      if (l == it.value().end()) return;
      if (!l->is_array()) {
        r.error(join_path(path, key), "expected an array of names");
        return;
      }
      for (std::size_t k = 0; k < l->size(); ++k) {
        if ((*l)[k].is_string()) out.push_back((*l)[k].get<std::string>());
        else r.error(index_path(join_path(path, key), k), "expected a string");
      }
    };
    names("headers", spec.headers);
    names("link", spec.link);
    if (auto v = it.value().find("vendor_kernels"); v != it.value().end()) {
      if (v->is_boolean()) spec.vendor_kernels = v->get<bool>();
      else r.error(join_path(path, "vendor_kernels"), "expected true or false");
    }
  }
}

void parse_definition(const ordered_json& j, Definition& d, const FieldReader& r) {
  if (!r.object(j, "")) return;
  // Beyond the bound the definition is refused whole (raw stays unset, so validation does not
  // report every axis reference of every workload as unknown).
  if (auto a = j.find("axes"); a != j.end() && a->is_object() && a->size() > limits::kMaxAxes) {
    r.error("axes", fmt::format("too many axes ({}, limit {})", a->size(), limits::kMaxAxes));
    return;
  }
  d.raw = j;
  r.known_keys(j, "", {"name", "op_type", "description", "axes", "constraints", "scalars", "inputs", "outputs",
                       "cost", "tracks", "launches_vary_with_inputs"});
  d.name = r.string(j, "name", "", true).value_or("");
  d.op_type = r.string(j, "op_type", "", true).value_or("");
  d.description = r.string(j, "description", "", true).value_or("");
  d.launches_vary_with_inputs = r.string(j, "launches_vary_with_inputs", "", false).value_or("");
  if (auto v = j.find("launches_vary_with_inputs"); v != j.end() && v->is_string() && v->get<std::string>().empty())
    r.error("launches_vary_with_inputs", "say why an honest call's kernels depend on its inputs (a non-empty string)");
  if (auto a = j.find("axes"); a != j.end()) parse_axes(*a, d, r);
  else r.error("axes", "missing required field");
  if (auto c = j.find("constraints"); c != j.end()) {
    if (!c->is_array()) {
      r.error("constraints", "expected an array of expressions");
    } else {
      for (std::size_t k = 0; k < c->size(); ++k) {
        const std::string field = index_path("constraints", k);
        if (!(*c)[k].is_string()) {
          r.error(field, "expected an expression string");
          continue;
        }
        const std::string text = (*c)[k].get<std::string>();
        // Keep the two vectors aligned; an unparsable constraint stays as an empty Expr.
        d.constraint_text.push_back(text);
        d.constraints.push_back(parse_expr(text, r, field));
      }
    }
  }
  if (auto s = j.find("scalars"); s != j.end()) parse_scalars(*s, d, r);
  if (auto i = j.find("inputs"); i != j.end()) parse_tensors(*i, "inputs", true, d.inputs, r);
  else r.error("inputs", "missing required field");
  if (auto o = j.find("outputs"); o != j.end()) parse_tensors(*o, "outputs", false, d.outputs, r);
  else r.error("outputs", "missing required field");
  if (auto c = j.find("cost"); c != j.end()) parse_cost(*c, d, r);
  else r.error("cost", "missing required field");
  if (auto t = j.find("tracks"); t != j.end()) parse_tracks(*t, d, r);
}

void parse_workload(const ordered_json& j, Workload& w, const FieldReader& r) {
  if (!r.object(j, "")) return;
  r.known_keys(j, "", {"uuid", "role", "axes", "scalars", "inputs", "compare", "description"});
  w.uuid = r.string(j, "uuid", "", true).value_or("");
  w.description = r.string(j, "description", "", false).value_or("");
  if (auto role = r.string(j, "role", "", true)) {
    if (*role == "check") w.role = WorkloadRole::check;
    else if (*role == "bench") w.role = WorkloadRole::bench;
    else r.error("role", fmt::format("unknown role '{}' (check or bench)", *role));
  }
  if (auto a = j.find("axes"); a != j.end() && r.object(*a, "axes")) {
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (auto v = detail::json_integer(it.value())) w.axes[it.key()] = *v;
      else r.error(join_path("axes", it.key()), fmt::format("expected an integer, found {}", it.value().dump()));
    }
  }
  if (auto s = j.find("scalars"); s != j.end() && r.object(*s, "scalars")) {
    for (auto it = s->begin(); it != s->end(); ++it) {
      if (it.value().is_number()) w.scalars[it.key()] = it.value().get<double>();
      else r.error(join_path("scalars", it.key()), fmt::format("expected a number, found {}", it.value().dump()));
    }
  }
  if (auto in = j.find("inputs"); in != j.end() && r.object(*in, "inputs")) {
    for (auto it = in->begin(); it != in->end(); ++it) {
      const std::string path = join_path("inputs", it.key());
      if (!r.object(it.value(), path)) continue;
      r.known_keys(it.value(), path, {"generator"});
      if (auto g = it.value().find("generator"); g != it.value().end())
        w.generators[it.key()] = detail::parse_generator(*g, r, join_path(path, "generator"), true);
    }
  }
  if (auto c = j.find("compare"); c != j.end() && r.object(*c, "compare")) {
    for (auto it = c->begin(); it != c->end(); ++it)
      w.compare[it.key()] = detail::parse_compare(it.value(), r, join_path("compare", it.key()), true);
  }
}

void load_workloads(const fs::path& file, Task& t, Diagnostics& diag) {
  const auto text = detail::read_text(file, diag);
  if (!text) return;
  const std::string name = file.string();
  std::size_t start = 0;
  int line = 0;
  while (start <= text->size()) {
    std::size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    ++line;
    const std::string content = text->substr(start, end - start);
    start = end + 1;
    if (content.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are allowed
    if (t.workloads.size() >= limits::kMaxWorkloads) {
      diag.error(name, line, "", fmt::format("too many workloads (limit {})", limits::kMaxWorkloads));
      return;
    }
    auto j = detail::parse_json(content, diag, name, line);
    if (!j) continue;
    Workload w;
    w.line = line;
    parse_workload(*j, w, FieldReader(&diag, name, line));
    t.workloads.push_back(std::move(w));
  }
}

// `evidence` is kept as written; validate_task checks its shape, so only well-formed strings
// are taken here.
void read_design_evidence(const ordered_json& item, DesignEvidence& e) {
  auto it = item.find("evidence");
  if (it == item.end()) return;
  e.raw = *it;
  if (!it->is_object()) return;
  for (auto [key, out] : {std::pair{"sass", &e.sass}, std::pair{"sass_absent", &e.sass_absent}}) {
    auto f = it->find(key);
    if (f == it->end() || !f->is_array()) continue;
    for (const auto& s : *f)
      if (s.is_string()) out->push_back(s.get<std::string>());
  }
}

void parse_design(const ordered_json& j, Design& d, const FieldReader& r) {
  if (!r.object(j, "")) return;
  r.known_keys(j, "", {kDesignLevelKeys[0], kDesignLevelKeys[1], kDesignLevelKeys[2], "cross_level_rationale"});
  d.cross_level_rationale = r.string(j, "cross_level_rationale", "", false).value_or("");
  for (std::size_t l = 0; l < 3; ++l) {
    const std::string key(kDesignLevelKeys[l]);
    auto it = j.find(key);
    if (it == j.end()) continue;  // validation reports the empty level
    if (!it->is_array()) {
      r.error(key, "expected an array of guidance items");
      continue;
    }
    for (std::size_t k = 0; k < it->size(); ++k) {
      const std::string path = index_path(key, k);
      const ordered_json& v = (*it)[k];
      if (!r.object(v, path)) continue;
      r.known_keys(v, path, {"id", "statement", "rationale", "recognise", "evidence"});
      DesignItem item;
      item.id = r.string(v, "id", path, false).value_or("");
      item.statement = r.string(v, "statement", path, false).value_or("");
      item.rationale = r.string(v, "rationale", path, false).value_or("");
      item.recognise = r.string(v, "recognise", path, false).value_or("");
      read_design_evidence(v, item.evidence);
      d.level[l].push_back(std::move(item));
    }
  }
}

void parse_rubric(const ordered_json& j, Rubric& rub, const FieldReader& r) {
  if (!r.object(j, "")) return;
  r.known_keys(j, "", {kRubricLevelKeys[0], kRubricLevelKeys[1], kRubricLevelKeys[2]});
  for (std::size_t l = 0; l < 3; ++l) {
    const std::string key(kRubricLevelKeys[l]);
    auto it = j.find(key);
    if (it == j.end() || !r.object(*it, key)) continue;
    r.known_keys(*it, key, {"design", "implementation"});
    for (const char* part : {"design", "implementation"}) {
      const std::string path = join_path(key, part);
      auto p = it->find(part);
      if (p == it->end() || !r.object(*p, path)) continue;
      auto& anchors = std::string_view(part) == "design" ? rub.design[l] : rub.implementation[l];
      for (auto a = p->begin(); a != p->end(); ++a) {
        const std::string field = join_path(path, a.key());
        int score = 0;
        try {
          std::size_t used = 0;
          score = std::stoi(a.key(), &used);
          if (used != a.key().size()) throw std::invalid_argument("trailing characters");
        } catch (const std::exception&) {
          r.error(field, "anchor keys are scores: 0, 25, 50, 75, 100");
          continue;
        }
        if (!a.value().is_string()) r.error(field, "expected a string");
        else anchors[score] = a.value().get<std::string>();
      }
    }
  }
}

template <class T, class Parse>
std::optional<T> load_json_file(const fs::path& file, Diagnostics& diag, Parse parse) {
  const auto text = detail::read_text(file, diag);
  if (!text) return std::nullopt;
  const auto j = detail::parse_json(*text, diag, file.string(), 0);
  if (!j) return std::nullopt;
  T value;
  parse(*j, value, FieldReader(&diag, file.string(), 0));
  return value;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

Task load_task(const fs::path& dir, Diagnostics& diag) {
  Task t;
  t.dir = dir;
  if (auto d = load_json_file<Definition>(dir / "definition.json", diag, parse_definition)) t.def = std::move(*d);
  load_workloads(dir / "workloads.jsonl", t, diag);
  if (is_file(dir / "design.json")) t.design = load_json_file<Design>(dir / "design.json", diag, parse_design);
  if (is_file(dir / "rubric.json")) t.rubric = load_json_file<Rubric>(dir / "rubric.json", diag, parse_rubric);
  t.has_spec = is_file(dir / "spec.md");
  t.has_reference = is_file(dir / "reference.cpp");
  t.has_naive = is_file(dir / "naive.cu");
  t.has_expert = is_file(dir / "expert.cu");
  t.has_library = is_file(dir / "library.cu");
  return t;
}

std::vector<Task> load_dataset(const fs::path& dataset_dir, Diagnostics& diag) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  // A folder whose definition.json is not a regular file (a folder, a dangling link) is a task
  // that fails to load, not one to leave out silently.
  for (const auto& e : fs::directory_iterator(dataset_dir, ec)) {
    std::error_code ec2;
    if (e.is_directory(ec2) && fs::exists(fs::symlink_status(e.path() / "definition.json", ec2)))
      dirs.push_back(e.path());
  }
  if (ec) diag.error(dataset_dir.string(), 0, "", fmt::format("cannot list folder: {}", ec.message()));
  std::sort(dirs.begin(), dirs.end());
  std::vector<Task> tasks;
  for (const auto& d : dirs) tasks.push_back(load_task(d, diag));
  return tasks;
}

namespace {

// One level of design_levels.json: its wording, its id and its shared anchors.
void parse_design_level(const ordered_json& v, DesignLevel& lv, const FieldReader& r) {
  const std::string& key = lv.key;
  r.known_keys(v, key, {"id", "title", "covers", "item_form", "workspace", "anchors"});
  std::pair<const char*, std::string*> fields[] = {{"id", &lv.id},         {"title", &lv.title},
                                                   {"covers", &lv.covers}, {"item_form", &lv.item_form},
                                                   {"workspace", &lv.workspace}};
  for (auto& [name, dst] : fields) {
    *dst = r.string(v, name, key, true).value_or("");
    if (dst->find_first_not_of(" \t\n") == std::string::npos && v.contains(name)) r.error(join_path(key, name), "empty");
  }
  if (!lv.id.empty() && !std::all_of(lv.id.begin(), lv.id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
    r.error(join_path(key, "id"), fmt::format("'{}' must be letters and digits (it prefixes item ids: '{}.name')", lv.id, lv.id));
  const std::string path = join_path(key, "anchors");
  auto a = v.find("anchors");
  if (a == v.end()) {
    r.error(path, "missing required field");
    return;
  }
  if (!r.object(*a, path)) return;
  for (int score : kRubricAnchors) {
    const std::string field = join_path(path, std::to_string(score));
    auto it = a->find(std::to_string(score));
    if (it == a->end()) r.error(field, "missing anchor");
    else if (!it->is_string()) r.error(field, "expected a string");
    else if (it->get<std::string>().find_first_not_of(" \t\n") == std::string::npos) r.error(field, "empty anchor");
    else lv.anchors[score] = it->get<std::string>();
  }
  for (auto it = a->begin(); it != a->end(); ++it)
    if (std::none_of(kRubricAnchors.begin(), kRubricAnchors.end(), [&](int s) { return std::to_string(s) == it.key(); }))
      r.error(join_path(path, it.key()), "unknown anchor (0, 25, 50, 75, 100)");
}

// Across levels: ids unique, and each level's workspace is the ids up to it ("L1+L2").
void check_design_level_ids(const DesignLevels& levels, const FieldReader& r) {
  std::string workspace;
  for (std::size_t l = 0; l < levels.level.size(); ++l) {
    const DesignLevel& lv = levels.level[l];
    if (lv.id.empty()) return;  // reported
    for (std::size_t k = 0; k < l; ++k)
      if (levels.level[k].id == lv.id)
        r.error(join_path(lv.key, "id"), fmt::format("duplicate id '{}' (also {})", lv.id, levels.level[k].key));
    workspace += (workspace.empty() ? "" : "+") + lv.id;
    if (!lv.workspace.empty() && lv.workspace != workspace)
      r.error(join_path(lv.key, "workspace"),
              fmt::format("'{}' should be '{}' (guidance is cumulative: the ids of this level and those before)",
                          lv.workspace, workspace));
  }
}

}  // namespace

DesignLevels load_design_levels(const fs::path& file, Diagnostics& diag) {
  DesignLevels levels;
  const std::size_t errors_before = diag.error_count();
  auto parse = [](const ordered_json& j, DesignLevels& out, const FieldReader& r) {
    if (!r.object(j, "")) return;
    r.known_keys(j, "", {kDesignLevelKeys[0], kDesignLevelKeys[1], kDesignLevelKeys[2]});
    for (std::size_t l = 0; l < 3; ++l) {
      const std::string key(kDesignLevelKeys[l]);
      out.level[l].key = key;
      auto it = j.find(key);
      if (it == j.end()) r.error(key, "missing level");
      else if (r.object(*it, key)) parse_design_level(*it, out.level[l], r);
    }
    check_design_level_ids(out, r);
  };
  if (auto l = load_json_file<DesignLevels>(file, diag, parse)) levels = std::move(*l);
  levels.loaded = diag.error_count() == errors_before;
  return levels;
}

std::optional<Design> load_design(const fs::path& file, Diagnostics& diag) {
  return load_json_file<Design>(file, diag, parse_design);
}

std::optional<Rubric> load_rubric(const fs::path& file, Diagnostics& diag) {
  return load_json_file<Rubric>(file, diag, parse_rubric);
}

Definition definition_from_json(const ordered_json& j, Diagnostics& diag, const std::string& file) {
  Definition d;
  parse_definition(j, d, FieldReader(&diag, file, 0));
  return d;
}

Design design_from_json(const ordered_json& j, Diagnostics& diag, const std::string& file) {
  Design d;
  parse_design(j, d, FieldReader(&diag, file, 0));
  return d;
}

Workload workload_from_json(const ordered_json& j, Diagnostics& diag, const std::string& file, int line) {
  Workload w;
  w.line = line;
  parse_workload(j, w, FieldReader(&diag, file, line));
  return w;
}

Task load_and_validate_task(const fs::path& dir, const DesignLevels& levels, Diagnostics& diag) {
  Task t = load_task(dir, diag);
  validate_task(t, levels, diag);
  return t;
}

}  // namespace d2k
