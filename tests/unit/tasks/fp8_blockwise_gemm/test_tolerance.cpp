// fp8_blockwise_gemm: the comparison rule of definition.json (rel_l2 against the fp64 golden computed
// from the same e4m3 values and scales) checked both ways on the public check workloads and on
// hidden draws. Host emulations of an implementation's arithmetic are judged against the task's
// reference.so under each workload's rule:
//   pass: the expert's (fp8 products summed by the tensor core with an accumulator truncated to 14
//         significant bits, as DeepSeek-V3's report measures for fp8 wgmma, within one 128-block of
//         K; the block partial promoted to fp32 and scaled there: acc = fma(p, sa·sb, acc)); the same
//         with exact fp32 block sums (the library's arithmetic); the naive's (both operands
//         dequantised and rounded to bf16, then one fp32 running sum over K);
//   fail: the per-K-block scaling ignored (block 0's scales used for the whole row); the fp8
//         tensor-core accumulator kept across all of K without promotion (14-bit truncating sums
//         of the scaled products); the B scale read per 128 columns of K only (b_scales[kb] for
//         every row block, the transposed layout); a bf16 running sum (each scaled product added to
//         a bf16 accumulator).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check/compare.h"
#include "core/dtype.h"
#include "unit/tasks/task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

enum class Variant {
  kExpert,          ///< 14-bit truncating tensor-core sums inside each 128-block, fp32 promotion with the scales
  kExactBlocks,     ///< fp32 block sums (k32 steps), fp32 promotion (the library's arithmetic)
  kNaive,           ///< operands dequantised to bf16, one fp32 running sum over K
  kNoBlockScales,   ///< block 0's scales for the whole row: per-K-block scaling ignored
  kNoPromotion,     ///< scaled products in one 14-bit truncating accumulator over all of K
  kTransposedSb,    ///< b_scales read as [K/128, NB] (row block and k block swapped)
  kBf16Accum,       ///< scaled products added to a bf16 running sum
};

constexpr std::int64_t kBlock = 128;

std::int64_t axis(const WorkloadPlan& p, const std::string& name) { return p.axes.at(name); }

float e4m3(std::uint8_t v) { return static_cast<float>(load_as_double(DType::f8e4m3, &v)); }
float bf16_round(float v) {
  std::uint16_t b = 0;
  store_from_double(DType::bf16, &b, v);
  return static_cast<float>(load_as_double(DType::bf16, &b));
}
std::uint16_t to_bf16_bits(float v) {
  std::uint16_t b = 0;
  store_from_double(DType::bf16, &b, v);
  return b;
}

/// v truncated (toward zero) to 14 significant bits, the fp8 tensor core's accumulator: the low 10
/// of fp32's 23 stored mantissa bits cleared (normal values; the sums here never reach subnormals).
float truncate14(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u &= ~0x3FFu;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

/// The sum of 128 (or `count`) products of one k-block, 14-bit truncating after every addition.
float tensor_core_block(const float* a, const float* b, std::int64_t count) {
  float p = 0.f;
  for (std::int64_t k = 0; k < count; ++k) p = truncate14(p + a[k] * b[k]);
  return p;
}
/// The exact-in-fp32 form: four k32 steps (each a plain fp32 sum), added in fp32.
float fp32_block(const float* a, const float* b) {
  float p = 0.f;
  for (int s = 0; s < 4; ++s) {
    float step = 0.f;
    for (int k = 32 * s; k < 32 * s + 32; ++k) step += a[k] * b[k];
    p += step;
  }
  return p;
}

/// One output c[m, n] in fp32 by variant `v`'s arithmetic. ar, br: the rows of A and B decoded.
float dot(Variant v, const float* ar, const float* br, const float* sa_row, const float* sb, std::int64_t n,
          std::int64_t K, std::int64_t NB) {
  const std::int64_t KB = K / kBlock;
  const float* sb_row = sb + (n / kBlock) * KB;
  float acc = 0.f;
  switch (v) {
    case Variant::kNaive:
      for (std::int64_t k = 0; k < K; ++k)
        acc += bf16_round(ar[k] * sa_row[k / kBlock]) * bf16_round(br[k] * sb_row[k / kBlock]);
      return acc;
    case Variant::kBf16Accum:
      for (std::int64_t k = 0; k < K; ++k) acc = bf16_round(acc + ar[k] * br[k] * (sa_row[k / kBlock] * sb_row[k / kBlock]));
      return acc;
    case Variant::kNoPromotion:
      for (std::int64_t k = 0; k < K; ++k)
        acc = truncate14(acc + ar[k] * br[k] * (sa_row[k / kBlock] * sb_row[k / kBlock]));
      return acc;
    default:
      break;
  }
  for (std::int64_t kb = 0; kb < KB; ++kb) {
    const float* a = ar + kb * kBlock;
    const float* b = br + kb * kBlock;
    float sa = sa_row[kb], sbv = sb_row[kb];
    if (v == Variant::kNoBlockScales) sa = sa_row[0], sbv = sb_row[0];
    if (v == Variant::kTransposedSb) sbv = sb[(kb * NB + n / kBlock) % (NB * KB)];
    const float p = v == Variant::kExpert ? tensor_core_block(a, b, kBlock) : fp32_block(a, b);
    acc = std::fmaf(p, sa * sbv, acc);
  }
  return acc;
}

HostTensor emulate(Variant v, const WorkloadPlan& p, const std::vector<HostTensor>& in) {
  const std::int64_t M = axis(p, "M"), N = axis(p, "N"), K = axis(p, "K");
  const std::int64_t KB = K / kBlock, NB = (N + kBlock - 1) / kBlock;
  HostTensor c("c", DType::bf16, {M, N});
  const auto* a = in.at(0).as<std::uint8_t>();
  const auto* b = in.at(1).as<std::uint8_t>();
  const auto* sa = in.at(2).as<float>();
  const auto* sb = in.at(3).as<float>();
  auto* cp = c.as<std::uint16_t>();
  std::vector<float> bd(static_cast<std::size_t>(N * K)), ad(static_cast<std::size_t>(K));
  for (std::int64_t i = 0; i < N * K; ++i) bd[static_cast<std::size_t>(i)] = e4m3(b[i]);
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t k = 0; k < K; ++k) ad[static_cast<std::size_t>(k)] = e4m3(a[m * K + k]);
    for (std::int64_t n = 0; n < N; ++n)
      cp[m * N + n] = to_bf16_bits(dot(v, ad.data(), bd.data() + n * K, sa + m * KB, sb, n, K, NB));
  }
  return c;
}

