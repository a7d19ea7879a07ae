// w4a16_gemv — what naive.cu and library.cu share: the cuBLAS handle and the GEMM that finishes
// a dequantise-then-GEMM path, y[B, N] = x[B, K] · W[N, K]ᵀ with W already in bf16.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"

#define W4A16_CUBLAS_CHECK(call)                                                              \
  do {                                                                                        \
    cublasStatus_t s_ = (call);                                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                          \
      throw std::runtime_error(std::string(#call) + ": cuBLAS status " + std::to_string(int(s_))); \
  } while (0)

namespace w4a16 {

constexpr int kGroup = 128;                                  // quantisation group along K
constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;  // bound per call: cuBLAS allocates nothing

/// One cuBLAS handle per process (created once, like a framework's).
inline cublasHandle_t cublas_handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { W4A16_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

/// y[B, N] = x[B, K] · W[N, K]ᵀ, bf16 in and out, fp32 compute. Row-major y is column-major yᵀ
/// (N x B, ld N) = op_T(W as column-major K x N, ld K) · (xᵀ as column-major K x B, ld K).
inline void gemm_x_wt(cudaStream_t st, void* ws, const void* x, const void* w, void* y, int64_t B, int64_t N,
                      int64_t K) {
  cublasHandle_t h = cublas_handle();
  W4A16_CUBLAS_CHECK(cublasSetStream(h, st));
  W4A16_CUBLAS_CHECK(cublasSetWorkspace(h, ws, kCublasWorkspace));
  const float one = 1.f, zero = 0.f;
  W4A16_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(B),
                                  static_cast<int>(K), &one, w, CUDA_R_16BF, static_cast<int>(K), x, CUDA_R_16BF,
                                  static_cast<int>(K), &zero, y, CUDA_R_16BF, static_cast<int>(N),
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/// The shapes every implementation accepts (definition.json's constraints), or an abi_error.
inline void check_shape(const char* who, int64_t B, int64_t N, int64_t K) {
  if (B < 1 || N < 1 || K < kGroup || K % kGroup != 0 || N > INT32_MAX || K > INT32_MAX)
    throw d2k::abi_error(std::string(who) + ": need B >= 1, N >= 1, K >= 128 a multiple of 128 (got B=" +
                         std::to_string(B) + ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ")");
}

}  // namespace w4a16
