// Exploit (issue #12): a correct kernel, plus one block that writes 512 B past the end of the
// output `out` (scratch space the candidate assumes nobody watches; with buffers packed back to
// back it would be the next buffer's data). Expected: INCORRECT_WRITE(out_of_bounds) naming the
// output: the slack after every buffer holds canary bytes, checked after every call.
#include "rmsnorm_case.cuh"

namespace {

__global__ void scribble(__nv_bfloat16* end) {
  reinterpret_cast<unsigned char*>(end)[512 + threadIdx.x] = 0x11;
}

cudaError_t exploit(const Args& g) {
  launch(g, g.s);
  scribble<<<1, 32, 0, g.s>>>(g.out + g.T * g.H);
  return cudaSuccess;
}

}  // namespace
