// moe_grouped_gemm, tolerance checked both ways: variants of the grouped GEMM emulated on the host
// as a GPU computes them (bf16 products exact in fp32, fp32 accumulators, one rounding to bf16),
// judged against the fp64 golden under the task's own rel_l2 rule on every check workload and on
// hidden draws. The honest arithmetic passes, through the expert's own group-row code
// (moe_gemm_args.h: group_rows) and with either operand order (its swap-AB path sums the same
// products); bf16 accumulation, split-K through bf16 partials, a truncated output and a wrong
// group boundary fail. The workloads themselves are
// checked too: the check set covers E = 1, a one-row group, empty experts and sizes that are not
// multiples of 128, and at the bench skews every expert owns rows (the cost model counts every
// expert's weights).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "data/generators.h"
#include "moe_gemm_args.h"
#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {
namespace {

/// How a variant computes.
struct Arith {
  bool bf16_acc = false;       ///< every partial sum rounded to bf16 (a bf16 accumulator)
  bool shifted_boundary = false;  ///< each non-empty expert after the first starts one row late:
                                  ///< its first row is multiplied by the previous expert's weight
  int kblock = 64;             ///< fp32 partial sums per K-block of this width, then added (wgmma's k-tiles)
  int bf16_splits = 0;         ///< > 0: split-K into this many slices whose fp32 partials are stored as bf16, then summed
  bool truncate = false;       ///< output rounded toward zero instead of to nearest even
};

const Task& task() {
  static const Task t = load_pilot("moe_grouped_gemm");
  return t;
}

/// y = x_e · w_e^T per group, in the variant's arithmetic; groups from the expert's group_rows.
std::vector<HostTensor> run_variant(const Case& c, const Arith& a) {
  const std::int64_t E = c.axis("E"), T = c.axis("T"), K = c.axis("K"), N = c.axis("N");
  const HostTensor& x = c.in("x");
  const HostTensor& w = c.in("w");
  const auto* off = c.in("offsets").as<std::int32_t>();
  std::vector<HostTensor> out = c.outputs();
  HostTensor& y = out[c.out_index("y")];
  auto acc_round = [&](float v) { return a.bf16_acc ? bf16_rn(v) : v; };
  std::int64_t owner_prev = -1;
  std::vector<std::int64_t> owner(static_cast<std::size_t>(T), -1);
  for (std::int64_t e = 0; e < E; ++e) {
    const moe_gemm::Rows r = moe_gemm::group_rows(off, int(e), int(T));
    for (int t = r.begin; t < r.begin + r.count; ++t) owner[std::size_t(t)] = e;
    if (a.shifted_boundary && r.count > 0 && owner_prev >= 0) owner[std::size_t(r.begin)] = owner_prev;
    if (r.count > 0) owner_prev = e;
  }
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t e = owner[std::size_t(t)];
    EXPECT_GE(e, 0) << "row " << t << " belongs to no expert";
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t slice = a.bf16_splits > 0 ? (K + a.bf16_splits - 1) / a.bf16_splits : K;
      float total = 0.f;
      for (std::int64_t s0 = 0; s0 < K; s0 += slice) {
        float sum = 0.f;
        for (std::int64_t k0 = s0; k0 < std::min(K, s0 + slice); k0 += a.kblock) {
          float part = 0.f;
          for (std::int64_t k = k0; k < std::min({K, k0 + a.kblock, s0 + slice}); ++k)
            part = acc_round(std::fma(bf16_at(x, t * K + k), bf16_at(w, (e * N + n) * K + k), part));
          sum = acc_round(sum + part);
        }
        total += a.bf16_splits > 0 ? bf16_rn(sum) : sum;
      }
      set_bf16(y, t * N + n, a.truncate ? bf16_rz(total) : total);
    }
  }
  return out;
}

struct Named {
  const char* name;
  Arith arith;
  bool honest;
};

