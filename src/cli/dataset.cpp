#include "cli/dataset.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/workload.h"
#include "data/generators.h"
#include "engine/plan.h"
#include "tracks/track.h"

namespace d2k::cli {

namespace fs = std::filesystem;

std::filesystem::path dataset_dir(const Globals& g) {
  if (!g.dataset.empty()) return g.dataset;
  if (const char* env = std::getenv("D2K_DATASET"); env && *env) return env;
  if (std::filesystem::is_directory("dataset")) return "dataset";
  return std::filesystem::path(D2K_SOURCE_DIR) / "dataset";
}

namespace {

// A task folder: one whose definition.json entry exists, whatever it is (a folder in its place
// is reported by the loader, not skipped).
bool is_task_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::exists(fs::symlink_status(dir / "definition.json", ec));
}

[[noreturn]] void no_such_task(const Globals& g, const std::string& option, const std::string& name) {
  std::string known;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dataset_dir(g), ec))
    if (is_task_dir(e.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::runtime_error(fmt::format("{}no task '{}' in {} (tasks: {})", option, name, dataset_dir(g).string(),
                                       known.empty() ? "none" : known));
}

void check_task(const Task& t, const DesignLevels& levels, Diagnostics& diag) {
  validate_task(t, levels, diag);
  dry_run_workloads(t, diag);
  // After the dry run: a missing starter is reported against the definition, which would make
  // the dry run skip every workload as if the definition could not be read.
  check_task_tracks(t, diag);
}

}  // namespace

std::vector<Task> load_all_tasks(const Globals& g, Diagnostics& diag) {
  auto dir = dataset_dir(g);
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error("dataset folder not found: " + dir.string());
  return load_dataset(dir, diag);
}

Task load_one_task(const Globals& g, const std::string& name, Diagnostics& diag) {
  auto dir = dataset_dir(g) / name;
  if (!is_task_dir(dir)) no_such_task(g, "--task: ", name);
  DesignLevels levels = load_design_levels(dataset_dir(g) / "design_levels.json", diag);
  Task t = load_task(dir, diag);
  check_task(t, levels, diag);
  if (!diag.ok()) throw std::runtime_error("task " + name + " does not validate:\n" + diag.format());
  return t;
}

int validate_tasks(const Globals& g, const std::string& only, Diagnostics& diag) {
  if (!only.empty() && !is_task_dir(dataset_dir(g) / only)) no_such_task(g, "", only);
  DesignLevels levels = load_design_levels(dataset_dir(g) / "design_levels.json", diag);
  if (!only.empty()) {
    check_task(load_task(dataset_dir(g) / only, diag), levels, diag);
    return 1;
  }
  auto tasks = load_all_tasks(g, diag);
  for (const Task& t : tasks) check_task(t, levels, diag);
  return static_cast<int>(tasks.size());
}

namespace {

// The definition's own generators, with the checks that need no element count; returns the
// inputs whose generator failed (their per-workload errors would repeat this one).
std::set<std::string> dry_run_definition(const Task& task, Diagnostics& diag) {
  const std::string file = (task.dir / "definition.json").string();
  std::set<std::string> failed;
  for (const auto& t : task.def.inputs) {
    if (!t.generator) continue;  // reported by validate_task
    const std::string where = fmt::format("inputs.{}.generator", t.name);
    if (auto dep = generator_dependency(*t.generator)) {
      const bool other = *dep != t.name && find_input(task.def, *dep);
      if (!other) {
        diag.error(file, 0, where + "." + generator_dependency_field(t.generator->kind).value_or("build"),
                   *dep == t.name ? fmt::format("'{}' must name another input, not itself", *dep)
                                  : fmt::format("unknown input '{}'", *dep));
        failed.insert(t.name);
        continue;
      }
    }
    try {
      validate_generator(*t.generator, t.dtype, where);
    } catch (const GeneratorError& e) {
      diag.error(file, 0, e.field, e.message);
      failed.insert(t.name);
    } catch (const std::exception& e) {
      diag.error(file, 0, where, e.what());
      failed.insert(t.name);
    }
  }
  return failed;
}

}  // namespace

void dry_run_workloads(const Task& task, Diagnostics& diag) {
  const std::string def_file = (task.dir / "definition.json").string();
  if (!task.def.raw.is_object()) return;  // the loader reported why
  const std::set<std::string> failed = dry_run_definition(task, diag);
  // An error in the definition makes every workload fail the same way: it was reported there.
  if (diag.has_error_at(def_file, 0)) return;
  const std::string file = (task.dir / "workloads.jsonl").string();
  for (const Workload& w : task.workloads) {
    if (diag.has_error_at(file, w.line)) continue;
    WorkloadPlan plan;
    try {
      plan = make_plan(task, w);
    } catch (const std::exception& e) {
      diag.error(file, w.line, "", e.what());
      continue;
    }
    for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
      const std::string& name = plan.inputs[i].name;
      if (failed.count(name) && !w.generators.count(name)) continue;
      try {
        validate_request(gen_request(plan, i, /*seed=*/0));
      } catch (const GeneratorError& e) {
        diag.error(file, w.line, e.field, e.message);
      } catch (const std::exception& e) {
        diag.error(file, w.line, fmt::format("inputs.{}.generator", name), e.what());
      }
    }
  }
}

void require_workloads(const Task& task, const std::vector<std::string>& uuids) {
  std::vector<std::string> missing;
  for (const auto& u : uuids) {
    const bool found = std::any_of(task.workloads.begin(), task.workloads.end(),
                                   [&](const Workload& w) { return w.uuid == u; });
    if (!found) missing.push_back(u);
  }
  if (missing.empty()) return;
  std::string miss, known;
  for (const auto& m : missing) miss += (miss.empty() ? "'" : ", '") + m + "'";
  for (const auto& w : task.workloads) known += (known.empty() ? "" : ", ") + w.uuid;
  throw std::runtime_error(fmt::format("--workloads: no workload {} in task {} (workloads: {})", miss, task.def.name,
                                       known));
}

}  // namespace d2k::cli
