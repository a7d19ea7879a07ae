#include "exec/sandbox.h"

#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/seccomp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <deque>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "exec/seccomp_policy.h"

namespace d2k {

bool ParentChannel::send(const nlohmann::json& msg, const std::vector<int>& fds) {
  if (fds.empty()) return send(msg);
  if (fds.size() > 250) throw std::invalid_argument("ParentChannel::send: more than 250 descriptors");
  // The descriptors ride on the message's first byte; the rest of the line follows as plain
  // data (the receiver attaches them to the line they arrived with, in order).
  std::string line = msg.dump() + "\n";
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  iovec iov{line.data(), 1};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.data();
  mh.msg_controllen = control.size();
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  for (;;) {
    ssize_t n = ::sendmsg(fd_, &mh, MSG_NOSIGNAL);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, 5000) <= 0) return false;
      continue;
    }
    return false;
  }
  return send_raw(line.substr(1));
}

bool ParentChannel::send(const nlohmann::json& msg) { return send_raw(msg.dump() + "\n"); }

bool ParentChannel::send_raw(const std::string& line) {
  std::size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The parent's end is non-blocking; wait (bounded) for the child to read.
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, 5000) <= 0) return false;
      continue;
    }
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : fmt::format("signal {}", sig);
}

namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Child side. Everything below runs between fork and exec of a possibly multi-threaded parent,
// so it may only make system calls and touch memory prepared before the fork: no allocation,
// no locks, no stdio.

/// A line to the report pipe: "<kind><layer>[\t<errno>]\n". Kinds: '+' applied, '-' skipped
/// (errno says why), '!' fatal before exec, '=' the program's wait status.
void child_report(int fd, char kind, const char* text, int err = 0) {
  char buf[512];
  std::size_t n = 0;
  buf[n++] = kind;
  for (const char* p = text; *p && n < sizeof(buf) - 24; ++p) buf[n++] = *p;
  if (err) {
    buf[n++] = '\t';
    char digits[16];
    int k = 0;
    unsigned v = static_cast<unsigned>(err < 0 ? -err : err);
    do {
      digits[k++] = char('0' + v % 10);
      v /= 10;
    } while (v);
    while (k) buf[n++] = digits[--k];
  }
  buf[n++] = '\n';
  ssize_t ignored = write(fd, buf, n);
  (void)ignored;
}

/// Copies `src` into `dst` (NUL-terminated, truncated to cap).
void copy_str(char* dst, std::size_t cap, const char* src) {
  std::size_t i = 0;
  for (; src[i] && i + 1 < cap; ++i) dst[i] = src[i];
  dst[i] = 0;
}

/// mkdir -p of the parent folders of `path` (and of `path` itself when `self`).
void mkdir_parents(const char* path, bool self) {
  char buf[4096];
  copy_str(buf, sizeof(buf), path);
  for (char* p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(buf, 0755);
    *p = '/';
  }
  if (self) mkdir(buf, 0755);
}

/// mount_setattr(2) through syscall(): the glibc wrapper needs glibc 2.36, the system call only
/// Linux 5.12, and binaries built here also run on older user spaces.
int set_mount_attr(const char* path, unsigned flags, mount_attr* attr) {
  return static_cast<int>(syscall(SYS_mount_setattr, AT_FDCWD, path, flags, attr, sizeof(*attr)));
}

/// A path the child must still reach after masks: re-bound from an O_PATH descriptor.
struct KeepPath {
  const char* path;
  bool writable;
  bool own_mount;  // bound onto itself even when not under a mask (writable paths)
  int fd = -1;
  bool is_dir = true;
  bool bound = false;
};

struct ChildPlan {
  pid_t parent_pid = 0;
  int report_fd = -1, out_fd = -1, err_fd = -1, chan_fd = -1, null_fd = -1, bpf_fd = -1;

  // A: namespaces
  int unshare_flags = 0;
  bool user_ns = false;
  const char* uid_map = nullptr;
  const char* gid_map = nullptr;
  bool pid_ns = false;

  // B: file system (mount_namespace mode)
  bool fs_native = false;
  std::vector<const char*> masks, private_tmps;
  const char* mask_opts = nullptr;
  const char* tmp_opts = nullptr;
  std::vector<KeepPath> keeps;

  // C: credentials, limits, filter, exec
  const char* workdir = nullptr;
  std::vector<std::pair<int, rlimit>> rlimits;
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  bool drop_caps = false;
  bool nnp = false;
  std::vector<std::uint8_t> bpf;  // native seccomp (empty: none here)
  const char* exe = nullptr;
  std::vector<char*> argv, envp;
};

bool is_under(const char* child, const char* dir) {
  std::size_t n = std::strlen(dir);
  if (n == 1 && dir[0] == '/') return child[0] == '/';
  return std::strncmp(child, dir, n) == 0 && (child[n] == '/' || child[n] == 0);
}

void write_file(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t ignored = write(fd, text, std::strlen(text));
  (void)ignored;
  close(fd);
}

