// gemm_bias_gelu: the wave arithmetic of schedule.h that expert.cu's whole_waves variant hands to
// CUTLASS's persistent scheduler as its SM count: the fewest clusters that keep the rounds of the
// full machine, on the bench shapes and exhaustively on small ones; the rounds of the ping-pong
// variants' tiles.
#include <gtest/gtest.h>

#include <stdexcept>

#include "schedule.h"

namespace {

using gbg::persistent_rounds;
using gbg::whole_wave_clusters;

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
