// causal_conv1d, tolerances checked both ways: variants of the kernel emulated on the host as a GPU
// computes them, judged against the fp64 golden under the task's own rule on every check workload
// and on hidden draws. The fp32 arithmetic of naive.cu and expert.cu passes, and so does a host
// replay of the expert's tilings (per-row and flat warp tiles, 16-byte vectors, the halo passed by
// shuffle); cheaper
// precision (the bf16 pre-activation of a bf16 F.conv1d, bf16 accumulation, bf16 parameters) and
// wrong indexing (rows that read the previous row's tail, a halo dropped at tile boundaries, a
// non-causal window) fail.
#include <cmath>
#include <cstdio>
#include <vector>

#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {
namespace {

constexpr int kW = 4;

/// How a variant computes; every field but `order` describes one way a kernel can be cheaper or wrong.
struct Arith {
  enum class Order {
    kFmaFromBias,  ///< expert.cu: z = bias, then fmaf of the taps oldest first; SiLU z * (1 / (1 + 2^(-z log2 e)))
    kSumThenBias,  ///< naive.cu: acc = 0, fmaf of the valid taps, then + bias; SiLU v / (1 + expf(-v))
  } order = Order::kFmaFromBias;
  bool bf16_preact = false;   ///< conv + bias rounded to bf16 before SiLU (F.conv1d on bf16 tensors)
  bool bf16_acc = false;      ///< every partial sum rounded to bf16
  bool bf16_params = false;   ///< weight and bias rounded to bf16 (the parameters stored as bf16)
  bool flat_rows = false;     ///< one padded sequence over the whole tensor: a row's first outputs read the previous row's tail
  std::int64_t tile = 0;      ///< > 0: zeros instead of the halo at every multiple of `tile` positions
  bool centred = false;       ///< a symmetric window (padding W/2 on each side) instead of the causal one
  int rcp_ulps = 0;           ///< SiLU's reciprocal this many fp32 ulps off, flushed to 0 below 2^-126 (variant
                              ///< rcpapprox: rcp.approx.ftz is within 1 ulp)
};

float silu_f32(const Arith& a, float z) {
  if (a.order == Arith::Order::kSumThenBias) return z / (1.f + std::exp(-z));
  const float e = std::exp2(-z * 1.4426950408889634f);
  float r = 1.f / (1.f + e);
  for (int k = 0; k < (a.rcp_ulps < 0 ? -a.rcp_ulps : a.rcp_ulps); ++k)
    r = std::nextafter(r, a.rcp_ulps < 0 ? 0.f : 2.f);
  if (a.rcp_ulps != 0 && r < 0x1p-126f) r = 0.f;  // .ftz: a subnormal reciprocal is 0
  return z * r;
}

/// One output from its four inputs (oldest first, zeros where padded), the channel's taps and bias.
float conv_silu(const Arith& a, const float* w, float bias, const float* xs, const bool* valid) {
  auto acc_round = [&](float v) { return a.bf16_acc ? bf16_rn(v) : v; };
  float z;
  if (a.order == Arith::Order::kFmaFromBias) {
    z = bias;
    for (int k = 0; k < kW; ++k) z = acc_round(std::fma(w[k], xs[k], z));
  } else {
    z = 0.f;
    for (int k = 0; k < kW; ++k)
      if (valid[k]) z = acc_round(std::fma(w[k], xs[k], z));
    z = acc_round(z + bias);
  }
  if (a.bf16_preact) z = bf16_rn(z);
  return silu_f32(a, z);
}

std::vector<HostTensor> run_variant(const Case& c, const Arith& a) {
  const std::int64_t B = c.axis("B"), D = c.axis("D"), L = c.axis("L");
  const HostTensor& x = c.in("x");
  const auto* wp = c.in("weight").as<float>();
  const auto* bp = c.in("bias").as<float>();
  std::vector<HostTensor> outs = c.outputs();
  HostTensor& out = outs[c.out_index("out")];
  const std::int64_t n = B * D * L;
  for (std::int64_t row = 0; row < B * D; ++row) {
    const std::int64_t d = row % D;
    float w[kW], bias = bp[d];
    for (int k = 0; k < kW; ++k) w[k] = a.bf16_params ? bf16_rn(wp[d * kW + k]) : wp[d * kW + k];
    if (a.bf16_params) bias = bf16_rn(bias);
    for (std::int64_t l = 0; l < L; ++l) {
      float xs[kW];
      bool valid[kW];
      for (int k = 0; k < kW; ++k) {
        const std::int64_t src = a.centred ? l - kW / 2 + k : l - (kW - 1) + k;
        const std::int64_t flat = row * L + src;
        bool ok = a.flat_rows ? (flat >= 0 && flat < n) : (src >= 0 && src < L);
        if (a.tile > 0 && src >= 0 && src / a.tile != l / a.tile) ok = false;
        valid[k] = ok;
        xs[k] = ok ? bf16_at(x, flat) : 0.f;
      }
      set_bf16(out, row * L + l, conv_silu(a, w, bias, xs, valid));
    }
  }
  return outs;
}

/// The expert's 16-byte path replayed on the host with its own index arithmetic: tiles of `steps`
/// warp spans (32 lanes x 8 elements) per warp, lane l's 3-element halo from lane l-1's vector,
/// lane 0's from lane 31's of the previous step or from the 8 elements before the tile.
/// grid_warps > 0 replays the persist variant's order instead: that many resident warps, warp g
/// taking tiles g, g + grid_warps, ... (each tile computed as the row-tiled kernel computes it).
std::vector<HostTensor> run_expert_tiling(const Case& c, int max_steps, std::int64_t grid_warps = 0) {
  constexpr int kVec = 8, kSpan = 32 * kVec;
  const std::int64_t B = c.axis("B"), D = c.axis("D"), L = c.axis("L");
  const HostTensor& x = c.in("x");
  const auto* wp = c.in("weight").as<float>();
  const auto* bp = c.in("bias").as<float>();
  std::vector<HostTensor> outs = c.outputs();
  HostTensor& out = outs[c.out_index("out")];
  EXPECT_EQ(L % kVec, 0) << "the 16-byte path needs L % 8 == 0";
  const std::int64_t spans = (L + kSpan - 1) / kSpan;
  const int steps = static_cast<int>(spans < max_steps ? spans : max_steps);
  const std::int64_t tiles_per_row = (L + steps * kSpan - 1) / (steps * kSpan);
  const std::int64_t rows = B * D, row_vecs = L / kVec;
  const Arith honest;
  auto vec = [&](std::int64_t row, std::int64_t i, float* v) {  // 8 inputs of vector i, zeros past the row
    for (int e = 0; e < kVec; ++e) v[e] = i < row_vecs ? bf16_at(x, row * L + i * kVec + e) : 0.f;
  };
  const std::int64_t tiles = rows * tiles_per_row;
  std::vector<std::int64_t> order;  // the tiles in the order the warps take them
  const std::int64_t stride = grid_warps > 0 ? grid_warps : tiles;
  for (std::int64_t g = 0; g < stride; ++g)
    for (std::int64_t tile = g; tile < tiles; tile += stride) order.push_back(tile);
  EXPECT_EQ(static_cast<std::int64_t>(order.size()), tiles);
  for (const std::int64_t warp : order) {
    const std::int64_t row = warp / tiles_per_row;
    const std::int64_t tile_begin = (warp - row * tiles_per_row) * steps * kSpan;
    const std::int64_t vec_begin = tile_begin / kVec;
    float w[kW];
    for (int k = 0; k < kW; ++k) w[k] = wp[(row % D) * kW + k];
    const float bias = bp[row % D];
    std::vector<float> v(32 * kVec), carry(3, 0.f);
    if (tile_begin > 0) {  // the 16 bytes before the tile: elements 5, 6, 7
      float h[kVec];
      vec(row, vec_begin - 1, h);
      carry = {h[5], h[6], h[7]};
    }
    for (int u = 0; u < steps; ++u) {
      for (int lane = 0; lane < 32; ++lane) vec(row, vec_begin + lane + u * 32, &v[lane * kVec]);
      for (int lane = 0; lane < 32; ++lane) {
        const std::int64_t i = vec_begin + lane + u * 32;
        float xs[3 + kVec];
        const float* prev = lane == 0 ? carry.data() : &v[(lane - 1) * kVec + 5];
        for (int e = 0; e < 3; ++e) xs[e] = prev[e];
        for (int e = 0; e < kVec; ++e) xs[3 + e] = v[lane * kVec + e];
        if (i >= row_vecs) continue;
        const bool valid[kW] = {true, true, true, true};
        for (int e = 0; e < kVec; ++e) set_bf16(out, row * L + i * kVec + e, conv_silu(honest, w, bias, &xs[e], valid));
      }
      carry = {v[31 * kVec + 5], v[31 * kVec + 6], v[31 * kVec + 7]};
    }
  }
  return outs;
}

/// The expert's flat variant (CONV_FLAT) replayed on the host: warp w owns 32 * steps consecutive
/// vectors of the flattened tensor; lane 0's halo is the vector before the warp's (zeros at a row
/// start), later steps take lane 31's; every lane tracks its row's channel incrementally and zeroes
/// the halo of a row's first vector.
std::vector<HostTensor> run_expert_flat(const Case& c, int steps) {
  constexpr int kVec = 8;
  const std::int64_t B = c.axis("B"), D = c.axis("D"), L = c.axis("L");
  const HostTensor& x = c.in("x");
  const auto* wp = c.in("weight").as<float>();
  const auto* bp = c.in("bias").as<float>();
  std::vector<HostTensor> outs = c.outputs();
  HostTensor& out = outs[c.out_index("out")];
  EXPECT_EQ(L % kVec, 0) << "the 16-byte path needs L % 8 == 0";
  const std::int64_t row_vecs = L / kVec, total_vecs = B * D * row_vecs;
  const Arith honest;
  auto vec = [&](std::int64_t i, float* v) {  // 8 inputs of flat vector i, zeros past the tensor
    for (int e = 0; e < kVec; ++e) v[e] = i < total_vecs ? bf16_at(x, i * kVec + e) : 0.f;
  };
  for (std::int64_t warp_begin = 0; warp_begin < total_vecs; warp_begin += 32 * steps) {
    std::vector<float> v(32 * kVec), carry(3, 0.f);
    if (warp_begin % row_vecs != 0) {
      float h[kVec];
      vec(warp_begin - 1, h);
      carry = {h[5], h[6], h[7]};
    }
    std::int64_t col[32], d[32];
    for (int lane = 0; lane < 32; ++lane) {
      const std::int64_t row = (warp_begin + lane) / row_vecs;
      col[lane] = warp_begin + lane - row * row_vecs;
      d[lane] = row % D;
    }
    for (int u = 0; u < steps; ++u) {
      for (int lane = 0; lane < 32; ++lane) vec(warp_begin + u * 32 + lane, &v[lane * kVec]);
      for (int lane = 0; lane < 32; ++lane) {
        if (u > 0) {
          col[lane] += 32;
          while (col[lane] >= row_vecs) {
            col[lane] -= row_vecs;
            d[lane] = d[lane] + 1 == D ? 0 : d[lane] + 1;
          }
        }
        float xs[3 + kVec];
        const float* prev = lane == 0 ? carry.data() : &v[(lane - 1) * kVec + 5];
        for (int e = 0; e < 3; ++e) xs[e] = col[lane] == 0 ? 0.f : prev[e];
        for (int e = 0; e < kVec; ++e) xs[3 + e] = v[lane * kVec + e];
        const std::int64_t i = warp_begin + u * 32 + lane;
        if (i >= total_vecs) continue;
        float w[kW];
        for (int k = 0; k < kW; ++k) w[k] = wp[d[lane] * kW + k];
        const bool valid[kW] = {true, true, true, true};
        for (int e = 0; e < kVec; ++e) set_bf16(out, i * kVec + e, conv_silu(honest, w, bp[d[lane]], &xs[e], valid));
      }
      carry = {v[31 * kVec + 5], v[31 * kVec + 6], v[31 * kVec + 7]};
    }
  }
  return outs;
}

/// The rows variant (CONV_ROWS) replayed on the host: where a row is at most half a tile
/// (steps = ceil(L / 256) <= max_steps / 2), warp w owns rows 2w and 2w + 1, slot u being step
/// u % steps of row u / steps; lane 0's halo is zero at each row's first step and lane 31's of the
/// previous slot otherwise; a row past the last is skipped. Longer rows take the row-tiled path.
std::vector<HostTensor> run_expert_rows(const Case& c, int max_steps) {
  constexpr int kVec = 8, kSpan = 32 * kVec, kPackedRows = 2;
  const std::int64_t B = c.axis("B"), D = c.axis("D"), L = c.axis("L");
  const std::int64_t spans = (L + kSpan - 1) / kSpan;
  const int steps = static_cast<int>(spans < max_steps ? spans : max_steps);
  if (kPackedRows * steps > max_steps) return run_expert_tiling(c, max_steps);
  const HostTensor& x = c.in("x");
  const auto* wp = c.in("weight").as<float>();
  const auto* bp = c.in("bias").as<float>();
  std::vector<HostTensor> outs = c.outputs();
  HostTensor& out = outs[c.out_index("out")];
  EXPECT_EQ(L % kVec, 0) << "the 16-byte path needs L % 8 == 0";
  const std::int64_t rows = B * D, row_vecs = L / kVec;
  const Arith honest;
  for (std::int64_t warp = 0; warp * kPackedRows < rows; ++warp) {
    const std::int64_t row0 = warp * kPackedRows;
    std::vector<float> v(32 * kVec), carry(3, 0.f);
    for (int u = 0; u < kPackedRows * steps; ++u) {
      const int r = u / steps;
      const std::int64_t row = row0 + r, step_vec = (u % steps) * 32;
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < kVec; ++e) {
          const std::int64_t i = step_vec + lane;
          v[lane * kVec + e] = row < rows && i < row_vecs ? bf16_at(x, (row * row_vecs + i) * kVec + e) : 0.f;
        }
      if (u % steps == 0) carry = {0.f, 0.f, 0.f};  // the causal padding at the row's start
      if (row < rows) {
        const std::int64_t d = row % D;
        float w[kW];
        for (int k = 0; k < kW; ++k) w[k] = wp[d * kW + k];
        for (int lane = 0; lane < 32; ++lane) {
          const std::int64_t i = step_vec + lane;
          if (i >= row_vecs) continue;
          float xs[3 + kVec];
          const float* prev = lane == 0 ? carry.data() : &v[(lane - 1) * kVec + 5];
          for (int e = 0; e < 3; ++e) xs[e] = prev[e];
          for (int e = 0; e < kVec; ++e) xs[3 + e] = v[lane * kVec + e];
          const bool valid[kW] = {true, true, true, true};
          for (int e = 0; e < kVec; ++e)
            set_bf16(out, (row * row_vecs + i) * kVec + e, conv_silu(honest, w, bp[d], &xs[e], valid));
        }
      }
      carry = {v[31 * kVec + 5], v[31 * kVec + 6], v[31 * kVec + 7]};
    }
  }
  return outs;
}

