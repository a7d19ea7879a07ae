// w4a16_gemv: the comparison rule of definition.json checked both ways on the public check
// workloads and on hidden draws. Host emulations of an implementation's arithmetic are compared
// with the fp64 golden (the task's reference.so, inputs from the task's generators) under each
// workload's effective rule:
//   pass: the expert's tensor-core path's order (B > 1, and hmma_b1 at B = 1: exact (q - 8)
//         codes, fp32 partial per group of 128 in steps of 16 as mma.sync accumulates, fp32 FMA
//         with the scale, groups split over warps and the warps' sums added in order); its
//         row-stream path's FFMA form (rs_ffma: magic-number fp32 codes, one fp32 partial per
//         lane and 1024-weight chunk, scale per group, a butterfly over the lanes); its tensor-core
//         chunk form's (the default at B = 1: diagonal mma steps, an fp32 partial per group);
//         its variants rsoff, rsrot, rsrot_off (codes 128 + q with the group's -136 · sum(x) as
//         the partial's start, and/or each warp's chunks in a rotated order);
//         the naive's (each weight rounded to bf16 as the dequantise kernel
//         stores it, then one fp32 running sum over K, the least accurate fp32 order);
//   fail: a bf16 running sum; bf16 sums within each group of 128 (fp32 across groups); AWQ's
//         interleaved nibble order read as sequential; signed two's-complement codes instead of
//         offset 8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "check/compare.h"
#include "core/dtype.h"
#include "unit/tasks/task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

enum class Variant {
  kExpert,         ///< exact codes; fp32 group partials in k16 steps; fp32 FMA with the scale; 8 warps
  kNaive,          ///< w rounded to bf16, one fp32 running sum over K
  kBf16Sum,        ///< the running sum rounded to bf16 after every addition
  kBf16GroupSum,   ///< bf16 running sum within each group of 128, fp32 across groups
  kAwqOrder,       ///< nibbles read in AWQ's interleaved order (0, 2, 4, 6, 1, 3, 5, 7)
  kSignedCodes,    ///< codes as two's-complement int4 (q >= 8 ? q - 16 : q) instead of q - 8
};

constexpr std::int64_t kGroup = 128;

float bf16_bits_to_float(std::uint16_t b) { return static_cast<float>(load_as_double(DType::bf16, &b)); }
std::uint16_t float_to_bf16_bits(float v) {
  std::uint16_t b = 0;
  store_from_double(DType::bf16, &b, v);
  return b;
}
float bf16_round(float v) { return bf16_bits_to_float(float_to_bf16_bits(v)); }

std::int64_t axis(const WorkloadPlan& p, const std::string& name) { return p.axes.at(name); }

/// The weight code of (n, k) as variant `v` reads it, as a float (exact).
float code(Variant v, const std::uint32_t* qrow, std::int64_t k) {
  static constexpr int kAwq[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // AWQ stores k = j at nibble kAwq[j]
  const int j = static_cast<int>(k % 8);
  const int nib = v == Variant::kAwqOrder ? kAwq[j] : j;
  const int q = static_cast<int>((qrow[k / 8] >> (4 * nib)) & 15u);
  if (v == Variant::kSignedCodes) return static_cast<float>(q >= 8 ? q - 16 : q);
  return static_cast<float>(q - 8);
}

/// One output y[b, n] in fp32 by variant `v`'s arithmetic.
float dot(Variant v, const std::uint16_t* xr, const std::uint32_t* qrow, const std::uint16_t* srow, std::int64_t K) {
  const std::int64_t G = K / kGroup;
  switch (v) {
    case Variant::kExpert: {
      constexpr int kWarps = 8;
      float warp_acc[kWarps] = {};
      for (std::int64_t g = 0; g < G; ++g) {
        float p = 0.f;  // the mma accumulator of this group: 8 steps of 16 products
        for (std::int64_t k0 = g * kGroup; k0 < (g + 1) * kGroup; k0 += 16) {
          float step = 0.f;
          for (std::int64_t k = k0; k < k0 + 16; ++k) step += bf16_bits_to_float(xr[k]) * code(v, qrow, k);
          p += step;
        }
        float& acc = warp_acc[g % kWarps];
        acc = std::fmaf(bf16_bits_to_float(srow[g]), p, acc);
      }
      float y = 0.f;
      for (float a : warp_acc) y += a;
      return y;
    }
    case Variant::kBf16GroupSum: {
      float y = 0.f;
      for (std::int64_t g = 0; g < G; ++g) {
        float p = 0.f;
        for (std::int64_t k = g * kGroup; k < (g + 1) * kGroup; ++k)
          p = bf16_round(p + bf16_bits_to_float(xr[k]) * code(v, qrow, k));
        y = std::fmaf(bf16_bits_to_float(srow[g]), p, y);
      }
      return y;
    }
    default: {
      float y = 0.f;
      for (std::int64_t k = 0; k < K; ++k) {
        float w = code(v, qrow, k) * bf16_bits_to_float(srow[k / kGroup]);
        if (v == Variant::kNaive || v == Variant::kBf16Sum) w = bf16_round(w);
        y += bf16_bits_to_float(xr[k]) * w;
        if (v == Variant::kBf16Sum) y = bf16_round(y);
      }
      return y;
    }
  }
}

HostTensor emulate(Variant v, const WorkloadPlan& p, const std::vector<HostTensor>& in) {
  const std::int64_t B = axis(p, "B"), N = axis(p, "N"), K = axis(p, "K");
  HostTensor y("y", DType::bf16, {B, N});
  const auto* x = in.at(0).as<std::uint16_t>();
  const auto* q = in.at(1).as<std::uint32_t>();
  const auto* s = in.at(2).as<std::uint16_t>();
  auto* yp = y.as<std::uint16_t>();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t b = 0; b < B; ++b)
      yp[b * N + n] = float_to_bf16_bits(dot(v, x + b * K, q + n * (K / 8), s + n * (K / kGroup), K));
  return y;
}

// ---- the expert kernel's dataflow, lane by lane --------------------------------------------------
// expert.cu feeds mma.sync m16n8k16 with a k order of its own (pairs (q_j, q_{j+4}) of a word in
// slots (2t, 2t+1) and (2t+8, 2t+9), x permuted alike by byte_perm) and reduces split-K over warps.
// This emulation builds every lane's registers with the kernel's expressions, places them in the
// A/B/C matrices by the fragment layouts of the PTX ISA (mma.m16n8k16 .bf16), and runs the warps'
// group loops and the shared-memory reduction as the kernel does: a wrong slot, pair, selector or
// row mapping gives gross errors under the task's rule.

