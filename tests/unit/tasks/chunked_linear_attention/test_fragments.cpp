// chunked_linear_attention: the expert's shared-memory layout and mma.sync fragment maps
// (dataset/chunked_linear_attention/cla_layout.h, the code the kernel uses) replayed on the host
// against the PTX definition of the mma.sync.m16n8k16 fragment layouts: one chunk of 64 steps staged
// as the kernel stages it, every warp's Q K^T (keys up to its last row), the decayed causal mask
// (decay 1 here), the accumulator-to-A-operand repacking of P, O = Q S + P V, the state update K~^T V
// into the state fragments, and the publication of bf16(S) read back as the B operand of Q S. q and
// k are in {-1, 0, 1} (scores are integers of at most 128, exact in bf16), v, K~ and S are
// multiples of 1/8 in [-1, 1]: every product and sum is exact in fp32, so the comparison is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
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

// ---- The two staging orders of expert.cu: stage_chunk's (step, column vector) and stage_pairs'
// (step pair, column vector) ----

/// Shared-memory wavefronts of one warp-wide store: `bytes` per lane (2, 4 or 16) at the element
/// offsets `at` (bf16 elements from a 16-byte aligned base; lanes < 0 inactive). A 16-byte store is
/// served a quarter warp (8 lanes) at a time; within a group, lanes writing distinct 4-byte words of
/// one bank serialise, lanes writing the same word do not.
int wavefronts(const std::array<int, 32>& at, int bytes) {
  const int group = bytes == 16 ? 8 : 32;
  int total = 0;
  for (int g0 = 0; g0 < 32; g0 += group) {
    std::array<std::vector<int>, 32> words;  // per bank: the distinct words touched
    for (int lane = g0; lane < g0 + group; ++lane) {
      if (at[lane] < 0) continue;
      for (int b = 0; b < bytes; b += 4) {
        const int word = (2 * at[lane] + b) / 4;
        auto& w = words[word % 32];
        if (std::find(w.begin(), w.end(), word) == w.end()) w.push_back(word);
      }
    }
    int most = 0;
    for (const auto& w : words) most = std::max<int>(most, static_cast<int>(w.size()));
    total += most;
  }
  return total;
}

struct StagingCost {
  int qk = 0, kwt = 0, vt = 0;  // wavefronts per chunk and CTA (4 warps)
};

/// Replays one chunk's staging stores by the 128 threads in either order: every element of Qs,
/// Ks, KwT and VT written exactly once (counted in `hits`), and the wavefronts of each store.
template <int D, int DV>
StagingCost replay_staging(bool pairs) {
  constexpr int kThreads = 32 * kWarps;
  std::vector<int> qs(smem_elems_q(D), 0), ks(qs.size(), 0), kwt(smem_elems_kw(D), 0), vt(smem_elems_v(DV), 0);
  StagingCost cost;
  // Per loop pass and warp: the lanes' items; one store instruction per written slot.
  const int items = pairs ? (kC / 2) * (D / 8) : kC * (D / 8);
  for (int base = 0; base < items; base += kThreads)
    for (int w = 0; w < kWarps; ++w) {
      std::array<int, 32> step{}, col{};
      for (int lane = 0; lane < 32; ++lane) {
        const int e = base + 32 * w + lane;
        step[lane] = e < items ? (pairs ? 2 * pair_of(e) : e / (D / 8)) : -1;
        col[lane] = pairs ? pair_col(e) : 8 * (e % (D / 8));
      }
      for (int r = 0; r < (pairs ? 2 : 1); ++r) {  // Qs, Ks: one 16-byte row store per step
        std::array<int, 32> at{};
        for (int lane = 0; lane < 32; ++lane) at[lane] = step[lane] < 0 ? -1 : qk_at(D, step[lane] + r, col[lane]);
        cost.qk += 2 * wavefronts(at, 16);
        for (int lane = 0; lane < 32; ++lane)
          if (at[lane] >= 0)
            for (int x = 0; x < 8; ++x) ++qs[at[lane] + x], ++ks[at[lane] + x];
      }
      for (int x = 0; x < 8; ++x) {  // KwT: one 2-byte (stage_chunk) or 4-byte (step pair) store per column
        std::array<int, 32> at{};
        for (int lane = 0; lane < 32; ++lane) at[lane] = step[lane] < 0 ? -1 : kwt_at(col[lane] + x, step[lane]);
        cost.kwt += wavefronts(at, pairs ? 4 : 2);
        for (int lane = 0; lane < 32; ++lane)
          if (at[lane] >= 0) {
            if (pairs) {
              EXPECT_EQ(at[lane] % 2, 0) << "a 32-bit KwT store off its word";
            }
            for (int y = 0; y < (pairs ? 2 : 1); ++y) ++kwt[at[lane] + y];
          }
      }
    }
  const int items_v = pairs ? (kC / 2) * (DV / 8) : kC * (DV / 8);
  for (int base = 0; base < items_v; base += kThreads)
    for (int w = 0; w < kWarps; ++w)
      for (int x = 0; x < 8; ++x) {
        std::array<int, 32> at{};
        for (int lane = 0; lane < 32; ++lane) {
          const int e = base + 32 * w + lane;
          const int st = pairs ? 2 * pair_of(e) : e / (DV / 8), c = pairs ? pair_col(e) : 8 * (e % (DV / 8));
          at[lane] = e < items_v ? vt_at(c + x, st) : -1;
        }
        cost.vt += wavefronts(at, pairs ? 4 : 2);
        for (int lane = 0; lane < 32; ++lane)
          if (at[lane] >= 0)
            for (int y = 0; y < (pairs ? 2 : 1); ++y) ++vt[at[lane] + y];
      }
  // Every element of each array's logical extent written once, the padding never.
  for (int step = 0; step < kC; ++step) {
    for (int c = 0; c < D; ++c) {
      EXPECT_EQ(qs[qk_at(D, step, c)], 1);
      EXPECT_EQ(ks[qk_at(D, step, c)], 1);
      EXPECT_EQ(kwt[kwt_at(c, step)], 1);
      qs[qk_at(D, step, c)] = ks[qk_at(D, step, c)] = kwt[kwt_at(c, step)] = 0;
    }
    for (int c = 0; c < DV; ++c) {
      EXPECT_EQ(vt[vt_at(c, step)], 1);
      vt[vt_at(c, step)] = 0;
    }
  }
  for (const auto* arr : {&qs, &ks, &kwt, &vt})
    for (int x : *arr) EXPECT_EQ(x, 0) << "a store into the padding";
  return cost;
}

