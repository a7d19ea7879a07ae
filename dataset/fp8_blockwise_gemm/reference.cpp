// fp8_blockwise_gemm — fp64 golden reference on host tensors.
//
//   C[m, n] = bf16( sum_k e4m3(A[m, k]) · e4m3(B[n, k]) · a_scales[m, k/128] · b_scales[n/128, k/128] )
//
// Each e4m3 value is decoded exactly (4 significant bits), each product of two codes is exact in
// double (8 bits), each 128-block's sum of codes is exact in double (at most 2^7 terms of
// magnitude < 2^18 on a grid of 2^-18: 43 bits), and the block sum times the two fp32 scales
// rounds once per block; the total rounds once to bf16 (nearest even). Plain C++: built by the
// host compiler, no CUDA.
#include <cmath>
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"
#include "fp8_args.h"

namespace {

/// float8_e4m3fn (1 sign, 4 exponent bits with bias 7, 3 mantissa bits, no infinities; S.1111.111
/// is NaN) to double, exactly.
double e4m3_to_double(std::uint8_t v) {
  const int sign = v >> 7, exp = (v >> 3) & 15, man = v & 7;
  double mag;
  if (exp == 15 && man == 7)
    mag = NAN;
  else if (exp == 0)
    mag = std::ldexp(static_cast<double>(man), -9);  // subnormal: man · 2^-3 · 2^-6
  else
    mag = std::ldexp(static_cast<double>(8 + man), exp - 10);  // (1 + man/8) · 2^(exp-7)
  return sign ? -mag : mag;
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
    const fp8gemm::Operands o = fp8gemm::operands(args, kDLCPU, "reference");
    const auto* ap = d2k::data<const std::uint8_t>(*o.a);
    const auto* bp = d2k::data<const std::uint8_t>(*o.b);
    const auto* sa = d2k::data<const float>(*o.a_scales);
    const auto* sb = d2k::data<const float>(*o.b_scales);
    auto* cp = d2k::data<std::uint16_t>(*o.c);
    double table[256];
    for (int v = 0; v < 256; ++v) table[v] = e4m3_to_double(static_cast<std::uint8_t>(v));
    std::vector<double> arow(static_cast<size_t>(o.K));
    for (int64_t m = 0; m < o.M; ++m) {
      for (int64_t k = 0; k < o.K; ++k) arow[static_cast<size_t>(k)] = table[ap[m * o.K + k]];
      for (int64_t n = 0; n < o.N; ++n) {
        const std::uint8_t* brow = bp + n * o.K;
        double acc = 0.0;
        for (int64_t kb = 0; kb < o.KB; ++kb) {
          double block = 0.0;
          for (int64_t k = kb * fp8gemm::kBlock; k < (kb + 1) * fp8gemm::kBlock; ++k)
            block += arow[static_cast<size_t>(k)] * table[brow[k]];
          acc += block * static_cast<double>(sa[m * o.KB + kb]) *
                 static_cast<double>(sb[(n / fp8gemm::kBlock) * o.KB + kb]);
        }
        cp[m * o.N + n] = d2k::ref::double_to_bf16(acc);
      }
    }
    return D2K_OK;
  });
}
