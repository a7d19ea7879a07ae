// Exploit: bf16 arithmetic where the task asks for fp32 (bf16x2 math halves the registers): the
// square-accumulate, the reduction and the scaling are rounded to bf16 at every step.
// Expected: INCORRECT_NUMERICAL on every check workload (expect_run.json: the ulp rule).
#include "rmsnorm_case.cuh"

namespace {

__device__ __nv_bfloat16 bf(float v) { return __float2bfloat16_rn(v); }
__device__ float fl(__nv_bfloat16 v) { return __bfloat162float(v); }

__global__ void add_rmsnorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w,
                                 __nv_bfloat16* out, __nv_bfloat16* r_out, int H, float eps) {
  const long row = blockIdx.x;
  __shared__ __nv_bfloat16 partial[32];
  __nv_bfloat16 ss = bf(0.f);
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const __nv_bfloat16 s = bf(fl(x[row * H + j]) + fl(r[row * H + j]));
    r_out[row * H + j] = s;
    ss = bf(fl(ss) + fl(bf(fl(s) * fl(s))));
  }
  for (int o = 16; o; o >>= 1) ss = bf(fl(ss) + fl(__shfl_xor_sync(0xffffffffu, ss, o)));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : bf(0.f);
    for (int o = 16; o; o >>= 1) ss = bf(fl(ss) + fl(__shfl_xor_sync(0xffffffffu, ss, o)));
    if (threadIdx.x == 0) partial[0] = bf(rsqrtf(fl(bf(fl(ss) / H)) + eps));
  }
  __syncthreads();
  for (int j = threadIdx.x; j < H; j += blockDim.x)
    out[row * H + j] = bf(fl(bf(fl(r_out[row * H + j]) * fl(partial[0]))) * fl(w[j]));
}

cudaError_t exploit(const Args& g) {
  add_rmsnorm_bf16<<<static_cast<unsigned>(g.T), 256, 0, g.s>>>(g.x, g.r, g.w, g.out, g.r_out, static_cast<int>(g.H), g.eps);
  return cudaSuccess;
}

}  // namespace
