// chunked_linear_attention — the argument checks shared by naive.cu and expert.cu: the axes, the
// tensors' devices, dtypes and shapes, in one place.
#pragma once
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace cla {

struct Dims {
  int64_t B, H, S, D;
};

/// The tensors of one call, checked against the axes (device tensors).
struct Tensors {
  Dims d;
  const void *q, *k, *v;  // bf16 [B, S, H, D]
  const float* a;         // fp32 [B, H, S]
  void* o;                // bf16 [B, S, H, D]
  float* state;           // fp32 [B, H, D, D]
};

inline Dims parse_dims(const d2k_args* args, const char* who) {
  const Dims d{d2k::scalar_i(args, "B"), d2k::scalar_i(args, "H"), d2k::scalar_i(args, "S"),
               d2k::scalar_i(args, "D")};
  if (d.B < 1 || d.H < 1 || d.S < 1 || (d.D != 64 && d.D != 128) || d.S > (int64_t(1) << 30) ||
      d.B * d.H > (int64_t(1) << 30))
    throw d2k::abi_error(std::string(who) + ": need B, H, S >= 1 (S, B*H < 2^30) and D = 64 or 128");
  return d;
}

inline Tensors parse(const d2k_args* args, const char* who) {
  Tensors t{};
  t.d = parse_dims(args, who);
  const Dims& d = t.d;
  t.q = d2k::data<const void>(d2k::input(args, "q", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.H, d.D}));
  t.k = d2k::data<const void>(d2k::input(args, "k", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.H, d.D}));
  t.v = d2k::data<const void>(d2k::input(args, "v", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.H, d.D}));
  t.a = d2k::data<const float>(d2k::input(args, "a", kDLCUDA, d2k::dl::f32, {d.B, d.H, d.S}));
  t.o = d2k::data<void>(d2k::output(args, "o", kDLCUDA, d2k::dl::bf16, {d.B, d.S, d.H, d.D}));
  t.state = d2k::data<float>(d2k::output(args, "final_state", kDLCUDA, d2k::dl::f32, {d.B, d.H, d.D, d.D}));
  return t;
}

}  // namespace cla