CompareResult judge(Variant v, const Case& c) {
  return compare(c.plan.outputs.at(0).cmp, c.expected.at(0), emulate(v, c.plan, c.inputs));
}

void report(const char* what, const Case& c, const CompareResult& r) {
  std::printf("%-14s %-48s rel_l2 %.3g  max|err| %.4g  %s\n", what, c.plan.workload.uuid.c_str(), r.rel_l2,
              r.max_abs_error, r.passed ? "pass" : "FAIL");
}

class Fp8GemmTolerance : public TaskSuite<Fp8GemmTolerance> {
 public:
  static constexpr const char* kTask = "fp8_blockwise_gemm";
};

TEST_F(Fp8GemmTolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 8u);
  bool m_one = false, partial_n = false, partial_m = false, k128 = false, k256 = false;
  for (const Case& c : *cases_) {
    const std::int64_t M = axis(c.plan, "M"), N = axis(c.plan, "N"), K = axis(c.plan, "K");
    m_one |= M == 1;
    partial_n |= N % kBlock != 0 && N > kBlock;
    partial_m |= M % kBlock != 0 && M > kBlock;
    k128 |= K == 128;
    k256 |= K == 256;
  }
  EXPECT_TRUE(m_one && partial_n && partial_m && k128 && k256);
}

TEST_F(Fp8GemmTolerance, GoldenIsNotTrivial) {
  for (const Case& c : *cases_) {
    const auto* g = c.expected.at(0).as<std::uint16_t>();
    std::int64_t nonzero = 0;
    for (std::int64_t i = 0; i < c.expected.at(0).numel(); ++i) nonzero += (g[i] & 0x7FFF) != 0;
    EXPECT_GT(nonzero, c.expected.at(0).numel() / 2) << c.plan.workload.uuid;
  }
}

TEST_F(Fp8GemmTolerance, ExpertLibraryAndNaiveArithmeticPass) {
  for (const Case& c : *cases_)
    for (Variant v : {Variant::kExpert, Variant::kExactBlocks, Variant::kNaive}) {
      const CompareResult r = judge(v, c);
      report(v == Variant::kExpert ? "expert" : v == Variant::kNaive ? "naive" : "fp32 blocks", c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    }
}

TEST_F(Fp8GemmTolerance, IgnoringPerBlockScalesFails) {
  for (const Case& c : *cases_) {
    if (axis(c.plan, "K") == kBlock) continue;  // one block: nothing to ignore
    const CompareResult r = judge(Variant::kNoBlockScales, c);
    report("no blk scales", c, r);
    EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted block 0's scales for all of K";
  }
}

// Over one or two blocks of K promotion changes little; from eight blocks on, a 14-bit accumulator
// kept across all of K must fail (one-sign sums drift, random sums lose their small terms).
TEST_F(Fp8GemmTolerance, AccumulatingWithoutPromotionFails) {
  for (const Case& c : *cases_) {
    const CompareResult r = judge(Variant::kNoPromotion, c);
    report("no promotion", c, r);
    if (axis(c.plan, "K") >= 1024) {
      EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted a 14-bit accumulator without promotion";
    }
  }
}

TEST_F(Fp8GemmTolerance, TransposedBScalesFail) {
  for (const Case& c : *cases_) {
    // with one block row or one k block the transposed index is the same scale
    if (axis(c.plan, "K") == kBlock || axis(c.plan, "N") <= kBlock) continue;
    const CompareResult r = judge(Variant::kTransposedSb, c);
    report("sb transposed", c, r);
    EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted b_scales read transposed";
  }
}

TEST_F(Fp8GemmTolerance, Bf16AccumulationFails) {
  int failed = 0;
  for (const Case& c : *cases_) {
    const CompareResult r = judge(Variant::kBf16Accum, c);
    report("bf16 accum", c, r);
    failed += !r.passed;
    if (axis(c.plan, "K") >= 1024) {
      EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted a bf16 running sum";
    }
  }
  EXPECT_GE(failed, 1);
}

// Hidden draws (M, N up to hidden_max, N a multiple of 8, K up to 1024) under the definition's rule:
// the honest arithmetic passes there too.
TEST(Fp8GemmHidden, HonestArithmeticPassesHiddenDraws) {
  const Task task = load_pilot("fp8_blockwise_gemm");
  const std::vector<Workload> hidden = draw_hidden_workloads(task.def, 12345, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Case& c : make_cases(task, load_reference("fp8_blockwise_gemm"), hidden, 3)) {
    std::printf("%s: M %lld N %lld K %lld\n", c.plan.workload.uuid.c_str(), static_cast<long long>(axis(c.plan, "M")),
                static_cast<long long>(axis(c.plan, "N")), static_cast<long long>(axis(c.plan, "K")));
    for (Variant v : {Variant::kExpert, Variant::kNaive}) {
      const CompareResult r = judge(v, c);
      report(v == Variant::kExpert ? "expert" : "naive", c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    }
  }
}

}  // namespace
