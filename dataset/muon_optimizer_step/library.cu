// muon_optimizer_step — library: the naive eager step with its GEMMs through cuBLASLt, using
// the GEMM epilogue (D = alpha*op(A)op(B) + beta*C, with C != D) to absorb the elementwise work
// between the products:
//   Bm = c*(A A) + b*A          one cublasLtMatmul, C = A           (no A2, no axpby kernel)
//   X' = Bm X + a*X             one cublasLtMatmul, C = X, D = X'   (no BX, no axpby kernel)
//   last iteration: alpha = scale, beta = a*scale, D = update       (no scale kernel)
//   param_out = param*(1 - lr*wd) - lr*update                       one elementwise kernel
// The prologue (momentum, Nesterov blend, cast, norm, divide) is naive's. X X^T is a plain
// cuBLASLt GEMM: cuBLAS has no bf16 SYRK, so the symmetric products still cost full GEMMs.
// For M > N the iteration runs on X^T through the transpose flags, as in naive.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"
#include "muon_args.h"
#include "muon_eager.cuh"

namespace {

/// Launches an elementwise kernel with 4-wide steps when the count allows.
struct Elementwise {
  cudaStream_t st;
  int sms;
  template <class K4, class K1, class... A>
  void operator()(K4 k4, K1 k1, int64_t n, bool vec_ok, A... a) const {
    const int V = vec_ok && n % 4 == 0 ? 4 : 1;
    const int64_t blocks = std::min<int64_t>((n / V + 255) / 256, int64_t(sms) * 32);
    if (V == 4) k4<<<unsigned(std::max<int64_t>(blocks, 1)), 256, 0, st>>>(a...);
    else k1<<<unsigned(std::max<int64_t>(blocks, 1)), 256, 0, st>>>(a...);
    MUON_LAUNCH_CHECK();
  }
};

/// One cuBLASLt handle per process (created once, like a framework's).
cublasLtHandle_t handle() {
  static std::once_flag once;
  static cublasLtHandle_t h = nullptr;
  std::call_once(once, [] { MUON_CUBLAS_CHECK(cublasLtCreate(&h)); });
  return h;
}

/// Column-major bf16 matrix layout rows x cols (leading dim ld), strided over `batch`.
struct LtLayout {
  cublasLtMatrixLayout_t d = nullptr;
  LtLayout(int rows, int cols, int ld, int64_t stride, int batch) {
    MUON_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, rows, cols, ld));
    if (batch > 1) {
      MUON_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
      MUON_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  }
  ~LtLayout() { cublasLtMatrixLayoutDestroy(d); }
  LtLayout(const LtLayout&) = delete;
  LtLayout& operator=(const LtLayout&) = delete;
};

/// Column-major D = alpha op(A) op(B) + beta C, bf16 in/out, fp32 compute, strided-batched.
/// (ra, ca, lda): A as stored; likewise B; C and D are m x n with leading dim ldc.
void lt_gemm(cublasLtHandle_t h, cudaStream_t st, void* ws, size_t ws_bytes, cublasOperation_t ta,
             cublasOperation_t tb, int m, int n, int k, const void* A, int lda, int64_t sA, const void* B,
             int ldb, int64_t sB, const void* C, void* D, int ldc, int64_t sC, int batch, float alpha,
             float beta) {
  cublasLtMatmulDesc_t op = nullptr;
  MUON_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  struct OpGuard { cublasLtMatmulDesc_t d; ~OpGuard() { cublasLtMatmulDescDestroy(d); } } og{op};
  MUON_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  MUON_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const bool tra = ta == CUBLAS_OP_T, trb = tb == CUBLAS_OP_T;
  LtLayout la(tra ? k : m, tra ? m : k, lda, sA, batch);
  LtLayout lb(trb ? n : k, trb ? k : n, ldb, sB, batch);
  LtLayout lc(m, n, ldc, sC, batch);
  cublasLtMatmulPreference_t pref = nullptr;
  MUON_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  struct PrefGuard { cublasLtMatmulPreference_t p; ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); } } pg{pref};
  MUON_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                        sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  MUON_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(h, op, la.d, lb.d, lc.d, lc.d, pref, 1, &heur, &found));
  if (found == 0) throw std::runtime_error("library: cuBLASLt found no algorithm");
  MUON_CUBLAS_CHECK(cublasLtMatmul(h, op, &alpha, A, la.d, B, lb.d, &beta, C, lc.d, D, lc.d, &heur.algo, ws,
                                  ws_bytes, st));
}

// param_out = param*decay - lr*update
template <int V>
__global__ void param_step(const float* p, const uint16_t* u, float* out, int64_t n, float decay, float lr) {
  GRID_STRIDE(i, n, V) {
    float a[V], b[V];
    load<V>(p + i, a);
    load<V>(u + i, b);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = fmaf(-lr, b[k], a[k] * decay);
    store<V>(out + i, a);
  }
}

