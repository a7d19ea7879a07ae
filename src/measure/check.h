#pragma once
/// Error checks for the measurement library: every CUDA, CUPTI and cuBLASLt call goes through
/// one of these macros, which throw d2k::measure::measure_error naming the file, line and call.
#include <stdexcept>
#include <string>

namespace d2k::measure {

/// Thrown for any failure inside the measurement library (CUDA, CUPTI, cuBLASLt, bad arguments).
class measure_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] void throw_call_error(const char* file, int line, const char* call, const std::string& what);
}  // namespace detail

}  // namespace d2k::measure

/// Checks a cudaError_t-returning call.
#define D2K_MEASURE_CUDA(call)                                                         \
  do {                                                                                 \
    cudaError_t d2k_e_ = (call);                                                       \
    if (d2k_e_ != cudaSuccess) {                                                       \
      /* Clear a non-sticky error so that it does not resurface at a later launch check. */ \
      (void)cudaGetLastError();                                                        \
      ::d2k::measure::detail::throw_call_error(__FILE__, __LINE__, #call,              \
                                               cudaGetErrorString(d2k_e_));            \
    }                                                                                  \
  } while (0)

/// Checks the last error right after a kernel launch; `kernel` names it in the message.
#define D2K_MEASURE_LAUNCHED(kernel)                                                   \
  do {                                                                                 \
    cudaError_t d2k_e_ = cudaGetLastError();                                           \
    if (d2k_e_ != cudaSuccess)                                                         \
      ::d2k::measure::detail::throw_call_error(__FILE__, __LINE__, "launch of " #kernel, \
                                               cudaGetErrorString(d2k_e_));            \
  } while (0)
