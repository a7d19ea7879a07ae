// topk_topp_mask: the comparison rule of definition.json (allclose with atol 0: the kept set must be
// exactly the rule's, values within rtol 2e-5) checked both ways on the public check workloads and
// on hidden draws. Host emulations are compared with the fp64 golden (the task's reference.so,
// inputs from the task's generators) under the workload's effective rule:
//  - the expert's own per-row decisions (dataset/topk_topp_mask/select.cuh, the code the kernels
//    run: radix digits, candidate buffer, sorted candidates, fp32 decision with the fp64 recheck
//    near top_p) pass everywhere;
//  - an approximate threshold (the first radix bin's lower edge instead of the k-th largest),
//    a top-k that keeps exactly k tokens (ties broken by index), a top-p that also drops the token
//    crossing top_p, a top-p decided per token instead of per tie group, top-p from fp32 running
//    sums (on rows whose mass sits at top_p), bf16 output values and a missing renormalisation
//    all fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "check/compare.h"
#include "core/dtype.h"
#include "select.cuh"
#include "unit/tasks/task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

const ScalarPlan& scalar(const WorkloadPlan& p, const std::string& name) {
  for (const auto& s : p.scalars)
    if (s.name == name) return s;
  throw std::runtime_error("no scalar " + name);
}

struct Row {
  const float* x;
  std::int64_t V, k;
  double top_p, temperature;
};

// ---- the expert, emulated with its own decision code ------------------------------------------

struct ExpertTrace {
  int flagged = 0;   ///< rows decided in fp64
  int refined = 0;   ///< rows that needed a second or third digit
  int tie_read = 0;  ///< rows whose kept set includes an unlisted tie group
};

/// How a thread of the expert sums its statistics (expert.cu's switches).
enum class StatsForm {
  kFp64,  ///< fp32 terms summed in fp64 (TOPK_LEAN=0, the default before 2026-12-03)
  kW32,   ///< TOPK_W32: the error weight in fp32
  kC32,   ///< TOPK_C32: all in fp32, z as a compensated pair
  kLean,  ///< TOPK_LEAN (the default): the maximum once per round of 16 logits (accumulate_batch), the first
          ///< digit by first_digit, the candidates by the float compare against key_floor
};

