#include "cli/dataset.h"

#include <cstdlib>
#include <stdexcept>

#include "tracks/track.h"

namespace d2k::cli {

std::filesystem::path dataset_dir(const Globals& g) {
  if (!g.dataset.empty()) return g.dataset;
  if (const char* env = std::getenv("D2K_DATASET"); env && *env) return env;
  if (std::filesystem::is_directory("dataset")) return "dataset";
  return std::filesystem::path(D2K_SOURCE_DIR) / "dataset";
}

std::vector<Task> load_all_tasks(const Globals& g, Diagnostics& diag) {
  auto dir = dataset_dir(g);
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error("dataset folder not found: " + dir.string());
  return load_dataset(dir, diag);
}

Task load_one_task(const Globals& g, const std::string& name, Diagnostics& diag) {
  auto dir = dataset_dir(g) / name;
  if (!std::filesystem::exists(dir / "definition.json")) {
    std::string known;
    Diagnostics ignore;
    for (auto& t : load_all_tasks(g, ignore)) known += (known.empty() ? "" : ", ") + t.def.name;
    throw std::runtime_error("--task: no task '" + name + "' in " + dataset_dir(g).string() + " (tasks: " + known + ")");
  }
  DesignLevels levels = load_design_levels(dataset_dir(g) / "design_levels.json", diag);
  Task t = load_and_validate_task(dir, levels, diag);
  check_task_tracks(t, diag);
  if (!diag.ok()) throw std::runtime_error("task " + name + " does not validate:\n" + diag.format());
  return t;
}

int validate_tasks(const Globals& g, const std::string& only, Diagnostics& diag) {
  DesignLevels levels = load_design_levels(dataset_dir(g) / "design_levels.json", diag);
  if (!only.empty()) {
    Task t = load_and_validate_task(dataset_dir(g) / only, levels, diag);
    check_task_tracks(t, diag);
    return 1;
  }
  auto tasks = load_all_tasks(g, diag);
  for (const Task& t : tasks) {
    validate_task(t, levels, diag);
    check_task_tracks(t, diag);
  }
  return static_cast<int>(tasks.size());
}

}  // namespace d2k::cli
