#include "measure/error.h"

#include <fmt/format.h>

namespace d2k::measure::detail {

void throw_call_error(const char* file, int line, const char* call, const std::string& what) {
  throw measure_error(fmt::format("{}:{}: {} failed: {}", file, line, call, what));
}

}  // namespace d2k::measure::detail