/// B: the mount namespace's view. Everything read-only, masks, private tmpfs, keeps.
void child_setup_mounts(ChildPlan& p) {
  const int rep = p.report_fd;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    child_report(rep, '-', "fs_readonly: mount --make-rprivate /", errno);
    return;  // without private propagation, remounts would leak to the parent's namespace
  }
  for (KeepPath& k : p.keeps) {
    k.fd = open(k.path, O_PATH | O_CLOEXEC);
    struct stat st;
    if (k.fd >= 0 && fstat(k.fd, &st) == 0) k.is_dir = S_ISDIR(st.st_mode);
  }
  auto mount_tmpfs = [&](const char* target, const char* opts, const char* layer) {
    struct stat st;
    if (stat(target, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    for (const KeepPath& k : p.keeps)
      if (std::strcmp(k.path, target) == 0 || is_under(target, k.path)) {
        // Masking a folder that is (or holds) a needed path would hide it; leave it.
        if (std::strcmp(k.path, target) == 0 || k.own_mount) {
          child_report(rep, '-', layer, EBUSY);
          return false;
        }
      }
    if (mount("d2k-tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
      child_report(rep, '-', layer, errno);
      return false;
    }
    return true;
  };
  bool masks_ok = true;
  for (const char* m : p.masks) masks_ok &= mount_tmpfs(m, p.mask_opts, "mask");
  if (masks_ok && !p.masks.empty()) child_report(rep, '+', "masks");
  bool tmps_ok = true;
  for (const char* t : p.private_tmps) tmps_ok &= mount_tmpfs(t, p.tmp_opts, "private_tmp");
  if (tmps_ok && !p.private_tmps.empty()) child_report(rep, '+', "private_tmp");

  // Re-expose needed paths: writable ones always get their own mount (so that they alone can
  // be made writable again); read-only ones only where a mask hid them.
  char src[64];
  for (KeepPath& k : p.keeps) {
    if (k.fd < 0) continue;
    bool hidden = false;
    for (const char* m : p.masks) hidden |= is_under(k.path, m) && std::strcmp(k.path, m) != 0;
    for (const char* t : p.private_tmps) hidden |= is_under(k.path, t) && std::strcmp(k.path, t) != 0;
    if (!hidden && !k.own_mount) continue;
    if (hidden) {
      mkdir_parents(k.path, k.is_dir);
      if (!k.is_dir) {
        int f = open(k.path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (f >= 0) close(f);
      }
    }
    // "/proc/self/fd/N" (the parent's /proc is still mounted here).
    copy_str(src, sizeof(src), "/proc/self/fd/");
    char digits[16];
    int nd = 0;
    int v = k.fd;
    do {
      digits[nd++] = char('0' + v % 10);
      v /= 10;
    } while (v);
    std::size_t len = std::strlen(src);
    while (nd) src[len++] = digits[--nd];
    src[len] = 0;
    if (mount(src, k.path, nullptr, MS_BIND | MS_REC, nullptr) == 0)
      k.bound = true;
    else
      child_report(rep, '-', "keep_path", errno);
  }
  for (KeepPath& k : p.keeps)
    if (k.fd >= 0) close(k.fd);

  if (p.pid_ns) {
    // A /proc of the new PID namespace: only the sandbox's own processes are visible.
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0)
      child_report(rep, '+', "private_proc");
    else
      child_report(rep, '-', "private_proc", errno);
  }

  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (set_mount_attr("/", AT_RECURSIVE, &ro) < 0) {
    child_report(rep, '-', "fs_readonly", errno);
    return;
  }
  child_report(rep, '+', "fs_readonly");
  mount_attr rw{};
  rw.attr_clr = MOUNT_ATTR_RDONLY;
  rw.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (tmps_ok)
    for (const char* t : p.private_tmps) {
      struct stat st;
      if (stat(t, &st) == 0 && set_mount_attr(t, 0, &rw) < 0)
        child_report(rep, '-', "private_tmp_writable", errno);
    }
  for (const KeepPath& k : p.keeps)
    if (k.writable && k.bound && set_mount_attr(k.path, 0, &rw) < 0)
      child_report(rep, '-', "scratch_writable", errno);
  // /proc stays writable: the CUDA driver (570 and later) names its threads by writing
  // /proc/self/task/<tid>/comm during cuInit and fails with cudaErrorOperatingSystem when it
  // cannot (seen on the H200). The cost: /proc/self/mem stays writable (docs/isolation.md).
  mount_attr proc_rw{};
  proc_rw.attr_clr = MOUNT_ATTR_RDONLY;
  if (set_mount_attr("/proc", 0, &proc_rw) < 0) child_report(rep, '-', "proc_writable", errno);
}

[[noreturn]] void child_exec(ChildPlan& p) {
  const int rep = p.report_fd;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Standard descriptors, the channel at 3 and the seccomp program (bwrap) at 4; every other
  // inherited descriptor is closed on exec.
  if (dup2(p.null_fd, 0) < 0 || dup2(p.out_fd, 1) < 0 || dup2(p.err_fd, 2) < 0 ||
      dup2(p.chan_fd, 3) < 0 || (p.bpf_fd >= 0 && dup2(p.bpf_fd, 4) < 0)) {
    child_report(rep, '!', "dup2", errno);
    _exit(127);
  }
  if (syscall(SYS_close_range, p.bpf_fd >= 0 ? 5u : 4u, ~0u, CLOSE_RANGE_CLOEXEC) < 0) {
    // Older kernels: close what we know of; the report pipe is close-on-exec already.
    for (int fd = p.bpf_fd >= 0 ? 5 : 4; fd < 1024; ++fd)
      if (fd != rep) close(fd);
  }
  if (p.workdir && chdir(p.workdir) < 0) {
    child_report(rep, '!', "chdir", errno);
    _exit(127);
  }
  bool limits_ok = true;
  for (auto& [res, lim] : p.rlimits)
    if (setrlimit(res, &lim) < 0) {
      limits_ok = false;
      child_report(rep, '-', "rlimits", errno);
    }
  if (limits_ok && !p.rlimits.empty()) child_report(rep, '+', "rlimits");
  if (p.drop) {
    if (setgroups(p.groups.size(), p.groups.data()) < 0 || setresgid(p.gid, p.gid, p.gid) < 0 ||
        setresuid(p.uid, p.uid, p.uid) < 0) {
      child_report(rep, '!', "drop_privileges", errno);
      _exit(127);
    }
    child_report(rep, '+', "drop_privileges");
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // cleared by the credential change
    if (getppid() == 1 && !p.pid_ns) _exit(127);  // our parent already died
  }
  if (p.drop_caps) {
    // Still uid 0 (root without the drop, or root of a user namespace): give up every
    // capability for good, and stop exec from granting them back to uid 0.
    bool ok = true;
    for (int cap = 0; cap <= 63; ++cap)
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) ok = false;
    const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                               SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) ok = false;
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capset, &hdr, data) < 0) ok = false;
    if (ok)
      child_report(rep, '+', "drop_capabilities");
    else
      child_report(rep, '-', "drop_capabilities", errno);
  }
  if (p.nnp) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
      child_report(rep, '+', "no_new_privs");
    else
      child_report(rep, '-', "no_new_privs", errno);
  }
  if (!p.bpf.empty()) {
    sock_fprog prog{};
    prog.len = static_cast<unsigned short>(p.bpf.size() / sizeof(sock_filter));
    prog.filter = reinterpret_cast<sock_filter*>(p.bpf.data());
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
      child_report(rep, '+', "seccomp");
    else
      child_report(rep, '-', "seccomp", errno);
  }
  execve(p.exe, p.argv.data(), p.envp.data());
  child_report(rep, '!', "exec", errno);
  _exit(127);
}

