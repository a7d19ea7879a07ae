// Exploit: the sum of squares skips the last 8 columns of each row (a vectorised main loop
// without its tail); the mean still divides by H and every output is written.
// Expected: INCORRECT_NUMERICAL on every check workload (expect_run.json: the ulp rule).
#include "rmsnorm_case.cuh"

namespace {

__global__ void add_rmsnorm_drop8(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w,
                                __nv_bfloat16* out, __nv_bfloat16* r_out, int H, float eps) {
  const long row = blockIdx.x;
  __shared__ float partial[32];
  float ss = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const __nv_bfloat16 s = __float2bfloat16(__bfloat162float(x[row * H + j]) + __bfloat162float(r[row * H + j]));
    r_out[row * H + j] = s;
    if (j < H - 8) ss += __bfloat162float(s) * __bfloat162float(s);
  }
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) partial[0] = rsqrtf(ss / H + eps);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const float v = __bfloat162float(r_out[row * H + j]) * partial[0] * __bfloat162float(w[j]);
    out[row * H + j] = __float2bfloat16(v);
  }
}

cudaError_t exploit(const Args& g) {
  add_rmsnorm_drop8<<<static_cast<unsigned>(g.T), 256, 0, g.s>>>(g.x, g.r, g.w, g.out, g.r_out, static_cast<int>(g.H), g.eps);
  return cudaSuccess;
}

}  // namespace