TEST(ChunkedLinearAttentionFragments, StagingOrdersCoverEachElementOnce) {
  replay_staging<128, 32>(false), replay_staging<128, 32>(true);
  replay_staging<128, 64>(true), replay_staging<128, 16>(true);
  replay_staging<64, 32>(false), replay_staging<64, 32>(true), replay_staging<64, 64>(true);
}

// The figures stage_pairs' comment quotes: stage_chunk's transposed KwT stores put a step's 16
// column vectors (D = 128) in one bank; the step-pair order writes 32 consecutive words per store.
TEST(ChunkedLinearAttentionFragments, StagingBanks) {
  const StagingCost row = replay_staging<128, 32>(false), pair = replay_staging<128, 32>(true);
  std::printf("D 128 DV 32 wavefronts per chunk: stage_chunk Qs+Ks %d KwT %d VT %d | stage_pairs Qs+Ks %d KwT %d VT %d\n",
              row.qk, row.kwt, row.vt, pair.qk, pair.kwt, pair.vt);
  EXPECT_EQ(row.kwt, 4096);  // 8 passes x 4 warps x 8 stores x 16-way
  EXPECT_EQ(pair.kwt, 128);  // 4 passes x 4 warps x 8 stores x 1
  EXPECT_EQ(row.qk + row.kwt + row.vt, 4608);
  EXPECT_EQ(pair.qk + pair.kwt + pair.vt, 672);
  const StagingCost row64 = replay_staging<64, 32>(false), pair64 = replay_staging<64, 32>(true);
  std::printf("D 64 DV 32 wavefronts per chunk: stage_chunk Qs+Ks %d KwT %d VT %d | stage_pairs Qs+Ks %d KwT %d VT %d\n",
              row64.qk, row64.kwt, row64.vt, pair64.qk, pair64.kwt, pair64.vt);
  EXPECT_EQ(row64.qk + row64.kwt + row64.vt, 1408);
  EXPECT_EQ(pair64.qk + pair64.kwt + pair64.vt, 352);
}

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
  EXPECT_LE(smem_bytes_local(128, 32), 48 * 1024);  // the chunk-parallel pass 1: no opt-in attribute
  EXPECT_LE(smem_bytes_local(128, 64), 48 * 1024);
  EXPECT_EQ(smem_bytes(128, 32), 66816);      // the figures expert.cu's variant table quotes:
  EXPECT_EQ(smem_bytes(128, 32, 2), 101632);  // 3 CTAs per SM, 2 with the prefetch variant
}

}  // namespace
