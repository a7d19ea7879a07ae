#pragma once
/// `d2k submit`: sends a solution folder to `d2k serve`, waits with a progress line, prints the
/// table `d2k bench` prints and returns the verdict's exit status (service/verdict.h).
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/job_spec.h"

namespace d2k::service {

struct SubmitOptions {
  std::string server = "http://127.0.0.1:8390";
  std::string token;
  std::string dir;                   ///< the solution folder (empty: no files, built-in targets only)
  JobSpec spec;                      ///< task, track, targets, workloads, options (files filled from dir)
  std::string idempotency_key;       ///< empty: a fresh one (every retry of this submission reuses it)
  double timeout_s = 3600;           ///< give up waiting after this long (exit 2)
  double poll_s = 0.5;
  int connect_retries = 10;          ///< a POST that got no answer is sent again, same key
  std::string json_out;              ///< also write the traces here, one JSON object per line (as d2k bench --json)
};

/// The service gave no answer (connection refused, or silent while waiting): `d2k submit` exits
/// kExitNoAnswer (service/verdict.h).
struct NoAnswer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads the regular files under `dir` (relative names, checked like the server checks them).
std::map<std::string, std::string> read_solution_dir(const std::string& dir, const Limits& lim);

/// POSTs the submission (retrying with the same Idempotency-Key when there is no answer); returns
/// the evaluation id. Throws ApiError with the server's code and message on a refusal.
std::string submit_evaluation(const SubmitOptions& o);
/// GETs the evaluation until it is done; `progress` sees each new progress line. Returns the job
/// view (docs/service.md).
nlohmann::json wait_evaluation(const SubmitOptions& o, const std::string& id,
                               const std::function<void(const std::string&)>& progress);
/// The `d2k submit` command: submit, wait, print, exit status.
int submit_main(const SubmitOptions& o, bool quiet);

}  // namespace d2k::service
