// moe_topk_router: the comparison rules of definition.json checked both ways on the public check
// workloads and on hidden draws. Host emulations are judged against the golden (the task's
// reference.so, inputs from the task's generators) by the engine's judge:
//  - the expert, emulated with its own decision code (router.cuh: the packed key whose maximum is
//    the largest logit with the lowest id, the launch plan, the bit-mask ranks), its candidate
//    filter (the K-th largest lane maximum; the top K must survive it), and its fp32
//    arithmetic (K exponentials, the warp's butterfly sum), passes everywhere, on the fused
//    (T <= 512) and the three-launch plans;
//  - the fused-tail variants of expert.cu (tailbatch, tailwide, twokernel): the bases through
//    router.cuh's chunked prefix (every block's own base for twokernel) and tailwide's plan of two
//    tokens per warp, on every check workload and hidden draws;
//  - PyTorch's arithmetic (fp32 softmax over all E, gather, renormalise) passes;
//  - bf16 or fp16 weights, weights not renormalised, ties won by the higher id, a top-k chosen on
//    bf16-rounded logits (an approximate selection), a permutation not stable inside a segment
//    (what global atomics give), and a skipped last token all fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/status.h"
#include "router.cuh"
#include "unit/tasks/task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

/// How an emulated implementation routes.
enum class Variant {
  kExpert,          ///< router.cuh's keys, plan and ranks; fp32 K exponentials, butterfly sum
  kTorch,           ///< fp32 softmax over all E, gather, divide by the fp32 sum of the K
  kBf16Weights,     ///< kExpert with the weights stored as bf16
  kFp16Weights,     ///< kExpert with the weights stored as fp16
  kNotRenormalised, ///< the full softmax's probabilities of the selected experts
  kHighIdWinsTies,  ///< among equal logits the higher id first
  kBf16Selection,   ///< the top-k chosen on bf16-rounded logits (an approximate selection)
  kUnstableSegments,///< each expert's segment in descending flat index (as global atomics may)
  kSkipLastToken,   ///< the last token's outputs not written (left as zero)
};

struct Routed {
  std::vector<float> w;
  std::vector<std::int32_t> ids;
};

/// The butterfly sum of 32 lanes (lane l adds lane l ^ o, o = 16..1): every lane ends with the
/// same fp32 value, which this returns.
float butterfly_sum(std::vector<float> v) {
  v.resize(32, 0.f);
  for (int o = 16; o > 0; o >>= 1) {
    std::vector<float> n(32);
    for (int l = 0; l < 32; ++l) n[static_cast<std::size_t>(l)] = v[static_cast<std::size_t>(l)] + v[static_cast<std::size_t>(l ^ o)];
    v = n;
  }
  return v[0];
}

/// Tokens the expert's selection sent to the general path (more than 32 candidates).
int g_general_path = 0;

/// The expert's candidate filter (expert.cu select_topk, steps 1-2): L = the K-th largest of the
/// 32 lane maxima counted with multiplicity (the REDUX loop), the candidates = keys >= L. Returns
/// the candidates, or every key when more than 32 pass (the general path).
std::vector<std::uint64_t> expert_candidates(const std::vector<std::uint64_t>& keys, int K) {
  const int E = static_cast<int>(keys.size());
  std::vector<std::uint32_t> cur(32, 0);
  for (int e = 0; e < E; ++e)
    cur[static_cast<std::size_t>(e % 32)] =
        std::max(cur[static_cast<std::size_t>(e % 32)], static_cast<std::uint32_t>(keys[static_cast<std::size_t>(e)] >> 32));
  std::uint32_t L = 0;
  for (int seen = 0; seen < K;) {
    L = *std::max_element(cur.begin(), cur.end());
    for (auto& c : cur)
      if (c == L) ++seen, c = 0;
  }
  std::vector<std::uint64_t> cand;
  for (std::uint64_t k : keys)
    if (static_cast<std::uint32_t>(k >> 32) >= L) cand.push_back(k);
  EXPECT_GE(static_cast<int>(cand.size()), K);
  if (cand.size() > 32) {
    ++g_general_path;
    return keys;
  }
  return cand;
}

