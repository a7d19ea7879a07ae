// The worker: a claim loop per GPU, each job a `d2k run` child. The child is bound to this process
// (PR_SET_PDEATHSIG) so that a worker killed with -9 leaves no evaluation running under a lease
// it no longer holds; its job goes back to the queue when the lease expires.
#include "service/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <variant>

#include "service/job_spec.h"
#include "service/verdict.h"

namespace d2k::service {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop = true; }

/// Writes `bytes` at `root/name` for a name check_file_name() accepted; refuses to follow a link
/// or to overwrite, so nothing lands outside `root` whatever the name.
void write_job_file(const fs::path& root, const std::string& name, const std::string& bytes, const Limits& lim) {
  check_file_name(name, lim, "files[\"" + name + "\"]");
  const fs::path p = root / name;
  fs::create_directories(p.parent_path());
  const fs::path canon = fs::weakly_canonical(p.parent_path());
  const std::string r = fs::weakly_canonical(root).string();
  if (canon.string().compare(0, r.size(), r) != 0) throw std::runtime_error(name + ": outside the job folder");
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create", p.string()));
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error(fmt::format("{}: write failed", p.string()));
    }
    off += std::size_t(n);
  }
  ::close(fd);
}

/// The last `n` bytes of a file.
std::string tail(const fs::path& p, std::size_t n) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return {};
  f.seekg(0, std::ios::end);
  const auto size = std::size_t(f.tellg());
  const std::size_t from = size > n ? size - n : 0;
  f.seekg(std::streamoff(from));
  std::string s(size - from, '\0');
  f.read(s.data(), std::streamsize(s.size()));
  return s;
}

/// The last complete non-empty line of the evaluator's log: its progress line.
}  // namespace

std::string last_line(const fs::path& log) {
  std::string t = tail(log, 512);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  const auto nl = t.find_last_of("\r\n");
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

namespace {

pid_t spawn_evaluator(const WorkerConfig& cfg, const fs::path& dir, const std::string& gpu) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid > 0) return pid;
  // The child: its own process group (a timeout kills the evaluator and everything it started),
  // dies with the worker, logs to log.txt in the job folder.
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);
  if (::chdir(dir.c_str()) != 0) ::_exit(126);
  const int log = ::open("log.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log < 0) ::_exit(126);
  ::dup2(log, 1), ::dup2(log, 2);
  const int null = ::open("/dev/null", O_RDONLY);
  if (null >= 0) ::dup2(null, 0);
  ::setenv("CUDA_VISIBLE_DEVICES", gpu.c_str(), 1);
  const char* argv[] = {cfg.evaluator.c_str(), "run", "request.json", "--out", "traces.jsonl", nullptr};
  ::execv(cfg.evaluator.c_str(), const_cast<char* const*>(argv));
  ::dprintf(2, "d2k worker: cannot run the evaluator %s\n", cfg.evaluator.c_str());
  ::_exit(127);
}

/// Traces the evaluator wrote (bounded; a line that is not JSON is reported, not trusted).
json read_traces(const fs::path& p, std::size_t max_bytes, std::vector<std::string>& notes) {
  json out = json::array();
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return out;
  if (size > max_bytes) {
    notes.push_back(fmt::format("traces.jsonl: {} bytes, over the limit of {}: not read", size, max_bytes));
    return out;
  }
  std::ifstream f(p);
  int line_no = 0;
  for (std::string line; std::getline(f, line);) {
    ++line_no;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
    else notes.push_back(fmt::format("traces.jsonl:{}: not a JSON object", line_no));
  }
  return out;
}

}  // namespace

std::variant<fs::path, JobOutcome> prepare_job(const Claim& c, const WorkerConfig& cfg) {
  const Limits lim;
  const fs::path dir = fs::path(cfg.work_dir) / c.id / fmt::format("a{}", c.attempt);
  fs::remove_all(dir);
  fs::create_directories(dir / "solution");
  // The stored spec goes through the API's parser again: the folder is only written from a spec
  // that passes the same rules, whoever wrote the row.
  JobSpec spec;
  try {
    spec = spec_from_json(json::parse(c.spec_json), lim);
    for (auto& [name, bytes] : spec.files) write_job_file(dir / "solution", name, bytes, lim);
  } catch (const std::exception& e) {
    return JobOutcome{"ERROR", {{"verdict", "ERROR"}, {"message", fmt::format("the stored job is invalid: {}", e.what())}}};
  }
  std::ofstream(dir / "request.json") << eval_request(spec, cfg.dataset, fs::absolute(dir / "solution").string()).dump(2);
  return dir;
}

