#pragma once
/// The worker's side of a sandboxed run: the message channel to the parent, stage reports,
/// the lockdown filter, and a thread count for the no-threads-left check.
///
/// The candidate's code runs in the same process as the worker, so it can reach this channel
/// too (it is an inherited descriptor and its number is in the environment). The channel is
/// private against everything outside the sandbox, not against the candidate: the parent
/// must not take the worker's word for correctness or time; it cross-checks (docs/isolation.md).
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "exec/seccomp_policy.h"

namespace d2k {

/// The environment variable that carries the channel's file descriptor number to the child
/// (run_sandboxed puts the channel at descriptor 3).
inline constexpr const char* kChannelFdEnv = "D2K_CHANNEL_FD";

/// One end of the JSON-lines channel (a UNIX stream socket) to the parent.
class WorkerChannel {
 public:
  /// The channel named by $D2K_CHANNEL_FD; nullopt when not run under run_sandboxed.
  static std::optional<WorkerChannel> from_environment();
  explicit WorkerChannel(int fd) : fd_(fd) {}

  /// Sends one message. Returns false if the parent is gone.
  bool send(const nlohmann::json& msg);
  /// Reports entering a stage ({"type":"stage","name":...}); the parent starts that stage's
  /// deadline. Stage names used by the engine: compile, load, check, time.
  bool stage(std::string_view name);
  /// Waits for the parent's next message; nullopt on end of stream, timeout or a malformed
  /// line. timeout_seconds < 0 waits forever.
  std::optional<nlohmann::json> receive(double timeout_seconds = -1);
  /// Takes the first `n` descriptors received with messages so far (ParentChannel's send with
  /// descriptors), in arrival order; fewer if fewer arrived. The caller owns them.
  std::vector<int> take_fds(std::size_t n);
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string buf_;
  std::deque<int> fds_;
};

/// Threads of this process now (entries of /proc/self/task); -1 if it cannot be read.
int count_threads();

/// Installs the lockdown filter (seccomp_policy.h) on every thread of the worker. Call it once
/// CUDA is initialised (the driver's threads exist and it has opened its devices) and before
/// candidate code is loaded or called. Returns "" on success, else why it failed. Before the
/// filter it starts and joins a few threads, so that glibc's stack cache holds stacks that later
/// threads reuse without the mprotect the filter refuses.
std::string lock_down_worker(const LockdownOptions& opts = {});

/// A hash of every loaded object's relocation-read-only pages (PT_GNU_RELRO: the GOT among
/// them), which nothing may change once loading is done. Measured inside the worker, so a
/// tripwire: the seccomp lockdown refuses making those pages writable; this catches a way round
/// the filter that does not also forge the hash.
std::uint64_t relro_hash();

}  // namespace d2k
