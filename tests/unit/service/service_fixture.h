#pragma once
// Shared by the service tests: a temp folder, child processes (d2k serve/worker), tokens, HTTP.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "service/auth.h"
#include "service/codec.h"
#include "service/store.h"

namespace d2k::service::testing {

namespace fs = std::filesystem;

inline const std::string kD2k = D2K_BINARY_DIR "/src/cli/d2k";
inline const std::string kStub = D2K_SOURCE_DIR "/tests/unit/service/stub_evaluator.sh";
inline const std::string kDataset = D2K_SOURCE_DIR "/dataset";

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "d2k-service-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// A child process (killed with -9 when the object goes, and when the test process dies).
struct Child {
  pid_t pid = -1;
  Child() = default;
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& log) {
    const pid_t parent = ::getpid();
    pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1), ::dup2(fd, 2);
      for (auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
  }
  Child(Child&& o) noexcept : pid(o.pid) { o.pid = -1; }
  Child& operator=(Child&& o) noexcept {
    std::swap(pid, o.pid);
    return *this;
  }
  void kill9() {
    if (pid > 0) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  int terminate() {
    int st = 0;
    if (pid > 0) ::kill(pid, SIGTERM), ::waitpid(pid, &st, 0);
    pid = -1;
    return st;
  }
  ~Child() { kill9(); }
};

/// A free loopback port (bound and released; good enough for a test).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

inline bool wait_healthy(int port, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(0, 200000);
    if (auto r = c.Get("/healthz"); r && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

inline std::string add_token(Store& s, const std::string& name, int quota = 0, double rate = 0) {
  const std::string tok = new_token();
  s.add_token({sha256_hex(tok), name, quota, rate});
  return tok;
}

}  // namespace d2k::service::testing
