// moe_grouped_gemm — naive: what a PyTorch for-loop over experts launches.
//
//   offsets = offsets.tolist()                     # device -> host copy, the stream waits
//   for e in range(E):
//       s, t = offsets[e], offsets[e + 1]
//       if t > s: y[s:t] = x[s:t] @ w[e].T         # one cuBLAS GEMM per non-empty expert
//
// Each GEMM is cublasGemmEx with bf16 operands and output, fp32 compute (PyTorch's default for
// bf16 matmul). Row-major y_e [M, N] = x_e [M, K] · w_e^T is, in cuBLAS's column-major terms,
// y_e^T (N x M) = op_T(w_e as K x N) · x_e^T (K x M).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "d2k/solution.h"
#include "moe_gemm_args.h"

namespace {

#define MOE_CUDA_CHECK(x)                                                                   \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) throw std::runtime_error(std::string(#x) + ": " + cudaGetErrorString(e_)); \
  } while (0)
#define MOE_CUBLAS_CHECK(x)                                                                    \
  do {                                                                                         \
    cublasStatus_t s_ = (x);                                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
      throw std::runtime_error(std::string(#x) + ": cuBLAS status " + std::to_string(int(s_))); \
  } while (0)

/// One cuBLAS handle per process (created once, like a framework's); per call it is bound to
/// the call's stream.
cublasHandle_t handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { MOE_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

/// The offsets on the host (what .tolist() does: a copy to pageable memory, then wait).
std::vector<int32_t> read_offsets(const moe_gemm::Args& g, cudaStream_t st) {
  std::vector<int32_t> o(static_cast<size_t>(g.E + 1));
  MOE_CUDA_CHECK(cudaMemcpyAsync(o.data(), g.offsets, sizeof(int32_t) * o.size(), cudaMemcpyDeviceToHost, st));
  MOE_CUDA_CHECK(cudaStreamSynchronize(st));
  return o;
}

void run(const d2k_args* args) {
  const moe_gemm::Args g = moe_gemm::bind(args, kDLCUDA);
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  const std::vector<int32_t> o = read_offsets(g, st);
  moe_gemm::check_offsets(o.data(), g.E, g.T, "naive");
  cublasHandle_t h = handle();
  MOE_CUBLAS_CHECK(cublasSetStream(h, st));
  MOE_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  const float alpha = 1.f, beta = 0.f;
  const auto* x = static_cast<const char*>(g.x);
  const auto* w = static_cast<const char*>(g.w);
  auto* y = static_cast<char*>(g.y);
  const int N = int(g.N), K = int(g.K);
  for (int64_t e = 0; e < g.E; ++e) {
    const int M = o[e + 1] - o[e];
    if (M == 0) continue;
    MOE_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha,
                                  w + 2 * e * g.N * g.K, CUDA_R_16BF, K,
                                  x + 2 * int64_t(o[e]) * g.K, CUDA_R_16BF, K, &beta,
                                  y + 2 * int64_t(o[e]) * g.N, CUDA_R_16BF, N,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  MOE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    moe_gemm::axes(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    run(args);
    return D2K_OK;
  });
}
