// radix_sort_pairs: the exact rule (keys and values bit for bit against the stable-sort golden)
// checked both ways on the public check workloads and on hidden draws. Host emulations are judged
// by the engine's judge against the golden (the task's reference.so, inputs from the task's
// generators):
//   - the expert's arithmetic (dataset/radix_sort_pairs/rs_core.h, the geometry and look-back words
//     the kernels use: the digit histogram, the bucket starts, per pass and tile the
//     (warp, item, lane) order, the warp multisplit ranks, each warp's first rank, the tile's digit
//     starts, the look-back over AGGREGATE and INCLUSIVE words with some predecessors still at
//     AGGREGATE, the pads of the last tile, the staged scatter, the ping-pong buffers) passes, and
//     so does the naive's (tile counts digit-major, their exclusive sum, ballot ranks per round),
//     with the default 16-word look-back window (rs::lookback_round, some words still unpublished
//     on a first poll), with 8 words, and with the one-word walk of variant prev24; the file is
//     also built with RS_ITEMS=32 (32 pairs per thread: a larger tile's geometry);
//   - an unstable warp multisplit (peers ranked from the highest lane), tiles of one digit placed
//     in reverse tile order (arrival-order slots), values left in input order, a sort of the low
//     24 bits only, and a windowed look-back that steps over an unpublished word all fail, each on
//     a public check workload and on every workload where its outputs differ from the golden's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "rs_core.h"
#include "unit/tasks/task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

enum class Variant {
  kExpert,           ///< expert.cu's onesweep arithmetic with the one-word look-back (variant prev24)
  kExpertWindow8,    ///< the same with the windowed look-back, 8 words per round
  kExpertWindow16,   ///< 16 words per round: expert.cu's default (rs_core.h kLookbackWindow)
  kNaive,            ///< naive.cu's count / scan / scatter arithmetic
  kUnstableRank,     ///< warp multisplit ranks counted from the highest peer lane
  kTilesReversed,    ///< a digit's tiles placed in reverse tile order (slots claimed in arrival order)
  kValuesInPlace,    ///< keys sorted, values left in input order
  kLow24Bits,        ///< three passes: the top digit never sorted
  kWindowSkipsGaps,  ///< a windowed look-back that steps over an unpublished word instead of polling it
};

/// Words per look-back round of a variant (1: the one-word walk of variant prev24).
static_assert(rs::kLookbackWindow == 16, "kExpertWindow16 emulates expert.cu's default window");
int lookback_window_of(Variant v) {
  switch (v) {
    case Variant::kExpertWindow8:
    case Variant::kWindowSkipsGaps:
      return 8;
    case Variant::kExpertWindow16:
      return 16;
    default:
      return 1;
  }
}

/// Windowed-look-back polls that found a word of the window still unpublished (asserted exercised).
int64_t g_unpublished_polls = 0;

/// Whether the emulation shows the word of `pred` as unpublished (flag 0) to the look-back of tile
/// `tile` on round `round`: on the first round, one predecessor inside the window (not the nearest,
/// so the round consumes some words before it) of every third tile, as a tile still ranking leaves it.
bool shown_unpublished(int64_t tile, int64_t pred, int round) {
  return round == 0 && tile % 3 == 0 && pred == tile - 3;
}

/// expert.cu's windowed look-back (look_back with kLookbackWindow = W) for digit d over the
/// published words: rounds of W words of consecutive predecessors, nearest first, clamped to tile
/// 0, consumed by rs::lookback_round; some words are shown unpublished on the first round, so the
/// next round polls them again. kWindowSkipsGaps steps over such a word instead (the defect a
/// window invites): its tile's count is missed.
template <int W>
uint32_t windowed_lookback(Variant v, const std::vector<uint32_t>& status, int64_t tile, int d) {
  uint32_t exclusive = 0;
  int round = 0;
  for (int64_t j = tile - 1;; ++round) {
    uint32_t w[W];
    for (int u = 0; u < W; ++u) {
      const int64_t pred = std::max<int64_t>(j - u, 0);
      w[u] = shown_unpublished(tile, pred, round) ? 0u : status[pred * rs::kDigits + d];
      g_unpublished_polls += w[u] == 0 && d == 0;
    }
    if (v == Variant::kWindowSkipsGaps)
      for (int u = 0; u < W; ++u)
        if (w[u] == 0) w[u] = rs::kFlagAggregate;  // an unpublished word taken as a count of 0
    int taken = 0;
    if (rs::lookback_round(w, exclusive, taken)) return exclusive;
    if (round > tile) {  // every round but a re-poll consumes a word: tile + 1 rounds at most
      ADD_FAILURE() << "windowed look-back of tile " << tile << " did not end";
      return exclusive;
    }
    j -= taken;
  }
}

