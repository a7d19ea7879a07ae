// flash_attention_forward: the mma.sync kernel's index maps (dataset/flash_attention_forward/
// fa_layout.h, the code the kernel uses) replayed on the host against the PTX definitions of
// ldmatrix.x4 (.trans) and mma.sync.m16n8k16 fragment layouts: one 128-query x 64-key tile of
// swizzled shared memory, the kernel's loop order for S = Q K^T and O = P V, every accumulator
// element compared with the direct product. Values are multiples of 1/8 in [-1, 1], so every
// product and sum is exact in fp32 and the comparison is exact.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "fa_layout.h"

namespace {

using namespace fa_layout;

constexpr int kBM = 128, kBN = 64, kWarps = 8;

struct Pair {
  float lo = 0, hi = 0;  // a 32-bit register holding two bf16: lo is the lower column / k index
};
using Frag = std::array<std::array<Pair, 4>, 32>;  // [lane][register]

/// A swizzled [rows][128] tile as the kernel's load_tile writes it (chunk ch of row r at swz(r, ch)).
std::vector<float> to_smem(const std::vector<float>& dense, int rows) {
  std::vector<float> s(static_cast<size_t>(rows) * kD);
  for (int r = 0; r < rows; ++r)
    for (int ch = 0; ch < kD / 8; ++ch)
      for (int j = 0; j < 8; ++j) s[swz(r, ch) + j] = dense[r * kD + ch * 8 + j];
  return s;
}

/// ldmatrix.sync.aligned.m8n8.x4(.trans).b16: lanes 8i..8i+7 give the row addresses of matrix i;
/// without .trans thread t receives row t/4, elements 2(t%4) and 2(t%4)+1 of each matrix; with
/// .trans it receives column t/4 of rows 2(t%4) and 2(t%4)+1.
Frag ldmatrix_x4(const std::vector<float>& smem, const std::array<int, 32>& addr, bool trans) {
  Frag f;
  for (int t = 0; t < 32; ++t)
    for (int i = 0; i < 4; ++i) {
      if (!trans) {
        const int a = addr[8 * i + t / 4];
        f[t][i] = {smem[a + (t % 4) * 2], smem[a + (t % 4) * 2 + 1]};
      } else {
        f[t][i] = {smem[addr[8 * i + (t % 4) * 2] + t / 4], smem[addr[8 * i + (t % 4) * 2 + 1] + t / 4]};
      }
    }
  return f;
}

/// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 with g = lane/4, t = lane%4:
/// A a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B b0 (k 2t..2t+1, n g),
/// b1 (k 2t+8.., n g); C c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1).
void mma(std::array<std::array<float, 4>, 32>& c, const Frag& a, const Frag& b, int b0, int b1) {
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const auto& ar = a[lane];
    A[g][2 * t] = ar[0].lo, A[g][2 * t + 1] = ar[0].hi;
    A[g + 8][2 * t] = ar[1].lo, A[g + 8][2 * t + 1] = ar[1].hi;
    A[g][2 * t + 8] = ar[2].lo, A[g][2 * t + 9] = ar[2].hi;
    A[g + 8][2 * t + 8] = ar[3].lo, A[g + 8][2 * t + 9] = ar[3].hi;
    B[2 * t][g] = b[lane][b0].lo, B[2 * t + 1][g] = b[lane][b0].hi;
    B[2 * t + 8][g] = b[lane][b1].lo, B[2 * t + 9][g] = b[lane][b1].hi;
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < 4; ++e) {
      const int row = acc_row(lane, e), col = acc_col(lane, e);
      float sum = 0;
      for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      c[lane][e] += sum;
    }
}

std::vector<float> random_eighths(int n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng) / 8.f;
  return v;
}

