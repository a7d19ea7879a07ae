#pragma once
/// `d2k batch setup` and `d2k batch run` (docs/batch.md): a run folder with pristine workspaces
/// and one pending attempt per task x track x level x k; then the runner drives the agent template
/// over them with a concurrency limit and a wall budget each, runs the workspace's check itself,
/// classifies failures (the agent's or the infrastructure's, the latter retried with backoff) and
/// resumes from attempt.json after a crash or Ctrl-C.
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agent/batch_record.h"
#include "core/task.h"

namespace d2k::agent {

struct SetupInput {
  RunConfig config;
  std::vector<Task> tasks;  ///< loaded and validated, one per config.tasks
  DesignLevels levels;
  std::filesystem::path design_levels_file;
};

/// Creates runs_dir/<name>/ (run.json, workspaces/, attempts/<id>/attempt.json). Throws
/// std::runtime_error when the run exists (a run is resumed with `d2k batch run`, never set up
/// twice) or a task does not offer a track. Returns the run folder.
std::filesystem::path setup_run(const SetupInput& in, const std::filesystem::path& runs_dir);

struct RunOptions {
  int concurrency = 0;                  ///< 0: run.json's
  std::string d2k_exe;                  ///< the d2k the check runs (D2K); empty: d2k on PATH
  const std::atomic<bool>* stop = nullptr;  ///< raised by Ctrl-C: running attempts end and stay `running`
  std::function<void(const std::string&)> log;  ///< one line per attempt event
};

struct RunOutcome {
  int total = 0, done = 0, infra_error = 0, unfinished = 0;
  bool interrupted = false;
};

/// Runs every attempt of the run that is not finished (done or infra_error); `running` ones
/// (left by a runner that died) restart from a fresh workspace.
RunOutcome run_batch(const std::filesystem::path& run_dir, const RunOptions& opt);

/// Every attempt folder of the run, sorted.
std::vector<std::filesystem::path> attempt_dirs(const std::filesystem::path& run_dir);

}  // namespace d2k::agent
