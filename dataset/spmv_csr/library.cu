// spmv_csr — library: cuSPARSE's generic SpMV (cusparseSpMV) on a CSR descriptor, fp32 values,
// x and y, fp32 compute, alpha = 1, beta = 0 — what torch.sparse_csr_tensor(...) @ x calls.
// Algorithm: CUSPARSE_SPMV_ALG_DEFAULT (= CSR_ALG1, deterministic, no preprocessing). CSR_ALG2
// (merge-based load balancing with a per-matrix analysis buffer) is the other choice; the library
// is one target, so the default is timed, as PyTorch uses it. One handle per process, bound to
// the call's stream; the descriptors are host-side metadata made per call (microseconds).
// cuSPARSE's scratch comes from the workspace, sized by cusparseSpMV_bufferSize on the shapes
// alone (placeholder, never-dereferenced pointers: the query reads only sizes and types).
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "d2k/solution.h"
#include "spmv_args.h"

namespace {

void check(cusparseStatus_t s, const char* what) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuSPARSE ") + what + ": " + cusparseGetErrorString(s));
}

/// One cuSPARSE handle per process (created once, like a framework's).
cusparseHandle_t handle() {
  static std::once_flag once;
  static cusparseHandle_t h = nullptr;
  std::call_once(once, [] { check(cusparseCreate(&h), "cusparseCreate"); });
  return h;
}

/// The CSR matrix and the two dense vectors as cuSPARSE descriptors (destroyed with the object).
struct Descriptors {
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnVecDescr_t x = nullptr, y = nullptr;
  Descriptors(const spmv::Params& p, const void* row_ptr, const void* col_idx, const void* values, const void* xv,
              void* yv) {
    check(cusparseCreateCsr(&a, p.n, p.n, p.nnz, const_cast<void*>(row_ptr), const_cast<void*>(col_idx),
                            const_cast<void*>(values), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                            CUDA_R_32F),
          "cusparseCreateCsr");
    check(cusparseCreateDnVec(&x, p.n, const_cast<void*>(xv), CUDA_R_32F), "cusparseCreateDnVec");
    check(cusparseCreateDnVec(&y, p.n, yv, CUDA_R_32F), "cusparseCreateDnVec");
  }
  ~Descriptors() {
    if (y) cusparseDestroyDnVec(y);
    if (x) cusparseDestroyDnVec(x);
    if (a) cusparseDestroySpMat(a);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

constexpr cusparseSpMVAlg_t kAlg = CUSPARSE_SPMV_ALG_DEFAULT;

size_t buffer_bytes(const spmv::Params& p, const spmv::Tensors* t) {
  // Shape-only query: placeholders stand in for the data pointers when none are given.
  void* ph = reinterpret_cast<void*>(uintptr_t{256});
  Descriptors d(p, t ? t->row_ptr : ph, t ? t->col_idx : ph, t ? t->values : ph, t ? t->x : ph, t ? t->y : ph);
  const float alpha = 1.0f, beta = 0.0f;
  size_t bytes = 0;
  check(cusparseSpMV_bufferSize(handle(), CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x, &beta, d.y, CUDA_R_32F,
                                kAlg, &bytes),
        "cusparseSpMV_bufferSize");
  return bytes;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    ws.take_bytes(buffer_bytes(spmv::read_params(args), nullptr));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const spmv::Params p = spmv::read_params(args);
    const spmv::Tensors t = spmv::read_tensors(args, p, kDLCUDA);
    d2k::Workspace ws(args);
    const size_t need = buffer_bytes(p, &t);
    void* buffer = ws.take_bytes(need);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    cusparseHandle_t h = handle();
    check(cusparseSetStream(h, st), "cusparseSetStream");
    Descriptors d(p, t.row_ptr, t.col_idx, t.values, t.x, t.y);
    const float alpha = 1.0f, beta = 0.0f;
    check(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x, &beta, d.y, CUDA_R_32F, kAlg, buffer),
          "cusparseSpMV");
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
