// w4a16_gemv: the comparison rule of definition.json checked both ways on the public check
// workloads and on hidden draws. Host emulations of an implementation's arithmetic are compared
// with the fp64 golden (the task's reference.so, inputs from the task's generators) under each
// workload's effective rule:
//   pass: the expert's order (exact (q - 8) codes, fp32 partial per group of 128 in steps of 16 as
//         mma.sync accumulates, fp32 FMA with the scale, groups split over warps and the warps'
//         sums added in order); the naive's (each weight rounded to bf16 as the dequantise kernel
//         stores it, then one fp32 running sum over K, the least accurate fp32 order);
//   fail: a bf16 running sum; bf16 sums within each group of 128 (fp32 across groups); AWQ's
//         interleaved nibble order read as sequential; signed two's-complement codes instead of
//         offset 8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "check/compare.h"
#include "core/diagnostics.h"
#include "core/dtype.h"
#include "core/task_loader.h"
#include "core/workload.h"
#include "engine/host_backend.h"
#include "engine/plan.h"
#include "exec/loader.h"

namespace fs = std::filesystem;
using namespace d2k;

namespace {

enum class Variant {
  kExpert,         ///< exact codes; fp32 group partials in k16 steps; fp32 FMA with the scale; 8 warps
  kNaive,          ///< w rounded to bf16, one fp32 running sum over K
  kBf16Sum,        ///< the running sum rounded to bf16 after every addition
  kBf16GroupSum,   ///< bf16 running sum within each group of 128, fp32 across groups
  kAwqOrder,       ///< nibbles read in AWQ's interleaved order (0, 2, 4, 6, 1, 3, 5, 7)
  kSignedCodes,    ///< codes as two's-complement int4 (q >= 8 ? q - 16 : q) instead of q - 8
};

constexpr std::int64_t kGroup = 128;

float bf16_bits_to_float(std::uint16_t b) { return static_cast<float>(load_as_double(DType::bf16, &b)); }
std::uint16_t float_to_bf16_bits(float v) {
  std::uint16_t b = 0;
  store_from_double(DType::bf16, &b, v);
  return b;
}
float bf16_round(float v) { return bf16_bits_to_float(float_to_bf16_bits(v)); }

const Task& task() {
  static const Task t = [] {
    Diagnostics diag;
    Task loaded = load_task(fs::path(D2K_SOURCE_DIR) / "dataset/w4a16_gemv", diag);
    if (!diag.ok()) throw std::runtime_error("w4a16_gemv does not load: " + diag.format());
    return loaded;
  }();
  return t;
}

std::int64_t axis(const WorkloadPlan& p, const std::string& name) { return p.axes.at(name); }

/// The weight code of (n, k) as variant `v` reads it, as a float (exact).
float code(Variant v, const std::uint32_t* qrow, std::int64_t k) {
  static constexpr int kAwq[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // AWQ stores k = j at nibble kAwq[j]
  const int j = static_cast<int>(k % 8);
  const int nib = v == Variant::kAwqOrder ? kAwq[j] : j;
  const int q = static_cast<int>((qrow[k / 8] >> (4 * nib)) & 15u);
  if (v == Variant::kSignedCodes) return static_cast<float>(q >= 8 ? q - 16 : q);
  return static_cast<float>(q - 8);
}

/// One output y[b, n] in fp32 by variant `v`'s arithmetic.
float dot(Variant v, const std::uint16_t* xr, const std::uint32_t* qrow, const std::uint16_t* srow, std::int64_t K) {
  const std::int64_t G = K / kGroup;
  switch (v) {
    case Variant::kExpert: {
      constexpr int kWarps = 8;
      float warp_acc[kWarps] = {};
      for (std::int64_t g = 0; g < G; ++g) {
        float p = 0.f;  // the mma accumulator of this group: 8 steps of 16 products
        for (std::int64_t k0 = g * kGroup; k0 < (g + 1) * kGroup; k0 += 16) {
          float step = 0.f;
          for (std::int64_t k = k0; k < k0 + 16; ++k) step += bf16_bits_to_float(xr[k]) * code(v, qrow, k);
          p += step;
        }
        float& acc = warp_acc[g % kWarps];
        acc = std::fmaf(bf16_bits_to_float(srow[g]), p, acc);
      }
      float y = 0.f;
      for (float a : warp_acc) y += a;
      return y;
    }
    case Variant::kBf16GroupSum: {
      float y = 0.f;
      for (std::int64_t g = 0; g < G; ++g) {
        float p = 0.f;
        for (std::int64_t k = g * kGroup; k < (g + 1) * kGroup; ++k)
          p = bf16_round(p + bf16_bits_to_float(xr[k]) * code(v, qrow, k));
        y = std::fmaf(bf16_bits_to_float(srow[g]), p, y);
      }
      return y;
    }
    default: {
      float y = 0.f;
      for (std::int64_t k = 0; k < K; ++k) {
        float w = code(v, qrow, k) * bf16_bits_to_float(srow[k / kGroup]);
        if (v == Variant::kNaive || v == Variant::kBf16Sum) w = bf16_round(w);
        y += bf16_bits_to_float(xr[k]) * w;
        if (v == Variant::kBf16Sum) y = bf16_round(y);
      }
      return y;
    }
  }
}

HostTensor emulate(Variant v, const WorkloadPlan& p, const std::vector<HostTensor>& in) {
  const std::int64_t B = axis(p, "B"), N = axis(p, "N"), K = axis(p, "K");
  HostTensor y("y", DType::bf16, {B, N});
  const auto* x = in.at(0).as<std::uint16_t>();
  const auto* q = in.at(1).as<std::uint32_t>();
  const auto* s = in.at(2).as<std::uint16_t>();
  auto* yp = y.as<std::uint16_t>();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t b = 0; b < B; ++b)
      yp[b * N + n] = float_to_bf16_bits(dot(v, x + b * K, q + n * (K / 8), s + n * (K / kGroup), K));
  return y;
}

struct Case {
  WorkloadPlan plan;
  std::vector<HostTensor> inputs, golden;
};

std::vector<Case> make_cases(const std::vector<Workload>& workloads, std::uint64_t seed) {
  LoadedImpl ref = load_impl(fs::path(D2K_BINARY_DIR) / "impl/w4a16_gemv/reference.so");
  std::vector<Case> out;
  for (const Workload& w : workloads) {
    Case c{make_plan(task(), w), {}, {}};
    c.inputs = generate_inputs_host(c.plan, seed);
    c.golden = poisoned_outputs(c.plan, 0xA5);
    run_host(ref, c.plan, c.inputs, c.golden);
    out.push_back(std::move(c));
  }
  return out;
}

CompareResult judge(Variant v, const Case& c) {
  return compare(c.plan.outputs.at(0).cmp, c.golden.at(0), emulate(v, c.plan, c.inputs));
}

class W4A16Tolerance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<Workload> checks;
    for (const Workload& w : task().workloads)
      if (w.role == WorkloadRole::check) checks.push_back(w);
    cases_ = new std::vector<Case>(make_cases(checks, kSeed));
  }
  static void TearDownTestSuite() {
    delete cases_;
    cases_ = nullptr;
  }
  static constexpr std::uint64_t kSeed = 1;
  static std::vector<Case>* cases_;
};
std::vector<Case>* W4A16Tolerance::cases_ = nullptr;

