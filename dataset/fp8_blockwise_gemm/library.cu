// fp8_blockwise_gemm — library: one cuBLASLt fp8 GEMM with Hopper's block-scaling modes (cuBLAS
// 12.9+): CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F for the weight and VEC128_32F for the
// activations, e4m3 x e4m3 with fp32 accumulation, bf16 output.
//
// Row-major C[M, N] = A · Bᵀ is column-major Cᵀ (N x M) = op_T(B as column-major K x N) · (Aᵀ as
// column-major K x M): cuBLAS's "A" is our B (128 x 128 blocks) and its "B" is our A (1 x 128).
// cuBLAS's scale layouts (cuBLAS docs, "128-element 1D and 128x128 2D Block Scaling", "Scaling
// factors layouts") differ from the task's, so a small kernel re-lays them into the workspace:
//   - VEC128_32F for its B (our A): outer-dimension-major, our a_scales transposed to [K/128][M4];
//   - BLK128x128_32F for its A (our B): K-major with a column stride that is a multiple of 4,
//     our b_scales [NB][K/128] with rows padded to L4 = round_up(K/128, 4).
// cuBLAS also needs both GEMM extents (our N and M) to be multiples of 4: N is (a multiple of 8);
// when M is not, A is copied into M4 = round_up(M, 4) zero-padded rows and C's first M rows are
// copied back (only the small check shapes; every bench M is a multiple of 4).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"
#include "fp8_args.h"

#define LT_CHECK(call)                                                                              \
  do {                                                                                              \
    cublasStatus_t s_ = (call);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                \
      throw std::runtime_error(std::string(#call) + ": cuBLASLt status " + std::to_string(int(s_))); \
  } while (0)

namespace {

constexpr std::size_t kLtWorkspace = std::size_t(32) << 20;
constexpr int kThreads = 256;

int64_t round4(int64_t v) { return (v + 3) / 4 * 4; }

cublasLtHandle_t lt_handle() {
  static std::once_flag once;
  static cublasLtHandle_t h = nullptr;
  std::call_once(once, [] { LT_CHECK(cublasLtCreate(&h)); });
  return h;
}

/// sa_t[kb, m] = a_scales[m, kb] (0 for m >= M); sb_p[nb, kb] = b_scales[nb, kb] (0 for kb >= KB).
__global__ void relayout_scales(const float* __restrict__ sa, const float* __restrict__ sb, float* __restrict__ sa_t,
                                float* __restrict__ sb_p, int64_t M, int64_t M4, int64_t KB, int64_t L4, int64_t NB) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t na = KB * M4;
  if (i < na) {
    const int64_t kb = i / M4, m = i % M4;
    sa_t[i] = m < M ? sa[m * KB + kb] : 0.f;
  } else if (i < na + NB * L4) {
    const int64_t j = i - na, nb = j / L4, kb = j % L4;
    sb_p[j] = kb < KB ? sb[nb * KB + kb] : 0.f;
  }
}

struct Buffers {
  float *sa_t, *sb_p;
  std::uint8_t* a_pad;     // [M4, K] when M % 4 != 0
  __nv_bfloat16* c_pad;    // [M4, N] when M % 4 != 0
  void* lt;
};
Buffers carve(d2k::Workspace& ws, int64_t M, int64_t N, int64_t K) {
  const int64_t M4 = round4(M), KB = K / fp8gemm::kBlock, NB = (N + fp8gemm::kBlock - 1) / fp8gemm::kBlock;
  Buffers b{};
  b.sa_t = ws.take<float>(static_cast<uint64_t>(KB * M4));
  b.sb_p = ws.take<float>(static_cast<uint64_t>(NB * round4(KB)));
  if (M4 != M) {
    b.a_pad = ws.take<std::uint8_t>(static_cast<uint64_t>(M4 * K));
    b.c_pad = ws.take<__nv_bfloat16>(static_cast<uint64_t>(M4 * N));
  }
  b.lt = ws.take_bytes(kLtWorkspace);
  return b;
}

/// RAII for the descriptors of one call.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

/// Cᵀ[N, Mr] = op_T(B) · Aᵀ with B's 128 x 128 scales and A's 1 x 128 scales (already re-laid).
void lt_gemm(cudaStream_t st, void* lt_ws, const void* a, const void* b, const float* sa_t, const float* sb_p,
             void* c, int64_t Mr, int64_t N, int64_t K) {
  LtCall call;
  LT_CHECK(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
  LT_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
  const int32_t blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  LT_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blk, sizeof blk));
  LT_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec, sizeof vec));
  LT_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sb_p, sizeof sb_p));
  LT_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sa_t, sizeof sa_t));
  LT_CHECK(cublasLtMatrixLayoutCreate(&call.la, CUDA_R_8F_E4M3, static_cast<uint64_t>(K), static_cast<uint64_t>(N), K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&call.lb, CUDA_R_8F_E4M3, static_cast<uint64_t>(K), static_cast<uint64_t>(Mr), K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&call.lc, CUDA_R_16BF, static_cast<uint64_t>(N), static_cast<uint64_t>(Mr), N));
  LT_CHECK(cublasLtMatmulPreferenceCreate(&call.pref));
  const uint64_t wsb = kLtWorkspace;
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(call.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt_handle(), call.op, call.la, call.lb, call.lc, call.lc, call.pref, 1, &heur,
                                          &found));
  if (found < 1)
    throw std::runtime_error("library: cuBLASLt has no fp8 algorithm with 128x128 / 1x128 block scaling for this "
                             "GPU and shape (N=" + std::to_string(N) + ", M=" + std::to_string(Mr) + ", K=" +
                             std::to_string(K) + ")");
  const float one = 1.f, zero = 0.f;
  LT_CHECK(cublasLtMatmul(lt_handle(), call.op, &one, b, call.la, a, call.lb, &zero, c, call.lc, c, call.lc,
                          &heur.algo, lt_ws, kLtWorkspace, st));
}