std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, std::uint32_t sel) {  // __byte_perm
  const std::uint64_t v = (static_cast<std::uint64_t>(y) << 32) | x;
  std::uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<std::uint32_t>((v >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
}
float lo_bf16(std::uint32_t r) { return bf16_bits_to_float(static_cast<std::uint16_t>(r & 0xFFFF)); }
float hi_bf16(std::uint32_t r) { return bf16_bits_to_float(static_cast<std::uint16_t>(r >> 16)); }
/// code_pair: ((w >> 4j) & 0x000F000F) | 0x43004300, then fma.rn.bf16x2(v, 1, -136) (exact).
std::uint32_t code_pair(std::uint32_t w, int j) {
  const std::uint32_t v = ((w >> (4 * j)) & 0x000F000Fu) | 0x43004300u;
  const float lo = lo_bf16(v) - 136.f, hi = hi_bf16(v) - 136.f;
  return float_to_bf16_bits(lo) | (static_cast<std::uint32_t>(float_to_bf16_bits(hi)) << 16);
}
/// mma_code_pair_offset (W4A16_RS_OFFSET): ((w >> 4j) & 0x000F000F) | 0x43004300, the bf16 pair
/// (128 + q_j, 128 + q_{j+4}), with no subtraction.
std::uint32_t code_pair_offset(std::uint32_t w, int j) { return ((w >> (4 * j)) & 0x000F000Fu) | 0x43004300u; }

/// How the emulated build orders and sums the groups.
struct LaneOrder {
  int chains = 1;  ///< W4A16_MMA_CHAINS: even and odd mma steps in separate fp32 partials, added per group
};

/// The tensor-core path (the default at B > 1, hmma_b1 at B = 1): warp w sums groups w, w + W, ...
/// in order, one chain of 8 mma steps per group (s256 computes exactly this; only where the bytes
/// wait differs).
HostTensor emulate_expert_lanes(const WorkloadPlan& p, const std::vector<HostTensor>& in, int warps, int mtiles,
                                LaneOrder order = {}) {
  const std::int64_t B = axis(p, "B"), N = axis(p, "N"), K = axis(p, "K"), G = K / kGroup;
  const int NB = B <= 8 ? 1 : 2, rows_per_cta = 16 * mtiles;
  warps = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(warps, G)));
  const auto* x = in.at(0).as<std::uint16_t>();
  const auto* q = in.at(1).as<std::uint32_t>();
  const auto* sc = in.at(2).as<std::uint16_t>();
  HostTensor y("y", DType::bf16, {B, N});
  auto* yp = y.as<std::uint16_t>();
  for (std::int64_t row0 = 0; row0 < N; row0 += rows_per_cta) {
    // red[warp][row][col], as the kernel's shared memory
    std::vector<float> red(static_cast<std::size_t>(warps * rows_per_cta * NB * 8), 0.f);
    for (int warp = 0; warp < warps; ++warp) {
      std::vector<float> acc(static_cast<std::size_t>(mtiles * NB * 32 * 4), 0.f);  // [mt][nb][lane][i]
      auto A = [&](int mt, int nb, int lane, int i) -> float& {
        return acc[static_cast<std::size_t>(((mt * NB + nb) * 32 + lane) * 4 + i)];
      };
      for (std::int64_t gi = warp; gi < G; gi += warps) {
        // x fragments per lane: b[nb][lane][u][4]
        std::vector<std::uint32_t> xb(static_cast<std::size_t>(NB * 32 * 16), 0u);
        for (int nb = 0; nb < NB; ++nb)
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane >> 2, t = lane & 3, bi = nb * 8 + g;
            for (int u = 0; u < 4; ++u) {
              std::uint32_t v[4] = {0, 0, 0, 0};
              if (bi < B)
                for (int e = 0; e < 4; ++e) {
                  const std::int64_t k = gi * kGroup + 32 * t + 8 * u + 2 * e;
                  v[e] = x[bi * K + k] | (static_cast<std::uint32_t>(x[bi * K + k + 1]) << 16);
                }
              std::uint32_t* b = &xb[static_cast<std::size_t>(((nb * 32 + lane) * 4 + u) * 4)];
              b[0] = byte_perm(v[0], v[2], 0x5410);
              b[1] = byte_perm(v[0], v[2], 0x7632);
              b[2] = byte_perm(v[1], v[3], 0x5410);
              b[3] = byte_perm(v[1], v[3], 0x7632);
            }
          }
        for (int mt = 0; mt < mtiles; ++mt) {
          float part[2][2][32][4] = {};  // [chain][nb][lane][i]
          for (int u = 0; u < 4; ++u)
            for (int half = 0; half < 2; ++half) {
              float Am[16][16], Bm[2][16][8];
              for (int lane = 0; lane < 32; ++lane) {
                const int g = lane >> 2, t = lane & 3;
                const std::int64_t r_lo = std::min<std::int64_t>(row0 + mt * 16 + g, N - 1);
                const std::int64_t r_hi = std::min<std::int64_t>(row0 + mt * 16 + 8 + g, N - 1);
                // word u of the lane's 16-byte chunk: chunk t of the group
                auto word = [&](std::int64_t r) { return q[r * (K / 8) + (gi * 4 + t) * 4 + u]; };
                const std::uint32_t w_lo = word(r_lo), w_hi = word(r_hi);
                const std::uint32_t a[4] = {code_pair(w_lo, 2 * half), code_pair(w_hi, 2 * half),
                                            code_pair(w_lo, 2 * half + 1), code_pair(w_hi, 2 * half + 1)};
                // A (row-major 16x16): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
                Am[g][2 * t] = lo_bf16(a[0]), Am[g][2 * t + 1] = hi_bf16(a[0]);
                Am[g + 8][2 * t] = lo_bf16(a[1]), Am[g + 8][2 * t + 1] = hi_bf16(a[1]);
                Am[g][2 * t + 8] = lo_bf16(a[2]), Am[g][2 * t + 9] = hi_bf16(a[2]);
                Am[g + 8][2 * t + 8] = lo_bf16(a[3]), Am[g + 8][2 * t + 9] = hi_bf16(a[3]);
                for (int nb = 0; nb < NB; ++nb) {
                  const std::uint32_t* b = &xb[static_cast<std::size_t>(((nb * 32 + lane) * 4 + u) * 4)];
                  // B (16x8, col): b0 (k 2t..2t+1, n g), b1 (k 2t+8..2t+9, n g)
                  Bm[nb][2 * t][g] = lo_bf16(b[2 * half]), Bm[nb][2 * t + 1][g] = hi_bf16(b[2 * half]);
                  Bm[nb][2 * t + 8][g] = lo_bf16(b[2 * half + 1]), Bm[nb][2 * t + 9][g] = hi_bf16(b[2 * half + 1]);
                }
              }
              for (int nb = 0; nb < NB; ++nb)
                for (int lane = 0; lane < 32; ++lane) {
                  const int g = lane >> 2, t = lane & 3;
                  for (int i = 0; i < 4; ++i) {  // C: c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1)
                    const int m = g + (i >> 1) * 8, n = 2 * t + (i & 1);
                    float d = 0.f;
                    for (int k = 0; k < 16; ++k) d += Am[m][k] * Bm[nb][k][n];
                    part[half % order.chains][nb][lane][i] += d;
                  }
                }
            }
          for (int nb = 0; nb < NB; ++nb)
            for (int lane = 0; lane < 32; ++lane)
              for (int i = 0; i < 4; ++i) {
                const int g = lane >> 2;
                const std::int64_t r = std::min<std::int64_t>(row0 + mt * 16 + (i >> 1) * 8 + g, N - 1);
                const float pg = order.chains == 2 ? part[0][nb][lane][i] + part[1][nb][lane][i] : part[0][nb][lane][i];
                A(mt, nb, lane, i) = std::fmaf(bf16_bits_to_float(sc[r * G + gi]), pg, A(mt, nb, lane, i));
              }
        }
      }
      for (int mt = 0; mt < mtiles; ++mt)
        for (int nb = 0; nb < NB; ++nb)
          for (int lane = 0; lane < 32; ++lane)
            for (int i = 0; i < 4; ++i) {
              const int g = lane >> 2, t = lane & 3;
              const int r = mt * 16 + g + (i >> 1) * 8, c = nb * 8 + 2 * t + (i & 1);
              red[static_cast<std::size_t>((warp * rows_per_cta + r) * NB * 8 + c)] = A(mt, nb, lane, i);
            }
    }
    for (int e = 0; e < B * rows_per_cta; ++e) {
      const int b = e / rows_per_cta, r = e % rows_per_cta;
      const std::int64_t n = row0 + r;
      if (n >= N) continue;
      float s = 0.f;
      for (int w = 0; w < warps; ++w) s += red[static_cast<std::size_t>((w * rows_per_cta + r) * NB * 8 + b)];
      yp[b * N + n] = float_to_bf16_bits(s);
    }
  }
  return y;
}

