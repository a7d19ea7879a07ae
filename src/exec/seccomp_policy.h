#pragma once
/// The seccomp filters of the sandbox, built with libseccomp.
///
/// baseline: installed before exec in every sandboxed child (the compiler and the worker).
///   Kills the process (SIGSYS) on system calls that only an attack needs: ptrace,
///   process_vm_readv/writev, pidfd_getfd, kexec, kernel modules, bpf, perf_event_open, mount
///   and friends, setns/unshare, clock setting, keyrings, userfaultfd, iopl/ioperm, reboot,
///   swap, acct, quotactl, syslog. Fails softly (errno) where libraries probe: sockets other
///   than AF_UNIX (EACCES), setsid/setpgid (EPERM: leaving the process group), io_uring
///   (ENOSYS: it would bypass the filter), personality changes (EPERM), TIOCSTI (EPERM).
///   Threads, fork and exec stay allowed: nvcc needs them, and the CUDA driver starts threads.
/// worker lockdown (worker.h): added by the worker itself once CUDA is initialised: no exec,
///   no new processes (clone without CLONE_THREAD), clone3 -> ENOSYS so threads fall back to
///   clone, optionally no new sockets and no executable anonymous memory.
#include <cstdint>
#include <string>
#include <vector>

namespace d2k {

/// The baseline filter as a BPF program (struct sock_filter array), ready for
/// prctl(PR_SET_SECCOMP) or bubblewrap's --seccomp. Throws std::runtime_error on failure.
std::vector<std::uint8_t> baseline_seccomp_bpf();

/// What lock_down_worker forbids on top of the baseline.
struct LockdownOptions {
  bool deny_exec = true;            ///< execve, execveat: kill
  bool deny_fork = true;            ///< fork, vfork, clone without CLONE_THREAD: kill
  bool deny_sockets = true;         ///< socket, socketpair: EACCES
  bool deny_exec_memory = false;    ///< mprotect(PROT_EXEC), anonymous mmap(PROT_EXEC): EPERM
  /// mprotect/pkey_mprotect asking for PROT_WRITE or PROT_EXEC, and mseal: EPERM. A filter cannot
  /// see which mapping an address belongs to, so this refuses every such change: it is what keeps
  /// the candidate from making the GOT or the code of d2k, CUDA or CUPTI writable (issue #24).
  /// glibc copes: malloc falls back to brk or plain mmap when an arena cannot grow by mprotect,
  /// and new threads reuse cached stacks (the worker starts and joins threads before the lockdown).
  bool deny_protection_changes = true;
  /// open/openat for writing (O_WRONLY, O_RDWR): EACCES. A filter cannot read the path; this is
  /// what keeps /proc/self/mem from being opened for writing. CUDA opens its device files at
  /// initialisation, before the lockdown.
  bool deny_open_for_write = true;
};

/// Installs the lockdown filter on every thread of the calling process (TSYNC). Returns an
/// empty string on success, else why it failed.
std::string install_lockdown_filter(const LockdownOptions& opts);

}  // namespace d2k
