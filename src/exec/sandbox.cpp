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
#include <fstream>
#include <sstream>
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

int process_group_threads(pid_t pgid) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc", ec);
  if (ec) return -1;
  int threads = 0, members = 0;
  for (const auto& e : it) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string line;
    if (!std::getline(f, line)) continue;  // gone between the listing and the read
    // pid (comm) state ppid pgrp ... : comm may hold spaces and parentheses, so fields are
    // counted from the last ')'. num_threads is field 20, pgrp field 5.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    long long pgrp = -1, num_threads = -1;
    bool exited = false;  // a zombie (Z) or dead (X) process runs no thread
    for (int i = 3; i <= 20 && rest >> field; ++i) {
      if (i == 3) exited = field == "Z" || field == "X";
      if (i == 5) pgrp = std::atoll(field.c_str());
      if (i == 20) num_threads = std::atoll(field.c_str());
    }
    if (pgrp != pgid || num_threads < 0 || exited) continue;
    ++members;
    threads += static_cast<int>(num_threads);
  }
  return members ? threads : -1;
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
  // B': a root built from nothing (minimal_root): keeps bound into a tmpfs at `newroot`,
  // then pivoted into; plus links (path, target) and device nodes.
  bool minimal_root = false;
  const char* newroot = nullptr;
  std::vector<std::pair<const char*, const char*>> links;
  std::vector<const char*> devices;

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

constexpr std::size_t kMaxDevices = 64;

/// "/proc/self/fd/N" into `buf` (the descriptor's own path, whatever its name has become).
void fd_path(char* buf, std::size_t cap, int fd) {
  copy_str(buf, cap, "/proc/self/fd/");
  char digits[16];
  int nd = 0;
  do {
    digits[nd++] = char('0' + fd % 10);
    fd /= 10;
  } while (fd);
  std::size_t len = std::strlen(buf);
  while (nd && len + 1 < cap) buf[len++] = digits[--nd];
  buf[len] = 0;
}

/// `root` + `path` into `buf`.
void under_root(char* buf, std::size_t cap, const char* root, const char* path) {
  copy_str(buf, cap, root);
  std::size_t len = std::strlen(buf);
  copy_str(buf + len, cap - len, path);
}