/// B: the namespace's init (PID 1 with a PID namespace, else a subreaper): sets up mounts,
/// starts the program, reaps everything, reports the program's wait status.
[[noreturn]] void child_init(ChildPlan& p) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!p.pid_ns) prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (p.fs_native) child_setup_mounts(p);
  pid_t c = fork();
  if (c < 0) {
    child_report(p.report_fd, '!', "fork", errno);
    _exit(127);
  }
  if (c == 0) child_exec(p);
  int status = 0;
  for (;;) {
    int st = 0;
    pid_t w = waitpid(-1, &st, 0);
    if (w == c) {
      status = st;
      break;
    }
    if (w < 0 && errno != EINTR) break;
  }
  // The status as a decimal after '='.
  char num[16];
  int n = 0;
  unsigned v = static_cast<unsigned>(status);
  do {
    num[n++] = char('0' + v % 10);
    v /= 10;
  } while (v);
  char line[24];
  int k = 0;
  while (n) line[k++] = num[--n];
  line[k] = 0;
  child_report(p.report_fd, '=', line);
  _exit(0);  // with a PID namespace, this kills every process left in it
}

/// A: enters the namespaces, then forks B (the first process inside a new PID namespace).
[[noreturn]] void child_main(ChildPlan& p) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != p.parent_pid) _exit(127);
  if (p.unshare_flags) {
    if (unshare(p.unshare_flags) < 0) {
      child_report(p.report_fd, '!', "unshare", errno);
      _exit(127);
    }
    if (p.user_ns) {
      write_file("/proc/self/setgroups", "deny");
      write_file("/proc/self/uid_map", p.uid_map);
      write_file("/proc/self/gid_map", p.gid_map);
    }
  }
  pid_t b = fork();
  if (b < 0) {
    child_report(p.report_fd, '!', "fork", errno);
    _exit(127);
  }
  if (b == 0) child_init(p);
  int st = 0;
  while (waitpid(b, &st, 0) < 0 && errno == EINTR) {
  }
  _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

// ---------------------------------------------------------------------------------------------
// Parent side.

struct NsFlag {
  const char* name;
  int flag;
};
constexpr NsFlag kNamespaces[] = {{"user", CLONE_NEWUSER}, {"pid", CLONE_NEWPID},
                                  {"net", CLONE_NEWNET},   {"ipc", CLONE_NEWIPC},
                                  {"uts", CLONE_NEWUTS},   {"mount", CLONE_NEWNS}};

int probe_namespaces_mask() {
  static std::once_flag once;
  static int mask = 0;
  std::call_once(once, [] {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) return;
    pid_t pid = fork();
    if (pid == 0) {
      // Try each namespace in this throwaway child. Unprivileged, the others need a user
      // namespace first, which then stays (as it will in the real sandbox).
      int m = 0;
      if (geteuid() != 0 && unshare(CLONE_NEWUSER) == 0) m |= CLONE_NEWUSER;
      for (const NsFlag& ns : kNamespaces)
        if (ns.flag != CLONE_NEWUSER && unshare(ns.flag) == 0) m |= ns.flag;
      if (geteuid() == 0 && unshare(CLONE_NEWUSER) == 0) m |= CLONE_NEWUSER;
      ssize_t ignored = write(fds[1], &m, sizeof(m));
      (void)ignored;
      _exit(0);
    }
    close(fds[1]);
    if (pid > 0) {
      int m = 0;
      if (read(fds[0], &m, sizeof(m)) == sizeof(m)) mask = m;
      waitpid(pid, nullptr, 0);
    }
    close(fds[0]);
  });
  return mask;
}

std::string find_on_path(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) return std::filesystem::absolute(name).string();
  std::size_t start = 0;
  while (start <= path_env.size()) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    // An empty PATH entry means the current folder.
    std::string cand = end > start ? path_env.substr(start, end - start) : std::string(".");
    cand += '/';
    cand += name;
    if (access(cand.c_str(), X_OK) == 0) return std::filesystem::absolute(cand).string();
    start = end + 1;
  }
  return "";
}

std::string getenv_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

/// Moves a descriptor above the standard range (>= 10) and marks it close-on-exec.
int high_fd(int fd) {
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (h < 0) throw std::runtime_error(fmt::format("fcntl(F_DUPFD): {}", std::strerror(errno)));
  close(fd);
  return h;
}

struct Tail {
  std::string buf;
  std::size_t cap;
  std::uint64_t total = 0;
  void add(const char* p, std::size_t n) {
    total += n;
    buf.append(p, n);
    if (buf.size() > 2 * cap + 4096) buf.erase(0, buf.size() - cap);
  }
  std::string str() const { return buf.size() > cap ? buf.substr(buf.size() - cap) : buf; }
};

