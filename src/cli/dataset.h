#pragma once
/// Loading the dataset for the CLI: defaults, one task by name, validation of all or one (with a
/// dry run of every workload), and checks of task and workload names given on the command line.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/diagnostics.h"
#include "core/task.h"
#include "core/task_loader.h"

namespace d2k::cli {

/// Every task of the dataset (load errors go to `diag`).
std::vector<Task> load_all_tasks(const Globals& g, Diagnostics& diag);
/// One task by name, loaded, validated and dry-run; throws std::runtime_error naming the task and
/// listing what exists when there is no such task, or with the diagnostics when it does not load
/// cleanly.
Task load_one_task(const Globals& g, const std::string& name, Diagnostics& diag);
/// Loads, validates and dry-runs every task (or only `only`); returns how many were validated.
/// Throws std::runtime_error ("no task X", with the list) when `only` names no task.
int validate_tasks(const Globals& g, const std::string& only, Diagnostics& diag);

/// Makes every workload of `task` the way a run would, without data: the plan (axes, shapes,
/// cost), each input's generator request and the generator's own checks (data/gen_schema.h).
/// Anything that would fail at run time is recorded as `file:line: field: message`. Lines that
/// already have an error are skipped, so one mistake is reported once.
void dry_run_workloads(const Task& task, Diagnostics& diag);

/// Throws std::runtime_error naming each uuid of `uuids` that is not a workload of `task`
/// (`--workloads`), with the task's uuids.
void require_workloads(const Task& task, const std::vector<std::string>& uuids);

}  // namespace d2k::cli
