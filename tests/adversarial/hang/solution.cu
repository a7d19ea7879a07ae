// Exploit: never finish. A kernel spins on a flag nothing sets, so the stream never drains and a
// harness without a deadline waits forever (or is killed by its caller without a verdict).
// Expected: TIMEOUT: the call passes its deadline (d2k bench --call-timeout), the worker is
// killed, and the parent reports the case and goes on.
#include "rmsnorm_case.cuh"

namespace {

__device__ int released = 0;  // never set

__global__ void spin_forever() {
  // volatile: the load is repeated, so the loop is not folded away.
  while (*static_cast<volatile int*>(&released) == 0) {
  }
}

cudaError_t exploit(const Args& g) {
  launch(g, g.s);
  spin_forever<<<1, 1, 0, g.s>>>();
  return cudaSuccess;
}

}  // namespace