void report(const char* what, const Case& c, const CompareResult& r) {
  std::printf("%-14s %-40s max|err| %.4g  rel_l2 %.3g  mismatches %lld/%lld\n", what, c.plan.workload.uuid.c_str(),
              r.max_abs_error, r.rel_l2, static_cast<long long>(r.mismatches), static_cast<long long>(r.checked));
}

TEST_F(W4A16Tolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 7u);
  bool odd_n = false, k_long = false, b_max = false;
  for (const Case& c : *cases_) {
    odd_n |= axis(c.plan, "N") % 16 != 0;
    k_long |= axis(c.plan, "K") >= 28672;
    b_max |= axis(c.plan, "B") == 16;
  }
  EXPECT_TRUE(odd_n && k_long && b_max);
}

TEST_F(W4A16Tolerance, ExpertAndNaiveArithmeticPass) {
  for (const Case& c : *cases_)
    for (Variant v : {Variant::kExpert, Variant::kNaive}) {
      const CompareResult r = judge(v, c);
      report(v == Variant::kExpert ? "expert" : "naive", c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    }
}

TEST_F(W4A16Tolerance, Bf16RunningSumFails) {
  for (const Case& c : *cases_) {
    if (axis(c.plan, "K") < 1024 || axis(c.plan, "B") * axis(c.plan, "N") < 32) continue;  // short sums: bf16 can be lucky
    const CompareResult r = judge(Variant::kBf16Sum, c);
    report("bf16 sum", c, r);
    EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted a bf16 running sum";
  }
}

TEST_F(W4A16Tolerance, Bf16SumsWithinGroupsFail) {
  for (const Case& c : *cases_) {
    if (axis(c.plan, "B") * axis(c.plan, "N") < 32) continue;
    const CompareResult r = judge(Variant::kBf16GroupSum, c);
    report("bf16 group", c, r);
    EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted bf16 sums within groups";
  }
}

TEST_F(W4A16Tolerance, WrongPackingFormatsFail) {
  for (const Case& c : *cases_) {
    if (c.plan.workload.uuid.find("allmax") != std::string::npos) continue;  // every code equal: order-blind
    for (Variant v : {Variant::kAwqOrder, Variant::kSignedCodes}) {
      const CompareResult r = judge(v, c);
      EXPECT_FALSE(r.passed) << c.plan.workload.uuid << " accepted variant " << static_cast<int>(v);
    }
  }
  // All codes 15: the signed reading gives -1 instead of +7.
  for (const Case& c : *cases_) {
    if (c.plan.workload.uuid.find("allmax") != std::string::npos) EXPECT_FALSE(judge(Variant::kSignedCodes, c).passed);
  }
}

}  // namespace

// Hidden draws (odd N, K up to hidden_max, B up to 16) under the definition's default rule: the
// honest arithmetic passes there too.
TEST(W4A16Hidden, ExpertAndNaivePassHiddenDraws) {
  const std::vector<Workload> hidden = draw_hidden_workloads(task().def, 12345, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Case& c : make_cases(hidden, 3)) {
    std::printf("%s: B %lld N %lld K %lld\n", c.plan.workload.uuid.c_str(), static_cast<long long>(axis(c.plan, "B")),
                static_cast<long long>(axis(c.plan, "N")), static_cast<long long>(axis(c.plan, "K")));
    for (Variant v : {Variant::kExpert, Variant::kNaive}) {
      const CompareResult r = judge(v, c);
      report(v == Variant::kExpert ? "expert" : "naive", c, r);
      EXPECT_TRUE(r.passed) << c.plan.workload.uuid << ": " << r.message;
    }
  }
}