void expert_row(const Row& r, float* out, ExpertTrace& trace, StatsForm form) {
  const float c = static_cast<float>(1.4426950408889634 / r.temperature);
  const double inv_t = 1.0 / r.temperature;
  // Pass 1: statistics in 64 strided lanes merged as a tree (the kernel's threads), histogram.
  constexpr int kLanes = 64;
  std::vector<topk::Stats> lane(kLanes);
  std::vector<float> wf(kLanes, 0.f);
  std::vector<topk::Part32> part(kLanes);
  // kLean: each lane's logits in rounds of 16 (the kernel's four float4 loads), the rest one by one.
  std::vector<std::vector<float>> round(kLanes);
  for (std::int64_t i = 0; i < r.V; ++i) {
    const auto l = static_cast<std::size_t>(i % kLanes);
    if (form == StatsForm::kLean) {
      round[l].push_back(r.x[i]);
      if (round[l].size() == 16) {
        float b[16];
        std::copy(round[l].begin(), round[l].end(), b);
        topk::accumulate_batch<16>(lane[l], b, c);
        round[l].clear();
      }
    } else if (form == StatsForm::kC32) topk::accumulate_c32(lane[l], part[l], r.x[i], c);
    else if (form == StatsForm::kW32) topk::accumulate_w32(lane[l], wf[l], r.x[i], c);
    else topk::accumulate(lane[l], r.x[i], c);
  }
  for (int q = 0; q < kLanes; ++q) {  // no-ops for the forms that do not use them
    for (float x : round[q]) {
      const float b[1] = {x};
      topk::accumulate_batch<1>(lane[q], b, c);
    }
    topk::flush_w(lane[q], wf[q]);
    topk::fold_c32(lane[q], part[q]);
  }
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int q = 0; q < w; ++q) lane[q] = topk::merge(lane[q], lane[q + w], c);
  const topk::Stats st = lane[0];
  topk::RowInput in{std::min(r.k, r.V), r.top_p, st.m, c, st.z, st.w, {}};
  for (int level = 0; level < topk::kLevels && in.bucket.next_level == level; ++level) {
    std::vector<std::uint32_t> h(static_cast<std::size_t>(1) << topk::level_bits(level), 0);
    for (std::int64_t i = 0; i < r.V; ++i) {
      const std::uint32_t key = topk::order_key(r.x[i]);
      if (level == 0 && form == StatsForm::kLean) ++h[topk::first_digit(r.x[i])];
      else if (topk::in_bucket(key, in.bucket.lo, in.bucket.hi)) ++h[topk::digit(key, level)];
    }
    std::uint32_t bin, acc, count;
    topk::pick_bin(h.data(), static_cast<int>(h.size()), static_cast<std::uint32_t>(in.k_eff) - in.bucket.above,
                   &bin, &acc, &count);
    topk::advance(in.bucket, level, bin, acc, count);
    if (level > 0) ++trace.refined;
  }
  // Pass 2: the candidates, sorted descending by (key, index) as the kernel's bitonic sort.
  const std::uint32_t from = in.bucket.listed ? in.bucket.lo : in.bucket.hi + 1u;
  const float from_value = topk::key_floor(from);
  std::vector<std::uint64_t> cand;
  for (std::int64_t i = 0; i < r.V; ++i) {
    const std::uint32_t key = topk::order_key(r.x[i]);
    if (form == StatsForm::kLean ? r.x[i] >= from_value : key >= from)
      cand.push_back((static_cast<std::uint64_t>(key) << 32) | static_cast<std::uint32_t>(i));
  }
  EXPECT_LE(cand.size(), static_cast<std::size_t>(topk::kCap));
  std::sort(cand.begin(), cand.end(), std::greater<>());
  std::vector<std::uint32_t> keys(cand.size());
  for (std::size_t q = 0; q < cand.size(); ++q) keys[q] = static_cast<std::uint32_t>(cand[q] >> 32);
  const int n = static_cast<int>(keys.size());
  topk::RowDecision d = topk::decide(in, keys.data(), n, false, 0.0, inv_t);
  if (d.uncertain) {  // the recheck: z in fp64 from fp64 exponentials
    ++trace.flagged;
    double z64 = 0;
    for (std::int64_t i = 0; i < r.V; ++i) z64 += std::exp((static_cast<double>(r.x[i]) - st.m) * inv_t);
    d = topk::decide(in, keys.data(), n, true, z64, inv_t);
  }
  // Output: zeros and the kept candidates by index, or the masked row when a tie group is kept.
  if (d.tie_kept) {
    ++trace.tie_read;
    for (std::int64_t i = 0; i < r.V; ++i) {
      const std::uint32_t key = topk::order_key(r.x[i]);
      out[i] = key >= d.tau_key ? topk::term(key, st.m, c) * d.inv_s : 0.f;
    }
    return;
  }
  std::fill(out, out + r.V, 0.f);
  for (int q = 0; q < d.n_keep; ++q)
    out[static_cast<std::uint32_t>(cand[q])] = topk::term(keys[q], st.m, c) * d.inv_s;
}

// ---- cheaper or differently-tied variants -------------------------------------------------------

enum class Variant {
  kExact,            ///< no change: the rule in fp64 (checks that the emulation itself is right)
  kApproxThreshold,  ///< t_k = lower edge of the first 12-bit radix bin holding the k-th largest
  kTopKByIndex,      ///< exactly k tokens: ties at the k-th value broken by index
  kTopPExclusive,    ///< top-p keeps a token only if the mass up to and including it is < top_p
  kTopPPerToken,     ///< top-p on the sorted order token by token (ties split by index)
  kBf16Values,       ///< the right set, values rounded to bf16
  kNotRenormalised,  ///< the right set, values divided by the full softmax sum
  kFp32Sums,         ///< the rule with fp32 terms and fp32 running sums (Z and the top-p masses)
};

