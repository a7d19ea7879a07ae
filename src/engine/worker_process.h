#pragma once
/// The worker process: the sandboxed child (`d2k __worker --impl PATH`) that the parent's
/// WorkerRunner (runner.h, worker_client.cpp) starts for each target. It initialises CUDA and
/// the timer, installs the lockdown filter, loads the candidate's library and serves the
/// parent's requests (wire.h) until told to exit.
#include <filesystem>

namespace d2k {

/// Test knob (environment, read by the parent and handed to the worker): "1" leaves mprotect to
/// PROT_WRITE and opening files for writing allowed in the lockdown, so that the exploit corpus can
/// show the checks behind it (the GOT tripwire, the parent's clock).
inline constexpr const char* kAllowProtectionChangesEnv = "D2K_TEST_LOCKDOWN_ALLOW_PROTECTION_CHANGES";

/// The worker's main loop. Returns the process's exit code.
int worker_main(const std::filesystem::path& impl);

}  // namespace d2k
