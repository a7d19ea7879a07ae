// moe_grouped_gemm — the ABI view every implementation shares: axes, the three inputs and the
// output, checked once (shapes, dtypes, device) so that naive, library and expert agree on what
// a call is.
#pragma once

#include <cstdint>
#include <string>

#include "d2k/solution.h"

#if defined(__CUDACC__)
#define MOE_HD __host__ __device__
#else
#define MOE_HD
#endif

namespace moe_gemm {

/// Rows [begin, begin + count) of expert e as the expert kernel reads them from device memory it
/// cannot check first: offsets clamped into [0, T] and made non-decreasing, so corrupt offsets
/// give a wrong answer (and a failed check), never an access outside x or y. For valid offsets
/// this is exactly [offsets[e], offsets[e+1]). Shared with the CPU tests.
struct Rows {
  int begin, count;
};
MOE_HD inline Rows group_rows(const int32_t* offsets, int e, int T) {
  const int lo = offsets[e] < 0 ? 0 : (offsets[e] > T ? T : offsets[e]);
  const int hi = offsets[e + 1] < lo ? lo : (offsets[e + 1] > T ? T : offsets[e + 1]);
  return {lo, hi - lo};
}

struct Args {
  int64_t E = 0, T = 0, K = 0, N = 0;
  const void* x = nullptr;        // [T, K] bf16, rows grouped by expert
  const void* w = nullptr;        // [E, N, K] bf16, expert e's weight row-major (nn.Linear)
  const int32_t* offsets = nullptr;  // [E + 1]: expert e owns rows [offsets[e], offsets[e+1])
  void* y = nullptr;              // [T, N] bf16
};

/// The axes alone (d2k_workspace_size sees no data). TMA and 16-byte vector paths need rows of
/// x, w and y to start 16-byte aligned: K and N multiples of 8 (definition.json's constraints).
inline Args axes(const d2k_args* a) {
  Args g;
  g.E = d2k::scalar_i(a, "E");
  g.T = d2k::scalar_i(a, "T");
  g.K = d2k::scalar_i(a, "K");
  g.N = d2k::scalar_i(a, "N");
  if (g.E < 1 || g.T < 1 || g.K < 8 || g.N < 8 || g.K % 8 || g.N % 8)
    throw d2k::abi_error("moe_grouped_gemm: need E >= 1, T >= 1, K and N multiples of 8 (E=" + std::to_string(g.E) +
                         " T=" + std::to_string(g.T) + " K=" + std::to_string(g.K) + " N=" + std::to_string(g.N) + ")");
  // cuBLAS and CUTLASS take 32-bit extents; every row offset fits too.
  if (g.T > INT32_MAX || g.E > INT32_MAX - 1)
    throw d2k::abi_error("moe_grouped_gemm: T and E must fit int32");
  return g;
}

/// The axes and the tensors, on `device` (kDLCUDA for the GPU implementations, kDLCPU for the
/// reference).
inline Args bind(const d2k_args* a, DLDeviceType device) {
  Args g = axes(a);
  g.x = d2k::data<const void>(d2k::input(a, "x", device, d2k::dl::bf16, {g.T, g.K}));
  g.w = d2k::data<const void>(d2k::input(a, "w", device, d2k::dl::bf16, {g.E, g.N, g.K}));
  g.offsets = d2k::data<const int32_t>(d2k::input(a, "offsets", device, d2k::dl::i32, {g.E + 1}));
  g.y = d2k::data<void>(d2k::output(a, "y", device, d2k::dl::bf16, {g.T, g.N}));
  return g;
}

/// The expert's choice of tile path from the axes alone: fewer than 64 rows per expert on average
/// puts the tokens on the narrow side of the tile (swap AB, expert.cu). Shared with the CPU tests,
/// which check that the check workloads exercise both paths.
inline bool small_groups(int64_t E, int64_t T) { return T < 64 * E; }

/// Checks offsets read on the host: offsets[0] = 0, offsets[E] = T, non-decreasing. Every
/// implementation that reads them back (reference, naive, library) refuses anything else, so a
/// corrupt offset never becomes an out-of-bounds GEMM.
inline void check_offsets(const int32_t* o, int64_t E, int64_t T, const char* who) {
  if (o[0] != 0 || o[E] != T)
    throw d2k::abi_error(std::string(who) + ": offsets[0] must be 0 and offsets[E] must be T (" + std::to_string(T) +
                         "), got " + std::to_string(o[0]) + " and " + std::to_string(o[E]));
  for (int64_t e = 0; e < E; ++e)
    if (o[e + 1] < o[e])
      throw d2k::abi_error(std::string(who) + ": offsets must be non-decreasing; offsets[" + std::to_string(e + 1) +
                           "] = " + std::to_string(o[e + 1]) + " < offsets[" + std::to_string(e) +
                           "] = " + std::to_string(o[e]));
}

}  // namespace moe_gemm
