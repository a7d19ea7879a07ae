// fp8_blockwise_gemm — naive baseline: what PyTorch eager launches for pytorch.py,
//   a  = (A.float().view(M, K/128, 128) * a_scales.unsqueeze(-1)).view(M, K).bfloat16()
//   sb = b_scales.repeat_interleave(128, 0)[:N]
//   b  = (B.float().view(N, K/128, 128) * sb.unsqueeze(-1)).view(N, K).bfloat16()
//   C  = a @ b.t()
// op by op, every intermediate materialised:
//   1. upcast_e4m3      a32 = float(A)                          [M, K] fp32 (exact)
//   2. scale_rows       as  = a32 · a_scales[m, k/128]          [M, K] fp32 (one rounding)
//   3. to_bf16          a   = bf16(as)                          [M, K] bf16
//   4. repeat_rows      sb  = b_scales[n/128, :]                [N, K/128] fp32
//   5-7.                b   = bf16(float(B) · sb[n, k/128])     as 1-3 over [N, K]
//   8. cublasGemmEx     C   = a · bᵀ                            bf16 tensor cores, fp32 accumulation
// Each elementwise launch is the plain form (a thread per element, coalesced), not slowed on
// purpose. Workspace: the fp32 and bf16 copies of both operands, sb, and cuBLAS's slice.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"
#include "fp8_args.h"
#include "fp8_cublas.cuh"

namespace {

constexpr int kThreads = 256;

__global__ void upcast_e4m3(const __nv_fp8_e4m3* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<float>(x[i]);
}
/// y[r, k] = x[r, k] · s[r, k / 128] (the scale broadcast over its block of K), fp32. The row and
/// column come from 32-bit division when the tensor allows it, as aten's broadcast offset
/// calculator does (a 64-bit division per element would make this pass instruction-bound).
template <class Index>
__global__ void scale_rows(const float* __restrict__ x, const float* __restrict__ s, float* __restrict__ y,
                           Index n, Index K) {
  const Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const Index r = i / K, k = i % K;
    y[i] = x[i] * s[static_cast<int64_t>(r) * (K / fp8gemm::kBlock) + k / fp8gemm::kBlock];
  }
}
__global__ void to_bf16(const float* __restrict__ x, __nv_bfloat16* __restrict__ y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(x[i]);
}
/// sb[n, kb] = b_scales[n / 128, kb]: the 128 x 128 block scales repeated over their rows.
__global__ void repeat_rows(const float* __restrict__ s, float* __restrict__ y, int64_t n, int64_t KB) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s[(i / KB / fp8gemm::kBlock) * KB + i % KB];
}

struct Buffers {
  float *a32, *as, *b32, *bs, *sb;
  __nv_bfloat16 *a, *b;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, int64_t M, int64_t N, int64_t K) {
  const uint64_t mk = static_cast<uint64_t>(M) * K, nk = static_cast<uint64_t>(N) * K;
  Buffers b;
  b.a32 = ws.take<float>(mk);
  b.as = ws.take<float>(mk);
  b.a = ws.take<__nv_bfloat16>(mk);
  b.sb = ws.take<float>(static_cast<uint64_t>(N) * (K / fp8gemm::kBlock));
  b.b32 = ws.take<float>(nk);
  b.bs = ws.take<float>(nk);
  b.b = ws.take<__nv_bfloat16>(nk);
  b.cublas = ws.take_bytes(fp8gemm::kCublasWorkspace);
  return b;
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("naive: ") + what + ": " + cudaGetErrorString(e));
}

/// Steps 1-3 (or 5-7): one operand dequantised to bf16 through fp32 buffers.
void dequantise(cudaStream_t st, const __nv_fp8_e4m3* x, const float* row_scales,
                float* x32, float* xs, __nv_bfloat16* y, int64_t rows, int64_t K) {
  const int64_t n = rows * K;
  upcast_e4m3<<<blocks_for(n), kThreads, 0, st>>>(x, x32, n);
  launched("upcast_e4m3");
  if (n <= static_cast<int64_t>(UINT32_MAX - kThreads))
    scale_rows<uint32_t><<<blocks_for(n), kThreads, 0, st>>>(x32, row_scales, xs, static_cast<uint32_t>(n),
                                                             static_cast<uint32_t>(K));
  else
    scale_rows<int64_t><<<blocks_for(n), kThreads, 0, st>>>(x32, row_scales, xs, n, K);
  launched("scale_rows");
  to_bf16<<<blocks_for(n), kThreads, 0, st>>>(xs, y, n);
  launched("to_bf16");
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t M = d2k::scalar_i(args, "M"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    fp8gemm::check_shape("naive", M, N, K);
    d2k::Workspace ws;
    carve(ws, M, N, K);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const fp8gemm::Operands o = fp8gemm::operands(args, kDLCUDA, "naive");
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, o.M, o.N, o.K);
    auto st = static_cast<cudaStream_t>(args->stream);
    dequantise(st, d2k::data<const __nv_fp8_e4m3>(*o.a), d2k::data<const float>(*o.a_scales), b.a32, b.as,
               b.a, o.M, o.K);
    const int64_t nsb = o.N * o.KB;
    repeat_rows<<<blocks_for(nsb), kThreads, 0, st>>>(d2k::data<const float>(*o.b_scales), b.sb, nsb, o.KB);
    D2K_CUDA_TRY(args, cudaGetLastError());
    dequantise(st, d2k::data<const __nv_fp8_e4m3>(*o.b), b.sb, b.b32, b.bs, b.b, o.N, o.K);
    fp8gemm::gemm_bf16_abt(st, b.cublas, b.a, b.b, d2k::data<__nv_bfloat16>(*o.c), o.M, o.N, o.K);
    return D2K_OK;
  });
}