/// A straightforward fp64 implementation of the rule with one deliberate change (`v`).
void variant_row(Variant v, const Row& r, float* out) {
  const std::int64_t V = r.V, k_eff = std::min(r.k, r.V);
  const double m = *std::max_element(r.x, r.x + V);
  const bool f32 = v == Variant::kFp32Sums;
  auto e = [&](double u) {
    return f32 ? static_cast<double>(std::exp(static_cast<float>((static_cast<float>(u) - static_cast<float>(m)) /
                                                                 static_cast<float>(r.temperature))))
               : std::exp((u - m) / r.temperature);
  };
  auto add = [&](double a, double b) { return f32 ? static_cast<double>(static_cast<float>(a) + static_cast<float>(b)) : a + b; };
  std::vector<std::int64_t> order(static_cast<std::size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return r.x[a] > r.x[b]; });
  double Z = 0;
  for (std::int64_t i = 0; i < V; ++i) Z = add(Z, e(r.x[i]));
  std::vector<char> keep(static_cast<std::size_t>(V), 0);
  // top-k
  float t_k = r.x[order[static_cast<std::size_t>(k_eff - 1)]];
  if (v == Variant::kApproxThreshold) {
    const std::uint32_t key = topk::order_key(t_k);
    t_k = topk::key_value(key & 0xFFF00000u);  // the bin's lower edge (its smallest key)
  }
  for (std::int64_t q = 0; q < V; ++q) {
    const std::int64_t i = order[static_cast<std::size_t>(q)];
    keep[i] = v == Variant::kTopKByIndex ? q < k_eff : r.x[i] >= t_k;
  }
  // top-p on the sorted order
  if (r.top_p < 1.0) {
    double above = 0, group_above = 0;
    for (std::int64_t q = 0; q < V; ++q) {
      const std::int64_t i = order[static_cast<std::size_t>(q)];
      if (q == 0 || r.x[i] != r.x[order[static_cast<std::size_t>(q - 1)]]) group_above = above;
      const double p = e(r.x[i]);
      bool in_p = group_above < r.top_p * Z;
      if (v == Variant::kTopPExclusive) in_p = above + p < r.top_p * Z;
      if (v == Variant::kTopPPerToken) in_p = above < r.top_p * Z;
      if (!in_p) keep[i] = 0;
      above = add(above, p);
    }
  }
  double s = 0;
  for (std::int64_t i = 0; i < V; ++i)
    if (keep[i]) s += e(r.x[i]);
  if (v == Variant::kNotRenormalised) s = Z;
  for (std::int64_t i = 0; i < V; ++i) {
    float p = keep[i] ? static_cast<float>(e(r.x[i]) / s) : 0.f;
    if (v == Variant::kBf16Values) {
      std::uint16_t b = 0;
      store_from_double(DType::bf16, &b, p);
      p = static_cast<float>(load_as_double(DType::bf16, &b));
    }
    out[i] = p;
  }
}

Row row_of(const WorkloadPlan& p, const HostTensor& logits, std::int64_t b) {
  const std::int64_t V = scalar(p, "V").i;
  return {logits.as<float>() + b * V, V, scalar(p, "k").i, scalar(p, "top_p").f, scalar(p, "temperature").f};
}

HostTensor emulate_expert(const Case& c, ExpertTrace& trace, StatsForm form = StatsForm::kFp64) {
  HostTensor out("probs", DType::f32, {c.axis("B"), c.axis("V")});
  for (std::int64_t b = 0; b < c.axis("B"); ++b)
    expert_row(row_of(c.plan, c.inputs.at(0), b), out.as<float>() + b * c.axis("V"), trace, form);
  return out;
}
HostTensor emulate(Variant v, const Case& c) {
  HostTensor out("probs", DType::f32, {c.axis("B"), c.axis("V")});
  for (std::int64_t b = 0; b < c.axis("B"); ++b) variant_row(v, row_of(c.plan, c.inputs.at(0), b), out.as<float>() + b * c.axis("V"));
  return out;
}

class TopkToppTolerance : public TaskSuite<TopkToppTolerance> {
 public:
  static constexpr const char* kTask = "topk_topp_mask";

 protected:
  static CompareResult judge(const Case& c, const HostTensor& out) {
    return compare(c.plan.outputs.at(0).cmp, c.expected.at(0), out);
  }
  /// Kept tokens per row of the golden.
  static std::vector<std::int64_t> kept(const Case& c) {
    std::vector<std::int64_t> n(static_cast<std::size_t>(c.axis("B")), 0);
    const float* g = c.expected.at(0).as<float>();
    for (std::int64_t b = 0; b < c.axis("B"); ++b)
      for (std::int64_t i = 0; i < c.axis("V"); ++i) n[static_cast<std::size_t>(b)] += g[b * c.axis("V") + i] != 0.f;
    return n;
  }
};