/// AGGREGATE words the emulated look-backs summed before meeting an INCLUSIVE one (the path a tile
/// in flight leaves; asserted to be exercised).
int64_t g_aggregates_summed = 0;

struct Pairs {
  int64_t n;
  std::vector<uint32_t> keys, values;
};

Pairs pairs_of(const Case& c) {
  const int64_t n = c.axis("N");
  const uint32_t* k = c.in("keys").as<uint32_t>();
  const uint32_t* v = c.in("values").as<uint32_t>();
  return {n, std::vector<uint32_t>(k, k + n), std::vector<uint32_t>(v, v + n)};
}

/// rs_histogram + rs_digit_offsets: each pass's bucket starts.
std::vector<uint32_t> bucket_starts(const std::vector<uint32_t>& keys) {
  std::vector<uint32_t> counts(rs::kPasses * rs::kDigits, 0), starts(counts.size(), 0);
  for (uint32_t k : keys)
    for (int p = 0; p < rs::kPasses; ++p) ++counts[p * rs::kDigits + rs::digit(k, p)];
  for (int p = 0; p < rs::kPasses; ++p) {
    uint32_t acc = 0;
    for (int d = 0; d < rs::kDigits; ++d) {
      starts[p * rs::kDigits + d] = acc;
      acc += counts[p * rs::kDigits + d];
    }
  }
  return starts;
}

