#pragma once
/// `d2k worker`: one process per GPU, each claiming jobs from the queue and running every job as
/// a `d2k run` child with CUDA_VISIBLE_DEVICES set to its GPU, in a fresh folder per attempt.
#include <atomic>
#include <filesystem>
#include <variant>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/store.h"

namespace d2k::service {

struct WorkerConfig {
  std::string db;                  ///< the queue (open_store)
  std::vector<std::string> gpus;   ///< CUDA_VISIBLE_DEVICES value of each worker process
  std::string evaluator;           ///< run as `EVALUATOR run request.json --out traces.jsonl`
  std::string dataset;             ///< the dataset folder on this host (empty: the evaluator's default)
  std::string work_dir;            ///< job folders: WORK/<id>/a<attempt>/
  double lease_s = 30;             ///< a job is retried this long after its worker stopped heartbeating
  double poll_s = 1;               ///< idle wait between claims
  double job_timeout_s = 3600;     ///< wall time of one attempt, then TIMEOUT
  bool keep_jobs = false;          ///< keep job folders after their result is written
  std::size_t max_traces_bytes = 64u << 20;
};

/// What one attempt produced; nullopt from run_job when the lease was lost (no result to write).
struct JobOutcome {
  std::string verdict;
  nlohmann::json result;
};

/// The attempt's folder WORK/<id>/a<attempt>/ with solution/ and request.json, or the outcome
/// when the stored job cannot be set up (ERROR).
std::variant<std::filesystem::path, JobOutcome> prepare_job(const Claim& c, const WorkerConfig& cfg);
/// The outcome of a finished evaluator: its traces (bounded), log tail, verdict; removes the
/// folder unless keep_jobs. exit_code absent: killed by `signal`.
JobOutcome collect_job(const std::filesystem::path& dir, const Claim& c, const WorkerConfig& cfg,
                       std::optional<int> exit_code, int signal, bool timed_out, double seconds,
                       std::vector<std::string> notes);
/// The last non-empty line of a log (the evaluator's progress line).
std::string last_line(const std::filesystem::path& log);

/// Writes the job folder, runs the evaluator and collects its traces. `heartbeat(progress)` is
/// called every lease/3 s; when it returns false the evaluator is killed and nullopt returned.
std::optional<JobOutcome> run_job(const Claim& c, const WorkerConfig& cfg, const std::string& gpu,
                                  const std::function<bool(const std::string&)>& heartbeat);

/// Claims and runs jobs until `stop`; `worker_id` names the lease holder.
void worker_loop(Store& store, const WorkerConfig& cfg, const std::string& gpu, const std::string& worker_id,
                 const std::atomic<bool>& stop);

/// Forks one worker process per GPU and restarts any that dies; returns on SIGINT/SIGTERM.
int run_workers(const WorkerConfig& cfg);

}  // namespace d2k::service