TEST_F(TopkToppTolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 16u);  // every check workload of workloads.jsonl
  // Normal logits at temperature 0.6: over the long rows some are cut by top-p (fewer than k
  // kept), some by top-k (exactly k).
  int by_p = 0, by_k = 0;
  for (const char* uuid : {"check-33x32007-odd", "check-9x128256-llama3", "check-7x151936-qwen2.5", "check-3x262144-gemma"})
    for (std::int64_t q : kept(by_suffix(uuid))) {
      by_p += q < 50;
      by_k += q == 50;
    }
  std::printf("long normal rows: %d cut by top-p, %d by top-k\n", by_p, by_k);
  EXPECT_GE(by_p, 5);
  EXPECT_GE(by_k, 5);
  // Ties at the k-th largest are all kept: hundreds of tokens, and 10000 where a value repeats that often.
  for (std::int64_t q : kept(by_suffix("check-16x4096-ties"))) EXPECT_GT(q, 100);
  for (std::int64_t q : kept(by_suffix("check-4x40000-bigties"))) EXPECT_GT(q, topk::kCap);
  for (std::int64_t q : kept(by_suffix("check-8x1000-const"))) EXPECT_EQ(q, 1000);
  for (std::int64_t q : kept(by_suffix("check-24x5000-k1"))) EXPECT_EQ(q, 1);
  for (std::int64_t q : kept(by_suffix("check-12x20000-k1024-p1"))) EXPECT_EQ(q, 1024);
}

class ExpertDecisions : public TopkToppTolerance, public ::testing::WithParamInterface<StatsForm> {};

// GetParam(): how the statistics are summed (TOPK_LEAN's, the default, and the TOPK_LEAN=0 form
// with its TOPK_W32 and TOPK_C32 variants).
TEST_P(ExpertDecisions, PassEveryCheckWorkload) {
  ExpertTrace total;
  for (const Case& c : *cases_) {
    ExpertTrace t;
    const CompareResult r = judge(c, emulate_expert(c, t, GetParam()));
    std::printf("%-48s max rel %.3g  flagged %d refined %d tie-read %d\n", c.plan.workload.uuid.c_str(), r.max_rel_error,
                t.flagged, t.refined, t.tie_read);
    EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    total.refined += t.refined;
    total.tie_read += t.tie_read;
  }
  // The public workloads reach the refinement digits and the tie-group output path.
  EXPECT_GT(total.refined, 0);
  EXPECT_GT(total.tie_read, 0);
}
INSTANTIATE_TEST_SUITE_P(TopkToppTolerance, ExpertDecisions,
                         ::testing::Values(StatsForm::kFp64, StatsForm::kW32, StatsForm::kC32, StatsForm::kLean),
                         [](const ::testing::TestParamInfo<StatsForm>& i) {
                           return i.param == StatsForm::kFp64  ? "Fp64"
                                  : i.param == StatsForm::kW32 ? "W32"
                                  : i.param == StatsForm::kC32 ? "C32"
                                                               : "Lean";
                         });

