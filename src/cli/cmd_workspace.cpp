// d2k workspace build | verify-harbor: agent workspaces and their Harbor export (docs/workspaces.md).
// Options here, the work in src/agent/.
#include <fmt/core.h>

#include <filesystem>
#include <sstream>

#include "agent/harbor.h"
#include "agent/workspace.h"
#include "cli/commands.h"
#include "cli/dataset.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct WorkspaceArgs {
  std::string tasks, tracks = "cuda", levels = "baseline,L1,L1+L2,design", out, harbor_dir;
  bool force = false, harbor = false;
};

int build_main(const Globals& g, const WorkspaceArgs& a) {
  const auto tasks = split(a.tasks);
  const auto tracks = split(a.tracks);
  std::vector<const agent::LevelInfo*> levels;
  for (const auto& l : split(a.levels)) {
    try {
      levels.push_back(&agent::parse_level(l));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("--levels: {}", e.what()));
    }
  }
  if (tasks.empty()) throw std::runtime_error("--tasks: give at least one task (comma-separated)");
  if (tracks.empty() || levels.empty()) throw std::runtime_error("--tracks and --levels must not be empty");
  const fs::path levels_file = dataset_dir(g) / "design_levels.json";
  Diagnostics ldiag;
  const DesignLevels design_levels = load_design_levels(levels_file, ldiag);
  if (!ldiag.ok()) throw std::runtime_error(ldiag.format());
  int built = 0, skipped = 0;
  for (const auto& name : tasks) {
    Diagnostics diag;
    const Task task = load_one_task(g, name, diag);
    const std::string version = agent::dataset_version(task, levels_file);
    for (const auto& track : tracks) {
      if (!task.def.tracks.empty() && !task.def.tracks.count(track)) {
        fmt::print(stderr, "workspace: skipped {} x {}: the task does not offer this track\n", name, track);
        ++skipped;
        continue;
      }
      for (const auto* level : levels) {
        const agent::WorkspaceKey key{name, track, level->level};
        const fs::path dir = fs::path(a.out) / key.folder();
        agent::build_workspace(task, design_levels, track, *level, version, dir, a.force);
        if (a.harbor) agent::export_harbor(task, track, *level, version, dir, fs::path(a.out) / "harbor" / key.folder(), a.force);
        ++built;
      }
    }
  }
  fmt::print(stderr, "workspace: {} workspace(s) in {}{}{}\n", built, a.out,
             a.harbor ? fmt::format(" (Harbor tasks in {}/harbor)", a.out) : "",
             skipped ? fmt::format("; {} task x track pair(s) skipped", skipped) : "");
  return built > 0 ? 0 : 2;
}

}  // namespace

void add_workspace(CLI::App& app, Globals& g, Runner& run) {
  static WorkspaceArgs a;
  auto* ws = app.add_subcommand("workspace", "agent workspaces: build, Harbor export");
  ws->require_subcommand(1);
  auto* build = ws->add_subcommand("build", "one folder per task x track x level: instruction, starter, check, manifest");
  build->add_option("--tasks", a.tasks, "comma-separated task names")->required();
  build->add_option("--tracks", a.tracks, "comma-separated tracks (default cuda)");
  build->add_option("--levels", a.levels, "comma-separated: baseline, L1, L1+L2, design (default all four)");
  build->add_option("--out", a.out, "the folder that receives <task>__<track>__<level>/")->required();
  build->add_flag("--force", a.force, "replace workspaces that exist");
  build->add_flag("--harbor", a.harbor, "also write each as a Harbor task under OUT/harbor/");
  build->callback([&] { run = [&] { return build_main(g, a); }; });

  auto* verify = ws->add_subcommand("verify-harbor", "add tests/ (the verifier) to a Harbor task, at verification time");
  verify->add_option("dir", a.harbor_dir, "the Harbor task folder")->required();
  verify->callback([&] {
    run = [&] {
      agent::write_harbor_tests(a.harbor_dir);
      fmt::print(stderr, "workspace: wrote {}/tests/test.sh\n", a.harbor_dir);
      return 0;
    };
  });
}

}  // namespace d2k::cli