/// Selection and weights of one token.
void route_token(const float* x, int E, int K, Variant v, float* w, std::int32_t* ids) {
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(E));
  for (int e = 0; e < E; ++e) {
    float sel = v == Variant::kBf16Selection ? bf16_rn(x[e]) : x[e];
    keys[static_cast<std::size_t>(e)] = router::pack_key(sel, v == Variant::kHighIdWinsTies ? E - 1 - e : e);
  }
  if (v == Variant::kExpert) {
    // The filtered candidates must hold the same top K as all keys.
    std::vector<std::uint64_t> all = keys;
    keys = expert_candidates(keys, K);
    std::partial_sort(all.begin(), all.begin() + K, all.end(), std::greater<>());
    std::partial_sort(keys.begin(), keys.begin() + K, keys.end(), std::greater<>());
    EXPECT_TRUE(std::equal(all.begin(), all.begin() + K, keys.begin())) << "the candidate filter lost a top-K key";
  }
  // The warp's K rounds of arg-max take the keys in descending order.
  std::partial_sort(keys.begin(), keys.begin() + K, keys.end(), std::greater<>());
  std::vector<int> sel(static_cast<std::size_t>(K));
  for (int j = 0; j < K; ++j) {
    const int id = router::key_id(keys[static_cast<std::size_t>(j)]);
    sel[static_cast<std::size_t>(j)] = v == Variant::kHighIdWinsTies ? E - 1 - id : id;
  }
  float m = -INFINITY;
  for (int e = 0; e < E; ++e) m = std::max(m, x[e]);
  if (v == Variant::kTorch || v == Variant::kNotRenormalised) {
    float z = 0.f;
    for (int e = 0; e < E; ++e) z += std::exp(x[e] - m);
    std::vector<float> p(static_cast<std::size_t>(K));
    float s = 0.f;
    for (int j = 0; j < K; ++j) s += p[static_cast<std::size_t>(j)] = std::exp(x[sel[static_cast<std::size_t>(j)]] - m) / z;
    for (int j = 0; j < K; ++j) {
      ids[j] = sel[static_cast<std::size_t>(j)];
      w[j] = v == Variant::kTorch ? p[static_cast<std::size_t>(j)] / s : p[static_cast<std::size_t>(j)];
    }
    return;
  }
  // The expert: m is slot 0's logit, K exponentials, the butterfly sum.
  const float m0 = x[sel[0]];
  std::vector<float> ex(static_cast<std::size_t>(K));
  for (int j = 0; j < K; ++j) ex[static_cast<std::size_t>(j)] = std::exp(x[sel[static_cast<std::size_t>(j)]] - m0);
  const float s = butterfly_sum(ex);
  for (int j = 0; j < K; ++j) {
    ids[j] = sel[static_cast<std::size_t>(j)];
    float q = ex[static_cast<std::size_t>(j)] / s;
    if (v == Variant::kBf16Weights) q = bf16_rn(q);
    if (v == Variant::kFp16Weights) q = f16_rn(q);
    w[j] = q;
  }
}

/// How the emulated expert finds each block's base (expert.cu's %VARIANT% lines).
enum class Tail {
  kSerial,     ///< the default: a running sum over the blocks per expert
  kBatched,    ///< tailbatch / tailwide: router::chunked_exclusive_prefix over block-major counts
  kTwoKernel,  ///< twokernel: each block takes its base from the chunked prefix (store at its index)
};
Tail g_tail = Tail::kSerial;
int g_small_tokens_per_warp = 1;  ///< tailwide: 2
constexpr int kTailChunk = 16;    ///< expert.cu's ROUTER_TAIL_CHUNK and ROUTER_TWO_KERNEL_CHUNK defaults