TEST(FlashAttentionFragments, ScoresMatchQKTransposed) {
  std::mt19937 rng(7);
  const std::vector<float> q = random_eighths(kBM * kD, rng), k = random_eighths(kBN * kD, rng);
  const std::vector<float> sq = to_smem(q, kBM), sk = to_smem(k, kBN);
  for (int warp = 0; warp < kWarps; ++warp) {
    std::array<std::array<std::array<float, 4>, 32>, kBN / 8> s{};  // [n-block][lane][e]
    for (int kk = 0; kk < kD / 16; ++kk) {
      std::array<int, 32> qa;
      for (int lane = 0; lane < 32; ++lane) qa[lane] = swz(q_row(warp, lane), q_chunk(kk, lane));
      const Frag a = ldmatrix_x4(sq, qa, false);
      for (int np = 0; np < kBN / 16; ++np) {
        std::array<int, 32> ka;
        for (int lane = 0; lane < 32; ++lane) ka[lane] = swz(k_row(np, lane), k_chunk(kk, lane));
        const Frag b = ldmatrix_x4(sk, ka, false);
        mma(s[2 * np], a, b, 0, 1);
        mma(s[2 * np + 1], a, b, 2, 3);
      }
    }
    for (int nb = 0; nb < kBN / 8; ++nb)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) {
          const int row = warp * 16 + acc_row(lane, e), key = nb * 8 + acc_col(lane, e);
          float dot = 0;
          for (int x = 0; x < kD; ++x) dot += q[row * kD + x] * k[key * kD + x];
          ASSERT_EQ(s[nb][lane][e], dot) << "warp " << warp << " n-block " << nb << " lane " << lane << " e " << e;
        }
  }
}

TEST(FlashAttentionFragments, OutputMatchesPV) {
  std::mt19937 rng(11);
  const std::vector<float> p = random_eighths(kBM * kBN, rng), v = random_eighths(kBN * kD, rng);
  const std::vector<float> sv = to_smem(v, kBN);
  for (int warp = 0; warp < kWarps; ++warp) {
    // P in the score accumulator layout p[n-block][lane][e], as online_softmax leaves it
    std::array<std::array<std::array<float, 4>, 32>, kBN / 8> pacc;
    for (int nb = 0; nb < kBN / 8; ++nb)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e)
          pacc[nb][lane][e] = p[(warp * 16 + acc_row(lane, e)) * kBN + nb * 8 + acc_col(lane, e)];
    std::array<std::array<std::array<float, 4>, 32>, kD / 8> o{};
    for (int kk = 0; kk < kBN / 16; ++kk) {
      Frag a;  // accumulate_pv's packing of two n-blocks into A
      for (int lane = 0; lane < 32; ++lane) {
        const auto &x = pacc[2 * kk][lane], &y = pacc[2 * kk + 1][lane];
        a[lane] = {Pair{x[0], x[1]}, Pair{x[2], x[3]}, Pair{y[0], y[1]}, Pair{y[2], y[3]}};
      }
      for (int dp = 0; dp < kD / 16; ++dp) {
        std::array<int, 32> va;
        for (int lane = 0; lane < 32; ++lane) va[lane] = swz(v_row(kk, lane), v_chunk(dp, lane));
        const Frag b = ldmatrix_x4(sv, va, true);
        mma(o[2 * dp], a, b, 0, 1);
        mma(o[2 * dp + 1], a, b, 2, 3);
      }
    }
    for (int db = 0; db < kD / 8; ++db)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) {
          const int row = warp * 16 + acc_row(lane, e), col = db * 8 + acc_col(lane, e);
          float sum = 0;
          for (int key = 0; key < kBN; ++key) sum += p[row * kBN + key] * v[key * kD + col];
          ASSERT_EQ(o[db][lane][e], sum) << "warp " << warp << " d-block " << db << " lane " << lane << " e " << e;
        }
  }
}

// The swizzle is a bijection within each row and spreads the 8 rows an ldmatrix phase reads over
// 8 distinct 16-byte bank groups (no conflict): rows r..r+7 (r a multiple of 8) at a fixed chunk.
TEST(FlashAttentionFragments, SwizzleIsConflictFree) {
  for (int r0 = 0; r0 < kBM; r0 += 8)
    for (int ch = 0; ch < kD / 8; ++ch) {
      std::array<bool, 8> seen{};
      for (int r = r0; r < r0 + 8; ++r) {
        const int bank_group = (swz(r, ch) * 2 / 16) % 8;  // 16-byte group within a 128-byte line
        EXPECT_FALSE(seen[bank_group]) << "row " << r << " chunk " << ch;
        seen[bank_group] = true;
      }
    }
}

}  // namespace
