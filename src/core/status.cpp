#include "core/status.h"

#include <array>
#include <utility>

namespace d2k {

namespace {
constexpr std::array<std::pair<Status, std::string_view>, 10> kNames{{
    {Status::PASSED, "PASSED"},
    {Status::INVALID_SUBMISSION, "INVALID_SUBMISSION"},
    {Status::COMPILE_ERROR, "COMPILE_ERROR"},
    {Status::RUNTIME_ERROR, "RUNTIME_ERROR"},
    {Status::TIMEOUT, "TIMEOUT"},
    {Status::INCORRECT_SHAPE, "INCORRECT_SHAPE"},
    {Status::INCORRECT_NUMERICAL, "INCORRECT_NUMERICAL"},
    {Status::INCORRECT_WRITE, "INCORRECT_WRITE"},
    {Status::REWARD_HACK, "REWARD_HACK"},
    {Status::SKIPPED, "SKIPPED"},
}};
}  // namespace

std::string_view status_name(Status s) {
  for (auto& [k, v] : kNames)
    if (k == s) return v;
  return "UNKNOWN";
}

std::optional<Status> parse_status(std::string_view s) {
  for (auto& [k, v] : kNames)
    if (v == s) return k;
  return std::nullopt;
}

}  // namespace d2k
