// d2k: parse, dispatch, report errors. Everything else lives in the libraries.
#include <fmt/core.h>

#include <exception>

#include "cli/commands.h"

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
  CLI11_PARSE(app, argc, argv);
  try {
    return run ? run() : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "d2k: error: {}\n", e.what());
    return 2;
  }
}