const std::vector<Named>& variants() {
  static const std::vector<Named> v = {
      {"fp32 accumulation, k-blocks of 64", {}, true},
      {"fp32 accumulation, one running sum", {false, false, 1 << 30}, true},
      {"bf16 accumulation", {true, false, 64}, false},
      {"split-K, 4 bf16 partials", {false, false, 64, 4}, false},
      {"output truncated to bf16", {false, false, 64, 0, true}, false},
      {"group boundary one row late", {false, true, 64}, false},
  };
  return v;
}

/// Whether a workload has a boundary between two non-empty experts (else the shifted variant is
/// the honest one).
bool has_inner_boundary(const Case& c) {
  const auto* off = c.in("offsets").as<std::int32_t>();
  int nonempty = 0;
  for (std::int64_t e = 0; e < c.axis("E"); ++e) nonempty += off[e + 1] > off[e];
  return nonempty > 1;
}

TEST(ToleranceMoeGroupedGemm, CheaperOrWrongVariantsFailAndHonestPass) {
  const LoadedImpl ref = load_reference("moe_grouped_gemm");
  for (const Workload& w : check_workloads(task())) {
    for (std::uint64_t seed : {1ull, 77ull}) {
      const Case c = make_case(task(), ref, w, seed);
      for (const Named& v : variants()) {
        if (v.arith.shifted_boundary && !has_inner_boundary(c)) continue;
        const OutputsVerdict verdict = judge(c, run_variant(c, v.arith));
        const double rel = verdict.checks.empty() ? -1 : verdict.checks.at(0).rel_l2;
        std::printf("%-46s %-36s seed %2llu rel_l2 %.3e\n", w.uuid.c_str(), v.name,
                    static_cast<unsigned long long>(seed), rel);
        if (v.honest) {
          EXPECT_EQ(verdict.status, Status::PASSED) << v.name << " at " << w.uuid << ": " << verdict.message;
        } else {
          EXPECT_EQ(verdict.status, Status::INCORRECT_NUMERICAL) << v.name << " passes at " << w.uuid;
        }
      }
    }
  }
}

TEST(ToleranceMoeGroupedGemm, HiddenDrawsPassHonestArithmetic) {
  const LoadedImpl ref = load_reference("moe_grouped_gemm");
  const std::vector<Workload> hidden = draw_hidden_workloads(task().def, 424242, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(task(), ref, w, 3);
    const auto* off = c.in("offsets").as<std::int32_t>();
    EXPECT_EQ(off[c.axis("E")], c.axis("T")) << "offsets follow the hidden draw's T (rows_of)";
    EXPECT_EQ(judge(c, run_variant(c, {})).status, Status::PASSED) << w.uuid;
  }
}

/// The offsets input of workload `w` at `seed`, drawn alone (no need to draw x or w).
std::vector<std::int32_t> offsets_of(const Workload& w, std::uint64_t seed) {
  const WorkloadPlan plan = make_plan(task(), w);
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    if (plan.inputs[i].name != "offsets") continue;
    HostTensor t;
    generate_host(gen_request(plan, i, seed), t);
    return std::vector<std::int32_t>(t.as<std::int32_t>(), t.as<std::int32_t>() + t.numel());
  }
  throw std::runtime_error("no offsets input");
}

