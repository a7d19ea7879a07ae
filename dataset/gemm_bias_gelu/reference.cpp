// gemm_bias_gelu — fp64 golden reference on host tensors.
//
//   out[m,n] = bf16( gelu_tanh( sum_k A[m,k] B[k,n] + bias[n] ) )
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))      (gelu_tanh.h)
//                = x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3)))   (evaluated so: no cancellation)
//
// Everything in double (every product of two bf16 values is exact in double, and the sums of
// the check shapes lose nothing that a bf16 output can see), the output rounded once to bf16,
// to nearest even. Plain C++: built by the host compiler, no CUDA.
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"
#include "gelu_tanh.h"
#include "gemm_args.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

void gemm_bias_gelu(const gbg::Args& g) {
  const int64_t M = g.M, N = g.N, K = g.K;
  // B converted once; rows of out accumulated as axpys over B's rows (unit-stride inner loop).
  std::vector<double> b(static_cast<size_t>(K * N));
  for (int64_t i = 0; i < K * N; ++i) b[static_cast<size_t>(i)] = bf16_to_double(g.B[i]);
  std::vector<double> row(static_cast<size_t>(N));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) row[static_cast<size_t>(n)] = bf16_to_double(g.bias[n]);
    for (int64_t k = 0; k < K; ++k) {
      const double a = bf16_to_double(g.A[m * K + k]);
      const double* bk = b.data() + k * N;
      for (int64_t n = 0; n < N; ++n) row[static_cast<size_t>(n)] += a * bk[n];
    }
    for (int64_t n = 0; n < N; ++n) g.out[m * N + n] = double_to_bf16(gbg::gelu_tanh_f64(row[static_cast<size_t>(n)]));
  }
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    gemm_bias_gelu(gbg::parse(args, kDLCPU));
    return D2K_OK;
  });
}