// Rows whose top-p mass sits at top_p to within fp32's error: two leading logits 0 and about
// -ln(9)*T (so the top token holds about 0.9 of the mass), the rest far below. The expert's fp32
// pass must flag them and its fp64 decision must match the golden's on both sides of the line.
TEST_F(TopkToppTolerance, RowsAtTopPAreDecidedInFp64LikeTheGolden) {
  Case c = by_suffix("check-64x1000");
  const double T = scalar(c.plan, "temperature").f;
  float* x = c.inputs.at(0).as<float>();
  const std::int64_t V = c.axis("V");
  int decided_each_way[2] = {0, 0};
  // The rest of the row at -8: 998 small terms whose fp32 running sum drifts by far more than the
  // nudges below. Solve 1 = 0.9 * (1 + e1 + rest) for the second token's term e1.
  const double rest = static_cast<double>(V - 2) * std::exp(-8.0 / T);
  const double e1 = 1.0 / 0.9 - 1.0 - rest;
  for (std::int64_t b = 0; b < c.axis("B"); ++b) {
    float* r = x + b * V;
    std::fill(r, r + V, -8.f);
    r[0] = 0.f;
    // Nudge the second logit by up to 32 ulps either way: the exact mass above it crosses 0.9*Z.
    float s = static_cast<float>(std::log(e1) * T);
    for (std::int64_t q = 0; q < b - c.axis("B") / 2; ++q) s = std::nextafter(s, 0.f);
    for (std::int64_t q = 0; q < c.axis("B") / 2 - b; ++q) s = std::nextafter(s, -INFINITY);
    r[1 + b % 7] = s;
  }
  c.expected = poisoned_outputs(c.plan, 0xA5);
  run_host(*ref_, c.plan, c.inputs, c.expected);
  for (std::int64_t b = 0; b < c.axis("B"); ++b) ++decided_each_way[c.expected.at(0).as<float>()[b * V + 1 + b % 7] != 0.f];
  EXPECT_GT(decided_each_way[0], 0);  // the second token dropped (mass above it >= 0.9 Z)
  EXPECT_GT(decided_each_way[1], 0);  // kept
  for (StatsForm form : {StatsForm::kFp64, StatsForm::kW32, StatsForm::kC32, StatsForm::kLean}) {
    ExpertTrace t;
    const CompareResult r = judge(c, emulate_expert(c, t, form));
    EXPECT_TRUE(r.passed) << "form " << static_cast<int>(form) << ": " << r.message;
    EXPECT_GE(t.flagged, c.axis("B") / 2) << "form " << static_cast<int>(form) << ": rows at top_p must be decided in fp64";
  }
  // fp32 running sums (a softmax and a cumulative sum in fp32) keep or drop tokens the rule does not.
  EXPECT_FALSE(judge(c, emulate(Variant::kFp32Sums, c)).passed) << "fp32 top-p decisions passed at top_p";
}

TEST_F(TopkToppTolerance, ApproximateThresholdFails) {
  // Keeping the whole radix bin of the k-th largest adds tokens wherever top-k is what cuts.
  for (const char* uuid : {"check-33x32007-odd", "check-9x128256-llama3", "check-7x151936-qwen2.5",
                           "check-3x262144-gemma", "check-12x20000-k1024-p1"}) {
    const CompareResult r = judge(by_suffix(uuid), emulate(Variant::kApproxThreshold, by_suffix(uuid)));
    EXPECT_FALSE(r.passed) << uuid << " accepted an approximate top-k threshold";
  }
}

TEST_F(TopkToppTolerance, TopKWithoutTiesFails) {
  for (const char* uuid : {"check-16x4096-ties", "check-4x40000-bigties", "check-8x1000-const"}) {
    const CompareResult r = judge(by_suffix(uuid), emulate(Variant::kTopKByIndex, by_suffix(uuid)));
    EXPECT_FALSE(r.passed) << uuid << " accepted a top-k that breaks ties by index";
  }
}

TEST_F(TopkToppTolerance, TopPThatDropsTheCrossingTokenFails) {
  for (const char* uuid : {"check-64x1000", "check-20x8192-p0.1", "check-5x37-vsmallerthank"}) {
    const CompareResult r = judge(by_suffix(uuid), emulate(Variant::kTopPExclusive, by_suffix(uuid)));
    EXPECT_FALSE(r.passed) << uuid << " accepted a top-p that drops the token crossing top_p";
  }
}

TEST_F(TopkToppTolerance, TopPPerTokenFailsOnTieGroups) {
  const CompareResult r = judge(by_suffix("check-16x4096-ties-k1024"), emulate(Variant::kTopPPerToken, by_suffix("check-16x4096-ties-k1024")));
  EXPECT_FALSE(r.passed) << "a top-p that splits a tie group passed";
}

