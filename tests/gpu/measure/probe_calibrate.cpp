// Runs calibrate() on the current device, prints the ceilings as JSON, stores them in the
// calibration cache and reads them back through ceilings_for_device().
// Usage: d2k_measure_probe [output.json]
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "measure/calibrate.h"

int main(int argc, char** argv) {
  try {
    const d2k::measure::Ceilings c = d2k::measure::calibrate();
    const nlohmann::json j = c;
    std::cout << j.dump(2) << "\n";
    if (argc > 1) std::ofstream(argv[1]) << j.dump(2) << "\n";
    d2k::measure::store_ceilings(c);
    const d2k::measure::Ceilings back = d2k::measure::ceilings_for_device();
    std::cout << "cache " << d2k::measure::calibration_cache_path() << ": source " << back.source
              << ", copy " << back.copy_bw * 1e-12 << " TB/s, bf16 " << back.peak_of("bf16_tensor") * 1e-12
              << " TFLOP/s\n";
    return back.source == "calibrated" ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "d2k_measure_probe: %s\n", e.what());
    return 2;
  }
}
