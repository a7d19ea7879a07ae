// Exploit (a fault, not a cheat): after the real work, a kernel writes through a wild pointer, far
// outside any allocation. The CUDA context of the process becomes unusable (a sticky error), and
// a harness that runs candidates in its own process loses every evaluation after this one.
// Expected: RUNTIME_ERROR naming the illegal address, and the evaluator survives: the naive
// target, evaluated by the same d2k run on the same workloads, must still pass.
#include "rmsnorm_case.cuh"

namespace {

__global__ void write_wild(__nv_bfloat16* p) { p[(1ll << 40) + threadIdx.x] = __float2bfloat16(1.f); }

cudaError_t exploit(const Args& g) {
  launch(g, g.s);
  write_wild<<<1, 32, 0, g.s>>>(g.out);
  return cudaSuccess;
}

}  // namespace