struct Variant {
  const char* name;
  Arith arith;
  bool honest;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"expert's fp32 arithmetic (fma chain from the bias, ex2-based SiLU)", {}, true},
      {"naive's fp32 arithmetic (sum, then bias, expf SiLU)", {Arith::Order::kSumThenBias}, true},
      {"expert's arithmetic, reciprocal 1 ulp high (rcpapprox)", {.rcp_ulps = 1}, true},
      {"expert's arithmetic, reciprocal 1 ulp low (rcpapprox)", {.rcp_ulps = -1}, true},
      {"bf16 pre-activation (F.conv1d on bf16 tensors)", {Arith::Order::kFmaFromBias, true}, false},
      {"bf16 accumulation", {Arith::Order::kFmaFromBias, false, true}, false},
      {"bf16 weight and bias", {Arith::Order::kFmaFromBias, false, false, true}, false},
      {"rows read the previous row's tail", {Arith::Order::kFmaFromBias, false, false, false, true}, false},
      {"halo dropped at 1024-position tiles", {Arith::Order::kFmaFromBias, false, false, false, false, 1024}, false},
      {"centred (non-causal) window", {Arith::Order::kFmaFromBias, false, false, false, false, 0, true}, false},
  };
  return v;
}

/// Which check workloads can show a variant's error at all: a dropped tile halo needs rows longer
/// than the tile; a row leak needs more than one row; bf16 arithmetic needs enough elements that
/// some lands two bf16 steps away (a handful of values can be lucky). A bf16 pre-activation is
/// within one bf16 step of the golden wherever |1 + z (1 - sigmoid(z))| (the growth of z's relative
/// error through SiLU) is small, so only the negative-tail workload is required to show it.
bool can_show(const Variant& v, const Case& c) {
  const std::int64_t n = c.axis("B") * c.axis("D") * c.axis("L");
  if (v.arith.bf16_preact) return c.plan.workload.uuid.find("negative-tail") != std::string::npos;
  if (v.arith.tile > 0) return c.axis("L") > v.arith.tile;
  if (v.arith.flat_rows) return c.axis("B") * c.axis("D") > 1;
  if (v.arith.bf16_preact || v.arith.bf16_acc || v.arith.bf16_params) return n >= 1000;
  return true;
}