/// Workspace buffers (256-byte aligned slices), carved by one function for both entry points.
struct Buffers {
  float* U;
  uint16_t *X, *Xn, *A, *Bm;
  float *part, *norm;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, int64_t B, int64_t M, int64_t N) {
  const uint64_t s = uint64_t(std::min(M, N)), n = uint64_t(B * M * N), ss = uint64_t(B) * s * s;
  Buffers b;
  b.U = ws.take<float>(n);
  b.X = ws.take<uint16_t>(n);
  b.Xn = ws.take<uint16_t>(n);
  b.A = ws.take<uint16_t>(ss);
  b.Bm = ws.take<uint16_t>(ss);
  b.part = ws.take<float>(uint64_t(B) * kReduceBlocks);
  b.norm = ws.take<float>(uint64_t(B));
  b.cublas = ws.take_bytes(kCublasWorkspace);
  return b;
}

void run(const d2k_args* args) {
  const muon::Args g = muon::parse(args, kDLCUDA);
  d2k::Workspace ws(args);
  const Buffers wb = carve(ws, g.B, g.M, g.N);
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  float* U = wb.U;
  uint16_t* X = wb.X;
  uint16_t* Xn = wb.Xn;
  uint16_t* A = wb.A;
  uint16_t* Bm = wb.Bm;
  float* part = wb.part;
  float* norm = wb.norm;
  void* lws = wb.cublas;
  int dev = 0, sms = 0;
  MUON_CUDA_CHECK(cudaGetDevice(&dev));
  MUON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cublasLtHandle_t h = handle();

  const int64_t n = g.numel(), per = g.M * g.N;
  const int B = int(g.B), s = int(g.s()), l = int(g.l());
  const float beta = float(g.beta);
  const Elementwise ew{st, sms};
  auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool io_aligned = a16(g.param) && a16(g.grad) && a16(g.momentum) && a16(g.momentum_out) &&
                          a16(g.update) && a16(g.param_out);

  ew(momentum_update<4>, momentum_update<1>, n, io_aligned, g.momentum, g.grad, g.momentum_out, n, beta);
  ew(nesterov_blend<4>, nesterov_blend<1>, n, io_aligned, g.grad, g.momentum_out, U, n, beta);
  ew(cast_to_bf16<4>, cast_to_bf16<1>, n, true, U, X, n);
  sumsq_partials<<<dim3(kReduceBlocks, B), 256, 0, st>>>(X, per, part);
  MUON_LAUNCH_CHECK();
  sumsq_final<<<B, 256, 0, st>>>(part, kReduceBlocks, norm);
  MUON_LAUNCH_CHECK();
  ew(divide_by_norm<4>, divide_by_norm<1>, n, per % 4 == 0, X, per, n, norm, float(g.eps));

  // X keeps G's layout (M x N row-major) throughout, as in naive; so does update.
  const int64_t ss = int64_t(s) * s, sl = int64_t(s) * l;
  const bool tall = g.tall();
  const float a = float(muon::kNsA), b = float(muon::kNsB), c = float(muon::kNsC);
  const float scale = float(g.scale());
  for (int it = 0; it < muon::kNsSteps; ++it) {
    const bool last = it == muon::kNsSteps - 1;
    uint16_t* D = last ? g.update : Xn;
    const float alpha_x = last ? scale : 1.f, beta_x = last ? a * scale : a;
    if (!tall) {
      lt_gemm(h, st, lws, kCublasWorkspace, CUBLAS_OP_T, CUBLAS_OP_N, s, s, l, X, l, sl, X, l, sl, A, A, s, ss, B,
              1.f, 0.f);                                                           // A = Xc^T Xc
      lt_gemm(h, st, lws, kCublasWorkspace, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, A, s, ss, A, s, ss, A, Bm, s, ss, B,
              c, b);                                                               // Bm = c A A + b A
      lt_gemm(h, st, lws, kCublasWorkspace, CUBLAS_OP_N, CUBLAS_OP_N, l, s, s, X, l, sl, Bm, s, ss, X, D, l, sl, B,
              alpha_x, beta_x);                                                    // X'^T = Xc Bm + a Xc
    } else {
      lt_gemm(h, st, lws, kCublasWorkspace, CUBLAS_OP_N, CUBLAS_OP_T, s, s, l, X, s, sl, X, s, sl, A, A, s, ss, B,
              1.f, 0.f);                                                           // A = Xc Xc^T
      lt_gemm(h, st, lws, kCublasWorkspace, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, A, s, ss, A, s, ss, A, Bm, s, ss, B,
              c, b);
      lt_gemm(h, st, lws, kCublasWorkspace, CUBLAS_OP_N, CUBLAS_OP_N, s, l, s, Bm, s, ss, X, s, sl, X, D, s, sl, B,
              alpha_x, beta_x);                                                    // X' = Bm Xc + a Xc
    }
    std::swap(X, Xn);
  }
  ew(param_step<4>, param_step<1>, n, io_aligned, g.param, g.update, g.param_out, n, float(1.0 - g.lr * g.wd),
     float(g.lr));
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), M = d2k::scalar_i(args, "M"), N = d2k::scalar_i(args, "N");
    if (B < 1 || M < 1 || N < 1) throw d2k::abi_error("axes B, M, N must be >= 1");
    d2k::Workspace ws;
    carve(ws, B, M, N);
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
