#pragma once
/// The worker process: the sandboxed child (`d2k __worker --impl PATH --track T`) that the
/// parent's WorkerRunner (runner.h, worker_client.cpp) starts for each target. It initialises
/// CUDA and the timer, runs the track's prepare step on the workloads' shapes, installs the
/// lockdown filter, opens the artifact through its track and serves the parent's requests
/// (wire.h) until told to exit.
#include <filesystem>
#include <string>
#include <vector>

#include "tracks/target.h"

namespace d2k {

/// Test knob (environment, read by the parent and handed to the worker): "1" leaves mprotect to
/// PROT_WRITE and opening files for writing allowed in the lockdown, so that the exploit corpus can
/// show the checks behind it (the GOT tripwire, the parent's clock).
inline constexpr const char* kAllowProtectionChangesEnv = "D2K_TEST_LOCKDOWN_ALLOW_PROTECTION_CHANGES";
/// Test knob (environment, read by the parent only): "1" skips the GOT tripwire (got_integrity),
/// so that the exploit corpus can show what the parent's clock alone does with a forged timer.
inline constexpr const char* kSkipGotCheckEnv = "D2K_TEST_SKIP_GOT_CHECK";

/// The worker's main loop. Returns the process's exit code.
int worker_main(const std::filesystem::path& impl, const std::string& track = "cuda",
                const std::vector<WorkloadShape>& shapes = {});

}  // namespace d2k