/// One rs_onesweep pass over all tiles: src -> dst. The look-back runs in tile order, but a tile's
/// upgrade of its words to INCLUSIVE is seen only two tiles later, so every look-back past tile 2
/// sums AGGREGATE words before it meets an INCLUSIVE one, as tiles still in flight leave them.
void onesweep_pass(Variant v, int pass, const uint32_t* starts, const Pairs& src, Pairs& dst) {
  const int64_t n = src.n, tiles = rs::num_tiles(n);
  std::vector<uint32_t> status(static_cast<size_t>(tiles * rs::kDigits), 0);
  std::deque<std::pair<int64_t, std::vector<uint32_t>>> delayed;  // (tile, its INCLUSIVE words)
  std::vector<uint32_t> stage_k(rs::kTile), stage_v(rs::kTile);
  for (int64_t tile = 0; tile < tiles; ++tile) {
    const int64_t base = tile * rs::kTile;
    const int valid = static_cast<int>(std::min<int64_t>(rs::kTile, n - base));
    // b, c: keys of (warp, item, lane); per-warp ranks in that order.
    std::vector<uint32_t> key(rs::kTile), val(rs::kTile), rank(rs::kTile);
    std::vector<uint32_t> hist(rs::kWarps * rs::kDigits, 0);
    auto slot = [](int w, int i, int l) { return (w * rs::kItems + i) * 32 + l; };
    for (int w = 0; w < rs::kWarps; ++w)
      for (int i = 0; i < rs::kItems; ++i) {
        for (int l = 0; l < 32; ++l) {
          const int64_t idx = rs::item_index(base, w, i, l);
          key[slot(w, i, l)] = idx < n ? src.keys[idx] : rs::kPadKey;
          val[slot(w, i, l)] = idx < n ? src.values[idx] : 0u;
        }
        for (int l = 0; l < 32; ++l) {  // __match_any_sync peers and their lower / higher lanes
          const unsigned d = rs::digit(key[slot(w, i, l)], pass);
          int lower = 0, all = 0;
          for (int m = 0; m < 32; ++m)
            if (rs::digit(key[slot(w, i, m)], pass) == d) {
              ++all;
              lower += m < l;
            }
          const int before = v == Variant::kUnstableRank ? all - 1 - lower : lower;
          rank[slot(w, i, l)] = hist[w * rs::kDigits + d] + before;
        }
        for (int l = 0; l < 32; ++l) {  // the lowest peer's update, after every lane has read
          const unsigned d = rs::digit(key[slot(w, i, l)], pass);
          bool lowest = true;
          for (int m = 0; m < l; ++m) lowest = lowest && rs::digit(key[slot(w, i, m)], pass) != d;
          if (lowest)
            for (int m = 0; m < 32; ++m) hist[w * rs::kDigits + d] += rs::digit(key[slot(w, i, m)], pass) == d;
        }
      }
    // d: warps' first ranks, the tile's counts (published), the tile's digit starts.
    std::vector<uint32_t> count(rs::kDigits, 0), mine(rs::kDigits), tile_start(rs::kDigits);
    for (int d = 0; d < rs::kDigits; ++d) {
      for (int w = 0; w < rs::kWarps; ++w) {
        const uint32_t c = hist[w * rs::kDigits + d];
        hist[w * rs::kDigits + d] = count[d];
        count[d] += c;
      }
      mine[d] = count[d] - (d == rs::kDigits - 1 ? static_cast<uint32_t>(rs::kTile - valid) : 0u);
      status[tile * rs::kDigits + d] = (tile == 0 ? rs::kFlagInclusive : rs::kFlagAggregate) | mine[d];
    }
    for (int d = 0, acc = 0; d < rs::kDigits; ++d) {
      tile_start[d] = static_cast<uint32_t>(acc);
      acc += static_cast<int>(count[d]);
    }
    // e: keys staged at their tile positions.
    for (int w = 0; w < rs::kWarps; ++w)
      for (int i = 0; i < rs::kItems; ++i)
        for (int l = 0; l < 32; ++l) {
          const int s = slot(w, i, l);
          const unsigned d = rs::digit(key[s], pass);
          rank[s] += tile_start[d] + hist[w * rs::kDigits + d];
          stage_k[rank[s]] = key[s];
          stage_v[rank[s]] = val[s];
        }
    // f: look-back per digit over the published words.
    std::vector<int64_t> out_shift(rs::kDigits);
    std::vector<uint32_t> inclusive(rs::kDigits);
    for (int d = 0; d < rs::kDigits; ++d) {
      uint32_t exclusive = 0;
      const int window = lookback_window_of(v);
      if (tile > 0 && window == 8)
        exclusive = windowed_lookback<8>(v, status, tile, d);
      else if (tile > 0 && window == 16)
        exclusive = windowed_lookback<16>(v, status, tile, d);
      else if (tile > 0)
        for (int64_t j = tile - 1;; --j) {
          const uint32_t w = status[j * rs::kDigits + d];
          EXPECT_NE(rs::status_flag(w), 0u);  // every lower tile has published (arrival order)
          exclusive += rs::status_value(w);
          if (rs::status_flag(w) == rs::kFlagInclusive) break;
          ++g_aggregates_summed;
        }
      inclusive[d] = exclusive + mine[d];
      out_shift[d] = static_cast<int64_t>(starts[d]) + exclusive - tile_start[d];
    }
    if (tile > 0) delayed.emplace_back(tile, inclusive);
    while (!delayed.empty() && delayed.front().first <= tile - 2) {
      for (int d = 0; d < rs::kDigits; ++d)
        status[delayed.front().first * rs::kDigits + d] = rs::kFlagInclusive | delayed.front().second[d];
      delayed.pop_front();
    }
    // g, h: positions [0, valid) out, keys and values to the same index.
    for (int j = 0; j < valid; ++j) {
      const int64_t at = out_shift[rs::digit(stage_k[j], pass)] + j;
      // A defective variant's pass loses or duplicates pairs, so the next pass's digit counts no
      // longer match the bucket starts and may point past the buffers: such a write is dropped
      // (the outputs are wrong either way; the judge sees it).
      if (at < 0 || at >= n) continue;
      dst.keys[at] = stage_k[j];
      dst.values[at] = stage_v[j];
    }
  }
  if (v == Variant::kTilesReversed) {  // within each digit bucket, the tiles' runs in reverse tile order
    Pairs moved = dst;
    // Each bucket holds the tiles' runs in tile order: reverse the runs, keeping each run's order.
    const uint32_t* s = starts;
    for (int d = 0; d < rs::kDigits; ++d) {
      const int64_t lo = s[d], hi = d + 1 < rs::kDigits ? s[d + 1] : n;
      std::vector<std::pair<int64_t, int64_t>> runs;  // [first, last) per tile, in tile order
      int64_t at = lo;
      for (int64_t tile = 0; tile < tiles && at < hi; ++tile) {
        int64_t len = 0;
        const int64_t base = tile * rs::kTile, end = std::min(n, base + rs::kTile);
        for (int64_t i = base; i < end; ++i) len += rs::digit(src.keys[i], pass) == static_cast<unsigned>(d);
        if (len) runs.emplace_back(at, at + len);
        at += len;
      }
      int64_t to = lo;
      for (auto r = runs.rbegin(); r != runs.rend(); ++r)
        for (int64_t i = r->first; i < r->second; ++i, ++to) {
          moved.keys[to] = dst.keys[i];
          moved.values[to] = dst.values[i];
        }
    }
    dst = std::move(moved);
  }
}

