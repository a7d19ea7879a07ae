// w4a16_gemv — naive baseline: what PyTorch eager launches for pytorch.py,
//   q = (qweight.unsqueeze(-1) >> shifts) & 15
//   w = (q.reshape(N, K/128, 128) - 8).to(bf16) * scales.unsqueeze(-1)
//   y = x @ w.reshape(N, K).t()
// op by op, every intermediate materialised ([N, K] int32 codes, then the bf16 weight):
//   1. shift_codes        s[n, k]  = qweight[n, k/8] >> 4·(k%8)         int32, broadcast read
//   2. mask_codes         q        = s & 15                              int32
//   3. subtract_offset    c        = q - 8                               int32 (over s's buffer)
//   4. cast_codes_bf16    cb       = bf16(c)                             exact (|c| <= 8)
//   5. scale_groups       w        = bf16(cb · scales[n, k/128])         one rounding, as aten's bf16 mul
//   6. cublasGemmEx       y        = x · wᵀ                              fp32 accumulation
// Six launches, each the plain elementwise form (a thread per element, coalesced), not slowed on
// purpose. Workspace: two int32 and two bf16 [N, K] buffers and cuBLAS's slice.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "w4a16_cublas.cuh"

namespace {

constexpr int kThreads = 256;

__global__ void shift_codes(const int32_t* __restrict__ qw, int32_t* __restrict__ s, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) s[i] = qw[i / 8] >> (4 * (i % 8));
}
__global__ void mask_codes(const int32_t* __restrict__ s, int32_t* __restrict__ q, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) q[i] = s[i] & 15;
}
__global__ void subtract_offset(const int32_t* __restrict__ q, int32_t* __restrict__ c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = q[i] - 8;
}
__global__ void cast_codes_bf16(const int32_t* __restrict__ c, __nv_bfloat16* __restrict__ cb, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) cb[i] = __int2bfloat16_rn(c[i]);
}
/// w[n, k] = cb[n, k] * scales[n, k / 128] (scales broadcast over the group), in fp32 then one rounding.
__global__ void scale_groups(const __nv_bfloat16* __restrict__ cb, const __nv_bfloat16* __restrict__ scales,
                             __nv_bfloat16* __restrict__ w, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) w[i] = __float2bfloat16_rn(__bfloat162float(cb[i]) * __bfloat162float(scales[i / w4a16::kGroup]));
}

struct Buffers {
  int32_t *s, *q;
  __nv_bfloat16 *cb, *w;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, int64_t N, int64_t K) {
  const uint64_t n = static_cast<uint64_t>(N) * static_cast<uint64_t>(K);
  Buffers b;
  b.s = ws.take<int32_t>(n);
  b.q = ws.take<int32_t>(n);
  b.cb = ws.take<__nv_bfloat16>(n);
  b.w = ws.take<__nv_bfloat16>(n);
  b.cublas = ws.take_bytes(w4a16::kCublasWorkspace);
  return b;
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    w4a16::check_shape("naive", d2k::scalar_i(args, "B"), N, K);
    d2k::Workspace ws;
    carve(ws, N, K);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    w4a16::check_shape("naive", B, N, K);
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {B, K});
    const DLTensor& qweight = d2k::input(args, "qweight", kDLCUDA, d2k::dl::i32, {N, K / 8});
    const DLTensor& scales = d2k::input(args, "scales", kDLCUDA, d2k::dl::bf16, {N, K / w4a16::kGroup});
    const DLTensor& y = d2k::output(args, "y", kDLCUDA, d2k::dl::bf16, {B, N});
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, N, K);
    auto st = static_cast<cudaStream_t>(args->stream);
    const int64_t n = N * K;
    shift_codes<<<blocks_for(n), kThreads, 0, st>>>(d2k::data<const int32_t>(qweight), b.s, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    mask_codes<<<blocks_for(n), kThreads, 0, st>>>(b.s, b.q, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    subtract_offset<<<blocks_for(n), kThreads, 0, st>>>(b.q, b.s, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    cast_codes_bf16<<<blocks_for(n), kThreads, 0, st>>>(b.s, b.cb, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    scale_groups<<<blocks_for(n), kThreads, 0, st>>>(b.cb, d2k::data<const __nv_bfloat16>(scales), b.w, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    w4a16::gemm_x_wt(st, b.cublas, d2k::data<const __nv_bfloat16>(x), b.w, d2k::data<__nv_bfloat16>(y), B, N, K);
    return D2K_OK;
  });
}
