#pragma once
// Helpers of the agent tests: a temporary folder, running d2k as a process, reading files.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace d2k::agent::testing {

namespace fs = std::filesystem;

inline const fs::path kSource = D2K_SOURCE_DIR;
inline const fs::path kD2k = fs::path(D2K_BINARY_DIR) / "src" / "cli" / "d2k";
inline const fs::path kDataset = kSource / "dataset";
inline const fs::path kFakes = kSource / "tests" / "fixtures" / "fake_agent";

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("d2k-agent-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// Runs argv with `env` added, output (stdout+stderr) into `log`; returns the exit status.
inline int run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    FILE* f = std::freopen(log.c_str(), "a", stdout);
    (void)f;
    ::dup2(1, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Starts argv in the background (same conventions as run); returns its pid.
inline pid_t start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                   const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    FILE* f = std::freopen(log.c_str(), "a", stdout);
    (void)f;
    ::dup2(1, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}

/// Polls `pred` every 50 ms for up to `seconds`.
template <class F>
bool wait_for(F pred, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

}  // namespace d2k::agent::testing