Pairs expert_sort(Variant v, const Pairs& in) {
  const std::vector<uint32_t> starts = bucket_starts(in.keys);
  Pairs a = in, alt{in.n, std::vector<uint32_t>(in.keys.size()), std::vector<uint32_t>(in.keys.size())};
  Pairs out = alt;
  const Pairs* src = &a;
  const int passes = v == Variant::kLow24Bits ? rs::kPasses - 1 : rs::kPasses;
  for (int pass = 0; pass < passes; ++pass) {
    Pairs& dst = pass % 2 == 0 ? alt : out;
    onesweep_pass(v, pass, starts.data() + pass * rs::kDigits, *src, dst);
    src = &dst;
  }
  Pairs r = *src;
  if (v == Variant::kValuesInPlace) r.values = in.values;
  return r;
}

/// naive.cu: per pass, tile counts digit-major, their exclusive sum, then 16 rounds of 256 pairs,
/// ranks from the lanes that agree on all eight digit bits, each warp's start per digit.
Pairs naive_sort(const Pairs& in) {
  constexpr int kThreads = 256, kRounds = 16, kTile = kThreads * kRounds;
  const int64_t n = in.n, tiles = (n + kTile - 1) / kTile;
  Pairs src = in, dst = in;
  for (int pass = 0; pass < 4; ++pass) {
    std::vector<uint32_t> counts(static_cast<size_t>(256 * tiles), 0), starts(counts.size());
    for (int64_t i = 0; i < n; ++i) ++counts[rs::digit(src.keys[i], pass) * tiles + i / kTile];
    uint32_t acc = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
      starts[e] = acc;
      acc += counts[e];
    }
    for (int64_t tile = 0; tile < tiles; ++tile) {
      std::vector<uint32_t> next(256);
      for (int d = 0; d < 256; ++d) next[d] = starts[d * tiles + tile];
      for (int r = 0; r < kRounds; ++r) {
        const int64_t row0 = tile * kTile + r * kThreads;
        std::vector<uint32_t> warp_count(8 * 256, 0), lane_rank(kThreads, 0);
        for (int t = 0; t < kThreads; ++t) {
          if (row0 + t >= n) continue;
          const unsigned d = rs::digit(src.keys[row0 + t], pass);
          for (int m = t & ~31; m < t; ++m) lane_rank[t] += row0 + m < n && rs::digit(src.keys[row0 + m], pass) == d;
          ++warp_count[(t >> 5) * 256 + d];
        }
        std::vector<uint32_t> warp_start(8 * 256);
        for (int d = 0; d < 256; ++d)
          for (int w = 0; w < 8; ++w) {
            warp_start[w * 256 + d] = next[d];
            next[d] += warp_count[w * 256 + d];
          }
        for (int t = 0; t < kThreads; ++t) {
          if (row0 + t >= n) continue;
          const uint32_t at = warp_start[(t >> 5) * 256 + rs::digit(src.keys[row0 + t], pass)] + lane_rank[t];
          dst.keys[at] = src.keys[row0 + t];
          dst.values[at] = src.values[row0 + t];
        }
      }
    }
    std::swap(src, dst);
  }
  return src;
}

