// d2k serve | worker | submit: the evaluation service (docs/service.md). Options here, the work
// in src/service/.
#include <fmt/core.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "engine/device_backend.h"
#include "service/api.h"
#include "service/auth.h"
#include "service/client.h"
#include "service/codec.h"
#include "service/slurm.h"
#include "service/verdict.h"
#include "service/worker.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;
using namespace d2k::service;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// "all": one worker per visible CUDA device; otherwise the list as given.
std::vector<std::string> gpu_list(const std::string& s) {
  if (s != "all") return split_list(s);
  std::vector<std::string> out;
  for (int i = 0, n = cuda_device_count(); i < n; ++i) out.push_back(std::to_string(i));
  if (out.empty()) throw std::runtime_error("--gpus all: no CUDA device visible");
  return out;
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

struct ServiceArgs {
  std::string db = "d2k-service.sqlite", listen = "127.0.0.1:8390", add_token, token_file, gpus;
  int max_attempts = 3, threads = 64, quota = 0;
  double rate = 0;
  std::size_t max_body = 16u << 20;
  WorkerConfig worker;
  // submit
  std::string dir, task, track = "cuda", targets = "solution", workloads, server, token, key, json_out;
  double timeout_s = 3600, max_time_s = 0;
  bool no_time = false, quiet = false;
  bool slurm_mode = false;
  SlurmConfig slurm;
};

void add_worker_options(CLI::App* s, ServiceArgs& a) {
  s->add_option("--evaluator", a.worker.evaluator, "binary run per job as `EXE run request.json --out traces.jsonl` (default: this d2k)");
  s->add_option("--work-dir", a.worker.work_dir, "job folders (default: ./d2k-jobs)");
  s->add_option("--lease", a.worker.lease_s, "seconds a job stays claimed without a heartbeat (default 30)")->check(CLI::PositiveNumber);
  s->add_option("--poll", a.worker.poll_s, "seconds between claims when the queue is empty (default 1)")->check(CLI::PositiveNumber);
  s->add_option("--job-timeout", a.worker.job_timeout_s, "wall seconds of one attempt before TIMEOUT (default 3600)")
      ->check(CLI::PositiveNumber);
  s->add_flag("--keep-jobs", a.worker.keep_jobs, "keep job folders after their result is written");
}

void finish_worker_config(const Globals& g, ServiceArgs& a) {
  a.worker.db = a.db;
  if (a.worker.evaluator.empty()) a.worker.evaluator = self_exe();
  if (a.worker.work_dir.empty()) a.worker.work_dir = "d2k-jobs";
  a.worker.work_dir = fs::absolute(a.worker.work_dir).string();
  if (a.worker.dataset.empty()) a.worker.dataset = fs::absolute(dataset_dir(g)).string();
}

/// Adds a token (its hash only is stored) and returns it.
std::string create_token(Store& store, const std::string& name, int quota, double rate) {
  const std::string tok = new_token();
  store.add_token({sha256_hex(tok), name, quota, rate});
  return tok;
}

int serve_main(const Globals& g, ServiceArgs& a) {
  auto store = open_store(a.db);
  if (!a.add_token.empty()) {
    fmt::print("{}\n", create_token(*store, a.add_token, a.quota, a.rate));
    return 0;
  }
  if (!a.token_file.empty() && !fs::exists(a.token_file)) {
    const std::string tok = create_token(*store, "default", a.quota, a.rate);
    std::ofstream(a.token_file) << tok << "\n";
    fs::permissions(a.token_file, fs::perms::owner_read | fs::perms::owner_write);
    fmt::print(stderr, "d2k serve: a new token is in {}\n", a.token_file);
  }
  // Block the stop signals in every thread; one thread waits for them and stops the server.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pid_t workers = -1;
  if (!a.gpus.empty()) {
    finish_worker_config(g, a);
    a.worker.gpus = gpu_list(a.gpus);
    const pid_t parent = ::getpid();
    workers = ::fork();
    if (workers == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(0);
      ::_exit(run_workers(a.worker));
    }
  }
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  ServerConfig cfg;
  cfg.dataset = fs::absolute(dataset_dir(g)).string();
  cfg.max_attempts = a.max_attempts;
  cfg.threads = a.threads;
  cfg.limits.max_body_bytes = a.max_body;
  ApiServer server(*store, cfg);
  const auto colon = a.listen.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("--listen: expected HOST:PORT");
  const int port = server.bind(a.listen.substr(0, colon), std::stoi(a.listen.substr(colon + 1)));
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_set, &sig);
    server.stop();
  });
  waiter.detach();
  fmt::print(stderr, "d2k serve: listening on {}:{} (queue {}, dataset {})\n", a.listen.substr(0, colon), port, a.db,
             cfg.dataset);
  const bool ok = server.serve();
  if (workers > 0) {
    ::kill(workers, SIGTERM);
    ::waitpid(workers, nullptr, 0);
  }
  return ok ? 0 : 2;
}

std::atomic<bool> g_slurm_stop{false};

int slurm_main(ServiceArgs& a) {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_slurm_stop = true; };
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  auto store = open_store(a.db);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string id = fmt::format("{}:{}:slurm", host, ::getpid());
  fmt::print(stderr, "d2k worker {}: placing evaluations from {} on Slurm\n", id, a.db);
  slurm_loop(*store, a.worker, a.slurm, id, g_slurm_stop);
  return 0;
}