/// The expert's grouping: per-block bit masks, block counts, the scan over blocks (bases), the
/// offsets, and each entry at offsets + base + mask rank. Returns counts, offsets, permutation.
void group_like_expert(const std::vector<std::int32_t>& ids, std::int64_t T, int E, int K, std::int32_t* counts,
                       std::int32_t* offsets, std::int32_t* perm) {
  const router::Plan p = router::plan_for(T, g_small_tokens_per_warp);
  EXPECT_LE(p.tokens_per_block * K, router::kThreads * router::kScatterPerThread);
  EXPECT_EQ(p.fused, p.blocks <= router::kFuseMaxBlocks);
  const std::int64_t nb = p.blocks;
  std::vector<std::uint32_t> masks(static_cast<std::size_t>(nb * E * p.mask_words), 0);
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t b = t / p.tokens_per_block;
    const int local = static_cast<int>(t - b * p.tokens_per_block);
    for (int j = 0; j < K; ++j) {
      const int e = ids[static_cast<std::size_t>(t * K + j)];
      masks[static_cast<std::size_t>((b * E + e) * p.mask_words + local / 32)] |= 1u << (local % 32);
    }
  }
  std::vector<std::int32_t> base(static_cast<std::size_t>(E * nb));
  auto block_count = [&](int e, std::int64_t b) {
    int c = 0;
    for (int w = 0; w < p.mask_words; ++w) c += router::popc(masks[static_cast<std::size_t>((b * E + e) * p.mask_words + w)]);
    return c;
  };
  const Tail tail = p.fused ? g_tail : Tail::kSerial;  // the variants change the fused plans only
  for (int e = 0; e < E; ++e) {
    if (tail == Tail::kSerial) {
      std::int32_t run = 0;
      for (std::int64_t b = 0; b < nb; ++b) {
        base[static_cast<std::size_t>(e * nb + b)] = run;
        run += block_count(e, b);
      }
      counts[e] = run;
    } else if (tail == Tail::kBatched) {
      counts[e] = router::chunked_exclusive_prefix<kTailChunk>(
          nb, [&](std::int64_t b) { return block_count(e, b); },
          [&](std::int64_t b, int sum) { base[static_cast<std::size_t>(e * nb + b)] = sum; });
    } else {  // every block runs the whole prefix and keeps the sum stored at its own index
      for (std::int64_t me = 0; me < nb; ++me) {
        const int total = router::chunked_exclusive_prefix<kTailChunk>(
            nb, [&](std::int64_t b) { return block_count(e, b); },
            [&](std::int64_t b, int sum) {
              if (b == me) base[static_cast<std::size_t>(e * nb + me)] = sum;
            });
        if (me == 0) counts[e] = total;
      }
    }
  }
  offsets[0] = 0;
  for (int e = 0; e < E; ++e) offsets[e + 1] = offsets[e] + counts[e];
  for (std::int64_t i = 0; i < T * K; ++i) {
    const std::int64_t t = i / K, b = t / p.tokens_per_block;
    const int local = static_cast<int>(t - b * p.tokens_per_block);
    const int e = ids[static_cast<std::size_t>(i)];
    const int rank = router::mask_rank(&masks[static_cast<std::size_t>((b * E + e) * p.mask_words)], local);
    perm[offsets[e] + base[static_cast<std::size_t>(e * nb + b)] + rank] = static_cast<std::int32_t>(i);
  }
}

std::vector<HostTensor> emulate(const Case& c, Variant v) {
  const std::int64_t T = c.axis("T");
  const int E = static_cast<int>(c.axis("E")), K = static_cast<int>(c.axis("K"));
  const float* x = c.in("logits").as<float>();
  std::vector<HostTensor> out = c.outputs();
  float* w = out[c.out_index("topk_weights")].as<float>();
  std::int32_t* ids = out[c.out_index("topk_ids")].as<std::int32_t>();
  std::int32_t* counts = out[c.out_index("expert_counts")].as<std::int32_t>();
  std::int32_t* offsets = out[c.out_index("expert_offsets")].as<std::int32_t>();
  std::int32_t* perm = out[c.out_index("permutation")].as<std::int32_t>();
  for (std::int64_t t = 0; t < T; ++t) route_token(x + t * E, E, K, v, w + t * K, ids + t * K);
  std::vector<std::int32_t> id_vec(ids, ids + T * K);
  group_like_expert(id_vec, T, E, K, counts, offsets, perm);
  if (v == Variant::kUnstableSegments)
    for (int e = 0; e < E; ++e) std::reverse(perm + offsets[e], perm + offsets[e + 1]);
  if (v == Variant::kSkipLastToken) {
    for (int j = 0; j < K; ++j) {
      w[(T - 1) * K + j] = 0.f;
      ids[(T - 1) * K + j] = 0;
    }
  }
  return out;
}

