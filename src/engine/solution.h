#pragma once
/// A candidate's solution folder turned into a target: compiled (cached), then its dynamic
/// symbols checked against the task's track policy.
#include <filesystem>
#include <optional>

#include "core/task.h"
#include "engine/impl.h"
#include "report/trace.h"

namespace d2k {

struct SolutionTarget {
  std::optional<ImplTarget> target;  ///< set when the solution compiled and passed the symbol check
  Trace failure;                     ///< otherwise: COMPILE_ERROR, TIMEOUT, INVALID_SUBMISSION or REWARD_HACK
  /// How it was compiled: sandbox (bwrap, mount_namespace, none), layers, cache_hit, seconds,
  /// key. Also in failure.environment["compile"].
  nlohmann::json compile;
};

/// Compiles `dir` for `task` on `track` (default cuda: no vendor libraries) and checks its symbols.
SolutionTarget solution_target(const Task& task, const std::filesystem::path& dir, const std::string& track = "cuda");

}  // namespace d2k