std::string read_token(const ServiceArgs& a) {
  if (!a.token.empty()) return a.token;
  if (const char* t = std::getenv("D2K_TOKEN"); t && *t) return t;
  if (!a.token_file.empty()) {
    std::ifstream f(a.token_file);
    std::string t;
    if (!(f >> t)) throw std::runtime_error("--token-file " + a.token_file + ": cannot read a token");
    return t;
  }
  throw std::runtime_error("no token: give --token, --token-file or $D2K_TOKEN");
}

}  // namespace

void add_service(CLI::App& app, Globals& g, Runner& run) {
  static ServiceArgs a;

  auto* serve = app.add_subcommand("serve", "the evaluation service: HTTP API over a durable queue (docs/service.md)");
  serve->add_option("--db", a.db, "the queue: a SQLite file (default d2k-service.sqlite) or postgresql://...");
  serve->add_option("--listen", a.listen, "HOST:PORT (default 127.0.0.1:8390; port 0: any free port)");
  serve->add_option("--gpus", a.gpus, "also run workers here: all (one per visible GPU) or a list 0,1,...");
  serve->add_option("--max-attempts", a.max_attempts, "attempts per job before RUNTIME_ERROR (default 3)")->check(CLI::Range(1, 100));
  serve->add_option("--threads", a.threads, "connections served at once (default 64)")->check(CLI::Range(2, 4096));
  serve->add_option("--max-body", a.max_body, "largest request body in bytes (default 16 MiB)");
  serve->add_option("--token-file", a.token_file, "create a token into this file when it does not exist");
  serve->add_option("--add-token", a.add_token, "add a token with this name, print it and exit");
  serve->add_option("--quota", a.quota, "with a new token: evaluations queued or running at once (0: no limit)");
  serve->add_option("--rate", a.rate, "with a new token: submissions per minute (0: no limit)");
  add_worker_options(serve, a);
  serve->callback([&] { run = [&] { return serve_main(g, a); }; });

  auto* worker = app.add_subcommand("worker", "claim evaluations from the queue: one process per GPU, each job a `d2k run`");
  worker->add_option("--db", a.db, "the queue (as d2k serve --db)");
  worker->add_option("--gpus", a.gpus, "all, or the CUDA_VISIBLE_DEVICES value of each worker process: 0,1,...");
  worker->add_flag("--slurm", a.slurm_mode, "place each evaluation as a Slurm job (--gres=gpu:1) instead of running it here");
  worker->add_option("--slurm-max", a.slurm.max_in_flight, "with --slurm: evaluations placed at once (default 16)");
  worker->add_option("--sbatch-arg", a.slurm.sbatch_args, "with --slurm: an extra sbatch argument (repeatable), e.g. --partition=gpu");
  add_worker_options(worker, a);
  worker->callback([&] {
    run = [&] {
      finish_worker_config(g, a);
      if (a.slurm_mode) return slurm_main(a);
      if (a.gpus.empty()) throw std::runtime_error("worker: --gpus is required (or --slurm)");
      a.worker.gpus = gpu_list(a.gpus);
      return run_workers(a.worker);
    };
  });

  auto* submit = app.add_subcommand("submit", "send a solution folder to d2k serve, wait, print the bench table");
  submit->add_option("dir", a.dir, "the solution folder (omit for built-in targets only)");
  submit->add_option("--task", a.task, "task name")->required();
  submit->add_option("--track", a.track, "the solution's track (default cuda)");
  submit->add_option("--targets", a.targets, "comma-separated targets (default solution)");
  submit->add_option("--workloads", a.workloads, "only these workload uuids (comma-separated)");
  submit->add_option("--server", a.server, "the service (default $D2K_SERVER, else http://127.0.0.1:8390)");
  submit->add_option("--token", a.token, "bearer token (default $D2K_TOKEN)");
  submit->add_option("--token-file", a.token_file, "read the token from this file");
  submit->add_option("--timeout", a.timeout_s, "give up waiting after this many seconds (default 3600)");
  submit->add_option("--idempotency-key", a.key, "the key of this submission (default: fresh)");
  submit->add_option("--max-time", a.max_time_s, "time cap per target and workload, seconds");
  submit->add_flag("--no-time", a.no_time, "correctness only");
  submit->add_flag("--quiet", a.quiet, "no progress line");
  submit->add_option("--json", a.json_out, "also write the traces as JSON lines to this file");
  submit->callback([&] {
    run = [&] {
      SubmitOptions o;
      o.server = !a.server.empty() ? a.server : (std::getenv("D2K_SERVER") ? std::getenv("D2K_SERVER") : o.server);
      o.token = read_token(a);
      o.dir = a.dir;
      o.spec.task = a.task;
      o.spec.track = a.track;
      o.spec.targets = split_list(a.targets);
      o.spec.workloads = split_list(a.workloads);
      if (a.no_time) o.spec.options["time"] = false;
      if (a.max_time_s > 0) o.spec.options["max_time_s"] = a.max_time_s;
      o.idempotency_key = a.key;
      o.timeout_s = a.timeout_s;
      o.json_out = a.json_out;
      try {
        return submit_main(o, a.quiet);
      } catch (const NoAnswer& e) {
        fmt::print(stderr, "d2k submit: {}\n", e.what());
        return kExitNoAnswer;
      } catch (const ApiError& e) {
        fmt::print(stderr, "d2k submit: refused ({} {}): {}\n", e.http, e.code, e.what());
        return 2;
      }
    };
  });
}

}  // namespace d2k::cli
