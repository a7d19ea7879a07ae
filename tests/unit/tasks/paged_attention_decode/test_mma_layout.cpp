// paged_attention_decode: the fragment layout of the expert's tensor-core form (the default and
// mma_prefetch), emulated lane by lane. Every lane of a warp gathers its chunks of one page as
// mma_layout.h says (the same functions expert.cu calls), the fragments it builds are placed into
// matrices by the PTX ISA's m16n8k16 layouts (A row-major 16 x 16, B column-major 16 x 8, C 16 x 8:
// groupID = lane / 4, threadID_in_group = lane % 4), multiplied, and read back through the C layout;
// the scores and the weighted sums must come out where mma_layout.h says, equal to a plain
// computation on the page (bf16 inputs, so the products are exact in double).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "mma_layout.h"

namespace {

using namespace paged_mma;
constexpr int kD = 128, kPage = 16, kHeads = 4, kLanes = 32;

struct U4 {
  std::uint32_t x, y, z, w;
};
using Frag = std::array<std::uint32_t, 4>;  // a0..a3 (A) or b0, b1 (B) or unused

double bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint16_t lo16(std::uint32_t w) { return static_cast<std::uint16_t>(w & 0xFFFFu); }
std::uint16_t hi16(std::uint32_t w) { return static_cast<std::uint16_t>(w >> 16); }

/// PTX m16n8k16 .bf16: D (16 x 8) = A (16 x 16) B (16 x 8) + C, from the 32 lanes' registers.
using Acc = std::array<std::array<double, 4>, kLanes>;  // c0..c3 of every lane
Acc mma(const std::array<Frag, kLanes>& a, const std::array<Frag, kLanes>& b, const Acc& c) {
  double A[16][16] = {}, B[16][8] = {}, C[16][8] = {};
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
    for (int i = 0; i < 4; ++i) {
      A[rows[i]][cols[i]] = bf16(lo16(a[lane][i]));
      A[rows[i]][cols[i] + 1] = bf16(hi16(a[lane][i]));
    }
    for (int i = 0; i < 2; ++i) {
      B[2 * t + 8 * i][g] = bf16(lo16(b[lane][i]));
      B[2 * t + 8 * i + 1][g] = bf16(hi16(b[lane][i]));
    }
    C[g][2 * t] = c[lane][0], C[g][2 * t + 1] = c[lane][1], C[g + 8][2 * t] = c[lane][2],
             C[g + 8][2 * t + 1] = c[lane][3];
  }
  Acc d{};
  for (int lane = 0; lane < kLanes; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; ++i) {
      double s = C[rows[i]][cols[i]];
      for (int k = 0; k < 16; ++k) s += A[rows[i]][k] * B[k][cols[i]];
      d[lane][i] = s;
    }
  }
  return d;
}

std::uint32_t pack(std::uint16_t lo, std::uint16_t hi) { return lo | static_cast<std::uint32_t>(hi) << 16; }

/// A chunk (8 bf16 from element 8 * chunk) of a row, as the 16-byte load leaves it.
U4 chunk_of(const std::uint16_t* row, int chunk) {
  const std::uint16_t* e = row + 8 * chunk;
  return {pack(e[0], e[1]), pack(e[2], e[3]), pack(e[4], e[5]), pack(e[6], e[7])};
}

struct Page {
  std::uint16_t q[kHeads][kD], k[kPage][kD], v[kPage][kD];
  std::uint16_t p[kHeads][kPage];  // the weights, bf16 (the high part of the kernel's pair)
};

Page random_page(unsigned seed) {
  std::mt19937 rng(seed);
  // bf16 with 8-bit mantissas of both signs and a spread of exponents: products are exact.
  auto draw = [&] {
    const std::uint16_t sign = (rng() & 1u) << 15, exp = static_cast<std::uint16_t>(120 + rng() % 12);
    return static_cast<std::uint16_t>(sign | exp << 7 | (rng() & 0x7Fu));
  };
  Page pg{};
  for (auto& row : pg.q)
    for (auto& x : row) x = draw();
  for (int t = 0; t < kPage; ++t)
    for (int d = 0; d < kD; ++d) pg.k[t][d] = draw(), pg.v[t][d] = draw();
  for (auto& row : pg.p)
    for (auto& x : row) x = static_cast<std::uint16_t>(draw() & 0x7FFFu);  // weights are >= 0
  return pg;
}

