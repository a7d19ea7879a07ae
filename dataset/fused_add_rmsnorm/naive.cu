// fused_add_rmsnorm — naive baseline: what an eager framework runs, op by op.
//
//   1. add_bf16_elementwise            residual_out = bf16(x + residual)     one thread per element
//   2. row_mean_square_block_per_row   ms[t] = mean_h residual_out[t,h]^2    a block per row -> fp32 workspace
//   3. rmsnorm_scale_elementwise       out = bf16(r * rsqrt(ms[t] + eps) * w) one thread per element
//
// Three launches; residual_out is written by (1) and read back twice, the per-row mean square is
// materialised in the workspace (T floats). Each kernel is the plain textbook form, not slowed on
// purpose: coalesced accesses, fp32 arithmetic, a shared-memory tree reduction.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace {

constexpr int kElementwiseThreads = 256;
constexpr int kReduceThreads = 256;

/// residual_out[i] = bf16(x[i] + residual[i]); one thread per element.
__global__ void add_bf16_elementwise(const __nv_bfloat16* __restrict__ x,
                                     const __nv_bfloat16* __restrict__ residual,
                                     __nv_bfloat16* __restrict__ residual_out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) residual_out[i] = __float2bfloat16_rn(__bfloat162float(x[i]) + __bfloat162float(residual[i]));
}

/// mean_square[row] = mean over the row of r^2; a block per row, block-stride loop, then a
/// shared-memory tree reduction.
__global__ void row_mean_square_block_per_row(const __nv_bfloat16* __restrict__ r,
                                              float* __restrict__ mean_square, int64_t H) {
  __shared__ float partial[kReduceThreads];
  const __nv_bfloat16* row = r + static_cast<int64_t>(blockIdx.x) * H;
  float acc = 0.f;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
    const float v = __bfloat162float(row[h]);
    acc += v * v;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) mean_square[blockIdx.x] = partial[0] / static_cast<float>(H);
}

/// out[i] = bf16(r[i] * rsqrt(mean_square[row] + eps) * weight[col]); one thread per element.
__global__ void rmsnorm_scale_elementwise(const __nv_bfloat16* __restrict__ r,
                                          const float* __restrict__ mean_square,
                                          const __nv_bfloat16* __restrict__ weight,
                                          __nv_bfloat16* __restrict__ out, int64_t n, int64_t H,
                                          float eps) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t row = i / H;
  const int64_t col = i - row * H;
  const float inv_rms = rsqrtf(mean_square[row] + eps);
  out[i] = __float2bfloat16_rn(__bfloat162float(r[i]) * inv_rms * __bfloat162float(weight[col]));
}

/// The workspace: T fp32 mean squares (one carve-up for both entry points).
float* carve_mean_square(d2k::Workspace& ws, int64_t T) { return ws.take<float>(static_cast<uint64_t>(T)); }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    if (T < 0) throw d2k::abi_error("naive: axis T must be >= 0");
    d2k::Workspace ws;
    carve_mean_square(ws, T);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    const float eps = static_cast<float>(d2k::scalar_f(args, "eps"));
    if (T < 0 || H < 1) throw d2k::abi_error("naive: need T >= 0 and H >= 1");
    if (T > 2147483647) throw d2k::abi_error("naive: T above 2^31-1 is not supported (one block per row)");
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& res = d2k::input(args, "residual", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& w = d2k::input(args, "weight", kDLCUDA, d2k::dl::bf16, {H});
    const DLTensor& out = d2k::output(args, "out", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& res_out = d2k::output(args, "residual_out", kDLCUDA, d2k::dl::bf16, {T, H});
    d2k::Workspace ws(args);
    float* mean_square = carve_mean_square(ws, T);
    if (T == 0) return D2K_OK;

    auto stream = static_cast<cudaStream_t>(args->stream);
    const int64_t n = T * H;
    const unsigned elementwise_blocks = static_cast<unsigned>((n + kElementwiseThreads - 1) / kElementwiseThreads);

    add_bf16_elementwise<<<elementwise_blocks, kElementwiseThreads, 0, stream>>>(
        d2k::data<const __nv_bfloat16>(x), d2k::data<const __nv_bfloat16>(res),
        d2k::data<__nv_bfloat16>(res_out), n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    row_mean_square_block_per_row<<<static_cast<unsigned>(T), kReduceThreads, 0, stream>>>(
        d2k::data<const __nv_bfloat16>(res_out), mean_square, H);
    D2K_CUDA_TRY(args, cudaGetLastError());
    rmsnorm_scale_elementwise<<<elementwise_blocks, kElementwiseThreads, 0, stream>>>(
        d2k::data<const __nv_bfloat16>(res_out), mean_square, d2k::data<const __nv_bfloat16>(w),
        d2k::data<__nv_bfloat16>(out), n, H, eps);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
