// chunked_linear_attention — fp64 golden reference on host tensors: the token-by-token recurrence.
//
//   for b, h:  S = 0 (D x D)
//     for t:   S = exp(a[b,h,t]) * S + k_t^T v_t          (outer product, [key dim][value dim])
//              o[b,t,h,:] = bf16(q_t S)
//     final_state[b,h] = fp32(S)
//
// Everything in double, each output rounded once (bf16 to nearest even for o, fp32 for the state).
// Plain C++: built by the host compiler, no CUDA.
#include <cmath>
#include <cstdint>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

struct Dims {
  int64_t B, H, S, D;
};

/// One (b, h) head. q, k, v, o rows have stride H*D; a has S entries; state is D x D.
void recurrence_head(const Dims& d, const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                     const float* a, std::uint16_t* o, float* state) {
  const int64_t D = d.D, row = d.H * d.D;
  std::vector<double> s(static_cast<size_t>(D * D), 0.0), kt(D), vt(D);
  for (int64_t t = 0; t < d.S; ++t) {
    const double g = std::exp(static_cast<double>(a[t]));
    for (int64_t x = 0; x < D; ++x) {
      kt[x] = bf16_to_double(k[t * row + x]);
      vt[x] = bf16_to_double(v[t * row + x]);
    }
    for (int64_t i = 0; i < D; ++i)
      for (int64_t j = 0; j < D; ++j) s[i * D + j] = g * s[i * D + j] + kt[i] * vt[j];
    for (int64_t j = 0; j < D; ++j) {
      double acc = 0.0;
      for (int64_t i = 0; i < D; ++i) acc += bf16_to_double(q[t * row + i]) * s[i * D + j];
      o[t * row + j] = double_to_bf16(acc);
    }
  }
  for (int64_t i = 0; i < D * D; ++i) state[i] = static_cast<float>(s[i]);
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
    const Dims d{d2k::scalar_i(args, "B"), d2k::scalar_i(args, "H"), d2k::scalar_i(args, "S"),
                 d2k::scalar_i(args, "D")};
    if (d.B < 1 || d.H < 1 || d.S < 1 || d.D < 1) throw d2k::abi_error("reference: need B, H, S, D >= 1");
    const DLTensor& q = d2k::input(args, "q", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.H, d.D});
    const DLTensor& k = d2k::input(args, "k", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.H, d.D});
    const DLTensor& v = d2k::input(args, "v", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.H, d.D});
    const DLTensor& a = d2k::input(args, "a", kDLCPU, d2k::dl::f32, {d.B, d.H, d.S});
    const DLTensor& o = d2k::output(args, "o", kDLCPU, d2k::dl::bf16, {d.B, d.S, d.H, d.D});
    const DLTensor& st = d2k::output(args, "final_state", kDLCPU, d2k::dl::f32, {d.B, d.H, d.D, d.D});
    const auto* qp = d2k::data<const std::uint16_t>(q);
    const auto* kp = d2k::data<const std::uint16_t>(k);
    const auto* vp = d2k::data<const std::uint16_t>(v);
    const auto* ap = d2k::data<const float>(a);
    auto* op = d2k::data<std::uint16_t>(o);
    auto* sp = d2k::data<float>(st);
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t h = 0; h < d.H; ++h) {
        const int64_t off = (b * d.S * d.H + h) * d.D;
        recurrence_head(d, qp + off, kp + off, vp + off, ap + (b * d.H + h) * d.S, op + off,
                        sp + (b * d.H + h) * d.D * d.D);
      }
    return D2K_OK;
  });
}
