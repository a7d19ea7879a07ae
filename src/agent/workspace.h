#pragma once
/// Agent workspaces (`d2k workspace build`, docs/workspaces.md): one folder per task x track x
/// guidance level holding what an agent may see and nothing else: instruction.md (the spec, the
/// level's guidance, the track's rules, how to check), the starter as solution/, a design.md
/// template, an executable `check` (a client of d2k: bench locally, submit remotely) and a
/// manifest with the hashes of every file. The golden reference, the expert, hidden-workload
/// seeds and expected outputs never enter it.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/task.h"

namespace d2k::agent {

/// A guidance level: `baseline` (spec and starter only), then the cumulative ablations.
enum class Level { baseline, L1, L1_L2, design };

struct LevelInfo {
  Level level;
  std::string_view name;    ///< as written on the command line and in manifests: L1+L2
  std::string_view folder;  ///< as used in folder names: L1_L2
  int guidance_levels;      ///< how many design.json levels the instruction renders (0..3)
};

/// The four levels in order.
const std::vector<LevelInfo>& all_levels();
/// "baseline", "L1", "L1+L2" (or "L1_L2"), "design" (or "L1+L2+L3"); throws std::invalid_argument
/// naming the value and the accepted ones.
const LevelInfo& parse_level(std::string_view s);
const LevelInfo& level_info(Level l);

/// One workspace to build.
struct WorkspaceKey {
  std::string task, track;
  Level level = Level::baseline;
  /// <task>__<track>__<level folder>
  std::string folder() const;
};

/// The content hash a workspace records as dataset_version: SHA-256 (first 16 hex digits) over
/// the sorted relative paths and bytes of the task's folder and dataset/design_levels.json. It
/// does not depend on git, timestamps or the checkout's location, and changes exactly when a file
/// the workspace derives from (or the task's private files) changes.
std::string dataset_version(const Task& task, const std::filesystem::path& design_levels_file);

/// The instruction an agent reads (instruction.md).
std::string render_instruction(const Task& task, const DesignLevels& levels, const std::string& track,
                               const LevelInfo& level);
/// The design write-up template (design.md): one section per design level.
std::string render_design_template(const Task& task, const DesignLevels& levels);
/// The `check` script (POSIX sh).
std::string render_check_script(const Task& task, const std::string& track);

/// Builds one workspace into `dir` (which must not exist, or is replaced when `force`). Throws
/// std::runtime_error naming the task, track or path when the task does not offer the track, has
/// no starter for it, or `dir` exists without `force`. Returns the manifest it wrote.
nlohmann::ordered_json build_workspace(const Task& task, const DesignLevels& levels, const std::string& track,
                                       const LevelInfo& level, const std::string& version,
                                       const std::filesystem::path& dir, bool force);

/// SHA-256 of every regular file under `dir` (relative generic paths, sorted), except `skip`.
std::map<std::string, std::string> hash_tree(const std::filesystem::path& dir, const std::string& skip = "");

/// Copies a folder tree (regular files and folders only; permissions kept).
void copy_tree(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace d2k::agent
