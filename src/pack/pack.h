#pragma once
/// `d2k pack`: the task tables agents' tools load (docs/pack.md). One table per framework
/// (cuda, cutlass, triton), one row per task that has a starter for it, flat string columns with
/// the nested parts as JSON strings. This file is the one definition of the row: the JSONL
/// written here is what scripts/pack_parquet.py turns into Parquet, column for column.
#include <array>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace d2k::pack {

/// The frameworks, one table each: tasks/frontier_sol_<framework>.{jsonl,parquet}.
inline constexpr std::array<std::string_view, 3> kFrameworks = {"cuda", "cutlass", "triton"};

/// The columns of every table, in order. All are strings.
inline constexpr std::array<std::string_view, 12> kColumns = {
    "task_id",         // <task>__<framework>
    "op_type",         // definition.json op_type
    "description",     // definition.json description
    "spec",            // spec.md
    "starter",         // starter/<framework>/: JSON object, relative path -> file text
    "design_level_1",  // design.json level_1_high_level_algorithmic_insights: JSON array of items
    "design_level_2",  // design.json level_2_dataflow_design
    "design_level_3",  // design.json level_3_low_level_optimization_tricks
    "rubric",          // rubric.json: JSON object
    "workloads",       // workloads.jsonl: JSON array, one object per line
    "definition",      // definition.json: JSON object
    "dataset_version"  // dataset_version() of the whole dataset folder
};

/// A content hash of the dataset folder: the first 16 hex digits of a SHA-256 over every file's
/// relative path and bytes, in path order (hidden files and __pycache__ left out). It changes
/// whenever any task file does, and is the same on every machine for the same files.
std::string dataset_version(const std::filesystem::path& dataset);

/// The row of `task_dir` for `framework` (starter/<framework>/ must exist). Throws
/// std::runtime_error naming the file when one is missing, is not valid JSON, or is not UTF-8.
nlohmann::ordered_json task_row(const std::filesystem::path& task_dir, std::string_view framework,
                                const std::string& version);

/// What pack() wrote for one framework.
struct PackedTable {
  std::string framework;
  std::filesystem::path jsonl;
  std::size_t rows = 0;
};

/// Loads and validates the tasks of `dataset` (all, or those named in `only`), then writes
/// out/frontier_sol_<framework>.jsonl for each framework, one line per row in task order.
/// Throws std::runtime_error with every diagnostic when a task does not validate, or naming an
/// unknown task of `only`.
std::vector<PackedTable> pack(const std::filesystem::path& dataset, const std::filesystem::path& out,
                              const std::vector<std::string>& only);

}  // namespace d2k::pack
