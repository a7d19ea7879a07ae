// d2k calibrate: measure this GPU's ceilings and cache them.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/cuda_util.h"
#include "engine/device_backend.h"
#include "measure/calibrate.h"

namespace d2k::cli {

void add_calibrate(CLI::App& app, Globals&, Runner& run) {
  auto* cal = app.add_subcommand("calibrate", "measure copy bandwidth, tensor and FMA rates of this GPU; cache them");
  static bool show_only = false;
  cal->add_flag("--show", show_only, "print the ceilings in use (cache or datasheet) without measuring");
  cal->callback([&] {
    run = [&] {
      if (cuda_device_count() == 0) {
        fmt::print(stderr, "d2k calibrate: no CUDA GPU found on this machine; nothing measured\n");
        return 1;
      }
      measure::Ceilings c = show_only ? measure::ceilings_for_device() : measure::calibrate();
      if (!show_only) {
        measure::store_ceilings(c);
        fmt::print(stderr, "calibrate: stored in {}\n", measure::calibration_cache_path().string());
      }
      nlohmann::json j = c;
      fmt::print("{}\n", j.dump(2));
      return 0;
    };
  });
}

}  // namespace d2k::cli
