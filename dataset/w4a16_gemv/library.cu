// w4a16_gemv — library: the dequantise-then-GEMM path a practitioner composes from cuBLAS, the
// bar the expert must clear at every batch size:
//   1. dequantise_words   one fused kernel: a thread per packed int32 word reads it (and its
//                         group's scale) and writes the eight bf16 weights as one 16-byte store,
//                         w = bf16((q - 8) · scale), the same rounding as naive's scale_groups;
//   2. cublasGemmEx       y = x · wᵀ, bf16 in and out, fp32 accumulation (CUBLAS_COMPUTE_32F).
// Traffic: 0.5 B per weight read + 2 B written + 2 B re-read by the GEMM, against 0.5 B for a
// kernel that dequantises in registers. cuBLAS offers no GEMM over packed int4 weights with bf16
// group scales, so the dequantisation is ours and the GEMM is the library's.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "w4a16_cublas.cuh"

namespace {

constexpr int kThreads = 256;

__global__ void dequantise_words(const uint32_t* __restrict__ qw, const __nv_bfloat16* __restrict__ scales,
                                 __nv_bfloat16* __restrict__ w, int64_t words) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= words) return;
  const uint32_t q = qw[i];
  const float s = __bfloat162float(scales[i / (w4a16::kGroup / 8)]);  // 16 words per group
  __nv_bfloat162 out[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float lo = static_cast<float>(static_cast<int>((q >> (8 * j)) & 15u) - 8);
    const float hi = static_cast<float>(static_cast<int>((q >> (8 * j + 4)) & 15u) - 8);
    out[j] = __floats2bfloat162_rn(lo * s, hi * s);  // .x = k 8i + 2j, .y = k 8i + 2j + 1
  }
  reinterpret_cast<uint4*>(w)[i] = *reinterpret_cast<const uint4*>(out);
}

struct Buffers {
  __nv_bfloat16* w;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, int64_t N, int64_t K) {
  Buffers b;
  b.w = ws.take<__nv_bfloat16>(static_cast<uint64_t>(N) * static_cast<uint64_t>(K));
  b.cublas = ws.take_bytes(w4a16::kCublasWorkspace);
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    w4a16::check_shape("library", d2k::scalar_i(args, "B"), N, K);
    d2k::Workspace ws;
    carve(ws, N, K);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    w4a16::check_shape("library", B, N, K);
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {B, K});
    const DLTensor& qweight = d2k::input(args, "qweight", kDLCUDA, d2k::dl::i32, {N, K / 8});
    const DLTensor& scales = d2k::input(args, "scales", kDLCUDA, d2k::dl::bf16, {N, K / w4a16::kGroup});
    const DLTensor& y = d2k::output(args, "y", kDLCUDA, d2k::dl::bf16, {B, N});
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, N, K);
    auto st = static_cast<cudaStream_t>(args->stream);
    const int64_t words = N * (K / 8);
    dequantise_words<<<static_cast<unsigned>((words + kThreads - 1) / kThreads), kThreads, 0, st>>>(
        d2k::data<const uint32_t>(qweight), d2k::data<const __nv_bfloat16>(scales), b.w, words);
    D2K_CUDA_TRY(args, cudaGetLastError());
    w4a16::gemm_x_wt(st, b.cublas, d2k::data<const __nv_bfloat16>(x), b.w, d2k::data<__nv_bfloat16>(y), B, N, K);
    return D2K_OK;
  });
}
