#pragma once
/// The worker process: the sandboxed child (`d2k __worker --impl PATH`) that the parent's
/// WorkerRunner (runner.h, worker_client.cpp) starts for each target. It initialises CUDA and
/// the timer, installs the lockdown filter, loads the candidate's library and serves the
/// parent's requests (wire.h) until told to exit.
#include <filesystem>

namespace d2k {

/// The worker's main loop. Returns the process's exit code.
int worker_main(const std::filesystem::path& impl);

}  // namespace d2k
