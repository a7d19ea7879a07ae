// spmv_csr — naive baseline: scalar CSR, one thread per row (the textbook kernel; Bell and
// Garland's "CSR scalar").
//
//   spmv_csr_scalar: thread r walks row r in order, y[r] = sum values[j] * x[col_idx[j]], summed in
//   fp64 and rounded once. Naive's outputs are what every bench call is judged against, and a
//   bench row is far longer than a check row: a sequential fp32 sum of a power-law row of 1e6
//   entries is 1.6e-4 off the exact sum and one of 3e6 entries 1.4e-3 (the partial sum's ulp
//   outgrows the terms), past the task's 5e-4. Each step waits on two dependent loads (the column,
//   then x), beside which an fp64 add's latency is small; its time was not measured against fp32's.
// Nothing is slowed on purpose, but the layout defeats it: the 32 threads of a warp read 32
// different rows, so the value and column loads of a warp touch up to 32 separate cache lines per
// step (uncoalesced), and a warp runs as long as its longest row (a dense row of 1e6 entries keeps
// one thread busy while the rest of the GPU idles). PyTorch's CSR @ vector calls cuSPARSE instead:
// that is the library target, and pytorch.py.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "spmv_args.h"

namespace {

constexpr int kThreads = 256;

__global__ void spmv_csr_scalar(const int32_t* __restrict__ row_ptr, const int32_t* __restrict__ col_idx,
                                const float* __restrict__ values, const float* __restrict__ x, float* __restrict__ y,
                                int64_t n) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n) return;
  double s = 0.0;
  for (int32_t j = row_ptr[r]; j < row_ptr[r + 1]; ++j) s += static_cast<double>(values[j]) * x[col_idx[j]];
  y[r] = static_cast<float>(s);
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)spmv::read_params(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const spmv::Params p = spmv::read_params(args);
    const spmv::Tensors t = spmv::read_tensors(args, p, kDLCUDA);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    const unsigned blocks = static_cast<unsigned>((p.n + kThreads - 1) / kThreads);
    spmv_csr_scalar<<<blocks, kThreads, 0, st>>>(t.row_ptr, t.col_idx, t.values, t.x, t.y, p.n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
