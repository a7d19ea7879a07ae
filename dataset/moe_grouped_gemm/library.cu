// moe_grouped_gemm — library: cuBLAS's grouped batched GEMM (cublasGemmGroupedBatchedEx, cuBLAS
// >= 12.5), every non-empty expert one group of one GEMM, all in one call.
//
// cuBLAS takes the per-group extents (m, n, k, leading dimensions, alpha, beta) in host arrays,
// so the offsets are read back to the host first, as for the naive loop; the operand pointer
// arrays must be in device memory and are written on the device from the offsets by one tiny
// kernel (no host-to-device copy). Per expert, in cuBLAS's column-major terms:
//   y_e^T (N x M_e) = op_T(w_e as K x N) · x_e^T (K x M_e),  bf16 in and out, fp32 compute.
// Empty experts are left out of the group list (their GEMMs have no rows).
#include <cublas_v2.h>
#include <cuda_bf16.h>
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

cublasHandle_t handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { MOE_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

/// Operand pointers of the non-empty experts, in expert order (the same compaction the host
/// does for the extents). One thread: E is at most a few hundred.
__global__ void group_pointers(const int32_t* __restrict__ offsets, int E, int64_t K, int64_t N,
                               const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                               const void** a, const void** b, void** c) {
  int g = 0;
  for (int e = 0; e < E; ++e) {
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    if (r1 <= r0) continue;
    a[g] = w + e * N * K;
    b[g] = x + r0 * K;
    c[g] = y + r0 * N;
    ++g;
  }
}

struct Buffers {
  const void** a;
  const void** b;
  void** c;
};

Buffers carve(d2k::Workspace& ws, int64_t E) {
  return {ws.take<const void*>(uint64_t(E)), ws.take<const void*>(uint64_t(E)), ws.take<void*>(uint64_t(E))};
}

std::vector<int32_t> read_offsets(const moe_gemm::Args& g, cudaStream_t st) {
  std::vector<int32_t> o(static_cast<size_t>(g.E + 1));
  MOE_CUDA_CHECK(cudaMemcpyAsync(o.data(), g.offsets, sizeof(int32_t) * o.size(), cudaMemcpyDeviceToHost, st));
  MOE_CUDA_CHECK(cudaStreamSynchronize(st));
  return o;
}

void run(const d2k_args* args) {
  const moe_gemm::Args g = moe_gemm::bind(args, kDLCUDA);
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  d2k::Workspace ws(args);
  const Buffers buf = carve(ws, g.E);
  const std::vector<int32_t> o = read_offsets(g, st);
  moe_gemm::check_offsets(o.data(), g.E, g.T, "library");
  // Launched after the host has the offsets, so that the host round trip is not timed between
  // two kernels of the call; it reads the (checked) offsets again from device memory.
  group_pointers<<<1, 1, 0, st>>>(g.offsets, int(g.E), g.K, g.N, static_cast<const __nv_bfloat16*>(g.x),
                                  static_cast<const __nv_bfloat16*>(g.w), static_cast<__nv_bfloat16*>(g.y),
                                  buf.a, buf.b, buf.c);
  MOE_CUDA_CHECK(cudaGetLastError());

  std::vector<int> m, n, k, lda, ldb, ldc, size;
  std::vector<float> alpha, beta;
  for (int64_t e = 0; e < g.E; ++e) {
    const int rows = o[e + 1] - o[e];
    if (rows == 0) continue;
    m.push_back(int(g.N));
    n.push_back(rows);
    k.push_back(int(g.K));
    lda.push_back(int(g.K));
    ldb.push_back(int(g.K));
    ldc.push_back(int(g.N));
    size.push_back(1);
    alpha.push_back(1.f);
    beta.push_back(0.f);
  }
  const int groups = int(m.size());  // >= 1: offsets[E] = T >= 1
  const std::vector<cublasOperation_t> ta(size_t(groups), CUBLAS_OP_T), tb(size_t(groups), CUBLAS_OP_N);
  cublasHandle_t h = handle();
  MOE_CUBLAS_CHECK(cublasSetStream(h, st));
  MOE_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  MOE_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(h, ta.data(), tb.data(), m.data(), n.data(), k.data(), alpha.data(),
                                              buf.a, CUDA_R_16BF, lda.data(), buf.b, CUDA_R_16BF, ldb.data(),
                                              beta.data(), buf.c, CUDA_R_16BF, ldc.data(), groups, size.data(),
                                              CUBLAS_COMPUTE_32F));
  MOE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const moe_gemm::Args g = moe_gemm::axes(args);
    d2k::Workspace ws;
    carve(ws, g.E);
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
