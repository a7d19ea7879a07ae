// chunked_linear_attention: the expert's shared-memory layout and mma.sync fragment maps
// (dataset/chunked_linear_attention/cla_layout.h, the code the kernel uses) replayed on the host
// against the PTX definition of the mma.sync.m16n8k16 fragment layouts: one chunk of 64 steps staged
// as the kernel stages it, every warp's Q K^T (keys up to its last row), the decayed causal mask
// (decay 1 here), the accumulator-to-A-operand repacking of P, O = Q S + P V, the state update K~^T V
// into the state fragments, and the publication of bf16(S) read back as the B operand of Q S. q and
// k are in {-1, 0, 1} (scores are integers of at most 128, exact in bf16), v, K~ and S are
// multiples of 1/8 in [-1, 1]: every product and sum is exact in fp32, so the comparison is exact.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "cla_layout.h"

namespace {

using namespace cla_layout;

struct Pair {
  float lo = 0, hi = 0;  // a 32-bit register holding two bf16: lo is the lower index
};
using Acc = std::array<std::array<float, 4>, 32>;  // [lane][element] of one m16n8 accumulator

/// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 with g = lane/4, t = lane%4:
/// A a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B b0 (k 2t..2t+1, n g),
/// b1 (k 2t+8.., n g); C c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1).
void mma(Acc& c, const std::array<std::array<Pair, 4>, 32>& a, const std::array<std::array<Pair, 2>, 32>& b) {
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const auto& ar = a[lane];
    A[g][2 * t] = ar[0].lo, A[g][2 * t + 1] = ar[0].hi;
    A[g + 8][2 * t] = ar[1].lo, A[g + 8][2 * t + 1] = ar[1].hi;
    A[g][2 * t + 8] = ar[2].lo, A[g][2 * t + 9] = ar[2].hi;
    A[g + 8][2 * t + 8] = ar[3].lo, A[g + 8][2 * t + 9] = ar[3].hi;
    B[2 * t][g] = b[lane][0].lo, B[2 * t + 1][g] = b[lane][0].hi;
    B[2 * t + 8][g] = b[lane][1].lo, B[2 * t + 9][g] = b[lane][1].hi;
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 4; ++e) {
      const int g = lane / 4, t = lane % 4;
      const int row = g + (e >= 2 ? 8 : 0), col = 2 * t + (e & 1);
      ASSERT_EQ(acc_row(lane, e), row);
      ASSERT_EQ(acc_col(lane, e), col);
      float sum = 0;
      for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      c[lane][e] += sum;
    }
}

/// A 32-bit shared-memory load at element offset `off` of `arr` (bounds and alignment checked).
Pair ld32(const std::vector<float>& arr, int off) {
  EXPECT_EQ(off % 2, 0);
  EXPECT_GE(off, 0);
  EXPECT_LT(off + 1, static_cast<int>(arr.size()));
  return {arr[off], arr[off + 1]};
}

std::vector<float> draw(int n, int lo, int hi, float unit, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng) * unit;
  return v;
}

