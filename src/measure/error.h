#pragma once
/// Errors of the measurement library. A failed CUDA runtime call throws d2k::CudaError
/// (core/cuda_error.h, with whether the context is lost), like every other library; measure_error
/// is for everything else: bad options, CUPTI and cuBLASLt failures, a failed graph capture.
#include <stdexcept>
#include <string>

#include "core/cuda_error.h"

namespace d2k::measure {

/// A measurement failure that is not a CUDA runtime error.
class measure_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
/// Throws measure_error naming the file, line and call (cuBLASLt, CUPTI).
[[noreturn]] void throw_call_error(const char* file, int line, const char* call, const std::string& what);
}  // namespace detail

}  // namespace d2k::measure