TEST_F(TopkToppTolerance, UnchangedVariantPassesAndValueErrorsFail) {
  for (const Case& c : *cases_) {
    // The variants' fp64 implementation with no change passes: they fail only by their change.
    const CompareResult exact = judge(c, emulate(Variant::kExact, c));
    EXPECT_TRUE(exact.passed) << c.plan.workload.uuid << ": " << exact.message;
    const float* g = c.expected.at(0).as<float>();
    const bool bf16_exact = std::all_of(g, g + c.axis("B") * c.axis("V"), [](float v) {
      std::uint16_t b = 0;
      store_from_double(DType::bf16, &b, v);
      return static_cast<float>(load_as_double(DType::bf16, &b)) == v;
    });
    if (!bf16_exact) {  // k = 1 keeps one token at exactly 1.0
      EXPECT_FALSE(judge(c, emulate(Variant::kBf16Values, c)).passed) << c.plan.workload.uuid << " accepted bf16 values";
    }
    const std::vector<std::int64_t> n = kept(c);
    if (std::any_of(n.begin(), n.end(), [&](std::int64_t q) { return q < c.axis("V"); })) {  // else the kept sum is Z
      EXPECT_FALSE(judge(c, emulate(Variant::kNotRenormalised, c)).passed) << c.plan.workload.uuid << " accepted no renormalisation";
    }
  }
}

// decide() on a synthetic row whose top-p mass sits within fp32's error of top_p: the fp32 pass
// flags it, and the fp64 decision follows the exact arithmetic either way.
TEST(TopkToppDecide, FlagsRowsNearTopPAndDecidesThemExactly) {
  // Two logits 0 and -ln(9)*T apart: p(top) = 0.9 exactly when the rest of the row is empty.
  const double T = 1.0;
  const float top = 0.f, second = static_cast<float>(-std::log(9.0) * T);
  const std::uint32_t keys[2] = {topk::order_key(top), topk::order_key(second)};
  const float c = static_cast<float>(1.4426950408889634 / T);
  topk::RowInput in{2, 0.9, top, c, 0, 0, {}};
  in.bucket.listed = true;
  in.bucket.next_level = topk::kLevels;
  const double z = 1.0 + std::exp(static_cast<double>(second));  // ~ 1/0.9
  in.z = z;
  in.w = std::exp(static_cast<double>(second)) * -((second - top) * c);
  const topk::RowDecision fp32 = topk::decide(in, keys, 2, false, 0.0, 1.0 / T);
  EXPECT_TRUE(fp32.uncertain);
  // Exactly: above(second) = 1 vs 0.9 * z; kept iff 1 < 0.9 * z, i.e. z > 1.111...
  for (double z64 : {1.0 / 0.9 * (1 + 1e-9), 1.0 / 0.9 * (1 - 1e-9)}) {
    const topk::RowDecision d = topk::decide(in, keys, 2, true, z64, 1.0 / T);
    EXPECT_FALSE(d.uncertain);
    EXPECT_EQ(d.n_keep, 1.0 < 0.9 * z64 ? 2 : 1) << "z64 " << z64;
  }
  // Far from top_p the fp32 statistics decide alone.
  in.top_p = 0.5;
  EXPECT_FALSE(topk::decide(in, keys, 2, false, 0.0, 1.0 / T).uncertain);
}

TEST(TopkToppDecide, KeysPreserveOrderAndMergeZeros) {
  const float xs[] = {-INFINITY, -3e38f, -1.f, -1e-40f, -0.f, 0.f, 1e-40f, 1.f, 3e38f, INFINITY};
  for (std::size_t i = 0; i + 1 < sizeof xs / sizeof xs[0]; ++i) {
    if (xs[i] == xs[i + 1]) {
      EXPECT_EQ(topk::order_key(xs[i]), topk::order_key(xs[i + 1]));
    } else {
      EXPECT_LT(topk::order_key(xs[i]), topk::order_key(xs[i + 1])) << xs[i] << " " << xs[i + 1];
    }
    EXPECT_EQ(topk::key_value(topk::order_key(xs[i])), xs[i] == 0.f ? 0.f : xs[i]);
  }
}

