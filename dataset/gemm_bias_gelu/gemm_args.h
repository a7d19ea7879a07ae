// gemm_bias_gelu — argument parsing and validation shared by reference.cpp, naive.cu, library.cu
// and expert.cu (plain C++, no CUDA). Every check names the tensor or axis.
#pragma once
#include <cstdint>

#include "d2k/solution.h"

namespace gbg {

/// Everything one call needs, with shapes checked against the definition:
/// out[M,N] = gelu_tanh(A[M,K] · B[K,N] + bias[N]), every matrix row-major.
struct Args {
  int64_t M = 0, N = 0, K = 0;
  const uint16_t* A = nullptr;     ///< [M,K] bf16 bits, K contiguous
  const uint16_t* B = nullptr;     ///< [K,N] bf16 bits, N contiguous (torch.addmm's mat2)
  const uint16_t* bias = nullptr;  ///< [N] bf16 bits
  uint16_t* out = nullptr;         ///< [M,N] bf16 bits
};

/// Reads and validates every tensor and axis; `dev` is kDLCPU (reference) or kDLCUDA.
inline Args parse(const d2k_args* a, DLDeviceType dev) {
  Args r;
  r.M = d2k::scalar_i(a, "M");
  r.N = d2k::scalar_i(a, "N");
  r.K = d2k::scalar_i(a, "K");
  if (r.M < 1 || r.N < 1 || r.K < 1) throw d2k::abi_error("axes M, N, K must be >= 1");
  if (r.M > INT32_MAX || r.N > INT32_MAX || r.K > INT32_MAX)
    throw d2k::abi_error("axes M, N, K must fit in int32 (the GEMM libraries' index type)");
  // Row pitches of A (K), B and out (N) must be 16-byte multiples for TMA and for the vendor
  // GEMMs' vectorised paths: the definition's constraints say the same.
  if (r.N % 8 != 0 || r.K % 8 != 0) throw d2k::abi_error("axes N and K must be multiples of 8");
  const DLTensor& A = d2k::input(a, "A", dev, d2k::dl::bf16, {r.M, r.K});
  const DLTensor& B = d2k::input(a, "B", dev, d2k::dl::bf16, {r.K, r.N});
  const DLTensor& bias = d2k::input(a, "bias", dev, d2k::dl::bf16, {r.N});
  const DLTensor& out = d2k::output(a, "out", dev, d2k::dl::bf16, {r.M, r.N});
  r.A = d2k::data<const uint16_t>(A);
  r.B = d2k::data<const uint16_t>(B);
  r.bias = d2k::data<const uint16_t>(bias);
  r.out = d2k::data<uint16_t>(out);
  return r;
}

}  // namespace gbg
