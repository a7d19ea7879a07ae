// d2k: parse, dispatch, report errors. Everything else lives in the libraries.
#include <fmt/core.h>

#include <exception>
#include <string_view>

#include "cli/commands.h"

namespace {

// True when --dataset comes after the subcommand, where CLI11 does not look for it.
bool dataset_after_subcommand(int argc, char** argv) {
  int sub = 0;
  for (int i = 1; i < argc && sub == 0; ++i) {
    const std::string_view a = argv[i];
    if (a == "--dataset") ++i;  // its value
    else if (!a.empty() && a[0] != '-') sub = i;
  }
  for (int i = sub + 1; sub > 0 && i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--dataset" || a.rfind("--dataset=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"d2k: correctness, timing and scoring of GPU kernels against naive, expert and speed of light"};
  app.require_subcommand(1);
  d2k::cli::Globals g;
  app.add_option("--dataset", g.dataset, "dataset folder (default: $D2K_DATASET or ./dataset)");
  d2k::cli::Runner run;
  d2k::cli::add_tasks(app, g, run);
  d2k::cli::add_eval(app, g, run);
  d2k::cli::add_calibrate(app, g, run);
  d2k::cli::add_validate(app, g, run);
  d2k::cli::add_report(app, g, run);
  d2k::cli::add_service(app, g, run);
  d2k::cli::add_schema(app, g, run);
  d2k::cli::add_proxy(app, g, run);
  d2k::cli::add_pack(app, g, run);
  d2k::cli::add_audit(app, g, run);
  d2k::cli::add_workspace(app, g, run);
  d2k::cli::add_batch(app, g, run);
  d2k::cli::add_score(app, g, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    if (rc != 0 && dataset_after_subcommand(argc, argv))
      fmt::print(stderr, "d2k: --dataset is a global option: give it before the subcommand (d2k --dataset DIR tasks list)\n");
    return rc;
  }
  try {
    return run ? run() : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "d2k: error: {}\n", e.what());
    return 2;
  }
}
