// Writes a MeasureResult as JSON to $D2K_TEST_OUT/<name>.json when that variable is set
// (kept in a host-compiled file: the JSON library stays out of nvcc).
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "measure/timer.h"

void dump_result(const char* name, const d2k::measure::MeasureResult& r) {
  const char* dir = std::getenv("D2K_TEST_OUT");
  if (!dir || !*dir) return;
  nlohmann::json j = r;
  std::ofstream(std::string(dir) + "/" + name + ".json") << j.dump(1) << "\n";
}
