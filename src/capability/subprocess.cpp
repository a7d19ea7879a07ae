// run_tool: fork/exec with two pipes drained by poll() until both close or the deadline passes.
#include "capability/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace d2k::capability {

ToolResult run_tool(const std::vector<std::string>& argv, double timeout_s, std::size_t max_out_bytes) {
  if (argv.empty()) throw std::runtime_error("run_tool: empty argv");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  ToolResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& dst = i == 0 ? r.out : r.err;
      const std::size_t cap = i == 0 ? max_out_bytes : 65536;
      if (dst.size() < cap) dst.append(buf, std::min<std::size_t>(static_cast<std::size_t>(got), cap - dst.size()));
      else if (i == 0) r.truncated = true;
    }
    if (r.truncated) break;
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (r.timed_out || r.truncated) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && !r.timed_out && !r.truncated) r.exit_code = WEXITSTATUS(status);
  return r;
}

}  // namespace d2k::capability