class RouterTolerance : public TaskSuite<RouterTolerance> {
 public:
  static constexpr const char* kTask = "moe_topk_router";
  static constexpr std::uint64_t kSeed = 20261201;

 protected:
  static bool passes(const Case& c, Variant v) { return judge(c, emulate(c, v)).status == Status::PASSED; }
};

TEST_F(RouterTolerance, CheckWorkloadsCoverThePlansAndEdges) {
  std::set<int> tokens_per_warp;
  bool fused = false, unfused = false, partial = false, e_not_warp = false, k_is_e = false;
  for (const Case& c : *cases_) {
    const std::int64_t T = c.axis("T"), E = c.axis("E"), K = c.axis("K");
    const router::Plan p = router::plan_for(T);
    tokens_per_warp.insert(p.tokens_per_warp);
    (p.fused ? fused : unfused) = true;
    partial |= T % p.tokens_per_block != 0;
    e_not_warp |= E % 32 != 0 && E > 32;
    k_is_e |= K == E;
  }
  EXPECT_EQ(tokens_per_warp, (std::set<int>{1, 4, 8}));
  EXPECT_TRUE(fused && unfused && partial && e_not_warp && k_is_e);
}

TEST_F(RouterTolerance, ExpertPassesEveryCheckWorkload) {
  for (const Case& c : *cases_) {
    g_general_path = 0;
    const OutputsVerdict r = judge(c, emulate(c, Variant::kExpert));
    EXPECT_EQ(r.status, Status::PASSED) << c.plan.workload.uuid << ": " << r.message;
    std::printf("%-48s general-path tokens %d of %lld\n", c.plan.workload.uuid.c_str(), g_general_path,
                static_cast<long long>(c.axis("T")));
    // Normal logits almost never tie 32 deep: the filter path must carry them.
    if (c.plan.workload.uuid.find("4097x256") != std::string::npos) {
      EXPECT_LT(g_general_path, c.axis("T") / 100);
    }
    // Every logit equal: all E are candidates, the general path for every token (E > 32).
    if (c.plan.workload.uuid.find("const") != std::string::npos) {
      EXPECT_EQ(g_general_path, c.axis("T"));
    }
  }
}

/// The variants' grouping (expert.cu: tailbatch, tailwide, twokernel) on every check workload
/// and hidden draw: the same outputs through the chunked prefix, and tailwide's plan of two
/// tokens per warp up to T = 1024 (more check workloads take the fused path).
struct TailCase {
  const char* name;
  Tail tail;
  int small_tokens_per_warp;
};
constexpr TailCase kTails[] = {{"tailbatch", Tail::kBatched, 1}, {"tailwide", Tail::kBatched, 2},
                               {"twokernel", Tail::kTwoKernel, 1}};

TEST_F(RouterTolerance, TailVariantsPassEveryCheckWorkload) {
  for (const TailCase& v : kTails) {
    g_tail = v.tail;
    g_small_tokens_per_warp = v.small_tokens_per_warp;
    int fused = 0;
    for (const Case& c : *cases_) {
      const OutputsVerdict r = judge(c, emulate(c, Variant::kExpert));
      EXPECT_EQ(r.status, Status::PASSED) << v.name << " " << c.plan.workload.uuid << ": " << r.message;
      fused += router::plan_for(c.axis("T"), v.small_tokens_per_warp).fused;
    }
    std::printf("%s: %d check workloads on the fused plan\n", v.name, fused);
  }
  g_tail = Tail::kSerial;
  g_small_tokens_per_warp = 1;
}

