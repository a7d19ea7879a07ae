#pragma once
/// Runs a program in a sandboxed child process: its own process group and (where the kernel
/// allows) PID, network, IPC, UTS and mount namespaces; a read-only file system with one
/// writable scratch folder; resource limits; an unprivileged user; no_new_privs; a seccomp
/// filter; stage deadlines; captured output; and a private two-way message channel.
///
/// The parent never runs the child's code. Each layer can be switched off and the result says
/// which layers were applied and why any was skipped. docs/isolation.md describes the threat
/// model and what each layer stops and does not stop.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/worker.h"
#include "core/status.h"

namespace d2k {

/// The range of uids SandboxOptions::unique_uid draws from (no account uses them).
inline constexpr std::uint32_t kUniqueUidBase = 1'000'000u;
inline constexpr std::uint32_t kUniqueUidCount = 1u << 20;

/// How the child's file system is restricted.
enum class FsIsolation {
  automatic,  ///< bubblewrap if it is on PATH and works here, else mount_namespace
  bwrap,      ///< bubblewrap builds a new root from read-only binds (it also makes the namespaces)
  mount_namespace,  ///< a private mount namespace: everything remounted read-only, masks, scratch writable
  none,       ///< the child sees the parent's file system
};

/// Resource limits (setrlimit) applied to the child before exec. 0 leaves a limit unchanged.
struct Rlimits {
  std::uint64_t cpu_seconds = 0;                    ///< RLIMIT_CPU: SIGXCPU, then SIGKILL
  std::uint64_t file_size_bytes = 1ull << 30;       ///< RLIMIT_FSIZE: largest file it may write
  /// RLIMIT_NPROC: processes AND threads of the child's user (CUDA starts several threads).
  /// Root ignores it, so it only binds once privileges are dropped or in a user namespace.
  std::uint64_t processes = 512;
  std::uint64_t open_files = 1024;                  ///< RLIMIT_NOFILE
  /// RLIMIT_DATA: private writable memory (heap, anonymous maps). CUDA's large address-space
  /// reservations are PROT_NONE and device mappings are shared, so they do not count.
  std::uint64_t data_bytes = 0;
  /// RLIMIT_AS: leave 0 for anything that initialises CUDA (it reserves terabytes of VA).
  std::uint64_t address_space_bytes = 0;
  bool no_core_dumps = true;                        ///< RLIMIT_CORE = 0
};

/// The parent's side of the message channel, handed to SandboxOptions::on_message.
class ParentChannel {
 public:
  explicit ParentChannel(int fd) : fd_(fd) {}
  /// Sends one JSON message (one line) to the child. Returns false if the child is gone.
  bool send(const nlohmann::json& msg);
  /// Sends one message with file descriptors attached (SCM_RIGHTS, at most 250); the child
  /// collects them with WorkerChannel::take_fds. The caller keeps (and closes) its own copies.
  bool send(const nlohmann::json& msg, const std::vector<int>& fds);

 private:
  bool send_raw(const std::string& line);
  int fd_;
};

/// Everything run_sandboxed needs besides argv. Defaults are the strictest that work for a
/// CUDA worker.
struct SandboxOptions {
  // ---- namespaces (each skipped, and recorded, where the kernel refuses it) ----
  bool pid_namespace = true;
  bool net_namespace = true;   ///< a network namespace with no interfaces but a down loopback
  bool ipc_namespace = true;
  bool uts_namespace = true;
  bool mount_namespace = true;
  /// When not root, create a user namespace too (needed for the others without privileges).
  bool user_namespace_if_unprivileged = true;

  // ---- file system ----
  FsIsolation fs = FsIsolation::automatic;
  /// The only persistent writable folder (also HOME, TMPDIR and the working directory).
  /// Empty: a fresh folder under $TMPDIR, removed afterwards unless keep_scratch.
  std::filesystem::path scratch_dir;
  bool keep_scratch = false;
  std::filesystem::path working_dir;                ///< empty: scratch_dir
  /// Paths the child must see read-only (bound at their canonical path: a symbolic link such as
  /// /usr/local/cuda -> cuda-13.0 is followed first). Without minimal_root, under
  /// mount_namespace everything is visible read-only anyway, except under masked_paths.
  std::vector<std::filesystem::path> ro_paths;
  std::vector<std::filesystem::path> rw_paths;      ///< extra writable paths (also under masks)
  /// Replaced by an empty read-only tmpfs (paths needed by the child are re-exposed inside).
  std::vector<std::filesystem::path> masked_paths{"/root", "/home", "/var/tmp"};
  /// Replaced by a private, writable, size-limited tmpfs (discarded at the end).
  std::vector<std::filesystem::path> private_tmp_paths{"/tmp", "/dev/shm"};
  std::uint64_t private_tmp_bytes = 256ull << 20;
  bool gpu_devices = true;                          ///< bwrap: bind /dev/nvidia*
  /// Build the child's root from nothing: the system folders (minimal_root_system_paths()),
  /// ro_paths, rw_paths, the scratch folder, the program, a few device nodes (null, zero, full,
  /// random, urandom), /proc and the private tmpfs folders; nothing else of the host exists
  /// inside, whichever of bwrap and mount_namespace builds it. Off: the host's whole tree,
  /// read-only, with masked_paths hidden (what a CUDA worker needs).
  bool minimal_root = false;
  /// Where the chosen file-system isolation cannot be built (bwrap installed but refused here,
  /// or no mount namespace), use the next weaker one and record why in layers_skipped. Off:
  /// the run fails as a set-up failure (setup_failed) instead. Never silent: ProcessResult::
  /// sandbox names what ran.
  bool allow_fallback = true;

