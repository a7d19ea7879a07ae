#include "exec/seccomp_policy.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace d2k {

namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx c) const { seccomp_release(c); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

Ctx make_ctx() {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) throw std::runtime_error("seccomp_init failed");
  return ctx;
}

/// Adds a rule; a syscall unknown to this libseccomp/kernel is skipped (nothing to block).
void rule(scmp_filter_ctx ctx, std::uint32_t action, const char* name, unsigned argc = 0,
          const scmp_arg_cmp* args = nullptr) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return;
  int rc = seccomp_rule_add_array(ctx, action, nr, argc, args);
  if (rc < 0 && rc != -EEXIST)
    throw std::runtime_error(fmt::format("seccomp rule for {}: {}", name, std::strerror(-rc)));
}

const std::vector<std::string> kKilled = {
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf", "perf_event_open",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
    "fsconfig", "fspick", "mount_setattr", "setns", "unshare", "swapon", "swapoff", "reboot",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "keyctl", "add_key",
    "request_key", "userfaultfd", "iopl", "ioperm", "acct", "quotactl", "quotactl_fd", "syslog",
    "vhangup", "lookup_dcookie", "fanotify_init", "open_by_handle_at", "name_to_handle_at",
    "process_madvise"};

void add_baseline(scmp_filter_ctx ctx) {
  for (const std::string& s : kKilled) rule(ctx, SCMP_ACT_KILL_PROCESS, s.c_str());
  // Sockets: AF_UNIX only (the CUDA driver may talk to the persistence daemon over one).
  scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
  rule(ctx, SCMP_ACT_ERRNO(EACCES), "socket", 1, &not_unix);
  rule(ctx, SCMP_ACT_ERRNO(EACCES), "socketpair", 1, &not_unix);
  // Leaving the process group would escape the parent's group kill.
  rule(ctx, SCMP_ACT_ERRNO(EPERM), "setsid");
  rule(ctx, SCMP_ACT_ERRNO(EPERM), "setpgid");
  // io_uring submits system calls the filter never sees.
  rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "io_uring_setup");
  rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "io_uring_enter");
  rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "io_uring_register");
  // personality(0xffffffff) only queries; anything else could turn off ASLR.
  scmp_arg_cmp not_query = SCMP_A0(SCMP_CMP_NE, 0xffffffffu);
  rule(ctx, SCMP_ACT_ERRNO(EPERM), "personality", 1, &not_query);
  // Pushing characters into a terminal's input queue.
  scmp_arg_cmp tiocsti = SCMP_A1(SCMP_CMP_EQ, TIOCSTI);
  rule(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &tiocsti);
}

}  // namespace


std::vector<std::uint8_t> baseline_seccomp_bpf() {
  Ctx ctx = make_ctx();
  add_baseline(ctx.get());
  int fd = memfd_create("d2k-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("memfd_create: {}", std::strerror(errno)));
  int rc = seccomp_export_bpf(ctx.get(), fd);
  if (rc < 0) {
    close(fd);
    throw std::runtime_error(fmt::format("seccomp_export_bpf: {}", std::strerror(-rc)));
  }
  off_t size = lseek(fd, 0, SEEK_END);
  std::vector<std::uint8_t> bpf(static_cast<std::size_t>(size > 0 ? size : 0));
  lseek(fd, 0, SEEK_SET);
  std::size_t got = 0;
  while (got < bpf.size()) {
    ssize_t n = read(fd, bpf.data() + got, bpf.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  if (got != bpf.size() || bpf.empty()) throw std::runtime_error("seccomp: could not read the exported filter");
  return bpf;
}

std::string install_lockdown_filter(const LockdownOptions& opts) {
  try {
    Ctx ctx = make_ctx();
    if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1) < 0) return "seccomp: TSYNC unsupported";
    if (opts.deny_exec) {
      rule(ctx.get(), SCMP_ACT_KILL_PROCESS, "execve");
      rule(ctx.get(), SCMP_ACT_KILL_PROCESS, "execveat");
    }
    if (opts.deny_fork) {
      rule(ctx.get(), SCMP_ACT_KILL_PROCESS, "fork");
      rule(ctx.get(), SCMP_ACT_KILL_PROCESS, "vfork");
      scmp_arg_cmp no_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
      rule(ctx.get(), SCMP_ACT_KILL_PROCESS, "clone", 1, &no_thread);
      // clone3 passes its flags in memory, which a filter cannot read; glibc falls back to
      // clone when it reports ENOSYS, so threads still start.
      rule(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), "clone3");
    }
    if (opts.deny_sockets) {
      rule(ctx.get(), SCMP_ACT_ERRNO(EACCES), "socket");
      rule(ctx.get(), SCMP_ACT_ERRNO(EACCES), "socketpair");
    }
    if (opts.deny_exec_memory) {
      scmp_arg_cmp prot_exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC);
      rule(ctx.get(), SCMP_ACT_ERRNO(EPERM), "mprotect", 1, &prot_exec);
      rule(ctx.get(), SCMP_ACT_ERRNO(EPERM), "pkey_mprotect", 1, &prot_exec);
      scmp_arg_cmp anon_exec[2] = {SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC),
                                   SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS)};
      rule(ctx.get(), SCMP_ACT_ERRNO(EPERM), "mmap", 2, anon_exec);
    }
    if (opts.deny_protection_changes) {
      for (int bit : {PROT_WRITE, PROT_EXEC}) {
        scmp_arg_cmp asks = SCMP_A2(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(bit), static_cast<scmp_datum_t>(bit));
        rule(ctx.get(), SCMP_ACT_ERRNO(EPERM), "mprotect", 1, &asks);
        rule(ctx.get(), SCMP_ACT_ERRNO(EPERM), "pkey_mprotect", 1, &asks);
      }
      rule(ctx.get(), SCMP_ACT_ERRNO(EPERM), "mseal");
    }
    if (opts.deny_open_for_write) {
      for (int mode : {O_WRONLY, O_RDWR}) {
        scmp_arg_cmp open_mode = SCMP_A1(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(O_ACCMODE), static_cast<scmp_datum_t>(mode));
        scmp_arg_cmp openat_mode = SCMP_A2(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(O_ACCMODE), static_cast<scmp_datum_t>(mode));
        rule(ctx.get(), SCMP_ACT_ERRNO(EACCES), "open", 1, &open_mode);
        rule(ctx.get(), SCMP_ACT_ERRNO(EACCES), "openat", 1, &openat_mode);
      }
      // openat2 passes its flags in memory, which a filter cannot read.
      rule(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), "openat2");
    }
    int rc = seccomp_load(ctx.get());
    if (rc < 0) return fmt::format("seccomp_load: {}", std::strerror(-rc));
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace d2k