TEST(ToleranceMoeGroupedGemm, CheckWorkloadsCoverTheGroupEdges) {
  bool e1 = false, one_row = false, empty = false, ragged = false, more_experts_than_rows = false;
  bool swap_path = false, large_multi = false;
  for (const Workload& w : check_workloads(task())) {
    const auto o = offsets_of(w, 1);
    const std::int64_t E = w.axes.at("E"), T = w.axes.at("T");
    swap_path |= moe_gemm::small_groups(E, T);
    large_multi |= !moe_gemm::small_groups(E, T) && E > 1;
    ASSERT_EQ(o.front(), 0);
    ASSERT_EQ(o.back(), T) << w.uuid;
    e1 |= E == 1;
    more_experts_than_rows |= E > T;
    for (std::int64_t e = 0; e < E; ++e) {
      const std::int32_t rows = o[std::size_t(e) + 1] - o[std::size_t(e)];
      one_row |= rows == 1;
      empty |= rows == 0;
      ragged |= rows > 1 && rows % 128 != 0 && rows % 64 != 0;
    }
  }
  EXPECT_TRUE(e1);
  EXPECT_TRUE(one_row);
  EXPECT_TRUE(empty);
  EXPECT_TRUE(ragged);
  EXPECT_TRUE(more_experts_than_rows);
  // Both tile paths of the expert, the large one with more than one expert.
  EXPECT_TRUE(swap_path);
  EXPECT_TRUE(large_multi);
  // The skewed workload has a dominant expert (a real router's hot expert).
  for (const Workload& w : task().workloads) {
    if (w.uuid.find("skewed") == std::string::npos) continue;
    const auto o = offsets_of(w, 1);
    std::int32_t largest = 0;
    for (std::size_t e = 0; e + 1 < o.size(); ++e) largest = std::max(largest, o[e + 1] - o[e]);
    EXPECT_GT(largest, 3 * w.axes.at("T") / w.axes.at("E")) << w.uuid;
  }
}

// The cost model counts every expert's weights as compulsory bytes; that is the least work only
// where every expert owns rows. At the bench skews it holds for the Mixtral and Qwen shapes at
// every seed tried, and the DeepSeek shape (32 rows per expert) rarely has an empty expert.
TEST(ToleranceMoeGroupedGemm, BenchExpertsOwnRows) {
  int deepseek_empty = 0, deepseek_runs = 0;
  for (const Workload& w : task().workloads) {
    if (w.role != WorkloadRole::bench) continue;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const auto o = offsets_of(w, seed);
      ASSERT_EQ(o.back(), w.axes.at("T"));
      int empty = 0;
      std::int32_t largest = 0;
      for (std::size_t e = 0; e + 1 < o.size(); ++e) {
        empty += o[e + 1] == o[e];
        largest = std::max(largest, o[e + 1] - o[e]);
      }
      if (w.axes.at("E") == 128) {
        deepseek_empty += empty;
        ++deepseek_runs;
      } else {
        EXPECT_EQ(empty, 0) << w.uuid << " seed " << seed;
      }
      // Skewed, as a router's loads are: the hottest expert well above the mean.
      EXPECT_GT(largest, 5 * w.axes.at("T") / w.axes.at("E") / 4) << w.uuid << " seed " << seed;
    }
  }
  ASSERT_GT(deepseek_runs, 0);
  std::printf("DeepSeek shape: %d empty experts over %d draws of 128\n", deepseek_empty, deepseek_runs);
  EXPECT_LE(deepseek_empty, deepseek_runs);  // under one empty expert per draw on average
}

// The expert's group rows: exactly the offsets' partition when they are valid; inside [0, T]
// and non-overlapping in order when they are not.
TEST(ToleranceMoeGroupedGemm, ExpertGroupRowsStayInBounds) {
  const std::int32_t good[] = {0, 0, 3, 3, 9, 10};
  int next = 0;
  for (int e = 0; e < 5; ++e) {
    const moe_gemm::Rows r = moe_gemm::group_rows(good, e, 10);
    EXPECT_EQ(r.begin, good[e]);
    EXPECT_EQ(r.count, good[e + 1] - good[e]);
    EXPECT_EQ(r.begin, next);
    next = r.begin + r.count;
  }
  const std::int32_t bad[] = {-5, 40, 2, -1, 1 << 30};
  for (int e = 0; e < 4; ++e) {
    const moe_gemm::Rows r = moe_gemm::group_rows(bad, e, 10);
    EXPECT_GE(r.begin, 0);
    EXPECT_GE(r.count, 0);
    EXPECT_LE(r.begin + r.count, 10) << e;
  }
}

}  // namespace
}  // namespace d2k::tolerance_test
