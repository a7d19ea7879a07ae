// paged_attention_decode — fp64 golden reference on host tensors.
//
//   for every sequence b and query head h (KV head g = h / (Hq / Hkv)):
//     for t < seq_lens[b]:  page = block_table[b, t / PAGE], k_t = k_cache[page, t % PAGE, g, :]
//                           s_t = scale * dot(q[b, h, :], k_t)
//     m = max_t s_t;  p_t = exp(s_t - m) / sum_t exp(s_t - m)
//     o[b, h, :] = bf16(sum_t p_t * v_cache[page, t % PAGE, g, :])
//
// Everything in double, o rounded once to bf16 (nearest even). A length outside [1, P * PAGE] or a
// page index outside [0, N) among the pages a sequence uses is an error naming the element.
// Plain C++: built by the host compiler, no CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "d2k/reference_bf16.h"
#include "d2k/solution.h"

namespace {

using d2k::ref::bf16_to_double;
using d2k::ref::double_to_bf16;

struct Shape {
  int64_t B, P, N, Hq, Hkv, D, PAGE;
};

/// Checks sequence b's length and the pages it uses; returns the length.
int64_t checked_length(const Shape& s, const int32_t* seq_lens, const int32_t* block_table, int64_t b) {
  const int64_t len = seq_lens[b];
  if (len < 1 || len > s.P * s.PAGE)
    throw d2k::abi_error("reference: seq_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                         " is outside [1, P * PAGE = " + std::to_string(s.P * s.PAGE) + "]");
  for (int64_t j = 0; j < (len + s.PAGE - 1) / s.PAGE; ++j) {
    const int64_t page = block_table[b * s.P + j];
    if (page < 0 || page >= s.N)
      throw d2k::abi_error("reference: block_table[" + std::to_string(b) + ", " + std::to_string(j) + "] = " +
                           std::to_string(page) + " is outside [0, N = " + std::to_string(s.N) + ")");
  }
  return len;
}

/// o[b, h, :] for one query head over its sequence's first `len` tokens.
void attend_one_head(const Shape& s, const std::uint16_t* q, const std::uint16_t* k_cache,
                     const std::uint16_t* v_cache, const int32_t* pages, int64_t len, int64_t g, double scale,
                     std::uint16_t* o) {
  auto row = [&](const std::uint16_t* cache, int64_t t) {
    return cache + ((static_cast<int64_t>(pages[t / s.PAGE]) * s.PAGE + t % s.PAGE) * s.Hkv + g) * s.D;
  };
  std::vector<double> score(static_cast<std::size_t>(len));
  double m = -INFINITY;
  for (int64_t t = 0; t < len; ++t) {
    const std::uint16_t* k = row(k_cache, t);
    double dot = 0.0;
    for (int64_t d = 0; d < s.D; ++d) dot += bf16_to_double(q[d]) * bf16_to_double(k[d]);
    score[t] = scale * dot;
    m = std::max(m, score[t]);
  }
  double sum = 0.0;
  std::vector<double> acc(static_cast<std::size_t>(s.D), 0.0);
  for (int64_t t = 0; t < len; ++t) {
    const double p = std::exp(score[t] - m);
    sum += p;
    const std::uint16_t* v = row(v_cache, t);
    for (int64_t d = 0; d < s.D; ++d) acc[d] += p * bf16_to_double(v[d]);
  }
  for (int64_t d = 0; d < s.D; ++d) o[d] = double_to_bf16(acc[d] / sum);
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
    Shape s{d2k::scalar_i(args, "B"),   d2k::scalar_i(args, "P"),   d2k::scalar_i(args, "N"),
            d2k::scalar_i(args, "Hq"),  d2k::scalar_i(args, "Hkv"), d2k::scalar_i(args, "D"),
            d2k::scalar_i(args, "PAGE")};
    const double scale = d2k::scalar_f(args, "scale");
    if (s.B < 1 || s.P < 1 || s.Hkv < 1 || s.Hq % s.Hkv != 0 || s.PAGE < 1)
      throw d2k::abi_error("reference: need B, P, PAGE >= 1 and Hq a multiple of Hkv");
    const auto* q = d2k::data<const std::uint16_t>(d2k::input(args, "q", kDLCPU, d2k::dl::bf16, {s.B, s.Hq, s.D}));
    const auto* kc = d2k::data<const std::uint16_t>(
        d2k::input(args, "k_cache", kDLCPU, d2k::dl::bf16, {s.N, s.PAGE, s.Hkv, s.D}));
    const auto* vc = d2k::data<const std::uint16_t>(
        d2k::input(args, "v_cache", kDLCPU, d2k::dl::bf16, {s.N, s.PAGE, s.Hkv, s.D}));
    const auto* bt = d2k::data<const int32_t>(d2k::input(args, "block_table", kDLCPU, d2k::dl::i32, {s.B, s.P}));
    const auto* lens = d2k::data<const int32_t>(d2k::input(args, "seq_lens", kDLCPU, d2k::dl::i32, {s.B}));
    auto* o = d2k::data<std::uint16_t>(d2k::output(args, "o", kDLCPU, d2k::dl::bf16, {s.B, s.Hq, s.D}));
    const int64_t group = s.Hq / s.Hkv;
    for (int64_t b = 0; b < s.B; ++b) {
      const int64_t len = checked_length(s, lens, bt, b);
      for (int64_t h = 0; h < s.Hq; ++h)
        attend_one_head(s, q + (b * s.Hq + h) * s.D, kc, vc, bt + b * s.P, len, h / group, scale,
                        o + (b * s.Hq + h) * s.D);
    }
    return D2K_OK;
  });
}
