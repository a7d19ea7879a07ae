#pragma once
/// One attempt of a batch run, in phases: a fresh workspace, the agent under its budget, the
/// runner's own check, the verdict from the check's traces. Failures are classified here, in one
/// place (docs/batch.md, "Failures"): the agent's (non-zero exit, wall budget, a broken
/// solution) end the attempt; the infrastructure's (agent binary missing, a signal the runner did
/// not send, the check without an answer) are retried with backoff, then end as infra_error.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "agent/batch_record.h"
#include "service/verdict.h"

namespace d2k::agent {

struct AttemptContext {
  std::filesystem::path run_dir;
  RunConfig config;
  std::string d2k_exe;
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> log;
};

/// A process outcome, classified (the table in docs/batch.md, "Failures").
struct Classified {
  bool infra = false;                  ///< retried
  std::optional<std::string> failure;  ///< "agent" | "infra" | none
  std::string reason;
};
struct ProcessResult;
/// The agent's process result under run config `c`.
Classified classify_agent(const ProcessResult& r, const RunConfig& c);
/// The check's process result: only its infrastructure failures; the verdict says the rest.
Classified classify_check(const ProcessResult& r);

/// What the check's traces say about the solution.
struct CheckVerdict {
  std::string verdict;                    ///< PASSED, the first failing status, NOT_RUN_NO_GPU, FAILED, or empty
  std::string message;                    ///< the failing record's reason
  std::optional<double> speedup_vs_naive; ///< geometric mean over the solution's timed workloads
};

/// Reads check.json (one trace per line) with the check's exit status.
CheckVerdict verdict_from_traces(const std::filesystem::path& check_json, int check_exit);

/// Runs the attempt in `attempt_dir` to a final state (or leaves it `running` when stopped).
void run_attempt(const AttemptContext& ctx, const std::filesystem::path& attempt_dir);

/// Exit status of `check` (that is, of `d2k submit`) when the evaluation service gave no answer.
inline constexpr int kCheckExitNoAnswer = service::kExitNoAnswer;

}  // namespace d2k::agent
