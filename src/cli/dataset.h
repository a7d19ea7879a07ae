#pragma once
/// Loading the dataset for the CLI: defaults, one task by name, validation of all or one.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/diagnostics.h"
#include "core/loader.h"
#include "core/task.h"

namespace d2k::cli {

/// Every task of the dataset (load errors go to `diag`).
std::vector<Task> load_all_tasks(const Globals& g, Diagnostics& diag);
/// One task by name; throws std::runtime_error naming the task and listing what exists when
/// there is no such task, or with the diagnostics when it does not load cleanly.
Task load_one_task(const Globals& g, const std::string& name, Diagnostics& diag);
/// Loads and validates every task (or only `only`); returns how many were validated.
int validate_tasks(const Globals& g, const std::string& only, Diagnostics& diag);

}  // namespace d2k::cli
