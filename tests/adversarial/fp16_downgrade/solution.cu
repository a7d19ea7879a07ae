// Exploit: fp16 arithmetic where the task asks for fp32 (half2-style math is cheaper in
// registers and instructions): the add, the square-accumulate, the reduction and the scaling
// all in __half.
// Expected: INCORRECT_NUMERICAL on every check workload. At H=65528 the sum of squares of a row
// (about 2H: x + residual ~ N(0, 2)) passes fp16's largest value 65504: the row's norm becomes
// inf and its output 0. At the shorter rows the fp16 error (each thread sums <= 64 terms, about
// 1e-3 relative) moves many outputs by one bf16 ulp, beyond what the ulp rule allows (0 ulp for
// 99.9% of the elements). Under the former allclose rule (atol = rtol = 0.016) only the wide-row
// workload caught it.
#include "rmsnorm_case.cuh"
#include <cuda_fp16.h>

namespace {

__global__ void add_rmsnorm_fp16(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w,
                                 __nv_bfloat16* out, __nv_bfloat16* r_out, int H, float eps) {
  const long row = blockIdx.x;
  __shared__ __half partial[32];
  __half ss = __float2half(0.f);
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const __half s = __hadd(__float2half(__bfloat162float(x[row * H + j])), __float2half(__bfloat162float(r[row * H + j])));
    r_out[row * H + j] = __float2bfloat16(__half2float(s));
    ss = __hfma(s, s, ss);
  }
  for (int o = 16; o; o >>= 1) ss = __hadd(ss, __shfl_xor_sync(0xffffffffu, ss, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : __float2half(0.f);
    for (int o = 16; o; o >>= 1) ss = __hadd(ss, __shfl_xor_sync(0xffffffffu, ss, o));
    if (threadIdx.x == 0) partial[0] = hrsqrt(__hfma(ss, __float2half(1.f / H), __float2half(eps)));
  }
  __syncthreads();
  for (int j = threadIdx.x; j < H; j += blockDim.x)
    out[row * H + j] = __float2bfloat16(__half2float(
        __hmul(__hmul(__float2half(__bfloat162float(r_out[row * H + j])), partial[0]), __float2half(__bfloat162float(w[j])))));
}

cudaError_t exploit(const Args& g) {
  add_rmsnorm_fp16<<<static_cast<unsigned>(g.T), 256, 0, g.s>>>(g.x, g.r, g.w, g.out, g.r_out, static_cast<int>(g.H), g.eps);
  return cudaSuccess;
}

}  // namespace
