#pragma once
/// The one CUDA error type of the harness: every library (data, check, measure, engine) throws
/// CudaError for a failed CUDA runtime call. `sticky` says whether the fault left the CUDA
/// context unusable (an illegal address, a trap, a launch failure): then nothing more can run in
/// this process, and a worker that saw one must end (docs/isolation.md); a non-sticky error (a
/// bad argument, a launch configuration) leaves the context usable.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace d2k {

/// Errors after which the CUDA context is unusable: every later call in the process fails.
inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

/// A failed CUDA runtime call: the code, whether the context is gone, and a message naming the
/// call (file, line and call text, or what the harness was doing).
struct CudaError : std::runtime_error {
  cudaError_t code;
  bool sticky;
  CudaError(cudaError_t c, const std::string& what)
      : std::runtime_error(what + ": " + cudaGetErrorName(c) + " (" + cudaGetErrorString(c) + ")" +
                           (is_sticky(c) ? " [sticky: the CUDA context is unusable]" : "")),
        code(c),
        sticky(is_sticky(c)) {}
  CudaError(cudaError_t c, const char* call, const char* file, int line)
      : CudaError(c, std::string(file) + ":" + std::to_string(line) + ": " + call) {}
};

/// Throws CudaError for a failed call. A non-sticky error is also cleared from the runtime's
/// last-error slot, so that it does not resurface at a later, unrelated launch check.
inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  if (!is_sticky(e)) (void)cudaGetLastError();
  throw CudaError(e, call, file, line);
}

}  // namespace d2k

/// Checks a cudaError_t-returning call.
#define D2K_CUDA_CHECK(call) ::d2k::cuda_check((call), #call, __FILE__, __LINE__)
/// Checks the last launch (asynchronous errors surface at the next synchronisation).
#define D2K_CUDA_CHECK_LAUNCH() ::d2k::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
