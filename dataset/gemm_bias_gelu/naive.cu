// gemm_bias_gelu — naive: what PyTorch eager launches for gelu(addmm(bias, A, B)) op by op.
//
//   C = A B                 cuBLAS GEMM (cublasGemmEx: bf16 in, fp32 accumulate, bf16 out),
//                           C materialised in the workspace
//   out = gelu_tanh(C + bias)   one elementwise kernel: bias broadcast over rows, fp32 math with
//                               tanhf (PyTorch's GeluCUDAKernelImpl, approximate="tanh"), bf16 out
//
// Row-major A [M,K], B [K,N], out [M,N] are column-major B^T, A^T, out^T to cuBLAS, so the call
// computes out^T (N x M) = B^T (N x K) * A^T (K x M) with no transposes (op N, N), as
// torch.addmm does. The elementwise kernel reads and writes 16 bytes (8 bf16) per step, as
// PyTorch's vectorised elementwise kernels do (N % 8 == 0 keeps every row 16-byte aligned).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"
#include "gemm_args.h"

#define GBG_CUDA_CHECK(call)                                                                \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess)                                                                  \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": " + cudaGetErrorString(e_));                    \
  } while (0)
#define GBG_CUBLAS_CHECK(call)                                                              \
  do {                                                                                      \
    cublasStatus_t s_ = (call);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                        \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": cuBLAS status " + std::to_string(int(s_)));     \
  } while (0)

namespace {

constexpr size_t kCublasWorkspace = size_t(32) << 20;

/// One cuBLAS handle per process (created once, like a framework's); per call it is bound to
/// the call's stream and to a slice of the call's workspace, so cuBLAS allocates nothing.
cublasHandle_t handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { GBG_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

/// PyTorch's tanh GELU in fp32 (opmath): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
__device__ __forceinline__ float gelu_tanh_eager(float x) {
  constexpr float kBeta = 0.7978845608028654f, kKappa = 0.044715f;
  const float inner = kBeta * (x + kKappa * x * x * x);
  return 0.5f * x * (1.f + tanhf(inner));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  return uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(lo))) |
         (uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(hi))) << 16);
}

/// out = gelu(C + bias), 8 elements (16 bytes) per thread step; N % 8 == 0, so the 8 elements
/// of a step share one row and bias[n .. n+7] is contiguous.
__global__ void __launch_bounds__(256) bias_gelu(const uint4* __restrict__ c, const uint16_t* __restrict__ bias,
                                                 uint4* __restrict__ out, int64_t vectors, int64_t vectors_per_row) {
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors; v += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = (v % vectors_per_row) * 8;
    const uint4 x = c[v];
    const uint4 b = *reinterpret_cast<const uint4*>(bias + n);
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, bs[4] = {b.x, b.y, b.z, b.w};
    uint32_t r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      r[j] = pack_bf16(gelu_tanh_eager(bf16_lo(xs[j]) + bf16_lo(bs[j])),
                       gelu_tanh_eager(bf16_hi(xs[j]) + bf16_hi(bs[j])));
    out[v] = make_uint4(r[0], r[1], r[2], r[3]);
  }
}

/// Workspace: the materialised product and cuBLAS's scratch, carved once for both entry points.
struct Buffers {
  uint16_t* c;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, int64_t M, int64_t N) {
  Buffers b;
  b.c = ws.take<uint16_t>(uint64_t(M) * uint64_t(N));
  b.cublas = ws.take_bytes(kCublasWorkspace);
  return b;
}

void run(const d2k_args* args) {
  const gbg::Args g = gbg::parse(args, kDLCUDA);
  d2k::Workspace ws(args);
  const Buffers wb = carve(ws, g.M, g.N);
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  cublasHandle_t h = handle();
  GBG_CUBLAS_CHECK(cublasSetStream(h, st));
  GBG_CUBLAS_CHECK(cublasSetWorkspace(h, wb.cublas, kCublasWorkspace));
  const float one = 1.f, zero = 0.f;
  const int M = int(g.M), N = int(g.N), K = int(g.K);
  GBG_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, g.B, CUDA_R_16BF, N, g.A, CUDA_R_16BF,
                                K, &zero, wb.c, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

  int dev = 0, sms = 0;
  GBG_CUDA_CHECK(cudaGetDevice(&dev));
  GBG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t vectors = g.M * g.N / 8;
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((vectors + 255) / 256, int64_t(sms) * 32));
  bias_gelu<<<unsigned(blocks), 256, 0, st>>>(reinterpret_cast<const uint4*>(wb.c), g.bias,
                                               reinterpret_cast<uint4*>(g.out), vectors, g.N / 8);
  GBG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t M = d2k::scalar_i(args, "M"), N = d2k::scalar_i(args, "N");
    if (M < 1 || N < 1) throw d2k::abi_error("axes M and N must be >= 1");
    d2k::Workspace ws;
    carve(ws, M, N);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    run(args);
    return D2K_OK;
  });
}