// ---- the row-stream build's arithmetic, lane by lane ----------------------------------------------
// w4a16_rowstream.cuh with W4A16_RS_MMA=0 (variant rs_ffma, the B = 1 default until 2026-12-03; the kernel
// serves B = 1, the arithmetic is the same for every batch row, so it is emulated for all of
// them): lane l of a warp reads words 4l..4l+3 of each 1024-weight chunk c of a row (group
// 8c + l/4); nibble e of a word (and of the word shifted right by 16) becomes the fp32
// (v & 0xF << 4e) | 0x4B000000 minus 2^23 + 8·16^e, multiplied by x·16^-e from shared memory; per
// lane and chunk one fp32 partial (word by word, nibbles 0..3 then 4..7, the first product
// unrounded), one FMA with the scale into the lane's accumulator; lanes past K add zeros (x is
// zero there); an xor-butterfly over the lanes; one bf16 rounding. The rows per warp and the
// register budget change no arithmetic.

float bits_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

/// 16^e·(q - 8) by the kernel's magic number, computed with the kernel's fp32 operations.
float rowstream_code(std::uint32_t v, int e) {
  const float magic = bits_float((v & (0xFu << (4 * e))) | 0x4B000000u);
  return magic - (8388608.f + 8.f * static_cast<float>(1u << (4 * e)));
}

/// The row stream's __shfl_xor_sync butterfly over a warp's 32 accumulators: both partners of
/// each step get the same sum, so every lane ends with the warp's; returns lane 0's.
float lane_butterfly(float (&acc)[32]) {
  for (int o = 16; o >= 1; o >>= 1) {
    float next[32];
    for (int lane = 0; lane < 32; ++lane) next[lane] = acc[lane] + acc[lane ^ o];
    std::copy(next, next + 32, acc);
  }
  return acc[0];
}

/// The row-stream builds (rs_ffma, the FFMA form of the B = 1 path): one warp sums all chunks of a row.
HostTensor emulate_rowstream(const WorkloadPlan& p, const std::vector<HostTensor>& in) {
  const std::int64_t B = axis(p, "B"), N = axis(p, "N"), K = axis(p, "K"), G = K / kGroup;
  const std::int64_t chunks = (G + 7) / 8, words_per_row = K / 8;
  const auto* x = in.at(0).as<std::uint16_t>();
  const auto* q = in.at(1).as<std::uint32_t>();
  const auto* sc = in.at(2).as<std::uint16_t>();
  HostTensor y("y", DType::bf16, {B, N});
  auto* yp = y.as<std::uint16_t>();
  for (std::int64_t b = 0; b < B; ++b) {
    // shared memory: x·16^-(k mod 4) as fp32, zero past K (exact: a power of two)
    std::vector<float> xs(static_cast<std::size_t>(chunks * 1024), 0.f);
    for (std::int64_t k = 0; k < K; ++k)
      xs[static_cast<std::size_t>(k)] = bf16_bits_to_float(x[b * K + k]) * std::ldexp(1.f, -4 * static_cast<int>(k % 4));
    for (std::int64_t n = 0; n < N; ++n) {
      float acc[32] = {};
      for (int lane = 0; lane < 32; ++lane) {
        for (std::int64_t c = 0; c < chunks; ++c) {
          const std::int64_t g = c * 8 + lane / 4;
          if (g >= G) continue;  // the kernel adds scale · (a sum of exact zeros) there
          float part = 0.f;
          for (int u = 0; u < 4; ++u) {
            const std::uint32_t word = q[n * words_per_row + c * 128 + lane * 4 + u];
            const std::int64_t k0 = c * 1024 + 32 * lane + 8 * u;
            for (int h = 0; h < 2; ++h)
              for (int e = 0; e < 4; ++e) {
                const float xv = xs[static_cast<std::size_t>(k0 + 4 * h + e)];
                const float code = rowstream_code(h == 0 ? word : word >> 16, e);
                part = u == 0 && h == 0 && e == 0 ? xv * code : std::fmaf(xv, code, part);
              }
          }
          acc[lane] = std::fmaf(bf16_bits_to_float(sc[n * G + g]), part, acc[lane]);
        }
      }
      yp[b * N + n] = float_to_bf16_bits(lane_butterfly(acc));
    }
  }
  return y;
}