const Task& task() {
  static const Task t = load_pilot("causal_conv1d");
  return t;
}

TEST(ToleranceCausalConv1d, CheckWorkloadsCoverTheEdges) {
  const std::vector<Workload> checks = check_workloads(task());
  ASSERT_EQ(checks.size(), 9u);
  bool single = false, shorter_than_filter = false, odd = false, multi_tile = false;
  for (const Workload& w : checks) {
    const std::int64_t L = w.axes.at("L");
    single |= w.axes.at("B") * w.axes.at("D") * L == 1;
    shorter_than_filter |= L < kW - 1;
    odd |= L % 8 != 0;
    multi_tile |= L % 8 == 0 && L > 4 * 1024;
  }
  EXPECT_TRUE(single && shorter_than_filter && odd && multi_tile);
}

TEST(ToleranceCausalConv1d, CheaperOrWrongVariantsFailAndHonestPass) {
  const LoadedImpl ref = load_reference("causal_conv1d");
  for (std::uint64_t seed : {0x5EEDull, 0xC0FFEEull}) {
    for (const Workload& w : check_workloads(task())) {
      const Case c = make_case(task(), ref, w, seed);
      for (const Variant& v : variants()) {
        const OutputsVerdict verdict = judge(c, run_variant(c, v.arith));
        if (v.honest) {
          EXPECT_EQ(verdict.status, Status::PASSED) << v.name << " at " << w.uuid << ": " << verdict.message;
          if (seed == 0x5EED) {
            const OutputCheck& r = verdict.checks.at(0);
            std::printf("%-44s %-28.28s max|err| %.3g max rel %.3g\n", w.uuid.c_str(), v.name, r.max_abs_error,
                        r.max_rel_error);
          }
        } else if (can_show(v, c)) {
          EXPECT_EQ(verdict.status, Status::INCORRECT_NUMERICAL) << v.name << " passes at " << w.uuid;
        }
      }
    }
  }
}

