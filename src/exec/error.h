#pragma once
/// The error type of the exec layer: a failure that already knows its evaluation status.
#include <stdexcept>
#include <string>

#include "core/status.h"

namespace d2k {

/// Thrown by compile, load and symbol functions when a submission (not the harness) is at
/// fault; `status` is what the evaluation ends in (INVALID_SUBMISSION, COMPILE_ERROR, ...).
struct ExecError : std::runtime_error {
  Status status;
  ExecError(Status s, const std::string& message) : std::runtime_error(message), status(s) {}
};

}  // namespace d2k