TEST(RouterHidden, TailVariantsPassHiddenDraws) {
  const Task t = load_pilot("moe_topk_router");
  const LoadedImpl ref = load_reference("moe_topk_router");
  const std::vector<Workload> hidden = draw_hidden_workloads(t.def, 778, 20);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(t, ref, w, 5);
    for (const TailCase& v : kTails) {
      g_tail = v.tail;
      g_small_tokens_per_warp = v.small_tokens_per_warp;
      const OutputsVerdict r = judge(c, emulate(c, Variant::kExpert));
      EXPECT_EQ(r.status, Status::PASSED) << v.name << " " << w.uuid << " T=" << c.axis("T") << ": " << r.message;
    }
  }
  g_tail = Tail::kSerial;
  g_small_tokens_per_warp = 1;
}

TEST(RouterPlan, ChunkedPrefixAndTwoTokenPlan) {
  auto check = [](auto chunk_tag) {
    constexpr int kChunk = decltype(chunk_tag)::value;
    for (std::int64_t n : {1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64}) {
      std::vector<int> v(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n), -1);
      for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<int>((i * 7 + 3) % 11);
      const int total = router::chunked_exclusive_prefix<kChunk>(
          n, [&](std::int64_t i) { return v[static_cast<std::size_t>(i)]; },
          [&](std::int64_t i, int s) { got[static_cast<std::size_t>(i)] = s; });
      int run = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(got[static_cast<std::size_t>(i)], run) << "chunk " << kChunk << " n=" << n << " i=" << i;
        run += v[static_cast<std::size_t>(i)];
      }
      EXPECT_EQ(total, run);
    }
  };
  check(std::integral_constant<int, 1>{});
  check(std::integral_constant<int, 4>{});
  check(std::integral_constant<int, kTailChunk>{});
  // tailwide: two tokens per warp while at most kFuseMaxBlocks blocks; the default plan otherwise.
  EXPECT_EQ(router::plan_for(512, 2).blocks, 32);
  EXPECT_TRUE(router::plan_for(1024, 2).fused);
  EXPECT_FALSE(router::plan_for(1025, 2).fused);
  for (std::int64_t T : {1, 512, 513, 1025, 4096, 4097, 32769}) {
    if (T > 1024) {
      EXPECT_EQ(router::plan_for(T, 2).tokens_per_block, router::plan_for(T).tokens_per_block);
    }
    EXPECT_EQ(router::plan_for(T, 1).blocks, router::plan_for(T).blocks);
  }
}

TEST_F(RouterTolerance, TorchArithmeticPassesEveryCheckWorkload) {
  for (const Case& c : *cases_) {
    const OutputsVerdict r = judge(c, emulate(c, Variant::kTorch));
    EXPECT_EQ(r.status, Status::PASSED) << c.plan.workload.uuid << ": " << r.message;
  }
}

TEST_F(RouterTolerance, NarrowWeightsFail) {
  for (const char* u : {"check-37x64-k6-odd", "check-4097x256-k8", "check-33001x128-k8", "check-513x60-k4-qwen1.5"}) {
    EXPECT_FALSE(passes(by_suffix(u), Variant::kBf16Weights)) << u << " accepted bf16 weights";
    EXPECT_FALSE(passes(by_suffix(u), Variant::kFp16Weights)) << u << " accepted fp16 weights";
  }
}

TEST_F(RouterTolerance, WeightsNotRenormalisedFail) {
  for (const Case& c : *cases_) {
    if (c.axis("K") == c.axis("E")) continue;  // the selected experts hold all the mass
    if (c.plan.workload.uuid.find("extreme") != std::string::npos) continue;  // the top expert holds ~all of it
    EXPECT_FALSE(passes(c, Variant::kNotRenormalised)) << c.plan.workload.uuid << " accepted unrenormalised weights";
  }
}

TEST_F(RouterTolerance, TiesWonByTheHigherIdFail) {
  for (const char* u : {"check-300x128-k8-ties", "check-64x256-k8-const", "check-500x64-k8-shifted"})
    EXPECT_FALSE(passes(by_suffix(u), Variant::kHighIdWinsTies)) << u << " accepted ties won by the higher id";
}

TEST_F(RouterTolerance, ApproximateSelectionFails) {
  for (const char* u : {"check-4097x256-k8", "check-33001x128-k8"})
    EXPECT_FALSE(passes(by_suffix(u), Variant::kBf16Selection)) << u << " accepted a top-k on bf16-rounded logits";
}