// ---- the row stream's tensor-core chunk arithmetic (W4A16_RS_MMA: the default, persist) ----------
/// The forms of the tensor-core row stream (w4a16_rowstream.cuh's flags): offset (W4A16_RS_OFFSET,
/// variants rsoff and rsrot_off) feeds the codes 128 + q and starts each chunk's group partial at
/// -136 · sum(x) of the group; rotate (W4A16_RS_ROTATE, variants rsrot and rsrot_off) walks a
/// warp's chunks from chunk `first` of its rows, wrapping around.
struct RsForm {
  bool offset = false, rotate = false;
  bool drop_correction = false;  ///< a mutation for the tests: the offset codes without -136 · sum(x)
  const char* name = "rowstream mma";
};
constexpr RsForm kRsForms[] = {{false, false, false, "rowstream mma"},
                               {true, false, false, "rsoff"},
                               {false, true, false, "rsrot"},
                               {true, true, false, "rsrot_off"}};

/// The chunk order of row n (warp gw = n / 4 of the 4-row, 8-warp row stream) under W4A16_RS_ROTATE:
/// first = chunks - 3j for j = gw mod ceil(chunks / 3) (j = 0: first = 0), then every chunk once,
/// wrapping from the last to chunk 0. Without rotation: 0, 1, ..., chunks - 1.
std::vector<std::int64_t> rs_chunk_order(std::int64_t n, std::int64_t chunks, bool rotate) {
  constexpr std::int64_t kRows = 4, kDepth = 3;
  const std::int64_t phases = (chunks + kDepth - 1) / kDepth, phase = (n / kRows) % phases;
  const std::int64_t first = rotate && phase != 0 ? chunks - kDepth * phase : 0;
  std::vector<std::int64_t> order;
  for (std::int64_t c = 0; c < chunks; ++c) order.push_back((first + c) % chunks);
  return order;
}

/// stage_x_pairs_sums' group corrections of batch row xr: lane l of chunk c sums its 32 x (k =
/// 1024c + 32l ..) in k order from zero, the four lanes of group g add by xor-butterfly (offsets 1,
/// 2: (s0 + s1) + (s2 + s3)), and the correction is the fp32 product -136 · sum; zero past K.
std::vector<float> rs_offset_sums(const std::uint16_t* xr, std::int64_t K, std::int64_t chunks) {
  std::vector<float> sums(static_cast<std::size_t>(chunks * 8), 0.f);
  for (std::int64_t c = 0; c < chunks; ++c)
    for (int g = 0; g < 8; ++g) {
      float lane_sum[4];
      for (int t = 0; t < 4; ++t) {
        const std::int64_t k0 = c * 1024 + 32 * (4 * g + t);
        float s = 0.f;
        for (int i = 0; i < 32; ++i) s += k0 < K ? bf16_bits_to_float(xr[k0 + i]) : 0.f;
        lane_sum[t] = s;
      }
      const float s01 = lane_sum[0] + lane_sum[1], s23 = lane_sum[2] + lane_sum[3];
      sums[static_cast<std::size_t>(c * 8 + g)] = -136.f * (s01 + s23);
    }
  return sums;
}

// w4a16_rowstream_mma.cuh: the row stream's lanes and chunks, each chunk of a row as 8 mma.sync
// m16n8k16 steps (u = 0..3, h = 0..1) whose diagonal D[g][g] sums lane group g's own products: in
// the step's k order kk = 2t, 2t + 1 (t = 0..3; b0 / a0: nibbles 2h, 2h + 4 of word u of lane 4g + t)
// then kk = 2t + 8, 2t + 9 (b1 / a2: nibbles 2h + 1, 2h + 5), summed in fp32 as the tensor-core path's
// emulation sums a step; per chunk the 8 steps into a partial from zero, one FMA with the group's
// scale into the accumulator of lane (g, g >> 1); the other lanes zeroed; the xor-butterfly. The
// persistent builds (persist; W4A16_RS_PERSIST) compute every row in the order of their form.
HostTensor emulate_rowstream_mma(const WorkloadPlan& p, const std::vector<HostTensor>& in, RsForm form = {}) {
  const std::int64_t B = axis(p, "B"), N = axis(p, "N"), K = axis(p, "K"), G = K / kGroup;
  const std::int64_t chunks = (G + 7) / 8, words_per_row = K / 8;
  const auto* x = in.at(0).as<std::uint16_t>();
  const auto* q = in.at(1).as<std::uint32_t>();
  const auto* sc = in.at(2).as<std::uint16_t>();
  HostTensor y("y", DType::bf16, {B, N});
  auto* yp = y.as<std::uint16_t>();
  for (std::int64_t b = 0; b < B; ++b) {
    const std::vector<float> sums = rs_offset_sums(x + b * K, K, chunks);
    for (std::int64_t n = 0; n < N; ++n) {
      float acc[32] = {};
      for (const std::int64_t c : rs_chunk_order(n, chunks, form.rotate))
        for (int g = 0; g < 8; ++g) {
          const std::int64_t grp = c * 8 + g;
          if (grp >= G) continue;  // x is zero there: the kernel adds scale · 0
          float part = form.offset && !form.drop_correction ? sums[static_cast<std::size_t>(grp)] : 0.f;
          for (int u = 0; u < 4; ++u)
            for (int h = 0; h < 2; ++h) {
              float step = 0.f;
              for (int kk = 0; kk < 16; ++kk) {
                const int t = (kk & 7) >> 1, which = kk & 1;
                const int j = 2 * h + (kk >= 8 ? 1 : 0) + 4 * which;  // nibble of word u
                const std::int64_t lane = 4 * g + t;
                const std::uint32_t word = q[n * words_per_row + c * 128 + lane * 4 + u];
                const std::int64_t k = c * 1024 + 32 * lane + 8 * u + j;
                const int qv = static_cast<int>((word >> (4 * j)) & 15u);
                const float codev = static_cast<float>(form.offset ? 128 + qv : qv - 8);
                step += bf16_bits_to_float(x[b * K + k]) * codev;
              }
              part += step;
            }
          float& a = acc[4 * g + (g >> 1)];
          a = std::fmaf(bf16_bits_to_float(sc[n * G + grp]), part, a);
        }
      yp[b * N + n] = float_to_bf16_bits(lane_butterfly(acc));
    }
  }
  return y;
}

