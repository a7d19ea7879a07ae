#pragma once
/// One child process under a wall budget, in its own process group (docs/batch.md): the agent
/// of an attempt, or the workspace's check. At the deadline the whole group gets SIGTERM, then
/// SIGKILL after a grace period; when the leader exits, whatever it left behind in its group is
/// killed, so no attempt leaks processes into the next.
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace d2k::agent {

struct ProcessSpec {
  std::vector<std::string> argv;              ///< argv[0] is looked up on PATH
  std::map<std::string, std::string> env;     ///< set on top of this process's environment
  std::filesystem::path cwd;                  ///< empty: this process's
  std::filesystem::path log;                  ///< stdout and stderr, appended
  std::filesystem::path stdin_file;           ///< empty: /dev/null
  double wall_s = 3600;                       ///< <= 0: no limit
  double grace_s = 10;                        ///< SIGTERM to SIGKILL
};

struct ProcessResult {
  bool started = false;
  std::string spawn_error;  ///< why it did not start (e.g. "No such file or directory")
  int exit_code = -1;       ///< when it exited
  int signal = 0;           ///< when a signal ended it
  bool timed_out = false;   ///< the wall budget ran out and this runner sent the signals
  bool stopped = false;     ///< `stop` was raised and this runner sent the signals
  bool signal_by_runner = false;  ///< the signal that ended it is one this runner sent
  double wall_s = 0;
  int pgid = 0;             ///< the group it ran in (for a restart after this runner died)
};

/// Starts `spec`, calls `started(pgid)` once the child runs (so that the caller can record the
/// group before waiting), waits within the budget. `stop` (may be null) ends it early, as a
/// timeout does.
ProcessResult run_process(const ProcessSpec& spec, const std::atomic<bool>* stop,
                          const std::function<void(int)>& started = {});

/// Kills a process group left by an earlier runner (SIGKILL); no-op when it is gone.
void kill_group(int pgid);

}  // namespace d2k::agent
