// fp8_blockwise_gemm — what every implementation shares: the block size, the e4m3 dtype tag, the
// shape rule of definition.json and the operand lookup. Host-only C++ (no CUDA), so the reference
// includes it too.
#pragma once
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace fp8gemm {

constexpr int64_t kBlock = 128;  // scale block: 1 x 128 for A, 128 x 128 for B
inline constexpr DLDataType kE4M3 = {D2K_DL_FLOAT8_E4M3FN, 8, 1};

/// The shapes every implementation accepts (definition.json's constraints), or an abi_error.
inline void check_shape(const char* who, int64_t M, int64_t N, int64_t K) {
  if (M < 1 || N < 8 || N % 8 != 0 || K < kBlock || K % kBlock != 0 || M > INT32_MAX || N > INT32_MAX ||
      K > INT32_MAX)
    throw d2k::abi_error(std::string(who) + ": need M >= 1, N >= 8 a multiple of 8, K >= 128 a multiple of 128 (got M=" +
                         std::to_string(M) + ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ")");
}

/// The four inputs and the output on `device`, shapes and dtypes checked.
struct Operands {
  int64_t M, N, K, KB, NB;
  const DLTensor *a, *b, *a_scales, *b_scales, *c;
};
inline Operands operands(const d2k_args* args, DLDeviceType device, const char* who) {
  Operands o;
  o.M = d2k::scalar_i(args, "M");
  o.N = d2k::scalar_i(args, "N");
  o.K = d2k::scalar_i(args, "K");
  check_shape(who, o.M, o.N, o.K);
  o.KB = o.K / kBlock;
  o.NB = (o.N + kBlock - 1) / kBlock;
  o.a = &d2k::input(args, "a", device, kE4M3, {o.M, o.K});
  o.b = &d2k::input(args, "b", device, kE4M3, {o.N, o.K});
  o.a_scales = &d2k::input(args, "a_scales", device, d2k::dl::f32, {o.M, o.KB});
  o.b_scales = &d2k::input(args, "b_scales", device, d2k::dl::f32, {o.NB, o.KB});
  o.c = &d2k::output(args, "c", device, d2k::dl::bf16, {o.M, o.N});
  return o;
}

}  // namespace fp8gemm