TEST(ToleranceCausalConv1d, ExpertTilingReplayPassesOnTheSixteenByteShapes) {
  const LoadedImpl ref = load_reference("causal_conv1d");
  int replayed = 0;
  for (const Workload& w : check_workloads(task(), {shape("tiles-2x3x3080", {{"B", 2}, {"D", 3}, {"L", 3080}}),
                                                    shape("rows-of-one-vector-3x5x8", {{"B", 3}, {"D", 5}, {"L", 8}})})) {
    if (w.axes.at("L") % 8 != 0) continue;
    const Case c = make_case(task(), ref, w, 7);
    for (int steps : {2, 4, 8}) {  // the expert's default and its two variants (CONV_STEPS)
      const OutputsVerdict verdict = judge(c, run_expert_tiling(c, steps));
      EXPECT_EQ(verdict.status, Status::PASSED) << "steps " << steps << " at " << w.uuid << ": " << verdict.message;
    }
    const OutputsVerdict flat = judge(c, run_expert_flat(c, 4));  // the flat variant (CONV_FLAT)
    EXPECT_EQ(flat.status, Status::PASSED) << "flat at " << w.uuid << ": " << flat.message;
    const OutputsVerdict rows = judge(c, run_expert_rows(c, 4));  // the rows variant (CONV_ROWS)
    EXPECT_EQ(rows.status, Status::PASSED) << "rows at " << w.uuid << ": " << rows.message;
    for (std::int64_t grid : {1, 7, 64}) {  // the persist variant (CONV_PERSIST, CONV_STEPS=2)
      const OutputsVerdict persist = judge(c, run_expert_tiling(c, 2, grid));
      EXPECT_EQ(persist.status, Status::PASSED) << "persist, " << grid << " warps, at " << w.uuid << ": " << persist.message;
    }
    ++replayed;
  }
  EXPECT_GE(replayed, 3);
}

