// d2k tasks list | show T | validate [T]
#include <fmt/core.h>

#include <cstdlib>

#include "cli/commands.h"
#include "cli/dataset.h"

namespace d2k::cli {

void add_tasks(CLI::App& app, Globals& g, Runner& run) {
  auto* tasks = app.add_subcommand("tasks", "list, show and validate the tasks of the dataset");
  tasks->require_subcommand(1);

  auto* list = tasks->add_subcommand("list", "one line per task: name, type, workloads, implementations");
  list->callback([&] {
    run = [&] {
      Diagnostics diag;
      auto all = load_all_tasks(g, diag);
      fmt::print("{:<24} {:<16} {:>6} {:>6}  {}\n", "task", "op_type", "check", "bench", "implementations");
      for (const Task& t : all) {
        // A line whose role did not parse is neither check nor bench.
        const std::string file = (t.dir / "workloads.jsonl").string();
        int c = 0, b = 0;
        for (auto& w : t.workloads)
          if (!diag.has_error(file, w.line, "role")) (w.role == WorkloadRole::check ? c : b)++;
        std::string impls;
        for (auto [has, name] : {std::pair{t.has_reference, "reference"}, {t.has_naive, "naive"},
                                 {t.has_expert, "expert"}, {t.has_library, "library"}})
          if (has) impls += std::string(impls.empty() ? "" : ",") + name;
        // A definition that did not load has no name: show the folder's.
        const std::string name = t.def.name.empty() ? t.dir.filename().string() : t.def.name;
        fmt::print("{:<24} {:<16} {:>6} {:>6}  {}\n", name, t.def.op_type, c, b, impls);
      }
      if (!diag.items().empty()) fmt::print(stderr, "{}", diag.format());
      return 0;
    };
  });

  auto* show = tasks->add_subcommand("show", "the definition and workloads of one task");
  static std::string show_name;
  show->add_option("task", show_name, "task name")->required();
  show->callback([&] {
    run = [&] {
      Diagnostics diag;
      Task t = load_one_task(g, show_name, diag);
      fmt::print("{}\n", t.def.raw.dump(2));
      fmt::print("\nworkloads ({}):\n", t.workloads.size());
      for (auto& w : t.workloads) {
        std::string axes;
        for (auto& [k, v] : w.axes) axes += fmt::format("{}{}={}", axes.empty() ? "" : " ", k, v);
        fmt::print("  {:<32} {:<6} {}\n", w.uuid, w.role == WorkloadRole::check ? "check" : "bench", axes);
      }
      if (!diag.items().empty()) fmt::print(stderr, "{}", diag.format());
      return diag.ok() ? 0 : 1;
    };
  });

  auto* validate = tasks->add_subcommand("validate", "check definitions, workloads, design and rubric; non-zero exit on any error");
  static std::string validate_name;
  validate->add_option("task", validate_name, "only this task");
  validate->callback([&] {
    run = [&] {
      Diagnostics diag;
      int n = validate_tasks(g, validate_name, diag);
      if (!diag.items().empty()) fmt::print(stderr, "{}", diag.format());
      if (!diag.ok()) {
        fmt::print(stderr, "tasks validate: {} error(s) in {} task(s)\n", diag.error_count(), n);
        return 1;
      }
      fmt::print("tasks validate: {} task(s) OK\n", n);
      return 0;
    };
  });
}

}  // namespace d2k::cli
