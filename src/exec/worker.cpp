#include "exec/worker.h"

#include <dirent.h>
#include <link.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>


namespace d2k {

std::optional<WorkerChannel> WorkerChannel::from_environment() {
  const char* v = std::getenv(kChannelFdEnv);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long fd = std::strtol(v, &end, 10);
  if (*end != 0 || fd < 0 || fd > 65535) return std::nullopt;
  return WorkerChannel(static_cast<int>(fd));
}

bool WorkerChannel::send(const nlohmann::json& msg) {
  std::string line = msg.dump() + "\n";
  std::size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

bool WorkerChannel::stage(std::string_view name) {
  return send(nlohmann::json{{"type", "stage"}, {"name", std::string(name)}});
}

std::optional<nlohmann::json> WorkerChannel::receive(double timeout_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  for (;;) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
      if (msg.is_discarded()) return std::nullopt;
      return msg;
    }
    int wait_ms = -1;
    if (timeout_seconds >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return std::nullopt;
      wait_ms = static_cast<int>(left);
    }
    pollfd p{fd_, POLLIN, 0};
    int pr = poll(&p, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return std::nullopt;
    char tmp[65536];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 256)];
    iovec iov{tmp, sizeof(tmp)};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(fd_, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        fds_.push_back(fd);
      }
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
  }
}

std::vector<int> WorkerChannel::take_fds(std::size_t n) {
  std::vector<int> out;
  while (out.size() < n && !fds_.empty()) {
    out.push_back(fds_.front());
    fds_.pop_front();
  }
  return out;
}

int count_threads() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

std::string lock_down_worker(const LockdownOptions& opts) {
  if (opts.deny_protection_changes) {
    // Stacks of joined threads go to glibc's cache (up to 40 MiB); a thread started later takes
    // one from it instead of mapping a new stack and mprotect-ing its guard.
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i) ts.emplace_back([] {});
    for (auto& t : ts) t.join();
  }
  return install_lockdown_filter(opts);
}

std::uint64_t relro_hash() {
  // The ranges are those of the objects loaded at the first call (the harness, CUDA, CUPTI and
  // the candidate): a library the driver loads later brings its own relro, which is not a change.
  static const std::vector<std::pair<const unsigned char*, std::size_t>> ranges = [] {
    std::vector<std::pair<const unsigned char*, std::size_t>> r;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
          auto& out = *static_cast<std::vector<std::pair<const unsigned char*, std::size_t>>*>(data);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type == PT_GNU_RELRO)
              out.emplace_back(reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr), ph.p_memsz);
          }
          return 0;
        },
        &r);
    return r;
  }();
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [p, n] : ranges)
    for (std::size_t k = 0; k < n; ++k) h = (h ^ p[k]) * 0x100000001b3ull;
  return h;
}

}  // namespace d2k