std::vector<HostTensor> emulate(Variant v, const Case& c) {
  const Pairs in = pairs_of(c);
  const Pairs r = v == Variant::kNaive ? naive_sort(in) : expert_sort(v, in);
  std::vector<HostTensor> out = poisoned_outputs(c.plan, kPoisonA);
  std::memcpy(out[c.out_index("keys_out")].data(), r.keys.data(), r.keys.size() * 4);
  std::memcpy(out[c.out_index("values_out")].data(), r.values.data(), r.values.size() * 4);
  return out;
}

class RadixSortPairsTolerance : public TaskSuite<RadixSortPairsTolerance> {
 public:
  static constexpr const char* kTask = "radix_sort_pairs";
  static constexpr std::uint64_t kSeed = 5;
  static std::vector<Workload> extra_workloads(const Task& t) { return draw_hidden_workloads(t.def, 91, 3); }

 protected:
  static bool same_outputs(const Case& c, const std::vector<HostTensor>& a) {
    for (const char* name : {"keys_out", "values_out"})
      if (std::memcmp(a[c.out_index(name)].data(), c.expected[c.out_index(name)].data(), c.axis("N") * 4) != 0)
        return false;
    return true;
  }
};

TEST_F(RadixSortPairsTolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 10u + 3u);  // every check workload of workloads.jsonl, and 3 hidden draws
  auto distinct = [](const Case& c) {
    const Pairs p = pairs_of(c);
    return std::set<uint32_t>(p.keys.begin(), p.keys.end()).size();
  };
  EXPECT_EQ(by_suffix("check-n1").axis("N"), 1);
  EXPECT_EQ(distinct(by_suffix("check-n65537-all-equal")), 1u);
  EXPECT_EQ(pairs_of(by_suffix("check-n65537-all-equal")).keys[0], 0xFFFFFFFFu);
  const Pairs sorted = pairs_of(by_suffix("check-n65521-sorted")), reverse = pairs_of(by_suffix("check-n65537-reverse"));
  EXPECT_TRUE(std::is_sorted(sorted.keys.begin(), sorted.keys.end()));
  EXPECT_TRUE(std::is_sorted(reverse.keys.rbegin(), reverse.keys.rend()));
  EXPECT_EQ(reverse.keys.front(), 0xFFFFFFFFu);
  EXPECT_EQ(distinct(by_suffix("check-n65537-reverse")), 65537u);
  EXPECT_LE(distinct(by_suffix("check-n200009-zipf8")), 256u);
  EXPECT_EQ(distinct(by_suffix("check-n77777-four-keys")), 4u);
  for (const Case& c : *cases_) {
    if (c.plan.workload.uuid.rfind("hidden-", 0) == 0) continue;
    const int64_t n = c.axis("N");
    if (n > 1) {
      EXPECT_NE(n % rs::kTile, 0) << c.plan.workload.uuid << ": N a multiple of the expert's tile";
    }
    // Values are the input index (argsort's row ids) except on the random-values workload.
    const Pairs p = pairs_of(c);
    bool iota = true;
    for (int64_t i = 0; i < n; ++i) iota = iota && p.values[i] == static_cast<uint32_t>(i);
    EXPECT_EQ(iota, c.plan.workload.uuid.find("random-values") == std::string::npos) << c.plan.workload.uuid;
  }
}

