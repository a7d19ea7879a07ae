#pragma once
/// Loading task folders into the task model, and validating them.
///
/// Loading records what cannot be represented (missing files, JSON syntax, duplicate keys, wrong
/// types, missing required fields, unknown dtypes and axis types, expression syntax) and keeps
/// going; validation records everything else (names, cross-references, ranges, constraints,
/// workloads, design and rubric). `d2k tasks validate` runs both. docs/task-format.md lists the
/// rules.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/task.h"

namespace d2k {

/// Loads `dir`/definition.json and workloads.jsonl (required), design.json and rubric.json (left
/// unset when absent; validate_task flags them) and notes which of spec.md, reference.cpp,
/// naive.cu, expert.cu and library.cu exist. Diagnostics name files as `dir`/<file>, with `dir`
/// as given. Never throws on bad content.
Task load_task(const std::filesystem::path& dir, Diagnostics& diag);

/// Every subfolder of `dataset_dir` that holds a definition.json, in name order.
std::vector<Task> load_dataset(const std::filesystem::path& dataset_dir, Diagnostics& diag);

/// dataset/design_levels.json: the three guidance levels. `loaded` is true when all three are
/// present with every field.
DesignLevels load_design_levels(const std::filesystem::path& file, Diagnostics& diag);

/// One design.json or rubric.json on its own (nullopt when it does not read or parse).
std::optional<Design> load_design(const std::filesystem::path& file, Diagnostics& diag);
std::optional<Rubric> load_rubric(const std::filesystem::path& file, Diagnostics& diag);

/// Checks a loaded task against every rule of docs/task-format.md.
void validate_task(const Task& task, const DesignLevels& levels, Diagnostics& diag);
/// The design.json and rubric.json rules of validate_task alone (`d2k validate design-levels`).
void validate_design_and_rubric(const Task& task, const DesignLevels& levels, Diagnostics& diag);

/// A definition from JSON already in memory; `file` names it in diagnostics.
Definition definition_from_json(const ordered_json& j, Diagnostics& diag, const std::string& file = "definition.json");
/// A design.json from JSON already in memory (a drafted design, `d2k design draft`).
Design design_from_json(const ordered_json& j, Diagnostics& diag, const std::string& file = "design.json");
/// One workload from JSON already in memory (`line` is kept in Workload::line).
Workload workload_from_json(const ordered_json& j, Diagnostics& diag, const std::string& file = "workloads.jsonl",
                            int line = 0);

/// load_task followed by validate_task.
Task load_and_validate_task(const std::filesystem::path& dir, const DesignLevels& levels, Diagnostics& diag);

}  // namespace d2k
