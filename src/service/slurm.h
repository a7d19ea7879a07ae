#pragma once
/// `d2k worker --slurm`: each claimed evaluation becomes a Slurm job (`--gres=gpu:1`, named
/// d2k-<id>-a<attempt>) that runs `d2k run` in the job's folder (a filesystem the Slurm nodes
/// share). The service's queue stays the source of truth: this loop holds the leases, and
/// reconciles with `squeue --json` by name; a job Slurm no longer knows and that left no exit
/// status (lost in a controller crash) is submitted again.
#include <atomic>
#include <string>
#include <vector>

#include "service/store.h"
#include "service/worker.h"

namespace d2k::service {

struct SlurmConfig {
  std::string sbatch = "sbatch", squeue = "squeue", scancel = "scancel";
  std::vector<std::string> sbatch_args;  ///< e.g. --partition=gpu (added before the script)
  int max_in_flight = 16;                ///< evaluations placed at once
  double lost_after_s = 10;              ///< absent from squeue this long with no exit status: lost
  int max_resubmits = 3;                 ///< per attempt, then RUNTIME_ERROR
};

/// Places and reconciles until `stop` (or SIGINT/SIGTERM).
void slurm_loop(Store& store, const WorkerConfig& cfg, const SlurmConfig& s, const std::string& worker_id,
                const std::atomic<bool>& stop);

}  // namespace d2k::service