TEST_F(RadixSortPairsTolerance, ExpertAndNaiveArithmeticPass) {
  g_aggregates_summed = 0;
  g_unpublished_polls = 0;
  for (const Case& c : *cases_)
    for (Variant v : {Variant::kExpert, Variant::kExpertWindow8, Variant::kExpertWindow16, Variant::kNaive}) {
      const OutputsVerdict verdict = judge(c, emulate(v, c));
      EXPECT_EQ(verdict.status, Status::PASSED)
          << c.plan.workload.uuid << " variant " << static_cast<int>(v) << ": " << verdict.message;
    }
  EXPECT_GT(g_aggregates_summed, 0) << "no emulated look-back went past an AGGREGATE word";
  EXPECT_GT(g_unpublished_polls, 0) << "no emulated windowed look-back met an unpublished word";
}

TEST_F(RadixSortPairsTolerance, UnstableOrWrongVariantsFail) {
  // Each variant must fail on every workload where its outputs differ from the golden's, and on
  // at least one public check workload.
  for (Variant v : {Variant::kUnstableRank, Variant::kTilesReversed, Variant::kValuesInPlace, Variant::kLow24Bits,
                    Variant::kWindowSkipsGaps}) {
    int differs = 0, failed = 0, public_failed = 0;
    for (const Case& c : *cases_) {
      const std::vector<HostTensor> run = emulate(v, c);
      if (same_outputs(c, run)) continue;
      ++differs;
      if (judge(c, run).status == Status::INCORRECT_NUMERICAL) {
        ++failed;
        public_failed += c.plan.workload.uuid.rfind("hidden-", 0) != 0;
      }
    }
    EXPECT_EQ(failed, differs) << "variant " << static_cast<int>(v) << " passed a workload where its outputs differ";
    EXPECT_GT(public_failed, 0) << "variant " << static_cast<int>(v) << ": no public check workload tells it apart";
  }
}

TEST_F(RadixSortPairsTolerance, UnstableScatterFailsOnTheDuplicateKeyWorkloads) {
  // An unstable pass of an LSD sort undoes the order of the digits below it, so it usually leaves
  // the keys unsorted too; on the all-equal workload the keys come out right whatever the order and
  // only the values (the input indices) show it: that failure is the stability check itself.
  for (const char* uuid : {"check-n77777-four-keys", "check-n200009-zipf8", "check-n65537-all-equal"}) {
    const Case& c = by_suffix(uuid);
    for (Variant v : {Variant::kUnstableRank, Variant::kTilesReversed}) {
      const std::vector<HostTensor> run = emulate(v, c);
      if (std::string(uuid).find("all-equal") != std::string::npos) {
        EXPECT_EQ(std::memcmp(run[c.out_index("keys_out")].data(), c.expected[c.out_index("keys_out")].data(),
                              c.axis("N") * 4),
                  0)
            << uuid << ": equal keys are sorted in any order";
      }
      EXPECT_EQ(judge(c, run).status, Status::INCORRECT_NUMERICAL) << uuid << " variant " << static_cast<int>(v);
    }
  }
}

TEST(RadixSortPairsLayout, WorkspaceWordsAndStatusEncoding) {
  // The 30-bit counts hold N's largest value; the flags never alias a count.
  EXPECT_EQ(rs::status_value(rs::kFlagInclusive | rs::kValueMask), (1u << 30) - 1u  /* rs_args.h's kMaxN */);
  EXPECT_EQ(rs::status_flag(rs::kFlagAggregate | rs::kValueMask), rs::kFlagAggregate);
  const rs::Layout l = rs::layout(1000000000);
  EXPECT_EQ(rs::num_tiles(1000000000), (1000000000 + rs::kTile - 1) / rs::kTile);
  EXPECT_EQ(l.zeroed - l.status, rs::kPasses * rs::num_tiles(1000000000) * rs::kDigits);
  EXPECT_EQ(l.words - l.offsets, rs::kPasses * rs::kDigits);
  // Every pair lands in exactly one (warp, item, lane) of exactly one tile.
  std::vector<int> seen(rs::kTile * 2, 0);
  for (int64_t tile = 0; tile < 2; ++tile)
    for (int w = 0; w < rs::kWarps; ++w)
      for (int i = 0; i < rs::kItems; ++i)
        for (int lane = 0; lane < 32; ++lane) ++seen[rs::item_index(tile * rs::kTile, w, i, lane)];
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

}  // namespace
