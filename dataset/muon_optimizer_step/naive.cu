// muon_optimizer_step — naive: what an eager framework runs, op by op.
//
// This is the PyTorch Muon step (Keller Jordan's zeropower_via_newtonschulz5) as eager kernels:
//   momentum_out = beta*momentum + grad                 elementwise kernel
//   U = grad + beta*momentum_out                        elementwise kernel (fp32, materialised)
//   X = bf16(U)                                         cast kernel
//   n = ||X||_F                                         reduction kernels (partials, final)
//   X = X / (n + eps)                                   elementwise kernel
//   5 times:  A  = X X^T                                cuBLAS GEMM (bf16 in, fp32 accumulate, bf16 out)
//             A2 = A A                                  cuBLAS GEMM
//             Bm = b A + c A2                           elementwise kernel
//             BX = Bm X                                 cuBLAS GEMM
//             X  = a X + BX                             elementwise kernel
//   update = bf16(sqrt(max(1, M/N)) * X)                elementwise kernel
//   param_out = param*(1 - lr*wd);  param_out -= lr*update   two elementwise kernels
// For M > N the iteration runs on X^T, as torch's `X = X.mT` view: cuBLAS op flags, no copy.
// Batches go through strided-batched GEMM (what torch.matmul does on 3-D tensors). Every
// intermediate lives in the workspace. Elementwise kernels use 4-wide accesses where the
// element count allows, as torch's vectorised elementwise kernels do.
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

// out = p*x + q*y (bf16)
template <int V>
__global__ void axpby_bf16(const uint16_t* x, const uint16_t* y, uint16_t* out, int64_t n, float p, float q) {
  GRID_STRIDE(i, n, V) {
    float a[V], b[V];
    load<V>(x + i, a);
    load<V>(y + i, b);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = fmaf(p, a[k], q * b[k]);
    store<V>(out + i, a);
  }
}
// out = bf16(scale * x)
template <int V>
__global__ void scale_bf16(const uint16_t* x, uint16_t* out, int64_t n, float scale) {
  GRID_STRIDE(i, n, V) {
    float a[V];
    load<V>(x + i, a);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] *= scale;
    store<V>(out + i, a);
  }
}
// out = p * decay
template <int V>
__global__ void scale_f32(const float* p, float* out, int64_t n, float decay) {
  GRID_STRIDE(i, n, V) {
    float a[V];
    load<V>(p + i, a);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] *= decay;
    store<V>(out + i, a);
  }
}
// out += alpha * u
template <int V>
__global__ void add_scaled_bf16(float* out, const uint16_t* u, int64_t n, float alpha) {
  GRID_STRIDE(i, n, V) {
    float a[V], b[V];
    load<V>(out + i, a);
    load<V>(u + i, b);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = fmaf(alpha, b[k], a[k]);
    store<V>(out + i, a);
  }
}

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

/// One cuBLAS handle per process (created once, like a framework's); per call it is bound to
/// the call's stream and to a slice of the call's workspace, so cuBLAS allocates nothing.
cublasHandle_t handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { MUON_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

/// Column-major C = op(A) op(B), bf16 in/out, fp32 compute; strided-batched when batch > 1.
void gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const void* A, int lda, int64_t sA, const void* B, int ldb, int64_t sB, void* C, int ldc,
          int64_t sC, int batch) {
  const float one = 1.f, zero = 0.f;
  if (batch == 1)
    MUON_CUBLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, &one, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb,
                                    &zero, C, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    MUON_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &one, A, CUDA_R_16BF, lda, sA, B,
                                                  CUDA_R_16BF, ldb, sB, &zero, C, CUDA_R_16BF, ldc, sC,
                                                  batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/// Workspace buffers (256-byte aligned slices), carved by one function for both entry points.
struct Buffers {
  float* U;
  uint16_t *X, *A, *A2, *Bm, *BX;
  float *part, *norm;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, int64_t B, int64_t M, int64_t N) {
  const uint64_t s = uint64_t(std::min(M, N)), n = uint64_t(B * M * N), ss = uint64_t(B) * s * s;
  Buffers b;
  b.U = ws.take<float>(n);
  b.X = ws.take<uint16_t>(n);
  b.A = ws.take<uint16_t>(ss);
  b.A2 = ws.take<uint16_t>(ss);
  b.Bm = ws.take<uint16_t>(ss);
  b.BX = ws.take<uint16_t>(n);
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
  uint16_t* A = wb.A;
  uint16_t* A2 = wb.A2;
  uint16_t* Bm = wb.Bm;
  uint16_t* BX = wb.BX;
  float* part = wb.part;
  float* norm = wb.norm;
  int dev = 0, sms = 0;
  MUON_CUDA_CHECK(cudaGetDevice(&dev));
  MUON_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cublasHandle_t h = handle();
  MUON_CUBLAS_CHECK(cublasSetStream(h, st));
  MUON_CUBLAS_CHECK(cublasSetWorkspace(h, wb.cublas, kCublasWorkspace));

  const int64_t n = g.numel(), per = g.M * g.N;
  const int B = int(g.B), s = int(g.s()), l = int(g.l());
  const float beta = float(g.beta);
  const Elementwise ew{st, sms};
  // 4-wide accesses need 16-byte aligned tensors (the workspace slices are 256-byte aligned).
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

  // X holds G's layout: M x N row-major. Column-major views: wide (M <= N) -> Xc = X^T (l x s,
  // ld l); tall -> Xc = X^T of the transposed iterate, i.e. the iterate itself (s x l, ld s).
  const int64_t ss = int64_t(s) * s, sl = int64_t(s) * l;
  const bool tall = g.tall();
  for (int it = 0; it < muon::kNsSteps; ++it) {
    if (!tall)  // A = X X^T = Xc^T Xc
      gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, s, s, l, X, l, sl, X, l, sl, A, s, ss, B);
    else        // A = Xc Xc^T
      gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, s, s, l, X, s, sl, X, s, sl, A, s, ss, B);
    gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, A, s, ss, A, s, ss, A2, s, ss, B);  // A2 = A A
    ew(axpby_bf16<4>, axpby_bf16<1>, int64_t(B) * ss, true, A, A2, Bm, int64_t(B) * ss,
       float(muon::kNsB), float(muon::kNsC));
    if (!tall)  // (Bm X)^T = Xc Bm  (Bm symmetric)
      gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, l, s, s, X, l, sl, Bm, s, ss, BX, l, sl, B);
    else        // Bm X = Bm Xc
      gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, s, l, s, Bm, s, ss, X, s, sl, BX, s, sl, B);
    ew(axpby_bf16<4>, axpby_bf16<1>, n, true, X, BX, X, n, float(muon::kNsA), 1.f);
  }
  // X is back in G's layout (the transpose was only a view), so update is a plain scale.
  ew(scale_bf16<4>, scale_bf16<1>, n, io_aligned, X, g.update, n, float(g.scale()));
  ew(scale_f32<4>, scale_f32<1>, n, io_aligned, g.param, g.param_out, n, float(1.0 - g.lr * g.wd));
  ew(add_scaled_bf16<4>, add_scaled_bf16<1>, n, io_aligned, g.param_out, g.update, n, float(-g.lr));
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