/// S^T = Q K^T through the lanes: scores[lane][nt][c] (rows 4-7 of q zero, as in the kernel).
void scores_by_lanes(const Page& pg, int rem, double (&sc)[kLanes][2][2]) {
  const U4 zero{0, 0, 0, 0};
  std::array<std::array<U4, 4>, kLanes> qa;
  std::array<std::array<std::array<U4, 4>, 2>, kLanes> kf;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int i = 0; i < 4; ++i) {
      qa[lane][i] = lane / 4 < kHeads ? chunk_of(pg.q[lane / 4], k_chunk(lane, i)) : zero;
      for (int nt = 0; nt < 2; ++nt)
        kf[lane][nt][i] = k_token(lane, nt) < rem ? chunk_of(pg.k[k_token(lane, nt)], k_chunk(lane, i)) : zero;
    }
  for (int nt = 0; nt < 2; ++nt) {
    Acc s{};
    for (int i = 0; i < 4; ++i)
      for (int hf = 0; hf < 2; ++hf) {
        std::array<Frag, kLanes> a{}, b{};
        for (int lane = 0; lane < kLanes; ++lane) {
          a[lane] = {word(qa[lane][i], 2 * hf), 0u, word(qa[lane][i], 2 * hf + 1), 0u};
          b[lane] = {word(kf[lane][nt][i], 2 * hf), word(kf[lane][nt][i], 2 * hf + 1), 0u, 0u};
        }
        s = mma(a, b, s);
      }
    for (int lane = 0; lane < kLanes; ++lane) sc[lane][nt][0] = s[lane][0], sc[lane][nt][1] = s[lane][1];
  }
}

}  // namespace

TEST(PagedAttentionDecodeMmaLayout, ScoresLandOnTheirHeadAndToken) {
  for (int rem : {16, 11, 1}) {
    const Page pg = random_page(7u + static_cast<unsigned>(rem));
    double sc[kLanes][2][2];
    scores_by_lanes(pg, rem, sc);
    int checked = 0;
    for (int lane = 0; lane < kLanes; ++lane) {
      const int head = lane / 4;
      if (head >= kHeads) continue;
      for (int nt = 0; nt < 2; ++nt)
        for (int c = 0; c < 2; ++c) {
          const int t = s_token(lane, nt, c);
          if (t >= rem) continue;  // masked by the kernel
          double want = 0;
          for (int d = 0; d < kD; ++d) want += bf16(pg.q[head][d]) * bf16(pg.k[t][d]);
          EXPECT_DOUBLE_EQ(sc[lane][nt][c], want) << "lane " << lane << " head " << head << " token " << t;
          ++checked;
        }
    }
    EXPECT_EQ(checked, kHeads * rem);  // every (head, token) of the page exactly once
  }
}

TEST(PagedAttentionDecodeMmaLayout, WeightedRowsLandOnTheirHeadAndDimension) {
  for (int rem : {16, 9, 1}) {
    const Page pg = random_page(100u + static_cast<unsigned>(rem));
    const U4 zero{0, 0, 0, 0};
    bool seen[kHeads][kD] = {};
    for (int e = 0; e < 8; ++e) {
      std::array<Frag, kLanes> a{}, b{};
      for (int lane = 0; lane < kLanes; ++lane) {
        U4 v[4][2];
        for (int u = 0; u < 4; ++u)
          for (int h = 0; h < 2; ++h)
            v[u][h] = v_token(lane, u) < rem ? chunk_of(pg.v[v_token(lane, u)], v_chunk(lane, h)) : zero;
        std::uint32_t frag[4];
        v_frag(v, e, frag);
        a[lane] = {frag[0], frag[1], frag[2], frag[3]};
        const int head = lane / 4;
        auto p = [&](int nt, int c) -> std::uint16_t {
          const int t = s_token(lane, nt, c);
          return head < kHeads && t < rem ? pg.p[head][t] : 0;
        };
        b[lane] = {pack(p(0, 0), p(0, 1)), pack(p(1, 0), p(1, 1)), 0u, 0u};
      }
      const Acc o = mma(a, b, Acc{});
      for (int lane = 0; lane < kLanes; ++lane)
        for (int c = 0; c < 4; ++c) {
          const int head = o_head(lane, c), d = o_dim(lane, c, e);
          if (head >= kHeads) continue;  // lanes j >= 2: the zero columns
          double want = 0;
          for (int t = 0; t < rem; ++t) want += bf16(pg.p[head][t]) * bf16(pg.v[t][d]);
          EXPECT_DOUBLE_EQ(o[lane][c], want) << "lane " << lane << " head " << head << " d " << d;
          EXPECT_FALSE(seen[head][d]) << "head " << head << " d " << d << " twice";
          seen[head][d] = true;
        }
    }
    for (int h = 0; h < kHeads; ++h)
      for (int d = 0; d < kD; ++d) EXPECT_TRUE(seen[h][d]) << "head " << h << " d " << d << " never written";
  }
}

TEST(PagedAttentionDecodeMmaLayout, LoadsOfAWarpCoverThePageOnce) {
  // K: every (token, chunk) of the page's row once across the warp; V: the same.
  int k_hits[kPage][16] = {}, v_hits[kPage][16] = {};
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int nt = 0; nt < 2; ++nt)
      for (int i = 0; i < 4; ++i) ++k_hits[k_token(lane, nt)][k_chunk(lane, i)];
    for (int u = 0; u < 4; ++u)
      for (int h = 0; h < 2; ++h) ++v_hits[v_token(lane, u)][v_chunk(lane, h)];
  }
  for (int t = 0; t < kPage; ++t)
    for (int c = 0; c < 16; ++c) {
      EXPECT_EQ(k_hits[t][c], 1) << "K token " << t << " chunk " << c;
      EXPECT_EQ(v_hits[t][c], 1) << "V token " << t << " chunk " << c;
    }
}