std::string signal_cause(int sig) {
  std::string why;
  switch (sig) {
    case SIGSEGV: why = "invalid memory access"; break;
    case SIGBUS: why = "bus error: misaligned or unmapped memory"; break;
    case SIGFPE: why = "arithmetic exception"; break;
    case SIGILL: why = "illegal instruction"; break;
    case SIGABRT: why = "aborted: an assertion, std::terminate or an uncaught exception"; break;
    case SIGKILL: why = "out of memory, a resource limit, or killed by another process"; break;
    case SIGXCPU: why = "CPU time limit (RLIMIT_CPU)"; break;
    case SIGXFSZ: why = "file size limit (RLIMIT_FSIZE)"; break;
    case SIGSYS: why = "a forbidden system call (seccomp)"; break;
    case SIGPIPE: why = "wrote to a closed pipe"; break;
    default: break;
  }
  return why.empty() ? fmt::format("killed by {}", signal_name(sig))
                     : fmt::format("killed by {} ({})", signal_name(sig), why);
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::vector<std::string> bwrap_system_binds() {
  std::vector<std::string> args;
  for (const char* d : {"/usr", "/etc", "/opt", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"}) {
    std::error_code ec;
    auto st = std::filesystem::symlink_status(d, ec);
    if (ec || !std::filesystem::exists(st)) continue;
    if (std::filesystem::is_symlink(st)) {
      args.insert(args.end(), {"--symlink", std::filesystem::read_symlink(d, ec).string(), d});
    } else if (std::filesystem::is_directory(st)) {
      args.insert(args.end(), {"--ro-bind", d, d});
    }
  }
  return args;
}

std::vector<std::string> gpu_device_nodes() {
  std::vector<std::string> out;
  glob_t g{};
  if (glob("/dev/nvidia*", 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

/// The first of `paths` that uid/gid cannot reach (search every folder on the way, read the
/// path itself), or "" if all are reachable. Checked in a throwaway child that switches user.
std::string first_unreachable(const std::vector<std::string>& paths, uid_t uid, gid_t gid) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return "";
  pid_t pid = fork();
  if (pid == 0) {
    int bad = -1;
    if (setgroups(1, &gid) == 0 && setresgid(gid, gid, gid) == 0 && setresuid(uid, uid, uid) == 0) {
      for (std::size_t i = 0; i < paths.size(); ++i)
        if (access(paths[i].c_str(), R_OK) != 0) {
          bad = static_cast<int>(i);
          break;
        }
    }
    ssize_t ignored = write(fds[1], &bad, sizeof(bad));
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  int bad = -1;
  if (pid > 0) {
    if (read(fds[0], &bad, sizeof(bad)) != sizeof(bad)) bad = -1;
    waitpid(pid, nullptr, 0);
  }
  close(fds[0]);
  return bad >= 0 && static_cast<std::size_t>(bad) < paths.size() ? paths[static_cast<std::size_t>(bad)] : "";
}

std::string describe_errno(int e) {
  const char* name = strerrorname_np(e);
  return fmt::format("{} ({})", std::strerror(e), name ? name : "?");
}

}  // namespace

std::vector<std::string> permitted_namespaces() {
  int m = probe_namespaces_mask();
  std::vector<std::string> out;
  for (const NsFlag& ns : kNamespaces)
    if (m & ns.flag) out.emplace_back(ns.name);
  return out;
}

bool bwrap_available() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
    std::string bwrap = find_on_path("bwrap", getenv_str("PATH"));
    std::string truth = find_on_path("true", "/usr/bin:/bin");
    if (bwrap.empty() || truth.empty()) return;
    // Probe as the sandbox will run it: unprivileged when we are root.
    pid_t pid = fork();
    if (pid == 0) {
      int null_fd = open("/dev/null", O_RDWR);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      if (geteuid() == 0) {
        gid_t g = 65534;
        if (setgroups(1, &g) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0) _exit(1);
      }
      execl(bwrap.c_str(), "bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", truth.c_str(), static_cast<char*>(nullptr));
      _exit(1);
    }
    if (pid < 0) return;
    int st = 0;
    for (int i = 0; i < 1000; ++i) {  // 10 s at most
      pid_t w = waitpid(pid, &st, WNOHANG);
      if (w == pid) {
        ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        return;
      }
      usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  });
  return ok;
}

namespace {
/// A uid of its own for one sandbox: RLIMIT_NPROC counts every process and thread of a uid, so
/// sandboxes sharing one uid would share one budget, and one that fills it (a fork or thread
/// bomb) would make the others' fork and thread creation fail. The counter makes the uids of one
/// parent distinct; the pid spreads concurrent parents over the range.
std::uint32_t next_unique_uid() {
  static std::atomic<std::uint32_t> counter{0};
  const std::uint32_t slot = (static_cast<std::uint32_t>(getpid()) * 97u + counter.fetch_add(1)) % kUniqueUidCount;
  return kUniqueUidBase + slot;
}
}  // namespace

ProcessResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& opts_in) {
  if (argv.empty()) throw std::runtime_error("run_sandboxed: empty argv");
  ProcessResult res;
  const auto t0 = Clock::now();
  const bool root = geteuid() == 0;
  SandboxOptions opts = opts_in;
  if (opts.unique_uid && root && opts.drop_privileges) opts.uid = next_unique_uid();

  // ---- scratch ----
  namespace fs = std::filesystem;
  bool own_scratch = false;
  fs::path scratch = opts.scratch_dir;
  if (scratch.empty()) {
    std::string tmpl = (fs::path(getenv_str("TMPDIR").empty() ? "/tmp" : getenv_str("TMPDIR")) /
                        "d2k-sandbox-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error(fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
    scratch = tmpl;
    own_scratch = true;
  } else {
    fs::create_directories(scratch);
  }
  scratch = fs::canonical(scratch);
  res.scratch_dir = scratch;
  if (opts.drop_privileges && root) {
    // The unprivileged child must be able to write its scratch folder.
    if (chown(scratch.c_str(), opts.uid, opts.gid) < 0)
      res.layers_skipped.push_back(fmt::format("scratch_owner: chown: {}", std::strerror(errno)));
    chmod(scratch.c_str(), 0700);
  }
  const fs::path workdir = opts.working_dir.empty() ? scratch : fs::absolute(opts.working_dir);

  // ---- environment ----
  std::map<std::string, std::string> env;
  for (const std::string& name : opts.inherit_env)
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = scratch.string();
  env["TMPDIR"] = scratch.string();
  env["LANG"] = "C";
  env[kChannelFdEnv] = "3";
  for (const auto& [k, v] : opts.env) env[k] = v;

  // Read-only paths: those asked for, and the inherited library path (the program and the
  // libraries it loads must stay reachable under masks and bubblewrap's minimal root).
  std::vector<fs::path> ro_paths = opts.ro_paths;
  {
    const std::string lib_path = env.count("LD_LIBRARY_PATH") ? env["LD_LIBRARY_PATH"] : "";
    for (std::size_t start = 0; start < lib_path.size();) {
      std::size_t end = lib_path.find(':', start);
      if (end == std::string::npos) end = lib_path.size();
      std::error_code ec;
      fs::path dir = lib_path.substr(start, end - start);
      if (!dir.empty() && dir.is_absolute() && fs::is_directory(dir, ec)) ro_paths.push_back(dir);
      start = end + 1;
    }
  }

  // ---- decide the layers ----
  FsIsolation fsmode = opts.fs;
  if (fsmode == FsIsolation::automatic) fsmode = bwrap_available() ? FsIsolation::bwrap : FsIsolation::mount_namespace;
  if (fsmode == FsIsolation::bwrap && !bwrap_available()) {
    res.layers_skipped.push_back("bwrap: not on PATH or cannot create namespaces here; using a mount namespace");
    fsmode = FsIsolation::mount_namespace;
  }
  const bool drop = opts.drop_privileges && root;
  if (fsmode == FsIsolation::bwrap && drop) {
    // bubblewrap runs as the unprivileged user, so it must reach every folder it binds.
    std::vector<std::string> sources = {scratch.string(), fs::absolute(workdir).string()};
    for (const fs::path& p : ro_paths) sources.push_back(fs::absolute(p).string());
    for (const fs::path& p : opts.rw_paths) sources.push_back(fs::absolute(p).string());
    if (std::string bad = first_unreachable(sources, opts.uid, opts.gid); !bad.empty()) {
      res.layers_skipped.push_back(fmt::format(
          "bwrap: uid {} cannot reach {}; using a mount namespace instead", opts.uid, bad));
      fsmode = FsIsolation::mount_namespace;
    }
  }
  const int permitted = probe_namespaces_mask();
  ChildPlan plan;
  plan.parent_pid = getpid();
  std::deque<std::string> strings_keepalive;  // owns what plan's char* point to (stable addresses)
  auto keep = [&](std::string s) -> const char* {
    strings_keepalive.push_back(std::move(s));
    return strings_keepalive.back().c_str();
  };

  std::vector<std::string> exec_argv;
  std::string exe = find_on_path(argv[0], env["PATH"]);
  if (exe.empty() || access(exe.c_str(), X_OK) != 0) {
    res.setup_failed = true;
    res.cause = exe.empty() ? fmt::format("sandbox: program '{}' not found on PATH", argv[0])
                            : fmt::format("sandbox: cannot execute {}: {}", exe, std::strerror(errno));
    res.layers.clear();
    if (own_scratch && !opts.keep_scratch) fs::remove_all(scratch);
    return res;
  }

  if (fsmode == FsIsolation::bwrap) {
    const std::string bwrap = find_on_path("bwrap", getenv_str("PATH"));
    exec_argv = {bwrap, "--die-with-parent", "--unshare-user", "--cap-drop", "ALL"};
    res.layers.push_back("bwrap");
    res.layers.push_back("user_namespace");
    res.layers.push_back("drop_capabilities");  // --cap-drop ALL
    auto ns = [&](bool want, const char* flag, const char* layer) {
      if (want) {
        exec_argv.push_back(flag);
        res.layers.push_back(layer);
      }
    };
    ns(opts.pid_namespace, "--unshare-pid", "pid_namespace");
    ns(opts.net_namespace, "--unshare-net", "net_namespace");
    ns(opts.ipc_namespace, "--unshare-ipc", "ipc_namespace");
    ns(opts.uts_namespace, "--unshare-uts", "uts_namespace");
    exec_argv.push_back("--unshare-cgroup-try");
    res.layers.push_back("mount_namespace");
    res.layers.push_back("fs_readonly");
    for (auto& a : bwrap_system_binds()) exec_argv.push_back(a);
    exec_argv.insert(exec_argv.end(), {"--dev", "/dev"});
    if (opts.gpu_devices)
      for (const std::string& dev : gpu_device_nodes()) exec_argv.insert(exec_argv.end(), {"--dev-bind", dev, dev});
    // A writable /proc, as in the mount-namespace mode: CUDA writes its threads' names there.
    exec_argv.insert(exec_argv.end(), {"--proc", "/proc"});
    for (const fs::path& t : opts.private_tmp_paths)
      exec_argv.insert(exec_argv.end(), {"--size", std::to_string(opts.private_tmp_bytes), "--tmpfs", t.string()});
    res.layers.push_back("private_tmp");
    for (const fs::path& p : ro_paths)
      if (fs::exists(p)) exec_argv.insert(exec_argv.end(), {"--ro-bind", fs::absolute(p).string(), fs::absolute(p).string()});
    exec_argv.insert(exec_argv.end(), {"--ro-bind", exe, exe});
    exec_argv.insert(exec_argv.end(), {"--bind", scratch.string(), scratch.string()});
    for (const fs::path& p : opts.rw_paths)
      if (fs::exists(p)) exec_argv.insert(exec_argv.end(), {"--bind", fs::absolute(p).string(), fs::absolute(p).string()});
    exec_argv.insert(exec_argv.end(), {"--chdir", workdir.string()});
    if (opts.seccomp) {
      exec_argv.insert(exec_argv.end(), {"--seccomp", "4"});
      res.layers.push_back("seccomp");
    }
    exec_argv.push_back("--");
    exec_argv.push_back(exe);
    exec_argv.insert(exec_argv.end(), argv.begin() + 1, argv.end());
    plan.exe = keep(bwrap);
  } else {
    // Native namespaces: those asked for that the kernel allows here.
    int flags = 0;
    auto want = [&](bool asked, int flag, const char* layer) {
      if (!asked) return;
      int needed = flag | ((!root && opts.user_namespace_if_unprivileged) ? CLONE_NEWUSER : 0);
      if ((permitted & needed) == needed) {
        flags |= needed;
        res.layers.push_back(layer);
      } else {
        res.layers_skipped.push_back(fmt::format("{}: the kernel refuses to create it for this user", layer));
      }
    };
    want(opts.pid_namespace, CLONE_NEWPID, "pid_namespace");
    want(opts.net_namespace, CLONE_NEWNET, "net_namespace");
    want(opts.ipc_namespace, CLONE_NEWIPC, "ipc_namespace");
    want(opts.uts_namespace, CLONE_NEWUTS, "uts_namespace");
    const bool fs_native = fsmode == FsIsolation::mount_namespace;
    want(opts.mount_namespace || fs_native, CLONE_NEWNS, "mount_namespace");
    plan.unshare_flags = flags;
    plan.pid_ns = flags & CLONE_NEWPID;
    if (flags & CLONE_NEWUSER) {
      plan.user_ns = true;
      plan.uid_map = keep(fmt::format("0 {} 1", geteuid()));
      plan.gid_map = keep(fmt::format("0 {} 1", getegid()));
      res.layers.push_back("user_namespace");
    }
    if (fs_native) {
      if (flags & CLONE_NEWNS) {
        plan.fs_native = true;
        for (const fs::path& m : opts.masked_paths) plan.masks.push_back(keep(m.string()));
        for (const fs::path& t : opts.private_tmp_paths) plan.private_tmps.push_back(keep(t.string()));
        plan.mask_opts = keep("size=64k,mode=0755");
        plan.tmp_opts = keep(fmt::format("size={},mode=1777", opts.private_tmp_bytes));
        plan.keeps.push_back({keep(scratch.string()), true, true});
        for (const fs::path& p : opts.rw_paths)
          if (fs::exists(p)) plan.keeps.push_back({keep(fs::canonical(p).string()), true, true});
        for (const fs::path& p : ro_paths)
          if (fs::exists(p)) plan.keeps.push_back({keep(fs::canonical(p).string()), false, false});
        plan.keeps.push_back({keep(fs::canonical(exe).string()), false, false});
        if (workdir != scratch && fs::exists(workdir))
          plan.keeps.push_back({keep(fs::canonical(workdir).string()), false, false});
      } else {
        res.layers_skipped.push_back("fs_readonly: no mount namespace");
      }
    }
    if (opts.seccomp) {
      try {
        plan.bpf = baseline_seccomp_bpf();
      } catch (const std::exception& e) {
        res.layers_skipped.push_back(fmt::format("seccomp: {}", e.what()));
      }
    }
    plan.exe = keep(exe);
    exec_argv = argv;
    exec_argv[0] = argv[0];
  }
  plan.workdir = keep(workdir.string());
  plan.nnp = opts.no_new_privs;

  // ---- limits and credentials ----
  auto lim = [&](int res_id, std::uint64_t v) {
    if (v) plan.rlimits.push_back({res_id, rlimit{v, v}});
  };
  lim(RLIMIT_CPU, opts.rlimits.cpu_seconds);
  lim(RLIMIT_FSIZE, opts.rlimits.file_size_bytes);
  lim(RLIMIT_NOFILE, opts.rlimits.open_files);
  lim(RLIMIT_DATA, opts.rlimits.data_bytes);
  lim(RLIMIT_AS, opts.rlimits.address_space_bytes);
  if (opts.rlimits.no_core_dumps) plan.rlimits.push_back({RLIMIT_CORE, rlimit{0, 0}});
  if (opts.rlimits.processes) {
    lim(RLIMIT_NPROC, opts.rlimits.processes);
    if (root && !drop && fsmode != FsIsolation::bwrap)
      res.layers_skipped.push_back("rlimit_nproc: ignored for root (drop_privileges is off)");
  }
  if (drop) {
    plan.drop = true;
    plan.uid = opts.uid;
    plan.gid = opts.gid;
    plan.groups.push_back(opts.gid);
    // Keep the GPU device group if the device nodes are not open to everyone.
    struct stat st;
    if (opts.gpu_devices && stat("/dev/nvidiactl", &st) == 0 && (st.st_mode & 0006) != 0006 &&
        st.st_gid != opts.gid)
      plan.groups.push_back(st.st_gid);
  } else if (opts.drop_privileges && !root) {
    res.layers_skipped.push_back("drop_privileges: not root (already unprivileged)");
  }
  // Whoever stays uid 0 (no drop, or root of a user namespace) gives up its capabilities.
  // Under bubblewrap, its --cap-drop ALL does this.
  plan.drop_caps = opts.drop_capabilities && fsmode != FsIsolation::bwrap && !drop && (root || plan.user_ns);

  // ---- argv / envp as C arrays ----
  for (const std::string& a : exec_argv) plan.argv.push_back(const_cast<char*>(keep(a)));
  plan.argv.push_back(nullptr);
  for (const auto& [k, v] : env) plan.envp.push_back(const_cast<char*>(keep(k + "=" + v)));
  plan.envp.push_back(nullptr);

  // ---- descriptors ----
  int out_pipe[2], err_pipe[2], rep_pipe[2], chan[2];
  if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0 || pipe2(rep_pipe, O_CLOEXEC) < 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
    throw std::runtime_error(fmt::format("run_sandboxed: pipes: {}", std::strerror(errno)));
  plan.out_fd = high_fd(out_pipe[1]);
  plan.err_fd = high_fd(err_pipe[1]);
  plan.report_fd = high_fd(rep_pipe[1]);
  plan.chan_fd = high_fd(chan[1]);
  plan.null_fd = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (fsmode == FsIsolation::bwrap && opts.seccomp) {
    std::vector<std::uint8_t> bpf = baseline_seccomp_bpf();
    int mfd = memfd_create("d2k-seccomp", MFD_CLOEXEC);
    if (mfd < 0 || write(mfd, bpf.data(), bpf.size()) != static_cast<ssize_t>(bpf.size()))
      throw std::runtime_error("run_sandboxed: cannot stage the seccomp filter");
    lseek(mfd, 0, SEEK_SET);
    plan.bpf_fd = high_fd(mfd);
  }
  const int out_r = out_pipe[0], err_r = err_pipe[0], rep_r = rep_pipe[0], chan_p = chan[0];

  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("run_sandboxed: fork: {}", std::strerror(errno)));
  if (pid == 0) child_main(plan);
  setpgid(pid, pid);  // also done in the child; whichever runs first wins the race
  for (int fd : {plan.out_fd, plan.err_fd, plan.report_fd, plan.chan_fd, plan.null_fd, plan.bpf_fd})
    if (fd >= 0) close(fd);
  for (int fd : {out_r, err_r, rep_r, chan_p}) set_nonblocking(fd);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));

  // ---- the watch loop ----
  Tail out_tail{{}, opts.output_tail_bytes}, err_tail{{}, opts.output_tail_bytes};
  std::string rep_buf, chan_buf;
  std::uint64_t chan_total = 0;
  ParentChannel pchan(chan_p);
  std::string stage = "start";
  auto stage_limit = [&](const std::string& s) {
    auto it = opts.stage_timeouts.find(s);
    return it != opts.stage_timeouts.end() ? it->second : opts.default_stage_timeout;
  };
  auto to_dur = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  Clock::time_point stage_deadline = Clock::now() + to_dur(stage_limit(stage));
  const bool has_total = opts.total_timeout > 0;
  const Clock::time_point total_deadline = t0 + to_dur(opts.total_timeout);
  bool open_out = true, open_err = true, open_rep = true, open_chan = true;
  bool exited = false, killed_by_us = false;
  std::string kill_reason;

  auto kill_group = [&] { kill(-pid, SIGKILL); };
  auto handle_chan_lines = [&] {
    std::size_t nl;
    while ((nl = chan_buf.find('\n')) != std::string::npos) {
      std::string line = chan_buf.substr(0, nl);
      chan_buf.erase(0, nl + 1);
      if (line.empty()) continue;
      nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
      if (msg.is_discarded() || !msg.is_object())
        msg = nlohmann::json{{"type", "invalid"}, {"text", line.substr(0, 256)}};
      if (msg.value("type", "") == "stage" && msg.contains("name") && msg["name"].is_string()) {
        stage = msg["name"].get<std::string>();
        res.stages.push_back(stage);
        stage_deadline = Clock::now() + to_dur(stage_limit(stage));
        continue;
      }
      res.messages.push_back(msg);
      if (opts.on_message && !killed_by_us) {
        try {
          opts.on_message(res.messages.back(), pchan);
        } catch (const std::exception& e) {
          killed_by_us = true;
          kill_reason = fmt::format("the parent's message handler failed: {}", e.what());
          kill_group();
        }
      }
    }
  };
  auto drain = [&](int fd, bool& open, auto&& sink) {
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) {
        sink(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) open = false;
      if (n < 0 && errno == EINTR) continue;
      break;
    }
  };
  auto drain_all = [&] {
    if (open_out) drain(out_r, open_out, [&](const char* p, std::size_t n) { out_tail.add(p, n); });
    if (open_err) drain(err_r, open_err, [&](const char* p, std::size_t n) { err_tail.add(p, n); });
    if (open_rep) drain(rep_r, open_rep, [&](const char* p, std::size_t n) { rep_buf.append(p, n); });
    if (open_chan)
      drain(chan_p, open_chan, [&](const char* p, std::size_t n) {
        chan_total += n;
        if (chan_total > opts.channel_limit_bytes) {
          if (!killed_by_us) {
            killed_by_us = true;
            kill_reason = fmt::format("the child sent more than {} bytes over the channel", opts.channel_limit_bytes);
            kill_group();
          }
          return;
        }
        chan_buf.append(p, n);
        handle_chan_lines();
      });
  };

  while (!exited) {
    auto now = Clock::now();
    if (!killed_by_us) {
      if (now >= stage_deadline) {
        killed_by_us = true;
        res.timed_out = true;
        res.timeout_stage = stage;
        kill_reason = fmt::format("stage '{}' exceeded its {:g} s deadline", stage, stage_limit(stage));
        kill_group();
      } else if (opts.cancel && opts.cancel->load()) {
        killed_by_us = true;
        kill_reason = "cancelled by the parent";
        kill_group();
      } else if (has_total && now >= total_deadline) {
        killed_by_us = true;
        res.timed_out = true;
        res.timeout_stage = "total";
        kill_reason = fmt::format("the run exceeded its total deadline of {:g} s (in stage '{}')", opts.total_timeout, stage);
        kill_group();
      }
    }
    Clock::time_point next = stage_deadline;
    if (has_total) next = std::min(next, total_deadline);
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
    int timeout_ms = static_cast<int>(std::clamp<long long>(wait_ms, 0, pidfd >= 0 ? 1000 : 20));
    if (killed_by_us) timeout_ms = 20;
    pollfd pfds[5];
    int n = 0;
    if (open_out) pfds[n++] = {out_r, POLLIN, 0};
    if (open_err) pfds[n++] = {err_r, POLLIN, 0};
    if (open_rep) pfds[n++] = {rep_r, POLLIN, 0};
    if (open_chan) pfds[n++] = {chan_p, POLLIN, 0};
    if (pidfd >= 0) pfds[n++] = {pidfd, POLLIN, 0};
    int pr = poll(pfds, static_cast<nfds_t>(n), timeout_ms);
    if (pr < 0 && errno != EINTR) break;
    drain_all();
    // Exited but not reaped: the process group id cannot be reused yet, so killing the group
    // (stragglers that outlived A) is safe.
    siginfo_t si{};
    if (waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) exited = true;
  }
  kill_group();
  int a_status = 0;
  while (waitpid(pid, &a_status, 0) < 0 && errno == EINTR) {
  }
  if (pidfd >= 0) close(pidfd);
  // Everything in the group is dead; collect what is still buffered (bounded wait in case a
  // process escaped the group and holds a pipe).
  const auto drain_end = Clock::now() + std::chrono::milliseconds(500);
  while ((open_out || open_err || open_rep || open_chan) && Clock::now() < drain_end) {
    pollfd pfds[4];
    int n = 0;
    if (open_out) pfds[n++] = {out_r, POLLIN, 0};
    if (open_err) pfds[n++] = {err_r, POLLIN, 0};
    if (open_rep) pfds[n++] = {rep_r, POLLIN, 0};
    if (open_chan) pfds[n++] = {chan_p, POLLIN, 0};
    poll(pfds, static_cast<nfds_t>(n), 50);
    drain_all();
  }
  if (!chan_buf.empty()) {
    chan_buf += "\n";
    handle_chan_lines();
  }
  for (int fd : {out_r, err_r, rep_r, chan_p}) close(fd);

  // ---- the report ----
  int prog_status = -1;
  std::string fatal;
  {
    std::size_t start = 0;
    while (start < rep_buf.size()) {
      std::size_t nl = rep_buf.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = rep_buf.substr(start, nl - start);
      start = nl + 1;
      if (line.empty()) continue;
      const char kind = line[0];
      std::string body = line.substr(1);
      int err = 0;
      if (auto tab = body.find('\t'); tab != std::string::npos) {
        err = std::atoi(body.c_str() + tab + 1);
        body.resize(tab);
      }
      if (kind == '+') {
        if (std::find(res.layers.begin(), res.layers.end(), body) == res.layers.end()) res.layers.push_back(body);
      } else if (kind == '-') {
        res.layers_skipped.push_back(fmt::format("{}: {}", body, describe_errno(err)));
      } else if (kind == '!') {
        fatal = fmt::format("sandbox set-up failed at {}: {}", body, describe_errno(err));
        if (body == "exec")
          fatal += fmt::format(" (running {}{})", plan.exe, drop ? fmt::format(" as uid {}", opts.uid) : "");
      } else if (kind == '=') {
        prog_status = std::atoi(body.c_str());
      }
    }
    // A layer reported skipped after a partial success is not applied.
    for (const std::string& s : res.layers_skipped) {
      std::string name = s.substr(0, s.find(':'));
      if (name == "fs_readonly" || name == "seccomp" || name == "no_new_privs") {
        res.layers.erase(std::remove(res.layers.begin(), res.layers.end(), name), res.layers.end());
      }
    }
  }

  res.stdout_tail = out_tail.str();
  res.stderr_tail = err_tail.str();
  res.stdout_bytes = out_tail.total;
  res.stderr_bytes = err_tail.total;
  res.last_stage = stage;
  res.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  if (res.timed_out) {
    res.status = Status::TIMEOUT;
    res.cause = kill_reason;
  } else if (killed_by_us) {
    res.status = Status::RUNTIME_ERROR;
    res.cause = kill_reason;
  } else if (!fatal.empty()) {
    res.status = Status::RUNTIME_ERROR;
    res.setup_failed = true;
    res.cause = fatal;
  } else {
    int code = -1, sig = 0;
    if (prog_status >= 0) {
      if (WIFEXITED(prog_status)) code = WEXITSTATUS(prog_status);
      else if (WIFSIGNALED(prog_status)) sig = WTERMSIG(prog_status);
    } else if (WIFEXITED(a_status)) {
      int c = WEXITSTATUS(a_status);
      if (c > 128 && c < 128 + 65) sig = c - 128;
      else code = c;
    } else if (WIFSIGNALED(a_status)) {
      sig = WTERMSIG(a_status);
    }
    // bubblewrap reports a signal death as exit code 128 + signal.
    if (fsmode == FsIsolation::bwrap && code > 128 && code < 128 + 65) {
      sig = code - 128;
      code = -1;
    }
    if (sig) {
      res.signal = sig;
      res.signal_name = signal_name(sig);
      res.status = Status::RUNTIME_ERROR;
      res.cause = signal_cause(sig);
    } else {
      res.exit_code = code;
      res.status = code == 0 ? Status::PASSED : Status::RUNTIME_ERROR;
      res.cause = fmt::format("exited with code {}", code);
    }
  }
  if (own_scratch && !opts.keep_scratch) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
  }
  return res;
}

}  // namespace d2k
