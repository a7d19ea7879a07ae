// fp8_blockwise_gemm — the cuBLAS pieces naive.cu and library.cu share: one handle per process,
// the status check, and the bf16 GEMM that finishes the dequantise-then-GEMM path.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#define FP8_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                              \
    cublasStatus_t s_ = (call);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                \
      throw std::runtime_error(std::string(#call) + ": cuBLAS status " + std::to_string(int(s_)));  \
  } while (0)

namespace fp8gemm {

constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;  // bound per call: cuBLAS allocates nothing

inline cublasHandle_t cublas_handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { FP8_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

/// C[M, N] = A[M, K] · B[N, K]ᵀ, bf16 in and out, fp32 compute. Row-major C is column-major Cᵀ
/// (N x M, ld N) = op_T(B as column-major K x N, ld K) · (Aᵀ as column-major K x M, ld K).
inline void gemm_bf16_abt(cudaStream_t st, void* ws, const void* a, const void* b, void* c, int64_t M, int64_t N,
                          int64_t K) {
  cublasHandle_t h = cublas_handle();
  FP8_CUBLAS_CHECK(cublasSetStream(h, st));
  FP8_CUBLAS_CHECK(cublasSetWorkspace(h, ws, kCublasWorkspace));
  const float one = 1.f, zero = 0.f;
  FP8_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                                static_cast<int>(K), &one, b, CUDA_R_16BF, static_cast<int>(K), a, CUDA_R_16BF,
                                static_cast<int>(K), &zero, c, CUDA_R_16BF, static_cast<int>(N), CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
}

}  // namespace fp8gemm