/// B (minimal_root): a new root from nothing. Every needed path is opened (O_PATH) first, a
/// tmpfs is mounted at `newroot`, each path is bound into it at its own name from its
/// descriptor, and the process pivots into it, detaching the host's tree; then everything is
/// made read-only but the scratch folder, the writable paths, the private tmpfs and /proc. A
/// step that fails is fatal ('!'): a half-built root would show the host.
void child_setup_minimal_root(ChildPlan& p) {
  const int rep = p.report_fd;
  auto fatal = [&](const char* step) {
    child_report(rep, '!', step, errno);
    _exit(127);
  };
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) fatal("minimal_root: make-rprivate /");
  for (KeepPath& k : p.keeps) {
    k.fd = open(k.path, O_PATH | O_CLOEXEC);
    struct stat st;
    if (k.fd < 0 || fstat(k.fd, &st) != 0) fatal("minimal_root: open a bound path");
    k.is_dir = S_ISDIR(st.st_mode);
  }
  int dev_fds[kMaxDevices];  // no allocation between fork and exec
  const std::size_t n_dev = std::min(p.devices.size(), kMaxDevices);
  for (std::size_t i = 0; i < n_dev; ++i) dev_fds[i] = open(p.devices[i], O_PATH | O_CLOEXEC);
  if (mount("d2k-root", p.newroot, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0)
    fatal("minimal_root: tmpfs");
  char target[4096], src[64];
  auto bind_into = [&](int fd, const char* path, bool is_dir) {
    under_root(target, sizeof(target), p.newroot, path);
    mkdir_parents(target, is_dir);
    if (!is_dir) {
      int f = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (f >= 0) close(f);
    }
    fd_path(src, sizeof(src), fd);
    return mount(src, target, nullptr, MS_BIND | MS_REC, nullptr) == 0;
  };
  // The private tmpfs first: a scratch folder under /tmp is bound inside it, not hidden by it.
  for (const char* t : p.private_tmps) {
    under_root(target, sizeof(target), p.newroot, t);
    mkdir_parents(target, true);
    if (mount("d2k-tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, p.tmp_opts) < 0) fatal("minimal_root: private tmp");
  }
  if (!p.private_tmps.empty()) child_report(rep, '+', "private_tmp");
  for (KeepPath& k : p.keeps) {
    // A read-only path inside another read-only one is already there (MS_REC).
    bool inside = false;
    for (const KeepPath& o : p.keeps)
      inside |= !k.own_mount && !o.own_mount && &o != &k && is_under(k.path, o.path) && std::strcmp(k.path, o.path) != 0;
    if (inside) continue;
    if (!bind_into(k.fd, k.path, k.is_dir)) fatal("minimal_root: bind");
    k.bound = true;
  }
  for (std::size_t i = 0; i < n_dev; ++i)
    if (dev_fds[i] >= 0 && !bind_into(dev_fds[i], p.devices[i], false)) fatal("minimal_root: bind a device");
  for (const auto& [path, to] : p.links) {
    under_root(target, sizeof(target), p.newroot, path);
    mkdir_parents(target, false);
    if (symlink(to, target) < 0) fatal("minimal_root: symlink");
  }
  for (KeepPath& k : p.keeps)
    if (k.fd >= 0) close(k.fd);
  for (std::size_t i = 0; i < n_dev; ++i)
    if (dev_fds[i] >= 0) close(dev_fds[i]);
  under_root(target, sizeof(target), p.newroot, "/proc");
  mkdir(target, 0555);
  if (p.pid_ns) {
    if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0) fatal("minimal_root: proc");
    child_report(rep, '+', "private_proc");
  } else if (mount("/proc", target, nullptr, MS_BIND | MS_REC, nullptr) < 0) {
    fatal("minimal_root: bind /proc");
  }
  if (chdir(p.newroot) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
    fatal("minimal_root: pivot_root");
  child_report(rep, '+', "minimal_root");

  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID;
  if (set_mount_attr("/", AT_RECURSIVE, &ro) < 0) fatal("fs_readonly");
  child_report(rep, '+', "fs_readonly");
  mount_attr rw{};
  rw.attr_clr = MOUNT_ATTR_RDONLY;
  rw.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  for (const char* t : p.private_tmps)
    if (set_mount_attr(t, 0, &rw) < 0) fatal("minimal_root: private tmp writable");
  for (const KeepPath& k : p.keeps)
    if (k.writable && set_mount_attr(k.path, 0, &rw) < 0) fatal("minimal_root: scratch writable");
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
  if (p.minimal_root)
    child_setup_minimal_root(p);
  else if (p.fs_native)
    child_setup_mounts(p);
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

/// The first head_cap and the last cap bytes of a stream, and its full size.
struct Tail {
  Tail(std::size_t tail_bytes = 0, std::size_t head_bytes = 0) : cap(tail_bytes), head_cap(head_bytes) {}
  std::string buf;
  std::size_t cap;
  std::size_t head_cap;
  std::string head;
  std::uint64_t total = 0;
  void add(const char* p, std::size_t n) {
    total += n;
    if (head.size() < head_cap) head.append(p, std::min(n, head_cap - head.size()));
    buf.append(p, n);
    if (buf.size() > 2 * cap + 4096) buf.erase(0, buf.size() - cap);
  }
  std::string str() const { return buf.size() > cap ? buf.substr(buf.size() - cap) : buf; }
  /// The start of the stream, as far as it was kept.
  std::string first_bytes() const { return head_cap ? head : total == buf.size() ? buf : std::string(); }
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

std::vector<std::string> bwrap_system_binds(bool minimal) {
  std::vector<std::string> args;
  if (minimal) {
    for (const std::filesystem::path& p : minimal_root_system_paths()) {
      std::error_code ec;
      if (std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec)))
        args.insert(args.end(), {"--symlink", std::filesystem::read_symlink(p, ec).string(), p.string()});
      else
        args.insert(args.end(), {"--ro-bind", p.string(), p.string()});
    }
    return args;
  }
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

std::vector<std::filesystem::path> minimal_root_system_paths() {
  std::vector<std::filesystem::path> out;
  // The toolchain and the C library (or their merged-/usr links), and what the dynamic loader
  // and the compiler driver read from /etc (the loader cache; alternatives for cc/c++).
  for (const char* d : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache",
                        "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(d, ec))) out.emplace_back(d);
  }
  return out;
}

namespace {

namespace fs = std::filesystem;

const char* fs_isolation_name(FsIsolation m) {
  switch (m) {
    case FsIsolation::automatic: return "automatic";
    case FsIsolation::bwrap: return "bwrap";
    case FsIsolation::mount_namespace: return "mount_namespace";
    case FsIsolation::none: return "none";
  }
  return "?";
}

/// The canonical form of an existing path (symbolic links followed: bubblewrap refuses to bind
/// onto a link, and a mount lands on the link's target anyway); "" where it does not exist.
std::string canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? std::string() : c.string();
}

/// One run of run_sandboxed, in phases: scratch, environment, layers (file system, namespaces,
/// filter), limits (and credentials), descriptors, watch, report.
class SandboxRun {
 public:
  SandboxRun(const std::vector<std::string>& argv, const SandboxOptions& opts) : argv_(argv), opts_(opts) {
    root_ = geteuid() == 0;
    if (opts_.unique_uid && root_ && opts_.drop_privileges) opts_.uid = next_unique_uid();
    drop_ = opts_.drop_privileges && root_;
  }

  ProcessResult run() {
    prepare_scratch();
    build_environment();
    if (!choose_file_system() || !find_program() || !plan_layers()) return finish_setup_failure();
    plan_limits();
    start_child();
    watch();
    report();
    if (own_scratch_ && !opts_.keep_scratch) {
      std::error_code ec;
      fs::remove_all(scratch_, ec);
    }
    return std::move(res_);
  }

 private:
  const char* keep(std::string s) {
    strings_.push_back(std::move(s));
    return strings_.back().c_str();
  }

  /// A set-up failure found before the fork: no program runs.
  bool setup_failure(std::string cause) {
    res_.setup_failed = true;
    res_.cause = std::move(cause);
    return false;
  }
  ProcessResult finish_setup_failure() {
    res_.status = Status::RUNTIME_ERROR;
    res_.layers.clear();
    res_.sandbox = "none";
    if (own_scratch_ && !opts_.keep_scratch) {
      std::error_code ec;
      fs::remove_all(scratch_, ec);
    }
    return std::move(res_);
  }

  // ---- scratch: the one writable folder, owned by the unprivileged user ----
  void prepare_scratch() {
    scratch_ = opts_.scratch_dir;
    if (scratch_.empty()) {
      std::string tmpl = (fs::path(getenv_str("TMPDIR").empty() ? "/tmp" : getenv_str("TMPDIR")) /
                          "d2k-sandbox-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) throw std::runtime_error(fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
      scratch_ = tmpl;
      own_scratch_ = true;
    } else {
      fs::create_directories(scratch_);
    }
    scratch_ = fs::canonical(scratch_);
    res_.scratch_dir = scratch_;
    if (drop_) {
      // The unprivileged child must be able to write its scratch folder.
      if (chown(scratch_.c_str(), opts_.uid, opts_.gid) < 0)
        res_.layers_skipped.push_back(fmt::format("scratch_owner: chown: {}", std::strerror(errno)));
      chmod(scratch_.c_str(), 0700);
    }
    workdir_ = opts_.working_dir.empty() ? scratch_ : fs::absolute(opts_.working_dir);
    if (std::string c = canonical_or_empty(workdir_); !c.empty()) workdir_ = c;
  }

  // ---- environment: cleared, then the few variables the program needs ----
  void build_environment() {
    for (const std::string& name : opts_.inherit_env)
      if (const char* v = std::getenv(name.c_str())) env_[name] = v;
    if (!env_.count("PATH")) env_["PATH"] = "/usr/local/bin:/usr/bin:/bin";
    env_["HOME"] = scratch_.string();
    env_["TMPDIR"] = scratch_.string();
    env_["LANG"] = "C";
    // The sandbox's uid has no passwd entry: programs that ask for the user's name (Python's
    // getpass, which torch.compile reaches) read these first, and fail on getpwuid() without them.
    env_["USER"] = env_["LOGNAME"] = "d2k-sandbox";
    env_[kChannelFdEnv] = "3";
    for (const auto& [k, v] : opts_.env) env_[k] = v;

    // Read-only paths: those asked for, and the inherited library path (the program and the
    // libraries it loads must stay reachable under masks and a minimal root). All canonical.
    std::vector<fs::path> ro = opts_.ro_paths;
    const std::string lib_path = env_.count("LD_LIBRARY_PATH") ? env_["LD_LIBRARY_PATH"] : "";
    for (std::size_t start = 0; start < lib_path.size();) {
      std::size_t end = lib_path.find(':', start);
      if (end == std::string::npos) end = lib_path.size();
      std::error_code ec;
      fs::path dir = lib_path.substr(start, end - start);
      if (!dir.empty() && dir.is_absolute() && fs::is_directory(dir, ec)) ro.push_back(dir);
      start = end + 1;
    }
    for (const fs::path& p : ro)
      if (std::string c = canonical_or_empty(p); !c.empty()) ro_paths_.push_back(c);
    for (const fs::path& p : opts_.rw_paths)
      if (std::string c = canonical_or_empty(p); !c.empty()) rw_paths_.push_back(c);
  }

  // ---- layers: which file-system isolation; never a weaker one unless allowed ----
  bool fall_back(const std::string& why, FsIsolation to) {
    if (!opts_.allow_fallback)
      return setup_failure(fmt::format("sandbox: {}; falling back to {} is not allowed", why, fs_isolation_name(to)));
    res_.layers_skipped.push_back(fmt::format("{}: {}; using {}", fs_isolation_name(fsmode_), why, fs_isolation_name(to)));
    fsmode_ = to;
    return true;
  }

  bool choose_file_system() {
    fsmode_ = opts_.fs;
    const bool installed = !find_on_path("bwrap", getenv_str("PATH")).empty();
    if (fsmode_ == FsIsolation::automatic) fsmode_ = installed ? FsIsolation::bwrap : FsIsolation::mount_namespace;
    if (fsmode_ == FsIsolation::bwrap && !bwrap_available() &&
        !fall_back(installed ? "bwrap cannot create its namespaces here" : "bwrap is not on PATH",
                   FsIsolation::mount_namespace))
      return false;
    if (fsmode_ == FsIsolation::bwrap && drop_) {
      // bubblewrap runs as the unprivileged user, so it must reach every folder it binds.
      std::vector<std::string> sources = {scratch_.string(), workdir_.string()};
      for (const fs::path& p : ro_paths_) sources.push_back(p.string());
      for (const fs::path& p : rw_paths_) sources.push_back(p.string());
      if (std::string bad = first_unreachable(sources, opts_.uid, opts_.gid); !bad.empty())
        return fall_back(fmt::format("uid {} cannot reach {}", opts_.uid, bad), FsIsolation::mount_namespace);
    }
    return true;
  }

  bool find_program() {
    exe_ = find_on_path(argv_[0], env_["PATH"]);
    if (exe_.empty()) return setup_failure(fmt::format("sandbox: program '{}' not found on PATH", argv_[0]));
    if (access(exe_.c_str(), X_OK) != 0)
      return setup_failure(fmt::format("sandbox: cannot execute {}: {}", exe_, std::strerror(errno)));
    if (std::string c = canonical_or_empty(exe_); !c.empty()) exe_ = c;
    return true;
  }

  bool plan_layers() {
    plan_.parent_pid = getpid();
    plan_.workdir = keep(workdir_.string());
    plan_.nnp = opts_.no_new_privs;
    return fsmode_ == FsIsolation::bwrap ? plan_bwrap() : plan_native();
  }

  /// bubblewrap builds the namespaces and the root; the program runs under it.
  bool plan_bwrap() {
    const std::string bwrap = find_on_path("bwrap", getenv_str("PATH"));
    auto& a = exec_argv_;
    a = {bwrap, "--die-with-parent", "--unshare-user", "--cap-drop", "ALL"};
    res_.sandbox = "bwrap";
    res_.layers.insert(res_.layers.end(), {"bwrap", "user_namespace", "drop_capabilities"});  // --cap-drop ALL
    auto ns = [&](bool want, const char* flag, const char* layer) {
      if (want) {
        a.push_back(flag);
        res_.layers.push_back(layer);
      }
    };
    ns(opts_.pid_namespace, "--unshare-pid", "pid_namespace");
    ns(opts_.net_namespace, "--unshare-net", "net_namespace");
    ns(opts_.ipc_namespace, "--unshare-ipc", "ipc_namespace");
    ns(opts_.uts_namespace, "--unshare-uts", "uts_namespace");
    a.push_back("--unshare-cgroup-try");
    res_.layers.insert(res_.layers.end(), {"mount_namespace", "fs_readonly"});
    if (opts_.minimal_root) res_.layers.push_back("minimal_root");
    for (auto& b : bwrap_system_binds(opts_.minimal_root)) a.push_back(b);
    a.insert(a.end(), {"--dev", "/dev"});
    if (opts_.gpu_devices)
      for (const std::string& dev : gpu_device_nodes()) a.insert(a.end(), {"--dev-bind", dev, dev});
    // A writable /proc, as in the mount-namespace mode: CUDA writes its threads' names there.
    a.insert(a.end(), {"--proc", "/proc"});
    for (const fs::path& t : opts_.private_tmp_paths)
      a.insert(a.end(), {"--size", std::to_string(opts_.private_tmp_bytes), "--tmpfs", t.string()});
    res_.layers.push_back("private_tmp");
    for (const fs::path& p : ro_paths_) a.insert(a.end(), {"--ro-bind", p.string(), p.string()});
    a.insert(a.end(), {"--ro-bind", exe_, exe_});
    a.insert(a.end(), {"--bind", scratch_.string(), scratch_.string()});
    for (const fs::path& p : rw_paths_) a.insert(a.end(), {"--bind", p.string(), p.string()});
    // A working folder of its own is read-only, also inside the scratch folder (the compile's
    // copied sources), as in the mount-namespace mode.
    if (workdir_ != scratch_ && fs::exists(workdir_))
      a.insert(a.end(), {"--ro-bind", workdir_.string(), workdir_.string()});
    a.insert(a.end(), {"--chdir", workdir_.string()});
    if (opts_.seccomp) {
      a.insert(a.end(), {"--seccomp", "4"});
      res_.layers.push_back("seccomp");
    }
    a.push_back("--");
    a.push_back(exe_);
    a.insert(a.end(), argv_.begin() + 1, argv_.end());
    plan_.exe = keep(bwrap);
    return true;
  }

  /// Namespaces made here (those asked for that the kernel allows), the file system set up by
  /// the namespace's first process.
  bool plan_native() {
    const int permitted = probe_namespaces_mask();
    int flags = 0;
    auto want = [&](bool asked, int flag, const char* layer) {
      if (!asked) return;
      int needed = flag | ((!root_ && opts_.user_namespace_if_unprivileged) ? CLONE_NEWUSER : 0);
      if ((permitted & needed) == needed) {
        flags |= needed;
        res_.layers.push_back(layer);
      } else {
        res_.layers_skipped.push_back(fmt::format("{}: the kernel refuses to create it for this user", layer));
      }
    };
    want(opts_.pid_namespace, CLONE_NEWPID, "pid_namespace");
    want(opts_.net_namespace, CLONE_NEWNET, "net_namespace");
    want(opts_.ipc_namespace, CLONE_NEWIPC, "ipc_namespace");
    want(opts_.uts_namespace, CLONE_NEWUTS, "uts_namespace");
    const bool fs_native = fsmode_ == FsIsolation::mount_namespace;
    want(opts_.mount_namespace || fs_native, CLONE_NEWNS, "mount_namespace");
    plan_.unshare_flags = flags;
    plan_.pid_ns = flags & CLONE_NEWPID;
    if (flags & CLONE_NEWUSER) {
      plan_.user_ns = true;
      plan_.uid_map = keep(fmt::format("0 {} 1", geteuid()));
      plan_.gid_map = keep(fmt::format("0 {} 1", getegid()));
      res_.layers.push_back("user_namespace");
    }
    if (fs_native && !(flags & CLONE_NEWNS)) {
      if (!fall_back("no mount namespace", FsIsolation::none)) return false;
    } else if (fs_native) {
      res_.sandbox = "mount_namespace";
      plan_native_file_system();
    }
    if (opts_.seccomp) {
      try {
        plan_.bpf = baseline_seccomp_bpf();
      } catch (const std::exception& e) {
        res_.layers_skipped.push_back(fmt::format("seccomp: {}", e.what()));
      }
    }
    plan_.exe = keep(exe_);
    exec_argv_ = argv_;
    return true;
  }

  void plan_native_file_system() {
    plan_.fs_native = true;
    for (const fs::path& t : opts_.private_tmp_paths) plan_.private_tmps.push_back(keep(t.string()));
    plan_.tmp_opts = keep(fmt::format("size={},mode=1777", opts_.private_tmp_bytes));
    if (opts_.minimal_root) {
      plan_.minimal_root = true;
      plan_.newroot = "/tmp";
      for (const fs::path& p : minimal_root_system_paths()) {
        std::error_code ec;
        if (fs::is_symlink(fs::symlink_status(p, ec)))
          plan_.links.emplace_back(keep(p.string()), keep(fs::read_symlink(p, ec).string()));
        else
          plan_.keeps.push_back({keep(p.string()), false, false});
      }
      for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
        plan_.devices.push_back(dev);
      if (opts_.gpu_devices)
        for (const std::string& dev : gpu_device_nodes()) plan_.devices.push_back(keep(dev));
      plan_.links.emplace_back("/dev/fd", "/proc/self/fd");
      plan_.links.emplace_back("/dev/stdin", "/proc/self/fd/0");
      plan_.links.emplace_back("/dev/stdout", "/proc/self/fd/1");
      plan_.links.emplace_back("/dev/stderr", "/proc/self/fd/2");
    } else {
      for (const fs::path& m : opts_.masked_paths) plan_.masks.push_back(keep(m.string()));
      plan_.mask_opts = keep("size=64k,mode=0755");
    }
    plan_.keeps.push_back({keep(scratch_.string()), true, true});
    for (const fs::path& p : rw_paths_) plan_.keeps.push_back({keep(p.string()), true, true});
    for (const fs::path& p : ro_paths_) plan_.keeps.push_back({keep(p.string()), false, false});
    plan_.keeps.push_back({keep(exe_), false, false});
    if (workdir_ != scratch_ && fs::exists(workdir_)) plan_.keeps.push_back({keep(workdir_.string()), false, false});
    if (opts_.minimal_root) {
      // Parents before what lies inside them: a folder bound later would cover the mounts
      // inside it (a read-only parent of the scratch folder would hide it).
      std::stable_sort(plan_.keeps.begin(), plan_.keeps.end(), [](const KeepPath& a, const KeepPath& b) {
        return std::strlen(a.path) < std::strlen(b.path);
      });
    }
  }

  // ---- limits and credentials ----
  void plan_limits() {
    auto lim = [&](int res_id, std::uint64_t v) {
      if (v) plan_.rlimits.push_back({res_id, rlimit{v, v}});
    };
    lim(RLIMIT_CPU, opts_.rlimits.cpu_seconds);
    lim(RLIMIT_FSIZE, opts_.rlimits.file_size_bytes);
    lim(RLIMIT_NOFILE, opts_.rlimits.open_files);
    lim(RLIMIT_DATA, opts_.rlimits.data_bytes);
    lim(RLIMIT_AS, opts_.rlimits.address_space_bytes);
    if (opts_.rlimits.no_core_dumps) plan_.rlimits.push_back({RLIMIT_CORE, rlimit{0, 0}});
    if (opts_.rlimits.processes) {
      lim(RLIMIT_NPROC, opts_.rlimits.processes);
      if (root_ && !drop_ && fsmode_ != FsIsolation::bwrap)
        res_.layers_skipped.push_back("rlimit_nproc: ignored for root (drop_privileges is off)");
    }
    if (drop_) {
      plan_.drop = true;
      plan_.uid = opts_.uid;
      plan_.gid = opts_.gid;
      plan_.groups.push_back(opts_.gid);
      // Keep the GPU device group if the device nodes are not open to everyone.
      struct stat st;
      if (opts_.gpu_devices && stat("/dev/nvidiactl", &st) == 0 && (st.st_mode & 0006) != 0006 &&
          st.st_gid != opts_.gid)
        plan_.groups.push_back(st.st_gid);
    } else if (opts_.drop_privileges && !root_) {
      res_.layers_skipped.push_back("drop_privileges: not root (already unprivileged)");
    }
    // Whoever stays uid 0 (no drop, or root of a user namespace) gives up its capabilities.
    // Under bubblewrap, its --cap-drop ALL does this.
    plan_.drop_caps = opts_.drop_capabilities && fsmode_ != FsIsolation::bwrap && !drop_ && (root_ || plan_.user_ns);

    for (const std::string& a : exec_argv_) plan_.argv.push_back(const_cast<char*>(keep(a)));
    plan_.argv.push_back(nullptr);
    for (const auto& [k, v] : env_) plan_.envp.push_back(const_cast<char*>(keep(k + "=" + v)));
    plan_.envp.push_back(nullptr);
  }

  // ---- descriptors, then the fork ----
  void start_child() {
    int out_pipe[2], err_pipe[2], rep_pipe[2], chan[2];
    if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0 || pipe2(rep_pipe, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
      throw std::runtime_error(fmt::format("run_sandboxed: pipes: {}", std::strerror(errno)));
    plan_.out_fd = high_fd(out_pipe[1]);
    plan_.err_fd = high_fd(err_pipe[1]);
    plan_.report_fd = high_fd(rep_pipe[1]);
    plan_.chan_fd = high_fd(chan[1]);
    plan_.null_fd = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
    if (fsmode_ == FsIsolation::bwrap && opts_.seccomp) {
      std::vector<std::uint8_t> bpf = baseline_seccomp_bpf();
      int mfd = memfd_create("d2k-seccomp", MFD_CLOEXEC);
      if (mfd < 0 || write(mfd, bpf.data(), bpf.size()) != static_cast<ssize_t>(bpf.size()))
        throw std::runtime_error("run_sandboxed: cannot stage the seccomp filter");
      lseek(mfd, 0, SEEK_SET);
      plan_.bpf_fd = high_fd(mfd);
    }
    out_r_ = out_pipe[0];
    err_r_ = err_pipe[0];
    rep_r_ = rep_pipe[0];
    chan_p_ = chan[0];

    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error(fmt::format("run_sandboxed: fork: {}", std::strerror(errno)));
    if (pid_ == 0) child_main(plan_);
    setpgid(pid_, pid_);  // also done in the child; whichever runs first wins the race
    if (opts_.on_start) opts_.on_start(pid_);
    for (int fd : {plan_.out_fd, plan_.err_fd, plan_.report_fd, plan_.chan_fd, plan_.null_fd, plan_.bpf_fd})
      if (fd >= 0) close(fd);
    for (int fd : {out_r_, err_r_, rep_r_, chan_p_}) set_nonblocking(fd);
  }

  // ---- watch: output, the channel, stage deadlines, until the child is gone ----
  void kill_group() { kill(-pid_, SIGKILL); }

  void kill_for(std::string reason) {
    killed_by_us_ = true;
    kill_reason_ = std::move(reason);
    kill_group();
  }

  double stage_limit(const std::string& s) const {
    auto it = opts_.stage_timeouts.find(s);
    return it != opts_.stage_timeouts.end() ? it->second : opts_.default_stage_timeout;
  }

  static Clock::duration to_dur(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  void handle_chan_lines(ParentChannel& pchan) {
    std::size_t nl;
    while ((nl = chan_buf_.find('\n')) != std::string::npos) {
      std::string line = chan_buf_.substr(0, nl);
      chan_buf_.erase(0, nl + 1);
      if (line.empty()) continue;
      nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
      if (msg.is_discarded() || !msg.is_object())
        msg = nlohmann::json{{"type", "invalid"}, {"text", line.substr(0, 256)}};
      if (msg.value("type", "") == "stage" && msg.contains("name") && msg["name"].is_string()) {
        stage_ = msg["name"].get<std::string>();
        res_.stages.push_back(stage_);
        stage_deadline_ = Clock::now() + to_dur(stage_limit(stage_));
        continue;
      }
      res_.messages.push_back(msg);
      if (opts_.on_message && !killed_by_us_) {
        try {
          opts_.on_message(res_.messages.back(), pchan);
        } catch (const std::exception& e) {
          kill_for(fmt::format("the parent's message handler failed: {}", e.what()));
        }
      }
    }
  }

  template <class Sink>
  static void drain(int fd, bool& open, Sink&& sink) {
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
  }

  void drain_all(ParentChannel& pchan) {
    if (open_out_) drain(out_r_, open_out_, [&](const char* p, std::size_t n) { out_.add(p, n); });
    if (open_err_) drain(err_r_, open_err_, [&](const char* p, std::size_t n) { err_.add(p, n); });
    if (open_rep_) drain(rep_r_, open_rep_, [&](const char* p, std::size_t n) { rep_buf_.append(p, n); });
    if (open_chan_)
      drain(chan_p_, open_chan_, [&](const char* p, std::size_t n) {
        chan_total_ += n;
        if (chan_total_ > opts_.channel_limit_bytes) {
          if (!killed_by_us_)
            kill_for(fmt::format("the child sent more than {} bytes over the channel", opts_.channel_limit_bytes));
          return;
        }
        chan_buf_.append(p, n);
        handle_chan_lines(pchan);
      });
  }

  /// Fires the first deadline that passed (or the cancel flag).
  void check_deadlines(Clock::time_point now, Clock::time_point total_deadline) {
    if (killed_by_us_) return;
    if (now >= stage_deadline_) {
      res_.timed_out = true;
      res_.timeout_stage = stage_;
      kill_for(fmt::format("stage '{}' exceeded its {:g} s deadline", stage_, stage_limit(stage_)));
    } else if (opts_.cancel && opts_.cancel->load()) {
      kill_for("cancelled by the parent");
    } else if (opts_.total_timeout > 0 && now >= total_deadline) {
      res_.timed_out = true;
      res_.timeout_stage = "total";
      kill_for(fmt::format("the run exceeded its total deadline of {:g} s (in stage '{}')", opts_.total_timeout, stage_));
    }
  }

  void watch() {
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
    out_ = Tail(opts_.output_tail_bytes, opts_.output_head_bytes);
    err_ = Tail(opts_.output_tail_bytes, opts_.output_head_bytes);
    ParentChannel pchan(chan_p_);
    stage_deadline_ = Clock::now() + to_dur(stage_limit(stage_));
    const bool has_total = opts_.total_timeout > 0;
    const Clock::time_point total_deadline = t0_ + to_dur(opts_.total_timeout);
    bool exited = false;
    while (!exited) {
      auto now = Clock::now();
      check_deadlines(now, total_deadline);
      Clock::time_point next = stage_deadline_;
      if (has_total) next = std::min(next, total_deadline);
      auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
      int timeout_ms = static_cast<int>(std::clamp<long long>(wait_ms, 0, pidfd >= 0 ? 1000 : 20));
      if (killed_by_us_) timeout_ms = 20;
      pollfd pfds[5];
      int n = 0;
      if (open_out_) pfds[n++] = {out_r_, POLLIN, 0};
      if (open_err_) pfds[n++] = {err_r_, POLLIN, 0};
      if (open_rep_) pfds[n++] = {rep_r_, POLLIN, 0};
      if (open_chan_) pfds[n++] = {chan_p_, POLLIN, 0};
      if (pidfd >= 0) pfds[n++] = {pidfd, POLLIN, 0};
      int pr = poll(pfds, static_cast<nfds_t>(n), timeout_ms);
      if (pr < 0 && errno != EINTR) break;
      drain_all(pchan);
      // Exited but not reaped: the process group id cannot be reused yet, so killing the group
      // (stragglers that outlived A) is safe.
      siginfo_t si{};
      if (waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid_)
        exited = true;
    }
    kill_group();
    while (waitpid(pid_, &a_status_, 0) < 0 && errno == EINTR) {
    }
    if (pidfd >= 0) close(pidfd);
    // Everything in the group is dead; collect what is still buffered (bounded wait in case a
    // process escaped the group and holds a pipe).
    const auto drain_end = Clock::now() + std::chrono::milliseconds(500);
    while ((open_out_ || open_err_ || open_rep_ || open_chan_) && Clock::now() < drain_end) {
      pollfd pfds[4];
      int n = 0;
      if (open_out_) pfds[n++] = {out_r_, POLLIN, 0};
      if (open_err_) pfds[n++] = {err_r_, POLLIN, 0};
      if (open_rep_) pfds[n++] = {rep_r_, POLLIN, 0};
      if (open_chan_) pfds[n++] = {chan_p_, POLLIN, 0};
      poll(pfds, static_cast<nfds_t>(n), 50);
      drain_all(pchan);
    }
    if (!chan_buf_.empty()) {
      chan_buf_ += "\n";
      handle_chan_lines(pchan);
    }
    for (int fd : {out_r_, err_r_, rep_r_, chan_p_}) close(fd);
  }

  // ---- report: the layers the child applied, how the program ended ----
  /// Reads the child's report lines; returns the program's wait status (-1: none) and sets
  /// `fatal` for a set-up step that failed.
  int read_child_report(std::string& fatal) {
    int prog_status = -1;
    std::size_t start = 0;
    while (start < rep_buf_.size()) {
      std::size_t nl = rep_buf_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = rep_buf_.substr(start, nl - start);
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
        if (std::find(res_.layers.begin(), res_.layers.end(), body) == res_.layers.end()) res_.layers.push_back(body);
      } else if (kind == '-') {
        res_.layers_skipped.push_back(fmt::format("{}: {}", body, describe_errno(err)));
      } else if (kind == '!') {
        fatal = fmt::format("sandbox set-up failed at {}: {}", body, describe_errno(err));
        if (body == "exec")
          fatal += fmt::format(" (running {}{})", plan_.exe, drop_ ? fmt::format(" as uid {}", opts_.uid) : "");
      } else if (kind == '=') {
        prog_status = std::atoi(body.c_str());
      }
    }
    // A layer reported skipped after a partial success is not applied.
    for (const std::string& s : res_.layers_skipped) {
      std::string name = s.substr(0, s.find(':'));
      if (name == "fs_readonly" || name == "seccomp" || name == "no_new_privs")
        res_.layers.erase(std::remove(res_.layers.begin(), res_.layers.end(), name), res_.layers.end());
    }
    if (res_.sandbox == "mount_namespace" &&
        std::find(res_.layers.begin(), res_.layers.end(), "fs_readonly") == res_.layers.end())
      res_.sandbox = "none";
    return prog_status;
  }

  /// bubblewrap that fails to build the sandbox exits with 1 and a "bwrap: " line before the
  /// program ever ran (the program's own output cannot come first).
  bool bwrap_refused(int code) const {
    return fsmode_ == FsIsolation::bwrap && code == 1 && err_.first_bytes().rfind("bwrap: ", 0) == 0;
  }

  void report() {
    std::string fatal;
    const int prog_status = read_child_report(fatal);
    res_.stdout_tail = out_.str();
    res_.stderr_tail = err_.str();
    res_.stdout_head = out_.head;
    res_.stderr_head = err_.head;
    res_.stdout_bytes = out_.total;
    res_.stderr_bytes = err_.total;
    res_.last_stage = stage_;
    res_.wall_seconds = std::chrono::duration<double>(Clock::now() - t0_).count();

    if (res_.timed_out) {
      res_.status = Status::TIMEOUT;
      res_.cause = kill_reason_;
      return;
    }
    if (killed_by_us_) {
      res_.status = Status::RUNTIME_ERROR;
      res_.cause = kill_reason_;
      return;
    }
    if (!fatal.empty()) {
      res_.status = Status::RUNTIME_ERROR;
      res_.setup_failed = true;
      res_.cause = fatal;
      return;
    }
    int code = -1, sig = 0;
    if (prog_status >= 0) {
      if (WIFEXITED(prog_status)) code = WEXITSTATUS(prog_status);
      else if (WIFSIGNALED(prog_status)) sig = WTERMSIG(prog_status);
    } else if (WIFEXITED(a_status_)) {
      int c = WEXITSTATUS(a_status_);
      if (c > 128 && c < 128 + 65) sig = c - 128;
      else code = c;
    } else if (WIFSIGNALED(a_status_)) {
      sig = WTERMSIG(a_status_);
    }
    // bubblewrap reports a signal death as exit code 128 + signal.
    if (fsmode_ == FsIsolation::bwrap && code > 128 && code < 128 + 65) {
      sig = code - 128;
      code = -1;
    }
    if (bwrap_refused(code)) {
      const std::string first = err_.first_bytes();
      res_.status = Status::RUNTIME_ERROR;
      res_.setup_failed = true;
      res_.cause = fmt::format("sandbox set-up failed: {}", first.substr(0, first.find('\n')));
      return;
    }
    if (sig) {
      res_.signal = sig;
      res_.signal_name = signal_name(sig);
      res_.status = Status::RUNTIME_ERROR;
      res_.cause = signal_cause(sig);
    } else {
      res_.exit_code = code;
      res_.status = code == 0 ? Status::PASSED : Status::RUNTIME_ERROR;
      res_.cause = fmt::format("exited with code {}", code);
    }
  }

  const std::vector<std::string>& argv_;
  SandboxOptions opts_;
  ProcessResult res_;
  const Clock::time_point t0_ = Clock::now();
  bool root_ = false, drop_ = false;
  fs::path scratch_, workdir_;
  bool own_scratch_ = false;
  std::map<std::string, std::string> env_;
  std::vector<fs::path> ro_paths_, rw_paths_;
  FsIsolation fsmode_ = FsIsolation::none;
  std::string exe_;
  std::vector<std::string> exec_argv_;
  ChildPlan plan_;
  std::deque<std::string> strings_;  // owns what plan_'s char* point to (stable addresses)

  pid_t pid_ = -1;
  int a_status_ = 0;
  int out_r_ = -1, err_r_ = -1, rep_r_ = -1, chan_p_ = -1;
  bool open_out_ = true, open_err_ = true, open_rep_ = true, open_chan_ = true;
  Tail out_, err_;
  std::string rep_buf_, chan_buf_;
  std::uint64_t chan_total_ = 0;
  std::string stage_ = "start";
  Clock::time_point stage_deadline_;
  bool killed_by_us_ = false;
  std::string kill_reason_;
};

}  // namespace

ProcessResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& opts) {
  if (argv.empty()) throw std::runtime_error("run_sandboxed: empty argv");
  return SandboxRun(argv, opts).run();
}

}  // namespace d2k
