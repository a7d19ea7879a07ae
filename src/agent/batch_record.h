#pragma once
/// The files of a batch run (docs/batch.md; the layout other tools read): run.json, one
/// attempt.json per attempt, written atomically (temp file + rename) because it is the state a
/// resumed run trusts.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/batch_template.h"
#include "agent/workspace.h"

namespace d2k::agent {

/// runs/<RUN>/run.json.
struct RunConfig {
  std::string name;
  std::vector<std::string> tasks, tracks, levels;  ///< levels as names: baseline, L1, L1+L2, design
  AgentTemplate agent;
  std::map<std::string, std::string> vars;         ///< template variables (--var k=v)
  std::string model;
  int max_turns = 100;
  double wall_s = 3600;        ///< per attempt, the agent's budget
  int attempts = 1;            ///< independent attempts per task x track x level
  int concurrency = 1;
  int retries = 2;             ///< infrastructure failures retried this many times
  double backoff_s = 30;       ///< before retry n: backoff_s * 2^(n-1)
  double grace_s = 10;         ///< SIGTERM to SIGKILL
  double check_wall_s = 1800;  ///< the runner's own check
  std::string proxy_url;       ///< d2k proxy base URL; empty: the agent talks to its API directly
  std::string dataset;         ///< the dataset folder the workspaces came from (absolute)
  std::string created;         ///< UTC, ISO 8601
};

nlohmann::ordered_json to_json(const RunConfig& c);
/// Throws std::runtime_error naming `file` and the field.
RunConfig run_config_from_json(const nlohmann::json& j, const std::string& file);

enum class AttemptState { pending, running, done, infra_error };
std::string_view state_name(AttemptState s);

/// runs/<RUN>/attempts/<id>/attempt.json.
struct AttemptRecord {
  std::string id;  ///< <task>__<track>__<level folder>__<k>
  std::string task, track, level;
  int k = 1;
  AttemptState state = AttemptState::pending;
  std::optional<std::string> failure;  ///< "agent" | "infra"
  std::string reason;
  std::optional<int> exit_code;        ///< the agent's
  std::optional<int> signal;           ///< the signal that ended the agent
  std::optional<double> wall_s;        ///< the agent's
  std::optional<int> turns;
  std::string started, ended;
  int tries = 0;                       ///< agent starts so far (restarts after a dead runner included)
  int infra_failures = 0;              ///< of the agent; more than RunConfig::retries ends it as infra_error
  int pgid = 0;                        ///< the agent's process group while running
  // The runner's check
  std::optional<int> check_exit;
  std::string verdict;                 ///< PASSED, a failing status, NOT_RUN_NO_GPU, or empty
  std::optional<double> speedup_vs_naive;
};

nlohmann::ordered_json to_json(const AttemptRecord& a);
AttemptRecord attempt_from_json(const nlohmann::json& j, const std::string& file);

/// The attempt folder's name.
std::string attempt_id(const std::string& task, const std::string& track, const LevelInfo& level, int k);

/// Writes `text` to `path` atomically: a temp file in the same folder, fsync, rename.
void write_atomic(const std::filesystem::path& path, const std::string& text);
nlohmann::json read_json(const std::filesystem::path& path);

AttemptRecord read_attempt(const std::filesystem::path& attempt_dir);
void write_attempt(const std::filesystem::path& attempt_dir, const AttemptRecord& a);

/// UTC now, ISO 8601 with seconds.
std::string utc_now();

}  // namespace d2k::agent
