// Exploit: use the output as an accumulator that is assumed to start at zero (out += value, the
// beta = 1 epilogue that saves a separate zero-fill), as harnesses that allocate outputs with
// zeros, or fresh cudaMalloc memory, let pass.
// Expected: INCORRECT_NUMERICAL. The outputs are poisoned before each call, differently in the two
// check runs: a NaN poison turns every element into NaN in one run, the other run's poison is a
// tiny number that leaves it nearly right, and the two runs disagree.
#include "rmsnorm_case.cuh"

namespace {

__global__ void add_rmsnorm_accumulating(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w,
                                         __nv_bfloat16* out, __nv_bfloat16* r_out, int H, float eps) {
  add_rmsnorm_row<true>(x, r, w, out, r_out, H, eps);
}

cudaError_t exploit(const Args& g) {
  add_rmsnorm_accumulating<<<static_cast<unsigned>(g.T), 256, 0, g.s>>>(g.x, g.r, g.w, g.out, g.r_out,
                                                                        static_cast<int>(g.H), g.eps);
  return cudaSuccess;
}

}  // namespace
