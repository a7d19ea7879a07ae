// layernorm_backward — naive baseline: what PyTorch eager launches for pytorch.py, which upcasts
// the bf16 activations to meet the fp32 weight (aten's CUDA LayerNorm takes one dtype for input
// and weight) and calls aten::native_layer_norm_backward in fp32:
//
//   1. cast_bf16_to_f32        dy32 = float(dy)                                elementwise
//   2. cast_bf16_to_f32        x32  = float(x)                                 elementwise
//   3. layer_norm_grad_input   dx32 = rstd * (g - (b + xhat * a) / H)          a block per row, two
//                              passes over the row (the sums a, b; then dx), as aten's
//                              layer_norm_grad_input_kernel
//   4. gamma_beta_backward     dgamma = sum_t dy * xhat, dbeta = sum_t dy      a block per 32
//                              columns looping over every row, a shared-memory tree over the
//                              block's 16 row lanes, as aten's GammaBetaBackwardCUDAKernel
//   5. cast_f32_to_bf16        dx = bf16(dx32)                                 elementwise
//
// Five launches, fp32 intermediates materialised (workspace 12*T*H bytes). Each kernel is the
// plain textbook form, not slowed on purpose: coalesced accesses, fp32 arithmetic.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

namespace {

constexpr int kElementwiseThreads = 256;
constexpr int kRowThreads = 256;
constexpr int kColTile = 32;   ///< columns per gamma_beta block (a warp's width)
constexpr int kRowLanes = 16;  ///< rows a gamma_beta block walks at once

__global__ void cast_bf16_to_f32(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(in[i]);
}

__global__ void cast_f32_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}

/// Sum of one float per thread over the block, through a shared-memory tree (blockDim a power of 2).
__device__ float block_sum(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float r = scratch[0];
  __syncthreads();  // scratch is reused by the next sum
  return r;
}

/// dx32 for one row per block: pass 1 the sums a = sum g*xhat, b = sum g; pass 2 dx.
__global__ void __launch_bounds__(kRowThreads)
    layer_norm_grad_input(const float* __restrict__ dy, const float* __restrict__ x, const float* __restrict__ mean,
                          const float* __restrict__ rstd, const float* __restrict__ gamma, float* __restrict__ dx,
                          int64_t H) {
  __shared__ float scratch[kRowThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * H;
  const float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
  float a = 0.f, b = 0.f;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
    const float g = gamma[h] * dy[base + h];
    a += g * ((x[base + h] - mu) * rs);
    b += g;
  }
  a = block_sum(a, scratch);
  b = block_sum(b, scratch);
  const float inv_h = 1.0f / static_cast<float>(H);
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
    const float xhat = (x[base + h] - mu) * rs;
    dx[base + h] = rs * (gamma[h] * dy[base + h] - (b + xhat * a) * inv_h);
  }
}

/// dgamma and dbeta for 32 columns per block: 16 row lanes stride over all T rows, then a tree.
__global__ void __launch_bounds__(kColTile * kRowLanes)
    gamma_beta_backward(const float* __restrict__ dy, const float* __restrict__ x, const float* __restrict__ mean,
                        const float* __restrict__ rstd, float* __restrict__ dgamma, float* __restrict__ dbeta,
                        int64_t T, int64_t H) {
  __shared__ float sg[kRowLanes][kColTile + 1];
  __shared__ float sb[kRowLanes][kColTile + 1];
  const int col = threadIdx.x % kColTile, lane = threadIdx.x / kColTile;
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kColTile + col;
  float dg = 0.f, db = 0.f;
  if (h < H)
    for (int64_t t = lane; t < T; t += kRowLanes) {
      const float d = dy[t * H + h];
      dg += d * ((x[t * H + h] - mean[t]) * rstd[t]);
      db += d;
    }
  sg[lane][col] = dg;
  sb[lane][col] = db;
  __syncthreads();
  for (int s = kRowLanes / 2; s > 0; s >>= 1) {
    if (lane < s) {
      sg[lane][col] += sg[lane + s][col];
      sb[lane][col] += sb[lane + s][col];
    }
    __syncthreads();
  }
  if (lane == 0 && h < H) {
    dgamma[h] = sg[0][col];
    dbeta[h] = sb[0][col];
  }
}

/// The workspace: fp32 copies of dy and x and the fp32 dx (one carve-up for both entry points).
struct Buffers {
  float *dy32, *x32, *dx32;
};
Buffers carve(d2k::Workspace& ws, int64_t T, int64_t H) {
  const uint64_t n = static_cast<uint64_t>(T) * static_cast<uint64_t>(H);
  return {ws.take<float>(n), ws.take<float>(n), ws.take<float>(n)};
}

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    if (T < 0 || H < 1) throw d2k::abi_error("naive: need T >= 0 and H >= 1");
    d2k::Workspace ws;
    carve(ws, T, H);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    if (T < 0 || H < 1) throw d2k::abi_error("naive: need T >= 0 and H >= 1");
    if (T > 2147483647) throw d2k::abi_error("naive: T above 2^31-1 is not supported (one block per row)");
    const DLTensor& dy = d2k::input(args, "dy", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& mean = d2k::input(args, "mean", kDLCUDA, d2k::dl::f32, {T});
    const DLTensor& rstd = d2k::input(args, "rstd", kDLCUDA, d2k::dl::f32, {T});
    const DLTensor& gamma = d2k::input(args, "gamma", kDLCUDA, d2k::dl::f32, {H});
    const DLTensor& dx = d2k::output(args, "dx", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& dgamma = d2k::output(args, "dgamma", kDLCUDA, d2k::dl::f32, {H});
    const DLTensor& dbeta = d2k::output(args, "dbeta", kDLCUDA, d2k::dl::f32, {H});
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, T, H);

    auto stream = static_cast<cudaStream_t>(args->stream);
    const int64_t n = T * H;
    const auto* mp = d2k::data<const float>(mean);
    const auto* rp = d2k::data<const float>(rstd);
    if (n > 0) {
      cast_bf16_to_f32<<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
          d2k::data<const __nv_bfloat16>(dy), buf.dy32, n);
      D2K_CUDA_TRY(args, cudaGetLastError());
      cast_bf16_to_f32<<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
          d2k::data<const __nv_bfloat16>(x), buf.x32, n);
      D2K_CUDA_TRY(args, cudaGetLastError());
      layer_norm_grad_input<<<static_cast<unsigned>(T), kRowThreads, 0, stream>>>(
          buf.dy32, buf.x32, mp, rp, d2k::data<const float>(gamma), buf.dx32, H);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    // T = 0 still writes dgamma = dbeta = 0 (the sums over no rows).
    gamma_beta_backward<<<blocks_for(H, kColTile), kColTile * kRowLanes, 0, stream>>>(
        buf.dy32, buf.x32, mp, rp, d2k::data<float>(dgamma), d2k::data<float>(dbeta), T, H);
    D2K_CUDA_TRY(args, cudaGetLastError());
    if (n > 0) {
      cast_f32_to_bf16<<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
          buf.dx32, d2k::data<__nv_bfloat16>(dx), n);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    return D2K_OK;
  });
}