// TOPK_LEAN's key shortcuts against the definitions they replace, on every edge of the float
// line: first_digit(x) is the key's first digit; x >= key_floor(from) is key(x) >= from for every
// non-NaN x, for froms at the special keys, at every first-digit bin edge and next to each x's key.
TEST(TopkToppDecide, LeanKeyShortcutsMatchTheKeys) {
  std::vector<float> xs = {-INFINITY, -3.4028235e38f, -1e30f, -1000.f, -1.f, -1.17549435e-38f, -1e-40f, -1.4e-45f,
                           -0.f, 0.f, 1.4e-45f, 1e-40f, 1.17549435e-38f, 1.f, 1000.f, 1e30f, 3.4028235e38f, INFINITY};
  std::uint64_t state = 0x243F6A8885A308D3ull;
  for (int i = 0; i < 4096; ++i) {  // random bit patterns, NaNs skipped
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto u = static_cast<std::uint32_t>(state >> 32);
    float x;
    std::memcpy(&x, &u, sizeof x);
    if (!std::isnan(x)) xs.push_back(x);
  }
  std::vector<std::uint32_t> froms = {0u, 1u, 0x007FFFFEu, 0x007FFFFFu, 0x00800000u, 0x7FFFFFFEu, 0x7FFFFFFFu,
                                      0x80000000u, 0x80000001u, 0xFF7FFFFFu, 0xFF800000u, 0xFF800001u, 0xFFFFFFFFu};
  for (std::uint32_t bin = 0; bin < 4096; ++bin) {
    froms.push_back(bin << 20);
    froms.push_back((bin << 20) | 0xFFFFFu);
  }
  for (float x : xs) {
    const std::uint32_t k = topk::order_key(x);
    froms.push_back(k);
    froms.push_back(k + 1u);
    froms.push_back(k - 1u);
  }
  for (float x : xs) {
    const std::uint32_t k = topk::order_key(x);
    ASSERT_EQ(topk::first_digit(x), topk::digit(k, 0)) << x;
    for (std::uint32_t from : froms) ASSERT_EQ(x >= topk::key_floor(from), k >= from) << x << " from " << from;
  }
}

/// The statistics tests' logits: n normal draws (sd 3, Box-Muller on a 64-bit LCG) on a rising
/// trend of 1e-3 per logit, so that new maxima arrive all along the row and the rescale runs.
std::vector<float> rising_normal_logits(std::uint64_t& state, int n) {
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  };
  std::vector<float> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    xs[static_cast<std::size_t>(i)] = static_cast<float>(3.0 * r * std::cos(6.283185307179586 * uniform()) + 1e-3 * i);
  }
  return xs;
}

// accumulate_batch (TOPK_LEAN): the same maximum as accumulate, z within the terms' own error of
// accumulate's (the batch form takes its terms against the batch's maximum: each term within 2
// roundings of accumulate's, plus exp2's), w within fp32's bound of its fp64 sum and at least the
// true weight of the batch form's own arguments.
TEST(TopkToppDecide, BatchStatisticsStayWithinTheirBounds) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  const float c = static_cast<float>(1.4426950408889634 / 0.6);
  for (int n : {1, 37, 4096, 40000}) {
    topk::Stats a, b;
    const std::vector<float> xs = rising_normal_logits(state, n);
    for (float x : xs) topk::accumulate(a, x, c);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
      float r[16];
      std::copy(xs.begin() + i, xs.begin() + i + 16, r);
      topk::accumulate_batch<16>(b, r, c);
    }
    for (; i < n; ++i) {
      const float r[1] = {xs[static_cast<std::size_t>(i)]};
      topk::accumulate_batch<1>(b, r, c);
    }
    EXPECT_EQ(a.m, b.m);
    // The exact sum of exp2((x - m) c) in fp64 and its exact error weight.
    double z = 0, w = 0;
    for (float x : xs) {
      const double t = (static_cast<double>(x) - a.m) * c;
      z += std::exp2(t);
      w += std::exp2(t) * -t;
    }
    // Both forms within the error bound the decision uses (kTermRel z + kTermRelPerT w), with the
    // factor-2 margin to spare.
    const double bound = 0.5 * (topk::kTermRel * z + topk::kTermRelPerT * w);
    EXPECT_LE(std::fabs(a.z - z), bound) << n << " logits (accumulate)";
    EXPECT_LE(std::fabs(b.z - z), bound) << n << " logits (accumulate_batch)";
    EXPECT_LE(std::fabs(b.w - a.w), (16 * 0x1.0p-24 + n * 0x1.0p-50) * a.w + 1e-300) << n << " logits (batch w)";
  }
}

}  // namespace

