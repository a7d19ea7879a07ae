#pragma once
/// Export of a workspace to the Harbor task format (Terminal-Bench's successor; docs/workspaces.md,
/// "Harbor"): task.toml, instruction.md, environment/ (a Dockerfile whose build context carries the
/// workspace and d2k's client side), no solution/, and tests/ only when `verify-harbor` writes it
/// at verification time, so that the verifier never sits in the agent's image.
#include <filesystem>
#include <string>

#include "agent/workspace.h"

namespace d2k::agent {

/// task.toml (Harbor schema 1.1: [task], [metadata], [verifier], [agent], [environment]).
std::string render_harbor_task_toml(const Task& task, const std::string& track, const LevelInfo& level,
                                    const std::string& version);
/// environment/Dockerfile: the CUDA devel image, d2k's client from environment/client/, the
/// workspace in /app.
std::string render_harbor_dockerfile();
/// tests/test.sh: runs d2k itself on /app/solution (never the workspace's own `check`, which the
/// agent could have changed) and writes /logs/verifier/reward.txt.
std::string render_harbor_test_script(const std::string& task, const std::string& track);

/// Writes the Harbor task for the workspace in `workspace_dir` into `dir` (replaced when `force`).
void export_harbor(const Task& task, const std::string& track, const LevelInfo& level, const std::string& version,
                   const std::filesystem::path& workspace_dir, const std::filesystem::path& dir, bool force);

/// Adds tests/ to the Harbor task in `dir` (reads the task and track from environment/app/manifest.json).
void write_harbor_tests(const std::filesystem::path& dir);

}  // namespace d2k::agent