template <int D, int DV>
void replay_chunk(unsigned seed) {
  std::mt19937 rng(seed);
  constexpr float kNaN = -12345.f;  // padding sentinel: a fragment that reads it breaks the sums
  const std::vector<float> Q = draw(kC * D, -1, 1, 1.f, rng), K = draw(kC * D, -1, 1, 1.f, rng);
  const std::vector<float> V = draw(kC * DV, -8, 8, 0.125f, rng), Kw = draw(kC * D, -8, 8, 0.125f, rng);
  const std::vector<float> S = draw(D * DV, -8, 8, 0.125f, rng);

  // Stage as stage_chunk and publish_state do.
  std::vector<float> qs(smem_elems_q(D), kNaN), ks(smem_elems_q(D), kNaN), kwt(smem_elems_kw(D), kNaN),
      vt(smem_elems_v(DV), kNaN), sbt(smem_elems_s(D, DV), kNaN);
  for (int step = 0; step < kC; ++step) {
    for (int col = 0; col < D; ++col) {
      qs[qk_at(D, step, col)] = Q[step * D + col];
      ks[qk_at(D, step, col)] = K[step * D + col];
      kwt[kwt_at(col, step)] = Kw[step * D + col];
    }
    for (int dv = 0; dv < DV; ++dv) vt[vt_at(dv, step)] = V[step * DV + dv];
  }
  // The state fragments of every warp, filled from S by the accumulator map, then published.
  std::vector<int> written(sbt.size(), 0);
  for (int w = 0; w < kWarps; ++w)
    for (int m = 0; m < D / 64; ++m)
      for (int n = 0; n < DV / 8; ++n)
        for (int lane = 0; lane < 32; ++lane)
          for (int e = 0; e < 4; ++e) {
            const int dk = w * (D / 4) + 16 * m + acc_row(lane, e), dv = 8 * n + acc_col(lane, e);
            sbt[sbt_at(D, dv, dk)] = S[dk * DV + dv];
            ++written[sbt_at(D, dv, dk)];
          }
  int covered = 0;
  for (int x : written) {
    ASSERT_LE(x, 1);
    covered += x;
  }
  ASSERT_EQ(covered, D * DV) << "the published state misses elements";

  for (int w = 0; w < kWarps; ++w) {
    // chunk_output: acc = Q bf16(S), sc = Q K^T for key tiles n <= 2w + 1.
    std::vector<Acc> acc(DV / 8), sc(8);
    for (auto& x : acc) x = {};
    for (auto& x : sc) x = {};
    for (int kk = 0; kk < D / 16; ++kk) {
      std::array<std::array<Pair, 4>, 32> a{};
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < 4; ++r) a[lane][r] = ld32(qs, q_frag(D, w, kk, lane, r));
      for (int n = 0; n < DV / 8; ++n) {
        std::array<std::array<Pair, 2>, 32> b{};
        for (int lane = 0; lane < 32; ++lane)
          for (int r = 0; r < 2; ++r) b[lane][r] = ld32(sbt, s_frag(D, n, kk, lane, r));
        mma(acc[n], a, b);
      }
      for (int n = 0; n <= 2 * w + 1; ++n) {
        std::array<std::array<Pair, 2>, 32> b{};
        for (int lane = 0; lane < 32; ++lane)
          for (int r = 0; r < 2; ++r) b[lane][r] = ld32(ks, k_frag(D, n, kk, lane, r));
        mma(sc[n], a, b);
      }
    }
    // Causal mask (decay 1) and the scores checked against the direct product.
    for (int n = 0; n < 8; ++n)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) {
          const int i = 16 * w + acc_row(lane, e), j = 8 * n + acc_col(lane, e);
          if (n <= 2 * w + 1) {
            float dot = 0;
            for (int x = 0; x < D; ++x) dot += Q[i * D + x] * K[j * D + x];
            ASSERT_EQ(sc[n][lane][e], dot) << "score (" << i << ", " << j << ")";
          }
          sc[n][lane][e] = j <= i ? sc[n][lane][e] : 0.f;
        }
    // P repacked from the accumulators into A fragments, as chunk_output does; O += P V.
    for (int kk = 0; kk <= w; ++kk) {
      std::array<std::array<Pair, 4>, 32> a{};
      for (int lane = 0; lane < 32; ++lane) {
        a[lane][0] = {sc[2 * kk][lane][0], sc[2 * kk][lane][1]};
        a[lane][1] = {sc[2 * kk][lane][2], sc[2 * kk][lane][3]};
        a[lane][2] = {sc[2 * kk + 1][lane][0], sc[2 * kk + 1][lane][1]};
        a[lane][3] = {sc[2 * kk + 1][lane][2], sc[2 * kk + 1][lane][3]};
      }
      for (int n = 0; n < DV / 8; ++n) {
        std::array<std::array<Pair, 2>, 32> b{};
        for (int lane = 0; lane < 32; ++lane)
          for (int r = 0; r < 2; ++r) b[lane][r] = ld32(vt, v_frag(n, kk, lane, r));
        mma(acc[n], a, b);
      }
    }
    for (int n = 0; n < DV / 8; ++n)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) {
          const int i = 16 * w + acc_row(lane, e), dv = 8 * n + acc_col(lane, e);
          float want = 0;
          for (int x = 0; x < D; ++x) want += Q[i * D + x] * S[x * DV + dv];
          for (int j = 0; j <= i; ++j) {
            float dot = 0;
            for (int x = 0; x < D; ++x) dot += Q[i * D + x] * K[j * D + x];
            want += dot * V[j * DV + dv];
          }
          ASSERT_EQ(acc[n][lane][e], want) << "o (" << i << ", " << dv << ") of warp " << w;
        }
    // update_state: st += K~^T V for the warp's rows w*D/4..
    for (int m = 0; m < D / 64; ++m) {
      const int m0 = w * (D / 4) + 16 * m;
      std::vector<Acc> st(DV / 8);
      for (auto& x : st) x = {};
      for (int kk = 0; kk < kC / 16; ++kk) {
        std::array<std::array<Pair, 4>, 32> a{};
        for (int lane = 0; lane < 32; ++lane)
          for (int r = 0; r < 4; ++r) a[lane][r] = ld32(kwt, kw_frag(m0, kk, lane, r));
        for (int n = 0; n < DV / 8; ++n) {
          std::array<std::array<Pair, 2>, 32> b{};
          for (int lane = 0; lane < 32; ++lane)
            for (int r = 0; r < 2; ++r) b[lane][r] = ld32(vt, v_frag(n, kk, lane, r));
          mma(st[n], a, b);
        }
      }
      for (int n = 0; n < DV / 8; ++n)
        for (int lane = 0; lane < 32; ++lane)
          for (int e = 0; e < 4; ++e) {
            const int dk = m0 + acc_row(lane, e), dv = 8 * n + acc_col(lane, e);
            float want = 0;
            for (int j = 0; j < kC; ++j) want += Kw[j * D + dk] * V[j * DV + dv];
            ASSERT_EQ(st[n][lane][e], want) << "state (" << dk << ", " << dv << ")";
          }
    }
  }
}