JobOutcome collect_job(const fs::path& dir, const Claim& c, const WorkerConfig& cfg, std::optional<int> exit_code,
                       int signal, bool timed_out, double seconds, std::vector<std::string> notes) {
  json traces = read_traces(dir / "traces.jsonl", cfg.max_traces_bytes, notes);
  const std::string verdict = timed_out ? "TIMEOUT" : verdict_for_exit(exit_code ? *exit_code : -signal);
  json result = {{"verdict", verdict},
                 {"exit_code", exit_code ? json(*exit_code) : json(nullptr)},
                 {"attempt", c.attempt},
                 {"seconds", seconds},
                 {"traces", traces},
                 {"log_tail", tail(dir / "log.txt", 4096)}};
  if (!exit_code) result["signal"] = signal;
  if (timed_out) notes.push_back(fmt::format("killed after {} s (the job's wall-time limit)", cfg.job_timeout_s));
  if (!notes.empty()) result["notes"] = notes;
  if (!cfg.keep_jobs) fs::remove_all(dir);
  return JobOutcome{verdict, result};
}

std::optional<JobOutcome> run_job(const Claim& c, const WorkerConfig& cfg, const std::string& gpu,
                                  const std::function<bool(const std::string&)>& heartbeat) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto prepared = prepare_job(c, cfg);
  if (auto* failed = std::get_if<JobOutcome>(&prepared)) return *failed;
  const fs::path dir = std::get<fs::path>(prepared);

  const pid_t pid = spawn_evaluator(cfg, dir, gpu);
  int status = 0;
  bool timed_out = false, lease_lost = false;
  auto next_beat = clock::now();
  const auto beat_every = std::chrono::duration<double>(cfg.lease_s / 3);
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    const auto now = clock::now();
    if (now >= next_beat) {
      next_beat = now + std::chrono::duration_cast<clock::duration>(beat_every);
      if (!heartbeat(last_line(dir / "log.txt"))) lease_lost = true;
    }
    if (std::chrono::duration<double>(now - t0).count() > cfg.job_timeout_s) timed_out = true;
    if (lease_lost || timed_out || g_stop) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (lease_lost || (g_stop && !timed_out)) return std::nullopt;
  const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return collect_job(dir, c, cfg, WIFEXITED(status) ? std::optional<int>(WEXITSTATUS(status)) : std::nullopt,
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0, timed_out, seconds, {});
}

void worker_loop(Store& store, const WorkerConfig& cfg, const std::string& gpu, const std::string& worker_id,
                 const std::atomic<bool>& stop) {
  while (!stop && !g_stop) {
    std::optional<Claim> c;
    try {
      c = store.claim(worker_id, cfg.lease_s);
    } catch (const std::exception& e) {
      fmt::print(stderr, "d2k worker {}: claim: {}\n", worker_id, e.what());
    }
    if (!c) {
      std::this_thread::sleep_for(std::chrono::duration<double>(cfg.poll_s));
      continue;
    }
    auto beat = [&](const std::string& progress) {
      try {
        return store.heartbeat(c->id, worker_id, c->attempt, cfg.lease_s, progress);
      } catch (const std::exception& e) {
        return true;  // the queue is busy or away: keep going, the lease decides
      }
    };
    std::optional<JobOutcome> out;
    try {
      out = run_job(*c, cfg, gpu, beat);
    } catch (const std::exception& e) {
      out = JobOutcome{"ERROR", {{"verdict", "ERROR"}, {"message", fmt::format("worker {}: {}", worker_id, e.what())}}};
    }
    if (!out) continue;
    for (int tries = 0; tries < 20; ++tries) {
      try {
        if (!store.complete(c->id, worker_id, c->attempt, out->verdict, out->result.dump()))
          fmt::print(stderr, "d2k worker {}: {} attempt {}: lease lost, result dropped\n", worker_id, c->id, c->attempt);
        break;
      } catch (const std::exception& e) {
        fmt::print(stderr, "d2k worker {}: complete {}: {} (retrying)\n", worker_id, c->id, e.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    }
  }
}

int run_workers(const WorkerConfig& cfg) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::map<pid_t, std::string> children;  // pid -> gpu
  auto start = [&](const std::string& gpu) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(0);
      int rc = 0;
      try {
        auto store = open_store(cfg.db);
        const std::string id = fmt::format("{}:{}:gpu{}", host, ::getpid(), gpu);
        fmt::print(stderr, "d2k worker {}: claiming from {}\n", id, cfg.db);
        std::atomic<bool> never{false};
        worker_loop(*store, cfg, gpu, id, never);
      } catch (const std::exception& e) {
        fmt::print(stderr, "d2k worker (gpu {}): {}\n", gpu, e.what());
        rc = 2;
      }
      ::_exit(rc);
    }
    children[pid] = gpu;
  };
  for (const auto& g : cfg.gpus) start(g);
  while (!g_stop) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = children.find(pid);
    if (it == children.end()) continue;
    const std::string gpu = it->second;
    children.erase(it);
    if (g_stop) break;
    fmt::print(stderr, "d2k worker: the process for GPU {} ended ({}); starting another\n", gpu,
               WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : fmt::format("signal {}", WTERMSIG(status)));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    start(gpu);
  }
  for (auto& [pid, gpu] : children) ::kill(pid, SIGTERM);
  for (auto& [pid, gpu] : children) ::waitpid(pid, nullptr, 0);
  return 0;
}

}  // namespace d2k::service