/// The default's row stream register by register: each lane's registers built with the kernel's expressions
/// (stage_x_pairs' byte_perm selectors and {a0, a0, a2, a2} vectors, mma_code_pair's nibble pairs,
/// the FSEL of c0 / c1 by the group's parity, write_rows' diagonal mask), placed in A, B and D by
/// the PTX fragment layout of mma.m16n8k16 (.bf16), each step an fp32 sum over its 16 k in order.
/// A wrong selector, pair, register or lane mask gives gross errors, not bit-equality with
/// emulate_rowstream_mma.
HostTensor emulate_rowstream_mma_registers(const WorkloadPlan& p, const std::vector<HostTensor>& in, RsForm form = {}) {
  const std::int64_t B = axis(p, "B"), N = axis(p, "N"), K = axis(p, "K"), G = K / kGroup;
  const std::int64_t chunks = (G + 7) / 8, words_per_row = K / 8;
  const auto* x = in.at(0).as<std::uint16_t>();
  const auto* q = in.at(1).as<std::uint32_t>();
  const auto* sc = in.at(2).as<std::uint16_t>();
  HostTensor y("y", DType::bf16, {B, N});
  auto* yp = y.as<std::uint16_t>();
  for (std::int64_t b = 0; b < B; ++b) {
    // stage_x_pairs: per chunk, word u, step h, lane l: {a0, a0, a2, a2}
    std::vector<std::uint32_t> xs(static_cast<std::size_t>(chunks * 256 * 4), 0u);
    for (std::int64_t i = 0; i < chunks * 128; ++i) {
      const std::int64_t k0 = (i >> 7) * 1024 + 32 * (i & 31) + 8 * ((i >> 5) & 3);
      std::uint32_t v[4] = {0, 0, 0, 0};
      if (k0 < K)
        for (int e = 0; e < 4; ++e)
          v[e] = x[b * K + k0 + 2 * e] | (static_cast<std::uint32_t>(x[b * K + k0 + 2 * e + 1]) << 16);
      const std::uint32_t a00 = byte_perm(v[0], v[2], 0x5410), a20 = byte_perm(v[0], v[2], 0x7632);
      const std::uint32_t a01 = byte_perm(v[1], v[3], 0x5410), a21 = byte_perm(v[1], v[3], 0x7632);
      const std::int64_t l = i & 31, cu = i >> 5;
      const std::uint32_t h0[4] = {a00, a00, a20, a20}, h1[4] = {a01, a01, a21, a21};
      std::copy(h0, h0 + 4, &xs[static_cast<std::size_t>(((cu * 2 + 0) * 32 + l) * 4)]);
      std::copy(h1, h1 + 4, &xs[static_cast<std::size_t>(((cu * 2 + 1) * 32 + l) * 4)]);
    }
    // stage_x_pairs_sums (offset form): per chunk (one warp), lane l sums its 32 x as the kernel's
    // registers hold them (word e of vector u: the low half x_{8u+2e}, then the high half), the
    // butterfly over lanes xor 1, xor 2, and lane 4g stores -136 · sum of group g.
    std::vector<float> xsum(static_cast<std::size_t>(chunks * 8), 0.f);
    for (std::int64_t c = 0; c < chunks; ++c) {
      float lane_sum[32];
      for (int l = 0; l < 32; ++l) {
        const std::int64_t k0 = c * 1024 + 32 * l;
        float s = 0.f;
        for (int u = 0; u < 4; ++u)
          for (int e = 0; e < 4; ++e) {
            const std::int64_t k = k0 + 8 * u + 2 * e;
            const std::uint32_t word =
                k0 < K ? x[b * K + k] | (static_cast<std::uint32_t>(x[b * K + k + 1]) << 16) : 0u;
            s += bits_float(word << 16);
            s += bits_float(word & 0xFFFF0000u);
          }
        lane_sum[l] = s;
      }
      for (int o = 1; o <= 2; o <<= 1) {
        float next[32];
        for (int l = 0; l < 32; ++l) next[l] = lane_sum[l] + lane_sum[l ^ o];
        std::copy(next, next + 32, lane_sum);
      }
      for (int g = 0; g < 8; ++g) xsum[static_cast<std::size_t>(c * 8 + g)] = -136.f * lane_sum[4 * g];
    }
    for (std::int64_t n = 0; n < N; ++n) {
      float acc[32] = {};
      for (const std::int64_t c : rs_chunk_order(n, chunks, form.rotate)) {
        float D[16][8] = {};  // the chunk's partial from zero, or (offset form) from each lane's C
        if (form.offset)
          for (int lane = 0; lane < 32; ++lane) {  // C = {v, v, v, v}: D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]
            const int g = lane >> 2, t = lane & 3;
            const float v = xsum[static_cast<std::size_t>(c * 8 + g)];
            D[g][2 * t] = D[g][2 * t + 1] = D[g + 8][2 * t] = D[g + 8][2 * t + 1] = v;
          }
        for (int u = 0; u < 4; ++u)
          for (int h = 0; h < 2; ++h) {
            float Am[16][16], Bm[16][8];
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane >> 2, t = lane & 3;
              const bool live = c * 8 + g < G;  // a dead lane's words meet x = 0 (zero words here)
              const std::uint32_t w = live ? q[n * words_per_row + c * 128 + lane * 4 + u] : 0u;
              const std::uint32_t* a = &xs[static_cast<std::size_t>((((c * 4 + u) * 2 + h) * 32 + lane) * 4)];
              const std::uint32_t b0 = form.offset ? code_pair_offset(w, 2 * h) : code_pair(w, 2 * h);
              const std::uint32_t b1 = form.offset ? code_pair_offset(w, 2 * h + 1) : code_pair(w, 2 * h + 1);
              Am[g][2 * t] = lo_bf16(a[0]), Am[g][2 * t + 1] = hi_bf16(a[0]);
              Am[g + 8][2 * t] = lo_bf16(a[1]), Am[g + 8][2 * t + 1] = hi_bf16(a[1]);
              Am[g][2 * t + 8] = lo_bf16(a[2]), Am[g][2 * t + 9] = hi_bf16(a[2]);
              Am[g + 8][2 * t + 8] = lo_bf16(a[3]), Am[g + 8][2 * t + 9] = hi_bf16(a[3]);
              Bm[2 * t][g] = lo_bf16(b0), Bm[2 * t + 1][g] = hi_bf16(b0);
              Bm[2 * t + 8][g] = lo_bf16(b1), Bm[2 * t + 9][g] = hi_bf16(b1);
            }
            for (int m = 0; m < 16; ++m)
              for (int col = 0; col < 8; ++col) {
                float d = 0.f;
                for (int k = 0; k < 16; ++k) d += Am[m][k] * Bm[k][col];
                D[m][col] += d;
              }
          }
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const float c0 = D[g][2 * t], c1 = D[g][2 * t + 1];
          const bool live = c * 8 + g < G;
          const float s = live ? bf16_bits_to_float(sc[n * G + c * 8 + g]) : 0.f;
          acc[lane] = std::fmaf(s, (g & 1) ? c1 : c0, acc[lane]);
        }
      }
      for (int lane = 0; lane < 32; ++lane) acc[lane] = (lane & 3) == (lane >> 3) ? acc[lane] : 0.f;
      yp[b * N + n] = float_to_bf16_bits(lane_butterfly(acc));
    }
  }
  return y;
}