TEST(ChunkedLinearAttentionFragments, D128Dv32) { replay_chunk<128, 32>(1); }
TEST(ChunkedLinearAttentionFragments, D128Dv64) { replay_chunk<128, 64>(2); }
TEST(ChunkedLinearAttentionFragments, D128Dv16) { replay_chunk<128, 16>(3); }
TEST(ChunkedLinearAttentionFragments, D64Dv32) { replay_chunk<64, 32>(4); }
TEST(ChunkedLinearAttentionFragments, D64Dv64) { replay_chunk<64, 64>(5); }

TEST(ChunkedLinearAttentionFragments, SharedArraysAreAlignedAndFit) {
  for (int D : {64, 128})
    for (int DV : {16, 32, 64}) {
      if (DV > D) continue;
      EXPECT_EQ((2 * smem_elems_q(D)) % 16, 0);  // Ks starts 16-byte aligned (uint4 stores)
      EXPECT_EQ((ldd(D) * 2) % 16, 0);           // every row of Qs and Ks too
      EXPECT_LE(smem_bytes(D, DV), 227 * 1024);
      EXPECT_LE(smem_bytes(D, DV, 2), 227 * 1024);
      EXPECT_EQ(smem_bytes(D, DV) % 16, 0);  // the prefetch variant's second Q, K buffer starts there
    }
  EXPECT_EQ(smem_bytes(128, 32), 66816);      // the figures expert.cu's variant table quotes:
  EXPECT_EQ(smem_bytes(128, 32, 2), 101632);  // 3 CTAs per SM, 2 with the prefetch variant
}

}  // namespace
