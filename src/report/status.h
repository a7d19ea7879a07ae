#pragma once
/// The one status every evaluation stage ends in (docs/design.md, "Evaluation pipeline").
#include <optional>
#include <string>
#include <string_view>

namespace d2k {

enum class Status {
  PASSED,
  INVALID_SUBMISSION,
  COMPILE_ERROR,
  RUNTIME_ERROR,
  TIMEOUT,
  INCORRECT_SHAPE,
  INCORRECT_NUMERICAL,
  INCORRECT_WRITE,
  REWARD_HACK,
  SKIPPED,  ///< not run (e.g. no GPU on this machine); never counted as passed
};

std::string_view status_name(Status s);
std::optional<Status> parse_status(std::string_view s);

}  // namespace d2k