void launched(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("library: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t M = d2k::scalar_i(args, "M"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    fp8gemm::check_shape("library", M, N, K);
    d2k::Workspace ws;
    carve(ws, M, N, K);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const fp8gemm::Operands o = fp8gemm::operands(args, kDLCUDA, "library");
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, o.M, o.N, o.K);
    auto st = static_cast<cudaStream_t>(args->stream);
    const int64_t M4 = round4(o.M), L4 = round4(o.KB);
    const int64_t n = o.KB * M4 + o.NB * L4;
    relayout_scales<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, st>>>(
        d2k::data<const float>(*o.a_scales), d2k::data<const float>(*o.b_scales), b.sa_t, b.sb_p, o.M, M4, o.KB, L4,
        o.NB);
    launched("relayout_scales");
    const void* a = d2k::data<const std::uint8_t>(*o.a);
    void* c = d2k::data<__nv_bfloat16>(*o.c);
    if (M4 != o.M) {
      D2K_CUDA_TRY(args, cudaMemsetAsync(b.a_pad, 0, static_cast<size_t>(M4 * o.K), st));
      D2K_CUDA_TRY(args, cudaMemcpyAsync(b.a_pad, a, static_cast<size_t>(o.M * o.K), cudaMemcpyDeviceToDevice, st));
      a = b.a_pad;
      c = b.c_pad;
    }
    lt_gemm(st, b.lt, a, d2k::data<const std::uint8_t>(*o.b), b.sa_t, b.sb_p, c, M4, o.N, o.K);
    if (M4 != o.M)
      D2K_CUDA_TRY(args, cudaMemcpyAsync(d2k::data<__nv_bfloat16>(*o.c), b.c_pad, static_cast<size_t>(o.M * o.N) * 2,
                                         cudaMemcpyDeviceToDevice, st));
    return D2K_OK;
  });
}
