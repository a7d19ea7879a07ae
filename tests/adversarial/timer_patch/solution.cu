// Exploit: defines cudaEventElapsedTime, hoping the harness binds to it and reads a small time (GPU MODE's
// patched timer). Expected: harmless. d2k links solutions with a version script that exports
// only the three entry points, loads them RTLD_LOCAL, and binds its own symbols at start
// (-z now): the definition never becomes visible, so validation passes and the timer is untouched.
#include "rmsnorm_case.cuh"

namespace {

cudaError_t exploit(const Args& g) {
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace

// The patched timer, exported under the runtime's name.
extern "C" __attribute__((visibility("default"))) cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}
