// d2k validate submission DIR: the offline check an agent can run before submitting.
// d2k validate design-levels [FILE]: the shared guidance levels and every task's design and rubric.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "cli/commands.h"
#include "cli/dataset.h"
#include "core/task_loader.h"
#include "tracks/track.h"
#include "exec/compile.h"
#include "exec/error.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;

// The task folders beside design_levels.json: every subfolder with a design.json, rubric.json or
// definition.json (a task missing its design is reported, not skipped).
std::vector<fs::path> guidance_dirs(const fs::path& dataset) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dataset, ec)) {
    std::error_code ec2;
    if (!e.is_directory(ec2)) continue;
    for (const char* f : {"design.json", "rubric.json", "definition.json"})
      if (fs::exists(e.path() / f, ec2)) {
        dirs.push_back(e.path());
        break;
      }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// Loads the levels, then each task's design.json and rubric.json alone, and applies the design
// and rubric rules of `d2k tasks validate` (one implementation: core/validate.cpp).
int validate_design_levels(const fs::path& file) {
  Diagnostics diag;
  const DesignLevels levels = load_design_levels(file, diag);
  const auto dirs = guidance_dirs(file.parent_path().empty() ? fs::path(".") : file.parent_path());
  for (const auto& dir : dirs) {
    Task t;
    t.dir = dir;
    std::error_code ec;
    if (fs::is_regular_file(dir / "design.json", ec)) t.design = load_design(dir / "design.json", diag);
    if (fs::is_regular_file(dir / "rubric.json", ec)) t.rubric = load_rubric(dir / "rubric.json", diag);
    validate_design_and_rubric(t, levels, diag);
  }
  if (!diag.items().empty()) fmt::print(stderr, "{}", diag.format());
  if (!diag.ok()) {
    fmt::print(stderr, "validate design-levels: {} error(s) ({} and {} task(s))\n", diag.error_count(), file.string(),
               dirs.size());
    return 1;
  }
  fmt::print("validate design-levels: OK: {} defines 3 levels; {} task(s) follow them\n", file.string(), dirs.size());
  return 0;
}

}  // namespace

void add_validate(CLI::App& app, Globals& g, Runner& run) {
  auto* val = app.add_subcommand("validate", "offline checks");
  val->require_subcommand(1);
  auto* levels = val->add_subcommand(
      "design-levels", "design_levels.json (ids, wording, shared anchors) and every task's design.json and rubric.json "
                       "beside it (level keys, item ids unique and prefixed with the level's id, rubric anchors)");
  static std::string levels_file;
  levels->add_option("file", levels_file, "the levels file (default: <dataset>/design_levels.json); its folder's tasks are checked");
  levels->callback([&] {
    run = [&] { return validate_design_levels(levels_file.empty() ? dataset_dir(g) / "design_levels.json" : fs::path(levels_file)); };
  });
  auto* sub = val->add_subcommand("submission", "layout, entry points, forbidden calls and symbols of a solution folder");
  static std::string dir, task_name, track = "cuda";
  static bool verbose = false;
  sub->add_option("dir", dir, "the solution folder")->required();
  sub->add_option("--task", task_name, "the task it solves (for the track's allowed libraries)");
  sub->add_option("--track", track, fmt::format("the track it is written for: {}", fmt::join(track_names(), " | ")))
      ->check(CLI::IsMember(track_names()));
  sub->add_flag("--verbose", verbose, "also print the sandbox the compile ran in and its layers");
  sub->callback([&] {
    run = [&] {
      // The C++ tracks' layout check (solution.cu and its headers); a Python track's build
      // checks its own folder.
      if (find_track(track).entry_file() == "solution.cu") {
        try {
          SolutionFiles files = read_solution_files(dir);
          fmt::print("layout: {} file(s), sources: {}\n", files.files.size(), fmt::join(files.sources, " "));
        } catch (const ExecError& e) {
          fmt::print(stderr, "{}: {}\n", status_name(e.status), e.what());
          return 1;
        }
      }
      Task task;
      if (!task_name.empty()) {
        Diagnostics diag;
        task = load_one_task(g, task_name, diag);
      } else {
        task.def.name = "(no task)";
      }
      BuiltSolution st = find_track(track).build(task, dir);
      if (!st.target) {
        if (verbose) fmt::print(stderr, "compile: {}\n", st.compile.dump());
        fmt::print(stderr, "{}{}: {}\n", status_name(st.failure.status),
                   st.failure.rule.empty() ? "" : "(" + st.failure.rule + ")", st.failure.message);
        for (auto& c : st.failure.checks_fired) fmt::print(stderr, "  {}\n", c);
        return 1;
      }
      fmt::print("OK: compiled to {}; exports and imports within the {} track's rules\n", st.target->so.string(), track);
      if (verbose) fmt::print("compile: {}\n", st.compile.dump());
      return 0;
    };
  });
}

}  // namespace d2k::cli
