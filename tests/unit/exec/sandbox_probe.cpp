// A program that misbehaves on request, run by the sandbox tests inside run_sandboxed.
// Usage: sandbox_probe MODE [ARGS...]; results go to the parent over the worker channel.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "exec/worker.h"

namespace {

d2k::WorkerChannel channel() {
  auto ch = d2k::WorkerChannel::from_environment();
  if (!ch) {
    std::fprintf(stderr, "sandbox_probe: no channel (%s unset)\n", d2k::kChannelFdEnv);
    std::exit(90);
  }
  return *ch;
}

void report(const nlohmann::json& j) { channel().send(j); }

int try_create(const char* path) {
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) return errno;
  int e = write(fd, "x", 1) == 1 ? 0 : errno;
  close(fd);
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 91;
  const std::string mode = argv[1];
  auto arg = [&](int i, const char* dflt) { return std::string(argc > i ? argv[i] : dflt); };

  if (mode == "exit") return std::atoi(arg(2, "0").c_str());
  if (mode == "segv") {
    volatile int* p = nullptr;
    *p = 1;
    return 0;
  }
  if (mode == "abort") std::abort();
  if (mode == "sleep") {
    sleep(static_cast<unsigned>(std::atoi(arg(2, "100").c_str())));
    return 0;
  }
  if (mode == "stage") {  // stage NAME SECONDS
    channel().stage(arg(2, "check"));
    sleep(static_cast<unsigned>(std::atoi(arg(3, "100").c_str())));
    return 0;
  }
  if (mode == "echo") {  // one round trip through the parent's on_message handler
    auto ch = channel();
    ch.stage("check");
    ch.send({{"type", "hello"}, {"value", 41}});
    auto reply = ch.receive(10.0);
    ch.send({{"type", "echoed"}, {"reply", reply ? *reply : nlohmann::json()}});
    return 0;
  }
  if (mode == "threads") {  // threads N: "before", then N sleeping threads and "after"; each answered
    auto ch = channel();
    ch.send({{"type", "before"}});
    if (!ch.receive(10.0)) return 92;
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int i = 0; i < std::atoi(arg(2, "3").c_str()); ++i)
      ts.emplace_back([&] {
        while (!stop) usleep(1000);
      });
    ch.send({{"type", "after"}});
    ch.receive(10.0);
    stop = true;
    for (auto& t : ts) t.join();
    return 0;
  }
  if (mode == "ids") {
    utsname u{};
    uname(&u);
    char cwd[4096] = {0};
    if (!getcwd(cwd, sizeof(cwd))) cwd[0] = 0;
    const char* home = std::getenv("HOME");
    std::string capeff;
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof(line), f))
        if (std::strncmp(line, "CapEff:", 7) == 0) capeff = std::string(line + 7);
      std::fclose(f);
    }
    while (!capeff.empty() && (capeff.back() == '\n' || capeff.back() == ' ')) capeff.pop_back();
    while (!capeff.empty() && (capeff.front() == '\t' || capeff.front() == ' ')) capeff.erase(0, 1);
    report({{"type", "ids"}, {"uid", getuid()}, {"gid", getgid()}, {"pid", getpid()}, {"capeff", capeff},
            {"hostname", u.nodename}, {"cwd", cwd}, {"home", home ? home : ""},
            {"user", std::getenv("USER") ? std::getenv("USER") : ""},
            {"threads", d2k::count_threads()}});
    return 0;
  }
  if (mode == "socket") {
    auto attempt = [](int family) {
      int s = socket(family, SOCK_STREAM, 0);
      if (s < 0) return errno;
      close(s);
      return 0;
    };
    report({{"type", "socket"}, {"inet", attempt(AF_INET)}, {"inet6", attempt(AF_INET6)},
            {"unix", attempt(AF_UNIX)}, {"netlink", [] {
               int s = socket(AF_NETLINK, SOCK_RAW, 0);
               if (s < 0) return errno;
               close(s);
               return 0;
             }()}});
    return 0;
  }
  if (mode == "connect") {  // with seccomp off: only the network namespace stands in the way
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int e = 0;
    if (s < 0) {
      e = errno;
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(53);
      inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
      e = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 ? 0 : errno;
      close(s);
    }
    report({{"type", "connect"}, {"errno", e}});
    return 0;
  }
  if (mode == "write") {  // write PATH...: errno per path (0: written)
    nlohmann::json r = {{"type", "write"}, {"results", nlohmann::json::object()}};
    for (int i = 2; i < argc; ++i) r["results"][argv[i]] = try_create(argv[i]);
    report(r);
    return 0;
  }
  if (mode == "read") {  // read PATH...: the first bytes of each, or its errno
    nlohmann::json r = {{"type", "read"}, {"results", nlohmann::json::object()}};
    for (int i = 2; i < argc; ++i) {
      int fd = open(argv[i], O_RDONLY);
      if (fd < 0) {
        r["results"][argv[i]] = errno;
        continue;
      }
      char buf[256];
      ssize_t n = read(fd, buf, sizeof(buf));
      r["results"][argv[i]] = n < 0 ? std::string("read failed") : std::string(buf, static_cast<std::size_t>(n));
      close(fd);
    }
    report(r);
    return 0;
  }
  if (mode == "spew_lines") {  // spew_lines N: "line 1" ... "line N" to stdout
    const long n = std::atol(arg(2, "1000").c_str());
    for (long i = 1; i <= n; ++i) std::printf("line %ld\n", i);
    std::fflush(stdout);
    return 0;
  }
  if (mode == "comm") {  // name this thread through /proc, as the CUDA driver does at cuInit
    std::string path = "/proc/self/task/" + std::to_string(gettid()) + "/comm";
    int fd = open(path.c_str(), O_WRONLY);
    int e = fd < 0 ? errno : (write(fd, "d2k-probe", 9) == 9 ? 0 : errno);
    if (fd >= 0) close(fd);
    report({{"type", "comm"}, {"errno", e}});
    return 0;
  }
  if (mode == "procmem") {
    int fd = open("/proc/self/mem", O_RDWR);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) close(fd);
    report({{"type", "procmem"}, {"errno", e}});
    return 0;
  }
  if (mode == "forkbomb") {  // forkbomb MAX: fork until refused (children wait to be killed)
    const int max = std::atoi(arg(2, "1000").c_str());
    int n = 0, e = 0;
    for (; n < max; ++n) {
      pid_t p = fork();
      if (p < 0) {
        e = errno;
        break;
      }
      if (p == 0) {
        pause();
        _exit(0);
      }
    }
    report({{"type", "forkbomb"}, {"forked", n}, {"errno", e}});
    return 0;
  }
  if (mode == "ptrace") {
    long r = ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr);
    report({{"type", "ptrace"}, {"result", r}, {"errno", r < 0 ? errno : 0}});
    return 0;
  }
  if (mode == "spew") {  // spew BYTES to stdout
    const long n = std::atol(arg(2, "1000000").c_str());
    std::string chunk(4096, 'x');
    for (long done = 0; done < n; done += static_cast<long>(chunk.size()))
      std::fwrite(chunk.data(), 1, std::min<long>(static_cast<long>(chunk.size()), n - done), stdout);
    std::fflush(stdout);
    return 0;
  }
  if (mode == "flood") {  // more than the channel may carry
    auto ch = channel();
    std::string big(1 << 20, 'y');
    for (int i = 0; i < 1024; ++i)
      if (!ch.send({{"type", "flood"}, {"data", big}})) break;
    return 0;
  }
  if (mode == "orphan") {  // leaves a child that holds stdout open for 100 s
    if (fork() == 0) {
      sleep(100);
      _exit(0);
    }
    return 0;
  }
  if (mode == "lockdown") {  // lockdown WHAT: install the worker filter, then try WHAT
    std::string err = d2k::lock_down_worker();
    if (!err.empty()) {
      std::fprintf(stderr, "lockdown failed: %s\n", err.c_str());
      return 92;
    }
    const std::string what = arg(2, "thread");
    if (what == "thread") {
      int v = 0;
      std::thread t([&] { v = 7; });
      t.join();
      report({{"type", "thread"}, {"value", v}, {"threads", d2k::count_threads()}});
      return 0;
    }
    if (what == "fork") {
      pid_t p = fork();  // the filter kills the process here
      if (p == 0) _exit(0);
      report({{"type", "fork"}, {"errno", p < 0 ? errno : 0}});
      return 0;
    }
    if (what == "mprotect") {  // a read-only page made writable by a raw system call, as the #24 exploit did
      void* page = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      const long rw = syscall(SYS_mprotect, page, 4096, PROT_READ | PROT_WRITE);
      const int rw_errno = rw < 0 ? errno : 0;
      const long ro = syscall(SYS_mprotect, page, 4096, PROT_NONE);  // taking rights away stays allowed
      report({{"type", "mprotect"}, {"write_errno", rw_errno}, {"none_rc", ro}});
      return 0;
    }
    if (what == "procmem") {  // /proc/self/mem opened for writing
      const int fd = open("/proc/self/mem", O_RDWR);
      const int err = fd < 0 ? errno : 0;
      const int rd = open("/proc/self/maps", O_RDONLY);
      report({{"type", "procmem"}, {"errno", err}, {"read_ok", rd >= 0}});
      return 0;
    }
    if (what == "malloc") {  // threads and their allocations still work (glibc falls back from mprotect)
      std::size_t got = 0;
      std::vector<std::thread> ts;
      std::atomic<std::size_t> sum{0};
      for (int i = 0; i < 3; ++i)
        ts.emplace_back([&] {
          std::vector<std::vector<char>> v;
          for (int k = 0; k < 200; ++k) v.emplace_back(std::size_t(64) << 10, 'x');
          sum += v.size();
        });
      for (auto& t : ts) t.join();
      got = sum;
      report({{"type", "malloc"}, {"blocks", got}});
      return 0;
    }
    if (what == "exec") {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      report({{"type", "exec"}, {"errno", errno}});
      return 0;
    }
    return 93;
  }
  std::fprintf(stderr, "sandbox_probe: unknown mode %s\n", mode.c_str());
  return 94;
}