// The TOPK_W32 statistics: the same fp32 terms summed in the same order into z (bit for bit), and
// the error weight w within the fp32 sum's bound ((n - 1) * 2^-24 relative for n non-negative
// terms) of the fp64 sum, across new maxima (each folds the fp32 part into w). The TOPK_C32
// statistics: z from the compensated fp32 pair within (n * 2^-24)^2 of the fp64 sum, w as W32.
TEST(TopkToppDecide, Fp32StatisticsStayWithinTheirBounds) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  const float c = static_cast<float>(1.4426950408889634 / 0.6);
  for (int n : {1, 37, 4096, 40000}) {
    topk::Stats a, b, d;
    float wf = 0;
    topk::Part32 q;
    int maxima = 0;
    // A rising trend: new maxima all along the row, as the rescale must fold wf each time.
    for (float x : rising_normal_logits(state, n)) {
      maxima += x > a.m;
      topk::accumulate(a, x, c);
      topk::accumulate_w32(b, wf, x, c);
      topk::accumulate_c32(d, q, x, c);
    }
    topk::flush_w(b, wf);
    topk::fold_c32(d, q);
    EXPECT_EQ(a.m, b.m);
    EXPECT_EQ(a.z, b.z) << n;
    EXPECT_LE(std::fabs(b.w - a.w), n * 0x1.0p-24 * a.w + 1e-300) << n << " logits, " << maxima << " maxima";
    // The compensated fp32 pair: z within (n 2^-24)^2 (and fp64's own rounding) of the fp64 sum.
    const double g = n * 0x1.0p-24;
    EXPECT_EQ(a.m, d.m);
    EXPECT_LE(std::fabs(d.z - a.z), (g * g + n * 0x1.0p-52) * a.z) << n << " logits (c32 z)";
    EXPECT_LE(std::fabs(d.w - a.w), n * 0x1.0p-24 * a.w + 1e-300) << n << " logits (c32 w)";
    if (n >= 4096) {
      EXPECT_GT(maxima, 3) << "the rows must exercise the rescale";
    }
  }
}

// Hidden draws (B up to 48, V up to 40000, one of them long): the golden accepts the inputs and
// the expert's decisions pass there too (the default statistics, TOPK_LEAN's, and TOPK_LEAN=0's).
TEST(TopkToppHidden, ExpertDecisionsPassHiddenDraws) {
  const Task task = load_pilot("topk_topp_mask");
  const LoadedImpl ref = load_reference("topk_topp_mask");
  const std::vector<Workload> hidden = draw_hidden_workloads(task.def, 12345, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(task, ref, w, 3);
    for (StatsForm form : {StatsForm::kFp64, StatsForm::kLean}) {
      ExpertTrace t;
      const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate_expert(c, t, form));
      std::printf("%s (statistics form %d): B %lld, V %lld, flagged %d\n", w.uuid.c_str(), static_cast<int>(form),
                  static_cast<long long>(c.axis("B")), static_cast<long long>(c.axis("V")), t.flagged);
      EXPECT_TRUE(r.passed) << w.uuid << " form " << static_cast<int>(form) << ": " << r.message;
    }
  }
}

// A measurement, not a check (disabled: minutes and ~2 GB on the host): the expert's decisions on
// the bench workloads against the golden, and how many rows the fp32 pass flags for the fp64
// recheck, for each way of summing the statistics (TOPK_LEAN=0, TOPK_W32, TOPK_C32, TOPK_LEAN: the default). Run: task_topk_topp_mask_tolerance_test --gtest_also_run_disabled_tests
//   --gtest_filter='*BenchRows*'
TEST(TopkToppBench, DISABLED_BenchRowsFlagRate) {
  const Task task = load_pilot("topk_topp_mask");
  const LoadedImpl ref = load_reference("topk_topp_mask");
  for (const Workload& w : task.workloads) {
    if (w.role != WorkloadRole::bench) continue;
    Workload as_check = w;
    as_check.role = WorkloadRole::check;
    const Case c = make_case(task, ref, as_check, 1);
    for (StatsForm form : {StatsForm::kFp64, StatsForm::kW32, StatsForm::kC32, StatsForm::kLean}) {
      ExpertTrace t;
      const CompareResult r = compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate_expert(c, t, form));
      std::printf("%s (statistics form %d): %lld rows, flagged %d, refined %d, max rel %.3g, %s\n", w.uuid.c_str(),
                  static_cast<int>(form), static_cast<long long>(c.axis("B")), t.flagged, t.refined, r.max_rel_error,
                  r.passed ? "PASSED" : r.message.c_str());
      EXPECT_TRUE(r.passed) << w.uuid << " form " << static_cast<int>(form);
    }
  }
}
