// The Slurm placement loop: claim -> sbatch -> (heartbeat, reconcile with squeue) -> collect.
#include "service/slurm.h"

#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

namespace d2k::service {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Runs argv, returns (exit status, stdout); stderr goes to this process's.
std::pair<int, std::string> capture(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::close(p[0]), ::close(p[1]);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execvp(a[0], a.data());
    ::_exit(127);
  }
  ::close(p[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Placed {
  Claim claim;
  fs::path dir;
  std::string name, slurm_id;
  std::chrono::steady_clock::time_point placed_at, started;
  int resubmits = 0;
  std::vector<std::string> notes;
};

/// sbatch the attempt's folder; the job writes exit_code (atomically) when d2k run returns.
bool place(Placed& p, const WorkerConfig& cfg, const SlurmConfig& s) {
  fs::remove(p.dir / "exit_code");
  std::vector<std::string> argv{s.sbatch, "--parsable", "--job-name=" + p.name, "--gres=gpu:1",
                                "--chdir=" + p.dir.string(), "--output=" + (p.dir / "log.txt").string()};
  argv.insert(argv.end(), s.sbatch_args.begin(), s.sbatch_args.end());
  argv.push_back("--wrap=" + shell_quote(cfg.evaluator) + " run request.json --out traces.jsonl; " +
                 "echo $? > exit_code.tmp && mv exit_code.tmp exit_code");
  auto [rc, out] = capture(argv);
  if (rc != 0) return false;
  p.slurm_id = out.substr(0, out.find_first_of(";\n"));
  p.placed_at = std::chrono::steady_clock::now();
  return true;
}

/// Job name -> Slurm state, for the names squeue knows; nullopt when squeue itself failed (the
/// controller is down: nothing is concluded from its silence).
std::optional<std::map<std::string, std::string>> squeue_states(const SlurmConfig& s) {
  auto [rc, out] = capture({s.squeue, "--json"});
  if (rc != 0) return std::nullopt;
  json j = json::parse(out, nullptr, false);
  if (!j.is_object() || !j.contains("jobs")) return std::nullopt;
  std::map<std::string, std::string> states;
  for (auto& job : j["jobs"]) {
    std::string state;
    if (job.contains("job_state")) {
      const auto& st = job["job_state"];
      state = st.is_array() ? (st.empty() ? "" : st[0].get<std::string>()) : st.get<std::string>();
    }
    states[job.value("name", "")] = state;
  }
  return states;
}

}  // namespace

void slurm_loop(Store& store, const WorkerConfig& cfg, const SlurmConfig& s, const std::string& worker_id,
                const std::atomic<bool>& stop) {
  using clock = std::chrono::steady_clock;
  std::map<std::string, Placed> placed;  // by job id
  auto next_beat = clock::now();
  while (!stop) {
    // 1. Place new work up to the limit.
    while (int(placed.size()) < s.max_in_flight) {
      std::optional<Claim> c;
      try {
        c = store.claim(worker_id, cfg.lease_s);
      } catch (const std::exception& e) {
        fmt::print(stderr, "d2k worker --slurm: claim: {}\n", e.what());
      }
      if (!c) break;
      auto prepared = prepare_job(*c, cfg);
      if (auto* failed = std::get_if<JobOutcome>(&prepared)) {
        store.complete(c->id, worker_id, c->attempt, failed->verdict, failed->result.dump());
        continue;
      }
      Placed p{*c, std::get<fs::path>(prepared), fmt::format("d2k-{}-a{}", c->id, c->attempt), "", {}, clock::now(), 0, {}};
      if (!place(p, cfg, s)) {
        store.complete(c->id, worker_id, c->attempt, "ERROR",
                       json{{"verdict", "ERROR"}, {"message", "sbatch refused the job (see the worker's log)"}}.dump());
        continue;
      }
      placed.emplace(c->id, std::move(p));
    }
    // 2. Heartbeat every lease we hold.
    if (clock::now() >= next_beat) {
      next_beat = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(cfg.lease_s / 3));
      for (auto it = placed.begin(); it != placed.end();) {
        bool held = true;
        try {
          held = store.heartbeat(it->first, worker_id, it->second.claim.attempt, cfg.lease_s, last_line(it->second.dir / "log.txt"));
        } catch (const std::exception&) {
        }
        if (!held) {
          capture({s.scancel, it->second.slurm_id});
          it = placed.erase(it);
        } else {
          ++it;
        }
      }
    }
    // 3. Collect what finished; resubmit what Slurm lost.
    const auto states = squeue_states(s);
    for (auto it = placed.begin(); it != placed.end();) {
      Placed& p = it->second;
      const double age = std::chrono::duration<double>(clock::now() - p.placed_at).count();
      std::ifstream ec(p.dir / "exit_code");
      int code = 0;
      if (ec >> code) {
        JobOutcome out = collect_job(p.dir, p.claim, cfg, code, 0, false,
                                     std::chrono::duration<double>(clock::now() - p.started).count(), p.notes);
        out.result["slurm_job"] = p.slurm_id;
        store.complete(it->first, worker_id, p.claim.attempt, out.verdict, out.result.dump());
        it = placed.erase(it);
        continue;
      }
      const bool known = states && states->count(p.name);
      const std::string state = known ? states->at(p.name) : "";
      const bool ended = known && state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" &&
                         state != "COMPLETING" && state != "SUSPENDED" && state != "REQUEUED";
      // Lost: squeue answered and does not know it, or it ended without writing its status.
      if (states && (!known || ended) && age > s.lost_after_s) {
        if (p.resubmits >= s.max_resubmits) {
          store.complete(it->first, worker_id, p.claim.attempt, "RUNTIME_ERROR",
                         json{{"verdict", "RUNTIME_ERROR"},
                              {"message", fmt::format("Slurm lost the job {} times (last state '{}')", p.resubmits + 1,
                                                      known ? state : "unknown to squeue")}}.dump());
          it = placed.erase(it);
          continue;
        }
        p.notes.push_back(fmt::format("Slurm job {} {}; submitted again", p.slurm_id,
                                      known ? "ended " + state + " without an exit status" : "unknown to squeue (lost)"));
        ++p.resubmits;
        if (!place(p, cfg, s)) p.placed_at = clock::now();  // try again after the grace
      }
      ++it;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(cfg.poll_s));
  }
}

}  // namespace d2k::service