CompareResult judge(Variant v, const Case& c) {
  return compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate(v, c.plan, c.inputs));
}

class W4A16Tolerance : public TaskSuite<W4A16Tolerance> {
 public:
  static constexpr const char* kTask = "w4a16_gemv";
};

void report(const char* what, const Case& c, const CompareResult& r) {
  std::printf("%-14s %-40s max|err| %.4g  rel_l2 %.3g  mismatches %lld/%lld\n", what, c.plan.workload.uuid.c_str(),
              r.max_abs_error, r.rel_l2, static_cast<long long>(r.mismatches), static_cast<long long>(r.checked));
}

TEST_F(W4A16Tolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 7u);
  bool odd_n = false, k_long = false, b_max = false;
  for (const Case& c : *cases_) {
    odd_n |= axis(c.plan, "N") % 16 != 0;
    k_long |= axis(c.plan, "K") >= 28672;
    b_max |= axis(c.plan, "B") == 16;
  }
  EXPECT_TRUE(odd_n && k_long && b_max);
}

TEST_F(W4A16Tolerance, ExpertAndNaiveArithmeticPass) {
  for (const Case& c : *cases_)
    for (Variant v : {Variant::kExpert, Variant::kNaive}) {
      const CompareResult r = judge(v, c);
      report(v == Variant::kExpert ? "expert" : "naive", c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    }
}

TEST_F(W4A16Tolerance, ExpertLaneEmulationPasses) {
  // The tensor-core path (8 warps, two m16 tiles per warp, groups strided over the warps; s256
  // sums in exactly this order and reads the same fragments) and mchain2 (two mma chains per
  // group), on every check workload.
  struct Shape {
    int warps, mtiles;
    LaneOrder order;
    const char* name;
  };
  for (const Case& c : *cases_)
    for (const auto& [warps, mtiles, order, name] :
         {Shape{8, 2, {}, "expert lanes"}, Shape{8, 2, {2}, "expert lanes (mchain2: two mma chains)"}}) {
      const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0),
                                      emulate_expert_lanes(c.plan, c.inputs, warps, mtiles, order));
      report(name, c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << " " << name << ": " << r.message;
      EXPECT_LE(r.max_abs_error, c.plan.outputs.at(0).cmp.atol / 4) << c.plan.workload.uuid;  // fp32 sums: far inside
    }
}

TEST_F(W4A16Tolerance, RowstreamLaneEmulationPasses) {
  // The row-stream builds (magic-number fp32 codes, one partial per lane and chunk, scale per
  // group, lane butterfly) against the golden on every check workload, beside the tensor-core
  // path's lane emulation: both are fp32 sums of exact products, far inside the rule.
  for (const Case& c : *cases_) {
    const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate_rowstream(c.plan, c.inputs));
    report("rowstream", c, r);
    EXPECT_TRUE(r.passed) << c.plan.workload.uuid << " rowstream: " << r.message;
    EXPECT_LE(r.max_abs_error, c.plan.outputs.at(0).cmp.atol / 4) << c.plan.workload.uuid;
  }
}

/// Outputs of `got` more than one bf16 rounding step (the spacing of bf16 at |expected|) from the
/// golden: an fp32 sum a few fp32 ulps off can round to the neighbouring bf16, never further.
std::int64_t beyond_one_bf16_step(const HostTensor& expected, const HostTensor& got) {
  std::int64_t beyond = 0;
  for (std::int64_t i = 0; i < expected.numel(); ++i) {
    const double e = expected.at(i), step = e == 0 ? 0x1p-126 : std::ldexp(1.0, std::ilogb(e) - 7);
    beyond += std::fabs(got.at(i) - e) > step;
  }
  return beyond;
}

TEST_F(W4A16Tolerance, RowstreamMmaLaneEmulationPasses) {
  // The row stream with its chunks on the tensor cores (the default and persist: diagonal mma steps,
  // fp32 partial per group, the diagonal lanes' butterfly) against the golden, with the same
  // margin as the FFMA form: exact products and fp32 sums. Also its offset form (rsoff: codes
  // 128 + q, each group's partial started at -136 · sum(x): sums of ~17x larger terms), its rotated
  // chunk order (rsrot) and both (rsrot_off). The plain forms keep the FFMA form's margin (max
  // |err| <= atol / 4); the offset forms' coarser partials flip a few outputs to the neighbouring
  // bf16 (on check-16x100x1152 that step, 2^-7 at |y| in [1, 2), is above atol / 4): for them
  // every output within one bf16 step of the golden and rel_l2 <= 1e-3 (the rule's rtol is 2^-7).
  for (const Case& c : *cases_)
    for (const RsForm& form : kRsForms) {
      const HostTensor y = emulate_rowstream_mma(c.plan, c.inputs, form);
      const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0), y);
      report(form.name, c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << " " << form.name << ": " << r.message;
      if (form.offset) {
        EXPECT_EQ(beyond_one_bf16_step(c.expected.at(0), y), 0) << c.plan.workload.uuid << " " << form.name;
        EXPECT_LE(r.rel_l2, 1e-3) << c.plan.workload.uuid << " " << form.name;
      } else {
        EXPECT_LE(r.max_abs_error, c.plan.outputs.at(0).cmp.atol / 4) << c.plan.workload.uuid << " " << form.name;
      }
    }
}

TEST_F(W4A16Tolerance, RowstreamOffsetWithoutItsCorrectionFails) {
  // The offset form's codes 128 + q without the group's -136 · sum(x): every output is off by
  // 136 · sum(s · x), which the rule rejects on every check workload but the all-zero-x edge.
  RsForm broken = kRsForms[1];
  broken.drop_correction = true;
  int rejected = 0;
  for (const Case& c : *cases_) {
    const CompareResult r =
        compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate_rowstream_mma(c.plan, c.inputs, broken));
    report("rsoff broken", c, r);
    rejected += !r.passed;
  }
  EXPECT_GE(rejected, 6);
}

