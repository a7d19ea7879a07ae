// d2k validate submission DIR: the offline check an agent can run before submitting.
#include <fmt/core.h>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/dataset.h"
#include "engine/solution.h"
#include "exec/compile.h"
#include "exec/error.h"

namespace d2k::cli {

void add_validate(CLI::App& app, Globals& g, Runner& run) {
  auto* val = app.add_subcommand("validate", "offline checks");
  val->require_subcommand(1);
  auto* sub = val->add_subcommand("submission", "layout, entry points, forbidden calls and symbols of a solution folder");
  static std::string dir, task_name, track = "cuda";
  static bool verbose = false;
  sub->add_option("dir", dir, "the solution folder")->required();
  sub->add_option("--task", task_name, "the task it solves (for the track's allowed libraries)");
  sub->add_option("--track", track, "cuda | cutlass");
  sub->add_flag("--verbose", verbose, "also print the sandbox the compile ran in and its layers");
  sub->callback([&] {
    run = [&] {
      try {
        SolutionFiles files = read_solution_files(dir);
        fmt::print("layout: {} file(s), sources: {}\n", files.files.size(), fmt::join(files.sources, " "));
      } catch (const ExecError& e) {
        fmt::print(stderr, "{}: {}\n", status_name(e.status), e.what());
        return 1;
      }
      Task task;
      if (!task_name.empty()) {
        Diagnostics diag;
        task = load_one_task(g, task_name, diag);
      } else {
        task.def.name = "(no task)";
      }
      SolutionTarget st = solution_target(task, dir, track);
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
