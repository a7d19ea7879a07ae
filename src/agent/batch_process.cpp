#include "agent/batch_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace d2k::agent {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The environment of the child: ours with `add` set on top, as "K=V" strings.
std::vector<std::string> child_env(const std::map<std::string, std::string>& add) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq && add.count(std::string(*e, static_cast<std::size_t>(eq - *e)))) continue;
    out.emplace_back(*e);
  }
  for (const auto& [k, v] : add) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

/// In the child, between fork and exec: only async-signal-safe calls. Reports errno on `err_fd`
/// and exits 127 when anything fails.
[[noreturn]] void child(const ProcessSpec& spec, char** argv, char** envp, int err_fd, pid_t parent) {
  auto fail = [&](int code) {
    ssize_t n = ::write(err_fd, &code, sizeof code);
    (void)n;
    ::_exit(127);
  };
  ::setpgid(0, 0);
  // The agent must not outlive a runner that was killed outright; its group is also recorded.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) fail(errno);
  const int in = ::open(spec.stdin_file.empty() ? "/dev/null" : spec.stdin_file.c_str(), O_RDONLY);
  if (in < 0) fail(errno);
  const int out = spec.log.empty() ? ::open("/dev/null", O_WRONLY)
                                   : ::open(spec.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out < 0) fail(errno);
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) fail(errno);
  ::execvpe(argv[0], argv, envp);
  fail(errno);
  ::_exit(127);  // not reached: fail exits
}

}  // namespace

void kill_group(int pgid) {
  if (pgid > 1) ::kill(-pgid, SIGKILL);
}

ProcessResult run_process(const ProcessSpec& spec, const std::atomic<bool>* stop,
                          const std::function<void(int)>& started) {
  ProcessResult r;
  std::vector<std::string> args = spec.argv, env = child_env(spec.env);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  int pipe_fd[2];
  if (::pipe2(pipe_fd, O_CLOEXEC) != 0) {
    r.spawn_error = std::strerror(errno);
    return r;
  }
  const pid_t parent = ::getpid();
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.spawn_error = std::strerror(errno);
    ::close(pipe_fd[0]), ::close(pipe_fd[1]);
    return r;
  }
  if (pid == 0) child(spec, argv.data(), envp.data(), pipe_fd[1], parent);
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  ::close(pipe_fd[1]);
  int code = 0;
  const ssize_t n = ::read(pipe_fd[0], &code, sizeof code);  // EOF at a successful exec
  ::close(pipe_fd[0]);
  if (n == static_cast<ssize_t>(sizeof code)) {
    ::waitpid(pid, nullptr, 0);
    r.spawn_error = std::strerror(code);
    r.wall_s = since(t0);
    return r;
  }
  r.started = true;
  r.pgid = pid;
  if (started) started(pid);

  int status = 0;
  bool term_sent = false;
  Clock::time_point term_at{};
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    const bool over = spec.wall_s > 0 && since(t0) > spec.wall_s;
    const bool asked = stop && stop->load();
    if (!term_sent && (over || asked)) {
      r.timed_out = over && !asked;
      r.stopped = asked;
      ::kill(-pid, SIGTERM);
      term_sent = true;
      term_at = Clock::now();
    } else if (term_sent && since(term_at) > spec.grace_s) {
      ::kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.wall_s = since(t0);
  ::kill(-pid, SIGKILL);  // what the leader left behind in its group
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.signal_by_runner = term_sent && (r.signal == SIGTERM || r.signal == SIGKILL);
  }
  return r;
}

}  // namespace d2k::agent