TEST_F(W4A16Tolerance, RowstreamMmaRegistersMatchItsOrder) {
  // The register-level replay of the default's row stream (the kernel's expressions in the PTX fragment layout)
  // gives bit-for-bit the outputs of the order emulated above, on every check workload.
  // The offset and rotated forms likewise (their C operand from stage_x_pairs_sums' lane sums and
  // butterfly, their codes without the HFMA2, their chunk order).
  for (const Case& c : *cases_)
    for (const RsForm& form : kRsForms) {
      const HostTensor regs = emulate_rowstream_mma_registers(c.plan, c.inputs, form);
      const HostTensor order = emulate_rowstream_mma(c.plan, c.inputs, form);
      const auto* a = regs.as<std::uint16_t>();
      const auto* b = order.as<std::uint16_t>();
      const std::int64_t count = axis(c.plan, "B") * axis(c.plan, "N");
      std::int64_t differ = 0;
      for (std::int64_t i = 0; i < count; ++i) differ += a[i] != b[i];
      EXPECT_EQ(differ, 0) << c.plan.workload.uuid << " " << form.name;
      const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0), regs);
      report(form.name, c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << " " << form.name << ": " << r.message;
    }
}

TEST(W4A16Rowstream, MmaDiagonalCoversEveryWeightOnce) {
  // The diagonal's (lane group g, step (u, h), kk) -> (lane, word, nibble) map of
  // emulate_rowstream_mma, as the kernel's registers realise it: each of a chunk's 1024 weights of a
  // row is paired with its own x exactly once, and group g's products are lane group g's words.
  std::vector<int> seen(1024, 0);
  for (int g = 0; g < 8; ++g)
    for (int u = 0; u < 4; ++u)
      for (int h = 0; h < 2; ++h)
        for (int kk = 0; kk < 16; ++kk) {
          const int t = (kk & 7) >> 1, which = kk & 1;
          const int j = 2 * h + (kk >= 8 ? 1 : 0) + 4 * which;
          const int lane = 4 * g + t, k = 32 * lane + 8 * u + j;
          ASSERT_EQ(k / 128, g);
          ++seen[static_cast<std::size_t>(k)];
        }
  for (int k = 0; k < 1024; ++k) EXPECT_EQ(seen[static_cast<std::size_t>(k)], 1) << "k " << k;
  // The diagonal lane (g, g >> 1) is what the kernel's write_rows keeps: (lane & 3) == (lane >> 3).
  int kept = 0;
  for (int lane = 0; lane < 32; ++lane)
    if ((lane & 3) == (lane >> 3)) {
      ++kept;
      EXPECT_EQ(lane, 4 * (lane >> 2) + ((lane >> 2) >> 1));
    }
  EXPECT_EQ(kept, 8);
}

TEST(W4A16Rowstream, PersistentRingComputesEveryStepItRequested) {
  // The persistent form's two cursors (w4a16_rowstream.cuh, W4A16_RS_PERSIST: variant
  // persist), replayed statement by statement: warp gw = warp · grid + cta takes row blocks
  // gw, gw + W, ...; the issue cursor runs kDepth steps ahead of the compute cursor across block
  // boundaries; ring slot s holds steps s, s + kDepth, ... For row-block counts around the grid's
  // warp count and 1..11 chunks per row (K not a multiple of kDepth chunks included): every step
  // computes the slot loaded for it, every (block, chunk) is computed once in chunk order by its
  // warp, every block is written once after its last chunk, and nothing is loaded past the warp's
  // last block.
  constexpr int kWarps = 8, kDepth = 3;
  struct Slot {
    int block = -1, chunk = -1;
  };
  for (int grid : {1, 3, 264})
    for (int blocks : {1, 7, 8 * grid - 1, 8 * grid, 8 * grid + 5, 3 * 8 * grid + 17})
      for (int chunks = 1; chunks <= 11; ++chunks) {
        const int stride = grid * kWarps;
        std::vector<int> computed(static_cast<std::size_t>(blocks) * chunks, 0), written(blocks, 0);
        for (int cta = 0; cta < grid; ++cta)
          for (int warp = 0; warp < kWarps; ++warp) {
            const int first = warp * grid + cta;
            int ib = first, ic = 0;
            Slot ring[kDepth];
            auto issue = [&](Slot& st) {
              if (ib < blocks) st = {ib, ic};  // `live`: else the slot keeps its old registers
              if (++ic == chunks) ic = 0, ib += stride;
            };
            for (auto& st : ring) issue(st);
            int cb = first, cc = 0;
            while (cb < blocks) {
              for (int s = 0; s < kDepth; ++s) {
                ASSERT_EQ(ring[s].block, cb) << "grid " << grid << " blocks " << blocks << " chunks " << chunks;
                ASSERT_EQ(ring[s].chunk, cc) << "grid " << grid << " blocks " << blocks << " chunks " << chunks;
                ++computed[static_cast<std::size_t>(cb) * chunks + cc];
                issue(ring[s]);
                if (++cc == chunks) {
                  for (int c = 0; c < chunks; ++c) ASSERT_EQ(computed[static_cast<std::size_t>(cb) * chunks + c], 1);
                  ++written[cb];
                  cc = 0;
                  cb += stride;
                  if (cb >= blocks) break;
                }
              }
            }
          }
        for (int v : computed) ASSERT_EQ(v, 1) << "grid " << grid << " blocks " << blocks << " chunks " << chunks;
        for (int v : written) ASSERT_EQ(v, 1) << "grid " << grid << " blocks " << blocks << " chunks " << chunks;
      }
}