TEST_F(RouterTolerance, UnstableSegmentsFail) {
  for (const char* u : {"check-37x64-k6-odd", "check-4097x256-k8", "check-200x8-k2-mixtral"})
    EXPECT_FALSE(passes(by_suffix(u), Variant::kUnstableSegments)) << u << " accepted a segment out of order";
}

TEST_F(RouterTolerance, SkippedLastTokenFails) {
  for (const Case& c : *cases_) EXPECT_FALSE(passes(c, Variant::kSkipLastToken)) << c.plan.workload.uuid;
}

TEST(RouterHidden, ExpertPassesHiddenDraws) {
  const Task t = load_pilot("moe_topk_router");
  const LoadedImpl ref = load_reference("moe_topk_router");
  const std::vector<Workload> hidden = draw_hidden_workloads(t.def, 777, 40);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(t, ref, w, 5);
    std::printf("hidden %s: T=%lld E=%lld K=%lld\n", w.uuid.c_str(), static_cast<long long>(c.axis("T")),
                static_cast<long long>(c.axis("E")), static_cast<long long>(c.axis("K")));
    const OutputsVerdict r = judge(c, emulate(c, Variant::kExpert));
    EXPECT_EQ(r.status, Status::PASSED) << w.uuid << " T=" << c.axis("T") << " E=" << c.axis("E")
                                        << " K=" << c.axis("K") << ": " << r.message;
  }
}

TEST(RouterKeys, OrderAndTies) {
  // Larger logit, larger key; -0 and +0 one value; equal logits: the lower id has the larger key.
  const float xs[] = {-INFINITY, -1e30f, -2.5f, -1e-30f, -0.0f, 0.0f, 1e-30f, 1.0f, 3.0e38f};
  for (std::size_t i = 0; i + 1 < std::size(xs); ++i) {
    if (!(xs[i] == xs[i + 1])) {
      EXPECT_LT(router::order_key(xs[i]), router::order_key(xs[i + 1])) << xs[i];
    }
  }
  EXPECT_EQ(router::order_key(-0.0f), router::order_key(0.0f));
  EXPECT_GT(router::pack_key(1.5f, 3), router::pack_key(1.5f, 4));
  EXPECT_GT(router::pack_key(1.5f, 511), router::pack_key(1.25f, 0));
  EXPECT_NE(router::pack_key(-INFINITY, 511), 0u);  // 0 stays free for "taken"
  for (float x : {-7.25f, 0.0f, 2.0f, 1e-38f})
    for (int e : {0, 17, 511}) {
      EXPECT_EQ(router::key_value(router::pack_key(x, e)), x);
      EXPECT_EQ(router::key_id(router::pack_key(x, e)), e);
    }
}

TEST(RouterPlan, BlocksAndRanks) {
  EXPECT_TRUE(router::plan_for(512).fused);
  EXPECT_FALSE(router::plan_for(513).fused);
  EXPECT_EQ(router::plan_for(65536).tokens_per_block, 64);
  EXPECT_EQ(router::plan_for(65536).mask_words, 2);
  for (std::int64_t T : {1, 7, 512, 513, 4096, 4097, 32768, 32769, 4194304}) {
    const router::Plan p = router::plan_for(T);
    EXPECT_EQ(p.blocks, (T + p.tokens_per_block - 1) / p.tokens_per_block);
    EXPECT_LE(p.tokens_per_block * router::kMaxK, router::kThreads * router::kScatterPerThread);
  }
  const std::uint32_t words[2] = {0x8000000Fu, 0x00000003u};
  EXPECT_EQ(router::mask_rank(words, 0), 0);
  EXPECT_EQ(router::mask_rank(words, 3), 3);
  EXPECT_EQ(router::mask_rank(words, 31), 4);
  EXPECT_EQ(router::mask_rank(words, 32), 5);
  EXPECT_EQ(router::mask_rank(words, 33), 6);
  EXPECT_EQ(router::values_per_lane(1), 1);
  EXPECT_EQ(router::values_per_lane(60), 2);
  EXPECT_EQ(router::values_per_lane(256), 8);
  EXPECT_EQ(router::values_per_lane(257), 16);
}

}  // namespace