  // ---- credentials and system calls ----
  /// When root: switch to uid/gid before exec (keeps the group of /dev/nvidiactl if the
  /// device is not world-accessible). The scratch folder is chowned to them.
  bool drop_privileges = true;
  std::uint32_t uid = 65534, gid = 65534;
  /// When dropping privileges: run as a uid of this sandbox's own from
  /// [kUniqueUidBase, kUniqueUidBase + kUniqueUidCount) instead of `uid`, so that RLIMIT_NPROC
  /// (counted per uid) binds each sandbox separately. Needs no passwd entry.
  bool unique_uid = true;
  /// Whoever stays uid 0 (drop_privileges off, or root of a user namespace) gives up every
  /// capability and cannot regain them by exec (securebits NOROOT).
  bool drop_capabilities = true;
  bool no_new_privs = true;
  bool seccomp = true;                              ///< the baseline filter (seccomp_policy.h)
  Rlimits rlimits;

  // ---- environment: cleared, then PATH, HOME, TMPDIR, LANG, the channel, these ----
  std::vector<std::string> inherit_env{"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                                       "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME"};
  std::map<std::string, std::string> env;

  // ---- deadlines: the child reports stages over the channel ----
  /// Seconds allowed per stage, by name; the first stage is "start" (from fork until the
  /// child reports its first stage).
  std::map<std::string, double> stage_timeouts{{"start", 60.0}};
  double default_stage_timeout = 600.0;             ///< for a stage not in stage_timeouts
  double total_timeout = 0;                         ///< whole run; 0 = none
  /// Set (from any thread) to kill the child's process group now; seen within about a second.
  std::shared_ptr<std::atomic<bool>> cancel;

  // ---- output and channel ----
  std::size_t output_tail_bytes = 64 * 1024;        ///< kept from the end of stdout and stderr each
  /// Kept from the start of stdout and stderr each (0: none). A compiler's first errors are
  /// the ones that explain the rest.
  std::size_t output_head_bytes = 0;
  std::size_t channel_limit_bytes = 64ull << 20;    ///< more than this from the child kills it
  /// Called for every message other than a stage report, on the calling thread, while the
  /// child runs; may answer through the channel.
  std::function<void(const nlohmann::json&, ParentChannel&)> on_message;
  /// Called once, on the calling thread, right after the fork with the child's pid (also its
  /// process group's id: everything the sandbox starts stays in that group, setpgid and setsid
  /// being denied by the baseline filter), so that the caller can observe the child itself
  /// (process_group_threads) instead of trusting what the child reports.
  std::function<void(pid_t)> on_start;
};

/// What happened to the child.
struct ProcessResult {
  /// PASSED (exit code 0), RUNTIME_ERROR (non-zero exit, signal, sandbox set-up failure) or
  /// TIMEOUT (a stage or the total deadline passed; the process group was killed).
  Status status = Status::RUNTIME_ERROR;
  int exit_code = -1;         ///< when it exited normally
  int signal = 0;             ///< when a signal ended it
  std::string signal_name;    ///< "SIGSEGV", ...
  std::string cause;          ///< one line: "exited with code 3", "killed by SIGSEGV (...)", ...
  bool timed_out = false;
  std::string timeout_stage;  ///< the stage whose deadline passed ("total" for the overall one)
  bool setup_failed = false;  ///< the sandbox or exec failed before the program ran
  std::string last_stage = "start";
  std::vector<std::string> stages;           ///< stage names in the order reported
  std::vector<nlohmann::json> messages;      ///< every non-stage message, in order
  std::string stdout_tail, stderr_tail;      ///< last output_tail_bytes of each
  std::string stdout_head, stderr_head;      ///< first output_head_bytes of each
  std::uint64_t stdout_bytes = 0, stderr_bytes = 0;
  double wall_seconds = 0;
  /// The file-system isolation that ran: "bwrap", "mount_namespace" or "none".
  std::string sandbox = "none";
  std::vector<std::string> layers;           ///< applied: "pid_namespace", "seccomp", ...
  std::vector<std::string> layers_skipped;   ///< "layer: reason"
  std::filesystem::path scratch_dir;         ///< where it ran (removed unless keep_scratch)
};

/// Runs argv[0] (a path, or a name searched on PATH) with argv in a sandbox. Never throws for
/// anything the child does; throws std::runtime_error if the parent cannot set up (no argv,
/// pipes, fork).
ProcessResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& opts);

/// Which namespaces this process may create (probed once in a throwaway child, then cached):
/// names among user, pid, net, ipc, uts, mount.
std::vector<std::string> permitted_namespaces();

/// Whether bubblewrap is on PATH and can build a sandbox here (probed once, cached).
bool bwrap_available();

/// The host paths a minimal_root sandbox starts from: the system folders that hold the
/// toolchain and the C library (/usr, /bin, /lib... or their merged-/usr links) and the dynamic
/// loader's configuration in /etc. Nothing else of /etc (no passwd, no hosts).
std::vector<std::filesystem::path> minimal_root_system_paths();

/// Threads of every process in process group `pgid` (num_threads of each /proc/<pid>/stat whose
/// pgrp is `pgid`), as the caller observes them; -1 when /proc cannot be read or no process of
/// the group is left. Read by the parent of a sandbox: nothing the child says enters it.
int process_group_threads(pid_t pgid);

/// "SIGSEGV" for 11, etc.; "signal N" for unknown numbers.
std::string signal_name(int sig);

}  // namespace d2k