TEST(W4A16Rowstream, RotatedRingComputesEveryChunkOnce) {
  // The rotated ring (w4a16_rowstream.cuh, W4A16_RS_ROTATE: variants rsrot, rsrot_off) replayed
  // statement by statement: `first` from the warp's phase, the pointers at the next turn's chunk
  // (`at`, moved by turn_on: kDepth on, or back to chunk 0 when the turn ended on the row's last
  // chunk), each turn's x at the chunk the pointers were at before (`xat`), the refills `live` only
  // for logical chunks < chunks. For 1..40 chunks and every phase: each computed slot holds the
  // chunk loaded for it and the chunk whose x it meets, every chunk is computed once, in
  // rs_chunk_order's order, and no live load leaves the row.
  constexpr int kWarps = 8, kDepth = 3, kRows = 4;
  for (int chunks = 1; chunks <= 40; ++chunks) {
    const int phases = (chunks + kDepth - 1) / kDepth;
    for (int gw = 0; gw < 2 * phases + kWarps; ++gw) {
      const int phase = gw % phases;
      const int first = phase == 0 ? 0 : chunks - kDepth * phase;
      ASSERT_GE(first, 0);
      ASSERT_LT(first, chunks);
      int at = first;
      auto turn_on = [&]() { at += at + kDepth == chunks ? kDepth - chunks : kDepth; };
      int ring[kDepth] = {-1, -1, -1};
      auto issue = [&](int c0, int s) {
        if (c0 + s < chunks) {  // `live` (the lane's group past K aside)
          ASSERT_GE(at + s, 0);
          ASSERT_LT(at + s, chunks) << "chunks " << chunks << " first " << first;
          ring[s] = at + s;
        }
      };
      for (int s = 0; s < kDepth; ++s) issue(0, s);
      int xat = at;
      turn_on();
      std::vector<std::int64_t> computed;
      for (int c0 = 0; c0 < chunks; c0 += kDepth) {
        const int e0 = xat;
        xat = at;
        for (int s = 0; s < kDepth; ++s) {
          if (c0 + s >= chunks) break;
          ASSERT_EQ(ring[s], e0 + s) << "chunks " << chunks << " first " << first << " c0 " << c0;
          computed.push_back(e0 + s);
          issue(c0 + kDepth, s);
        }
        turn_on();
      }
      EXPECT_EQ(computed, rs_chunk_order(static_cast<std::int64_t>(gw) * kRows, chunks, true))
          << "chunks " << chunks << " gw " << gw;
    }
  }
}

TEST(W4A16Rowstream, MagicNumberCodesAreExact) {
  // Every nibble value at every position of the word and of the word shifted by 16.
  for (std::uint32_t qv = 0; qv < 16; ++qv)
    for (int j = 0; j < 8; ++j) {
      const std::uint32_t w = (0x9A5C36E1u & ~(0xFu << (4 * j))) | (qv << (4 * j));  // other nibbles arbitrary
      const int e = j % 4;
      const float got = rowstream_code(j < 4 ? w : w >> 16, e);
      EXPECT_EQ(got, std::ldexp(static_cast<float>(static_cast<int>(qv) - 8), 4 * e)) << "q " << qv << " nibble " << j;
    }
}

TEST_F(W4A16Tolerance, Bf16RunningSumFails) {
  for (const Case& c : *cases_) {
    if (axis(c.plan, "K") < 1024 || axis(c.plan, "B") * axis(c.plan, "N") < 32) continue;  // short sums: bf16 can be lucky
    const CompareResult r = judge(Variant::kBf16Sum, c);
    report("bf16 sum", c, r);
    EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted a bf16 running sum";
  }
}

TEST_F(W4A16Tolerance, Bf16SumsWithinGroupsFail) {
  for (const Case& c : *cases_) {
    if (axis(c.plan, "B") * axis(c.plan, "N") < 32) continue;
    const CompareResult r = judge(Variant::kBf16GroupSum, c);
    report("bf16 group", c, r);
    EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted bf16 sums within groups";
  }
}

TEST_F(W4A16Tolerance, WrongPackingFormatsFail) {
  for (const Case& c : *cases_) {
    if (c.plan.workload.uuid.find("allmax") != std::string::npos) continue;  // every code equal: order-blind
    for (Variant v : {Variant::kAwqOrder, Variant::kSignedCodes}) {
      const CompareResult r = judge(v, c);
      EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted variant " << static_cast<int>(v);
    }
  }
  // All codes 15: the signed reading gives -1 instead of +7.
  for (const Case& c : *cases_) {
    if (c.plan.workload.uuid.find("allmax") != std::string::npos) {
      EXPECT_FALSE(judge(Variant::kSignedCodes, c).passed);
    }
  }
}

}  // namespace

// Bench workloads are judged against naive, not the golden: the expert's output (fp32, exact
// weights) against naive's (bf16-rounded weights) under a bench workload's rule, on a slice of
// Llama 3 70B o_proj at B = 16 (384 of its 8192 rows: 6144 outputs).
TEST(W4A16Bench, ExpertPassesAgainstNaiveUnderTheBenchRule) {
  const Task task = load_pilot("w4a16_gemv");
  Workload w;
  for (const Workload& b : task.workloads)
    if (b.uuid == "w4a16_gemv-bench-16x8192x8192") w = b;
  ASSERT_EQ(w.uuid, "w4a16_gemv-bench-16x8192x8192");
  w.axes["N"] = 384;
  const WorkloadPlan plan = make_plan(task, w);
  const std::vector<HostTensor> inputs = generate_inputs_host(plan, 7);
  const HostTensor naive = emulate(Variant::kNaive, plan, inputs);
  const HostTensor expert = emulate(Variant::kExpert, plan, inputs);
  const CompareResult r = compare(plan.outputs.at(0).cmp, naive, expert);
  std::printf("expert vs naive, B 16 N 384 K 8192: max|err| %.4g rel_l2 %.3g mismatches %lld/%lld (atol %.4g)\n",
              r.max_abs_error, r.rel_l2, static_cast<long long>(r.mismatches), static_cast<long long>(r.checked),
              plan.outputs.at(0).cmp.atol);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.mismatches, 0);
  // and a bf16-within-group expert would not pass against naive either
  EXPECT_FALSE(compare(plan.outputs.at(0).cmp, naive, emulate(Variant::kBf16GroupSum, plan, inputs)).passed);
}

// Hidden draws (odd N, K up to hidden_max, B up to 16) under the definition's default rule: the
// honest arithmetic passes there too.
TEST(W4A16Hidden, ExpertAndNaivePassHiddenDraws) {
  const Task task = load_pilot("w4a16_gemv");
  const std::vector<Workload> hidden = draw_hidden_workloads(task.def, 12345, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Case& c : make_cases(task, load_reference("w4a16_gemv"), hidden, 3)) {
    std::printf("%s: B %lld N %lld K %lld\n", c.plan.workload.uuid.c_str(), static_cast<long long>(axis(c.plan, "B")),
                static_cast<long long>(axis(c.plan, "N")), static_cast<long long>(axis(c.plan, "K")));
    for (Variant v : {Variant::kExpert, Variant::kNaive}) {
      const CompareResult r = judge(v, c);
      report(v == Variant::kExpert ? "expert" : "naive", c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    }
    const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate_rowstream(c.plan, c.inputs));
    report("rowstream", c, r);
    EXPECT_TRUE(r.passed) << c.plan.workload.uuid << " rowstream: " << r.message;
    for (const RsForm& form : kRsForms) {
      const CompareResult rm =
          compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate_rowstream_mma(c.plan, c.inputs, form));
      report(form.name, c, rm);
      EXPECT_TRUE(rm.passed) << c.plan.workload.uuid << " " << form.name << ": " << rm.message;
    }
  }
}
