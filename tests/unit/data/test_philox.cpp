// Philox4x32-10 against the Random123 known answers; stream ids and keys.
#include <gtest/gtest.h>

#include <set>

#include "data/philox.h"

using namespace d2k::data;

TEST(Philox, KnownAnswersRandom123) {
  struct Kat {
    Philox4 ctr;
    PhiloxKey key;
    Philox4 out;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, {0, 0}, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {0xffffffff, 0xffffffff},
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {0xa4093822, 0x299f31d0},
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const auto& k : kats) {
    const Philox4 r = philox4x32_10(k.ctr, k.key);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(r.v[w], k.out.v[w]) << "word " << w;
  }
}

TEST(Philox, Fnv1aKnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Philox, StreamIdsDependOnNameAndPosition) {
  std::set<std::uint64_t> ids;
  for (const char* n : {"x", "residual", "weight", "build_keys", "probe_keys"})
    for (std::uint32_t pos = 0; pos < 4; ++pos) ids.insert(input_stream_id(n, pos));
  EXPECT_EQ(ids.size(), 20u);
  EXPECT_EQ(input_stream_id("x", 0), input_stream_id("x", 0));
}

TEST(Philox, KeysDependOnSeedAndStream) {
  std::set<std::uint64_t> keys;
  for (std::uint64_t seed = 0; seed < 16; ++seed)
    for (std::uint64_t stream = 0; stream < 16; ++stream) {
      const PhiloxKey k = stream_key(seed, stream);
      keys.insert(join64(k.k1, k.k0));
    }
  EXPECT_EQ(keys.size(), 256u);
}

TEST(Philox, BlocksDifferAcrossIndexAndSubStream) {
  const PhiloxKey k = stream_key(42, 7);
  std::set<std::uint64_t> words;
  for (std::uint64_t i = 0; i < 1000; ++i)
    for (std::uint32_t sub = 0; sub < 3; ++sub) {
      const Philox4 b = philox_block(k, i, sub);
      words.insert(join64(b.v[0], b.v[1]));
    }
  EXPECT_EQ(words.size(), 3000u);
  // The high index word reaches the counter too.
  const Philox4 a = philox_block(k, 5, 0), b = philox_block(k, 5 + (1ull << 32), 0);
  EXPECT_NE(join64(a.v[0], a.v[1]), join64(b.v[0], b.v[1]));
}

TEST(Philox, BoundedMapsOntoRange) {
  EXPECT_EQ(bounded64(0, 10), 0u);
  EXPECT_EQ(bounded64(~0ull, 10), 9u);
  EXPECT_EQ(bounded32(0xffffffffu, 50), 49u);
  EXPECT_EQ(mulhi64(1ull << 63, 4), 2u);
}
