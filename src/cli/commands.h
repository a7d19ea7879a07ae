#pragma once
/// One registration function per subcommand; main only parses and dispatches.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>

namespace d2k::cli {

/// Global options every subcommand sees.
struct Globals {
  std::filesystem::path dataset;  ///< the dataset folder (default: $D2K_DATASET, else ./dataset, else the source tree's)
};

/// A subcommand registers its options and sets `run` to what it does; the exit code is run's.
using Runner = std::function<int()>;

void add_tasks(CLI::App& app, Globals& g, Runner& run);
void add_eval(CLI::App& app, Globals& g, Runner& run);      // check, bench, suite
void add_calibrate(CLI::App& app, Globals& g, Runner& run);
void add_validate(CLI::App& app, Globals& g, Runner& run);   // validate submission DIR
void add_report(CLI::App& app, Globals& g, Runner& run);     // report, export, import
void add_service(CLI::App& app, Globals& g, Runner& run);    // serve, worker, submit
void add_schema(CLI::App& app, Globals& g, Runner& run);     // schema dump, schema check
void add_proxy(CLI::App& app, Globals& g, Runner& run);      // proxy (docs/proxy.md)
void add_pack(CLI::App& app, Globals& g, Runner& run);       // pack (docs/pack.md)
void add_audit(CLI::App& app, Globals& g, Runner& run);      // audit release (docs/release-audit.md)
void add_workspace(CLI::App& app, Globals& g, Runner& run);  // workspace build, verify-harbor
void add_batch(CLI::App& app, Globals& g, Runner& run);      // batch setup, run, status
void add_score(CLI::App& app, Globals& g, Runner& run);      // score, design draft

/// The dataset folder after defaults.
std::filesystem::path dataset_dir(const Globals& g);

}  // namespace d2k::cli
