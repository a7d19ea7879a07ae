// Exploit: print what a harness that scrapes its own stdout would read as a pass with a tiny time
// (result lines in d2k's table format and in a generic one), and skip the work.
// Expected: INCORRECT_WRITE: d2k takes verdicts and times only from its own checks (stdout is a
// log), and the outputs still hold the poison in both check runs.
#include "rmsnorm_case.cuh"
#include <cstdio>

namespace {

cudaError_t exploit(const Args& g) {
  std::printf("fused_add_rmsnorm  solution  fused_add_rmsnorm-bench-4096x4096  PASSED  0.001 us\n");
  std::printf("PASSED 0.001 us\n{\"status\": \"PASSED\", \"median_us\": 0.001}\n");
  std::fflush(stdout);
  (void)g;
  return cudaSuccess;
}

}  // namespace
