// gemm_bias_gelu: the wave arithmetic of schedule.h that expert.cu's whole_waves variant hands to
// CUTLASS's persistent scheduler as its SM count: the fewest clusters that keep the rounds of the
// full machine, on the bench shapes and exhaustively on small ones; the rounds of the ping-pong
// variants' tiles; the t192 variant's swizzle cap against CUTLASS's swizzle padding.
#include <gtest/gtest.h>

#include <stdexcept>

#include "schedule.h"

namespace {

using gbg::fewest_rounds_swizzle;
using gbg::persistent_rounds;
using gbg::swizzled_units;
using gbg::whole_wave_clusters;

// CUTLASS's PersistentTileSchedulerSm90Params::get_log_swizzle_size for a grid of m x n CTA tiles
// (the rule restated for the test: expert.cu passes CUTLASS's own function).
int cutlass_log_swizzle(int m, int n, int cap) {
  const int min_dim = m < n ? m : n;
  if (cap >= 8 && min_dim >= 6) return 3;
  if (cap >= 4 && min_dim >= 3) return 2;
  if (cap >= 2 && min_dim >= 2) return 1;
  return 0;
}

// 8192^3 with 128 x 256 tiles in 2 x 1 clusters: 64 x 32 CTA tiles = 1024 cluster tiles over 66
// clusters (132 SMs) is 15.5 rounds, i.e. 16; 64 clusters (128 CTAs) run the same 16, whole.
TEST(GemmBiasGeluSchedule, SquareBenchShapeDropsToWholeWaves) {
  EXPECT_EQ(persistent_rounds(1024, 66), 16);
  EXPECT_EQ(whole_wave_clusters(1024, 66), 64);
  EXPECT_EQ(persistent_rounds(1024, 64), 16);
  EXPECT_EQ(1024 % 64, 0);
}

// 16384 x 14336 x 4096: 128 x 56 CTA tiles = 3584 cluster tiles, 54.3 rounds on 66 clusters;
// 65 clusters would need 56 rounds, so every cluster stays.
TEST(GemmBiasGeluSchedule, MlpBenchShapeKeepsEveryCluster) {
  EXPECT_EQ(persistent_rounds(3584, 66), 55);
  EXPECT_EQ(persistent_rounds(3584, 65), 56);
  EXPECT_EQ(whole_wave_clusters(3584, 66), 66);
}

// The ping-pong variants' 128 x 128 tiles (expert.cu): twice the tiles, each one main loop of a
// persistent CTA. 8192^3 is 64 x 64 tiles; 2048 units in 2 x 1 clusters or 1024 in 2 x 2 take 32
// rounds for 31.03 tiles per CTA, the same tail as the cooperative kernel's 16 for 15.52.
// 16384 x 14336 x 4096 is 128 x 112 tiles: 109 rounds on 66 clusters of 2 or 33 of 4, 112 on 32
// clusters of 4; CUTLASS's GPC estimate (29 clusters of 4 on 132 SMs) would take 36 and 124.
TEST(GemmBiasGeluSchedule, PingpongTileRounds) {
  EXPECT_EQ(persistent_rounds(2048, 66), 32);
  EXPECT_EQ(persistent_rounds(1024, 33), 32);
  EXPECT_EQ(persistent_rounds(1024, 32), 32);
  EXPECT_EQ(persistent_rounds(1024, 29), 36);
  EXPECT_EQ(persistent_rounds(7168, 66), 109);
  EXPECT_EQ(persistent_rounds(3584, 33), 109);
  EXPECT_EQ(persistent_rounds(3584, 32), 112);
  EXPECT_EQ(persistent_rounds(3584, 29), 124);
}

// The scheduler pads the CTA tile grid to whole swizzle groups of clusters in both dimensions.
TEST(GemmBiasGeluSchedule, SwizzlePadding) {
  EXPECT_EQ(swizzled_units(64, 32, 2, 1, 3), 1024);  // the default tile at 8192^3: no padding
  EXPECT_EQ(swizzled_units(128, 56, 2, 1, 3), 3584);
  EXPECT_EQ(swizzled_units(64, 43, 2, 1, 3), 64 * 48 / 2);  // 128 x 192 at 8192^3
  EXPECT_EQ(swizzled_units(64, 43, 2, 1, 2), 64 * 44 / 2);
  EXPECT_EQ(swizzled_units(64, 43, 2, 1, 1), 64 * 44 / 2);
  EXPECT_EQ(swizzled_units(64, 43, 2, 1, 0), 64 * 43 / 2);
  EXPECT_EQ(swizzled_units(3, 1, 2, 1, 0), 2);  // a half-empty cluster is a whole unit
  EXPECT_EQ(swizzled_units(0, 5, 2, 1, 3), 0);
  EXPECT_THROW(swizzled_units(4, 4, 0, 1, 0), std::invalid_argument);
  EXPECT_THROW(swizzled_units(4, 4, 2, 1, -1), std::invalid_argument);
}

// The t192 variant (expert.cu): 128 x 192 tiles in 2 x 1 clusters on 66 clusters, a smaller swizzle
// cap only for more than 2% fewer rounds.
TEST(GemmBiasGeluSchedule, T192SwizzleCaps) {
  auto pick = [](int64_t m, int64_t n, int cap) {
    return fewest_rounds_swizzle(m, n, 2, 1, cap, 66, 0.02,
                                 [&](int c) { return cutlass_log_swizzle(int(m), int(n), c); });
  };
  // 8192^3: 64 x 43 tiles. Caps 8 / 4 / 2 / 1 pad to 48 / 44 / 44 / 43 columns: 24 / 22 / 22 / 21
  // rounds; 21 against 22 saves 4.5%, so no swizzle.
  EXPECT_EQ(persistent_rounds(swizzled_units(64, 43, 2, 1, 3), 66), 24);
  EXPECT_EQ(persistent_rounds(swizzled_units(64, 43, 2, 1, 2), 66), 22);
  EXPECT_EQ(persistent_rounds(swizzled_units(64, 43, 2, 1, 0), 66), 21);
  EXPECT_EQ(pick(64, 43, 8), 1);
  // 16384 x 14336 x 4096: 128 x 75 tiles pad to 80 / 76 / 76 / 75 columns: 78 / 74 / 74 / 73
  // rounds; 73 against 74 saves 1.35%, so cap 4.
  EXPECT_EQ(persistent_rounds(swizzled_units(128, 75, 2, 1, 3), 66), 78);
  EXPECT_EQ(persistent_rounds(swizzled_units(128, 75, 2, 1, 2), 66), 74);
  EXPECT_EQ(persistent_rounds(swizzled_units(128, 75, 2, 1, 0), 66), 73);
  EXPECT_EQ(pick(128, 75, 8), 4);
  // Grids that never pad keep the largest cap (the default tile's bench shapes).
  EXPECT_EQ(pick(64, 32, 8), 8);
  EXPECT_EQ(pick(128, 56, 8), 8);
  // Small grids (the check workloads): swizzle 1 is all CUTLASS allows, any cap gives the same.
  EXPECT_EQ(pick(2, 2, 8), 8);
  EXPECT_EQ(pick(3, 3, 8), 8);
  EXPECT_THROW(fewest_rounds_swizzle(4, 4, 2, 1, 0, 66, 0.02, [](int) { return 0; }), std::invalid_argument);
}

// Whatever the grid, the cap chosen never needs more rounds than the largest cap.
TEST(GemmBiasGeluSchedule, SwizzleCapNeverAddsRounds) {
  for (int m = 1; m <= 80; ++m) {
    for (int n = 1; n <= 80; ++n) {
      const auto log_of = [&](int c) { return cutlass_log_swizzle(m, n, c); };
      const int cap = fewest_rounds_swizzle(m, n, 2, 1, 8, 66, 0.02, log_of);
      ASSERT_LE(persistent_rounds(swizzled_units(m, n, 2, 1, log_of(cap)), 66),
                persistent_rounds(swizzled_units(m, n, 2, 1, log_of(8)), 66))
          << m << " x " << n << " chose " << cap;
    }
  }
}

TEST(GemmBiasGeluSchedule, FewestClustersWithTheSameRounds) {
  for (int max_clusters = 1; max_clusters <= 80; ++max_clusters) {
    for (int64_t units = 1; units <= 3000; ++units) {
      const int c = whole_wave_clusters(units, max_clusters);
      ASSERT_GE(c, 1);
      ASSERT_LE(c, max_clusters) << "units " << units;
      ASSERT_EQ(persistent_rounds(units, c), persistent_rounds(units, max_clusters))
          << "units " << units << " max " << max_clusters << " chose " << c;
      if (c > 1) {
        ASSERT_GT(persistent_rounds(units, c - 1), persistent_rounds(units, max_clusters))
            << "units " << units << " max " << max_clusters << ": " << c - 1 << " clusters suffice";
      }
    }
  }
}

TEST(GemmBiasGeluSchedule, FewerUnitsThanClusters) {
  EXPECT_EQ(whole_wave_clusters(0, 66), 1);
  EXPECT_EQ(whole_wave_clusters(7, 66), 7);
}

TEST(GemmBiasGeluSchedule, BadArgumentsAreErrors) {
  EXPECT_THROW(whole_wave_clusters(10, 0), std::invalid_argument);
  EXPECT_THROW(persistent_rounds(10, 0), std::invalid_argument);
  EXPECT_THROW(persistent_rounds(-1, 4), std::invalid_argument);
}

}  // namespace