// The rows variant's own shapes: rows of two full spans (the 64 x 2048 x 512 bench row's, here with
// an odd row count, so the last warp's second row is past the end), two spans of which the second
// is partly idle, and one span (rows of one short vector step).
TEST(ToleranceCausalConv1d, RowsReplayPassesOnShortRows) {
  const LoadedImpl ref = load_reference("causal_conv1d");
  for (const Workload& w : check_workloads(task(), {shape("two-spans-3x5x512", {{"B", 3}, {"D", 5}, {"L", 512}}),
                                                    shape("span-and-a-bit-1x7x264", {{"B", 1}, {"D", 7}, {"L", 264}}),
                                                    shape("one-span-2x3x200", {{"B", 2}, {"D", 3}, {"L", 200}})})) {
    if (w.axes.at("L") % 8 != 0 || w.axes.at("L") > 512) continue;
    const Case c = make_case(task(), ref, w, 9);
    const OutputsVerdict rows = judge(c, run_expert_rows(c, 4));
    EXPECT_EQ(rows.status, Status::PASSED) << "rows at " << w.uuid << ": " << rows.message;
  }
}

// Bench workloads are judged against naive's outputs, not the golden: the expert's arithmetic must
// pass against naive's (two fp32 evaluation orders) under the same rule, at bench-like row lengths.
TEST(ToleranceCausalConv1d, ExpertAgainstNaiveUnderTheBenchRule) {
  const LoadedImpl ref = load_reference("causal_conv1d");
  Case c = make_case(task(), ref, shape("bench-like-1x48x16384", {{"B", 1}, {"D", 48}, {"L", 16384}}), 11);
  c.expected = run_variant(c, {Arith::Order::kSumThenBias});
  EXPECT_EQ(judge(c, run_variant(c, {})).status, Status::PASSED);
  EXPECT_EQ(judge(c, run_variant(c, {Arith::Order::kFmaFromBias, true})).status, Status::INCORRECT_NUMERICAL);
}

// Hidden draws (awkward B, D, L within hidden_max; one long L): the golden accepts them and both
// honest orders pass there too.
TEST(ToleranceCausalConv1d, HiddenDrawsPassHonestArithmetic) {
  const LoadedImpl ref = load_reference("causal_conv1d");
  const std::vector<Workload> hidden = draw_hidden_workloads(task().def, 424242, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(task(), ref, w, 3);
    std::printf("%s: B %lld D %lld L %lld\n", w.uuid.c_str(), static_cast<long long>(c.axis("B")),
                static_cast<long long>(c.axis("D")), static_cast<long long>(c.axis("L")));
    for (const Variant& v : variants())
      if (v.honest) {
        EXPECT_EQ(judge(c, run_variant(c, v.arith)).status, Status::PASSED) << v.name << " at " << w.uuid;
      }
  }
}

}  // namespace
}  // namespace d2k::tolerance_test
