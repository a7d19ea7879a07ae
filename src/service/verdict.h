#pragma once
/// A job's verdict: from the evaluator's exit status (README.md, "Exit codes") on the worker, and
/// back to an exit status in `d2k submit`. One table for both directions.
#include <string>

namespace d2k::service {

/// `d2k submit`'s exit status when the service gave no answer (unreachable, or it stopped
/// answering while the job waited): an infrastructure failure, which callers such as the batch
/// runner retry, unlike 2 (a refused request or an error).
inline constexpr int kExitNoAnswer = 4;

/// exit_code < 0: the evaluator died of signal -exit_code.
inline std::string verdict_for_exit(int exit_code) {
  switch (exit_code) {
    case 0: return "PASSED";
    case 1: return "FAILED";
    case 3: return "NOT_RUN_NO_GPU";
    default: return exit_code < 0 ? "RUNTIME_ERROR" : "ERROR";
  }
}

/// PASSED 0; a failed record, a crash, a timeout or lost leases 1; a request d2k run refused 2;
/// no GPU 3.
inline int exit_for_verdict(const std::string& v) {
  if (v == "PASSED") return 0;
  if (v == "FAILED" || v == "RUNTIME_ERROR" || v == "TIMEOUT") return 1;
  if (v == "NOT_RUN_NO_GPU") return 3;
  return 2;
}

}  // namespace d2k::service
