// fused_adamw: the comparison rules of definition.json checked both ways on the public check
// workloads and on hidden draws. Host emulations of an implementation's arithmetic are compared
// with the fp64 golden (the task's reference.so, inputs from the task's generators) by the
// engine's judge under each workload's effective rules:
//   pass: the expert's (sum of squares in fp32 over 8 lane accumulators per thread of a grid-
//         stride share, or of a contiguous slice per CTA on the one-read path, CTA trees,
//         partials summed in double; the clip coefficient rounded to fp32; the update with fmaf
//         as expert.cu writes it); the naive's (per-tensor fp32 norms,
//         the norm of the norms in fp32, then PyTorch's single-tensor ops each rounded to fp32:
//         lerp, mul + addcmul, sqrt, div, add, addcdiv);
//   fail: m and v kept in bf16; the norm accumulated in bf16; clipping skipped; the clipped grad
//         rounded back to bf16 (clip_grad_norm_ on the bf16 grads in place); the bias
//         corrections skipped; the step count off by one; weight decay as an L2 term in the grad
//         (Adam, not AdamW); the bf16 copy truncated instead of rounded.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <string>
#include <vector>

#include "../task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

enum class Variant {
  kExpert,
  kExpertOneRead,  ///< the expert's one-read path: 132 contiguous slices of 1024 threads
  kNaive,
  kBf16States,     ///< m_out and v_out rounded to bf16 (and the update computed from them)
  kBf16Norm,       ///< the sum of squares rounded to bf16 after every addition
  kNoClip,         ///< the clipping coefficient taken as 1
  kBf16ClippedGrad,///< g = bf16(grad * clip), as clip_grad_norm_ in place on bf16 grads
  kNoBiasCorrection,
  kStepOffByOne,   ///< bias corrections of step + 1
  kL2Decay,        ///< g += wd * p (Adam with L2), no decoupled decay
  kTruncatedCopy,  ///< param_bf16_out = bf16 round-toward-zero of param_out
};

const char* name(Variant v) {
  switch (v) {
    case Variant::kExpert: return "expert";
    case Variant::kExpertOneRead: return "expert one-read";
    case Variant::kNaive: return "naive";
    case Variant::kBf16States: return "bf16 states";
    case Variant::kBf16Norm: return "bf16 norm";
    case Variant::kNoClip: return "no clip";
    case Variant::kBf16ClippedGrad: return "bf16 clipped grad";
    case Variant::kNoBiasCorrection: return "no bias correction";
    case Variant::kStepOffByOne: return "step off by one";
    case Variant::kL2Decay: return "L2 decay";
    case Variant::kTruncatedCopy: return "truncated bf16 copy";
  }
  return "?";
}

const Task& task() {
  static const Task t = load_pilot("fused_adamw");
  return t;
}

const LoadedImpl& reference() {
  static const LoadedImpl r = load_reference("fused_adamw");
  return r;
}

struct Hyper {
  double lr, beta1, beta2, eps, wd, max_norm;
  std::int64_t step;
};

Hyper hyper(const WorkloadPlan& p) {
  auto f = [&](const char* n) {
    for (const auto& s : p.scalars)
      if (s.name == n) return s.f;
    throw std::runtime_error(std::string("no scalar ") + n);
  };
  std::int64_t step = 0;
  for (const auto& s : p.scalars)
    if (s.name == "step") step = s.i;
  return {f("lr"), f("beta1"), f("beta2"), f("eps"), f("weight_decay"), f("max_norm"), step};
}

/// The expert's sum of squares: a grid of `ctas` x 512 threads, thread t taking 8-element vectors
/// t, t + stride, ... into 8 fp32 lane accumulators, the tail scalar; CTA sums in fp32; the
/// partials summed in double.
double expert_sumsq(const HostTensor& grad, std::int64_t P, bool bf16_acc) {
  const std::int64_t threads = 512, nvec = P / 8;
  const std::int64_t ctas = std::max<std::int64_t>(1, std::min<std::int64_t>((nvec + threads - 1) / threads, 528));
  const std::int64_t stride = ctas * threads;
  double total = 0.0;
  for (std::int64_t c = 0; c < ctas; ++c) {
    float cta = 0.f;
    for (std::int64_t t = c * threads; t < (c + 1) * threads; ++t) {
      float lane[8] = {};
      for (std::int64_t i = t; i < nvec; i += stride)
        for (int k = 0; k < 8; ++k) {
          const float a = bf16_at(grad, 8 * i + k);
          lane[k] = std::fmaf(a, a, lane[k]);
          if (bf16_acc) lane[k] = bf16_rn(lane[k]);
        }
      float acc = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
      for (std::int64_t i = nvec * 8 + t; i < P; i += stride) {
        const float a = bf16_at(grad, i);
        acc = std::fmaf(a, a, acc);
      }
      cta += acc;  // (the kernel's tree order differs; the rounding scale is the same)
      if (bf16_acc) cta = bf16_rn(cta);
    }
    total += cta;
  }
  return total;
}

/// The expert's one-read path: CTA b of 132 sums vectors [b*slice, (b+1)*slice) with thread t
/// taking t, t + 1024, ... into 8 lane accumulators; CTA 0 adds the tail; partials in double.
double expert_one_read_sumsq(const HostTensor& grad, std::int64_t P) {
  const std::int64_t sms = 132, threads = 1024, nvec = P / 8;
  const std::int64_t slice = (nvec + sms - 1) / sms;
  double total = 0.0;
  for (std::int64_t b = 0; b * slice < nvec; ++b) {
    const std::int64_t begin = b * slice, n = std::min(slice, nvec - begin);
    float cta = 0.f;
    for (std::int64_t t = 0; t < threads; ++t) {
      float lane[8] = {};
      for (std::int64_t j = t; j < n; j += threads)
        for (int k = 0; k < 8; ++k) {
          const float a = bf16_at(grad, 8 * (begin + j) + k);
          lane[k] = std::fmaf(a, a, lane[k]);
        }
      float acc = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
      if (b == 0 && t < P - nvec * 8) {
        const float a = bf16_at(grad, nvec * 8 + t);
        acc = std::fmaf(a, a, acc);
      }
      cta += acc;
    }
    total += cta;
  }
  return total;
}

/// The naive's norm: per-tensor fp32 sums of squares, per-tensor sqrt, then the norm of the norms.
float naive_norm(const HostTensor& grad, const HostTensor& offsets, std::int64_t G) {
  const auto* o = static_cast<const std::int64_t*>(offsets.data());
  float s = 0.f;
  for (std::int64_t t = 0; t < G; ++t) {
    float part[256] = {};
    for (std::int64_t i = o[t]; i < o[t + 1]; ++i) {
      const float a = bf16_at(grad, i);
      part[(i - o[t]) % 256] += a * a;
    }
    float ts = 0.f;
    for (float x : part) ts += x;
    const float n = std::sqrt(ts);
    s += n * n;
  }
  return std::sqrt(s);
}

std::vector<HostTensor> emulate(Variant v, const Case& c) {
  const std::int64_t P = c.axis("P"), G = c.axis("G");
  const Hyper h = hyper(c.plan);
  const HostTensor& param = c.in("param");
  const HostTensor& grad = c.in("grad");
  const auto* p = static_cast<const float*>(param.data());
  const auto* m = static_cast<const float*>(c.in("m").data());
  const auto* vv = static_cast<const float*>(c.in("v").data());
  std::vector<HostTensor> out = c.outputs();
  auto* po = static_cast<float*>(out[c.out_index("param_out")].data());
  auto* mo = static_cast<float*>(out[c.out_index("m_out")].data());
  auto* vo = static_cast<float*>(out[c.out_index("v_out")].data());
  HostTensor& bo = out[c.out_index("param_bf16_out")];

  // The clipping coefficient.
  float clip;
  if (v == Variant::kNaive) {
    clip = std::fmin(1.f, static_cast<float>(h.max_norm) / (naive_norm(grad, c.in("offsets"), G) + 1e-6f));
  } else {
    // expert.cu takes the one-read path from P = 2^19 (below it, two passes).
    const double sq = v == Variant::kExpertOneRead && P >= (1 << 19) ? expert_one_read_sumsq(grad, P)
                                                   : expert_sumsq(grad, P, v == Variant::kBf16Norm);
    clip = static_cast<float>(std::fmin(1.0, h.max_norm / (std::sqrt(sq) + 1e-6)));
  }
  if (v == Variant::kNoClip) clip = 1.f;

  // The per-step constants, as the host derives them (double, then fp32).
  std::int64_t step = h.step + (v == Variant::kStepOffByOne ? 1 : 0);
  double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  if (v == Variant::kNoBiasCorrection) bc1 = bc2 = 1.0;
  const float b1 = static_cast<float>(h.beta1), omb1 = static_cast<float>(1.0 - h.beta1);
  const float b2 = static_cast<float>(h.beta2), omb2 = static_cast<float>(1.0 - h.beta2);
  const float eps = static_cast<float>(h.eps);
  const float decay = static_cast<float>(v == Variant::kL2Decay ? 1.0 : 1.0 - h.lr * h.wd);
  const float step_size = static_cast<float>(h.lr / bc1), bc2_sqrt = static_cast<float>(std::sqrt(bc2));

  for (std::int64_t i = 0; i < P; ++i) {
    float g = bf16_at(grad, i) * clip;
    if (v == Variant::kBf16ClippedGrad) g = bf16_rn(g);
    if (v == Variant::kL2Decay) g = std::fmaf(static_cast<float>(h.wd), p[i], g);
    float mi, vi, pi;
    if (v == Variant::kNaive) {
      mi = m[i] + omb1 * (g - m[i]);  // lerp
      vi = vv[i] * b2;
      vi = vi + omb2 * g * g;         // addcmul
      float d = std::sqrt(vi);
      d = d / bc2_sqrt;
      d = d + eps;
      pi = p[i] * decay;
      pi = pi + (-step_size) * (mi / d);  // addcdiv
    } else {
      mi = std::fmaf(b1, m[i], omb1 * g);
      vi = std::fmaf(b2, vv[i], omb2 * g * g);
      if (v == Variant::kBf16States) {
        mi = bf16_rn(mi);
        vi = bf16_rn(vi);
      }
      const float d = std::sqrt(vi) / bc2_sqrt + eps;
      pi = std::fmaf(p[i], decay, -step_size * (mi / d));
    }
    mo[i] = mi;
    vo[i] = vi;
    po[i] = pi;
    set_bf16(bo, i, v == Variant::kTruncatedCopy ? bf16_rz(pi) : pi);
  }
  return out;
}

/// The per-output verdicts of variant v on case c, printed for the record (the margins).
struct Result {
  OutputsVerdict verdict;
  bool output_passed(const Case&, const std::string& out) const {
    for (const auto& chk : verdict.checks)
      if (chk.output == out) return chk.passed;
    throw std::runtime_error("no check of output " + out);
  }
};

/// The allclose margin of an fp32 output: max over elements of min(|a-e|/atol, |a-e|/(rtol|e|)),
/// below 1 where every element passes.
double allclose_margin(const Case& c, const std::vector<HostTensor>& run, const std::string& out) {
  const std::size_t k = c.out_index(out);
  const CompareSpec& cmp = c.plan.outputs[k].cmp;
  const auto* a = static_cast<const float*>(run[k].data());
  const auto* e = static_cast<const float*>(c.expected[k].data());
  double worst = 0;
  for (std::int64_t i = 0; i < run[k].numel(); ++i) {
    const double d = std::fabs(double(a[i]) - double(e[i]));
    worst = std::max(worst, std::min(d / cmp.atol, d / (cmp.rtol * std::fabs(double(e[i])))));
  }
  return worst;
}

Result run(Variant v, const Case& c) {
  const std::vector<HostTensor> out = emulate(v, c);
  Result r{judge(c, out)};
  std::printf("%-44s %-19s", c.plan.workload.uuid.c_str(), name(v));
  for (const auto& chk : r.verdict.checks) {
    std::printf(" %s %s", chk.output.c_str(), chk.passed ? "ok" : "FAIL");
    if (chk.output != "param_bf16_out") std::printf(" margin %.2g;", allclose_margin(c, out, chk.output));
    else std::printf(" %lld off;", static_cast<long long>(chk.mismatches));
  }
  std::printf("\n");
  return r;
}

class FusedAdamwTolerance : public TaskSuite<FusedAdamwTolerance> {
 public:
  static constexpr const char* kTask = "fused_adamw";

 protected:
  static bool clipped(const Case& c) {
    double sq = 0;
    for (std::int64_t i = 0; i < c.axis("P"); ++i) sq += double(bf16_at(c.in("grad"), i)) * bf16_at(c.in("grad"), i);
    return std::sqrt(sq) + 1e-6 > hyper(c.plan).max_norm;
  }
};

TEST_F(FusedAdamwTolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 8u);
  int n_clipped = 0;
  for (const Case& c : *cases_) n_clipped += clipped(c);
  EXPECT_GE(n_clipped, 4);  // both regimes of clip_grad_norm_
  EXPECT_LE(n_clipped, 6);
  // The offsets follow the named model: Llama-3-8B's q_proj (16.8M of 8.03G) is twice... its
  // k_proj (4096 x 1024) a quarter of q_proj, within the rounding of the scaling.
  const Case& l = by_suffix("check-1000003x291-llama3-8b");
  const auto* o = static_cast<const std::int64_t*>(l.in("offsets").data());
  EXPECT_EQ(o[0], 0);
  EXPECT_EQ(o[291], 1000003);
  const double q = double(o[2] - o[1] - 1), k = double(o[3] - o[2] - 1);
  EXPECT_NEAR(q / k, 4.0, 0.1);
}

TEST_F(FusedAdamwTolerance, ExpertAndNaiveArithmeticPass) {
  for (const Case& c : *cases_)
    for (Variant v : {Variant::kExpert, Variant::kExpertOneRead, Variant::kNaive}) {
      const Result r = run(v, c);
      EXPECT_EQ(r.verdict.status, Status::PASSED) << c.plan.workload.uuid << " " << name(v) << ": " << r.verdict.message;
    }
}

TEST_F(FusedAdamwTolerance, Bf16StatesFail) {
  for (const Case& c : *cases_) {
    if (c.axis("P") < 100) continue;  // a handful of elements can all land on bf16 values
    const Result r = run(Variant::kBf16States, c);
    EXPECT_FALSE(r.output_passed(c, "m_out") && r.output_passed(c, "v_out")) << c.plan.workload.uuid;
  }
}

TEST_F(FusedAdamwTolerance, WrongClippingFails) {
  for (const Case& c : *cases_) {
    if (!clipped(c)) continue;
    for (Variant v : {Variant::kBf16Norm, Variant::kNoClip, Variant::kBf16ClippedGrad}) {
      if (v == Variant::kBf16Norm && c.axis("P") < 1000) continue;  // few terms: a bf16 sum can be close
      const Result r = run(v, c);
      EXPECT_FALSE(r.output_passed(c, "m_out")) << c.plan.workload.uuid << " accepted " << name(v);
      EXPECT_EQ(r.verdict.status, Status::INCORRECT_NUMERICAL) << c.plan.workload.uuid << " " << name(v);
    }
  }
}

TEST_F(FusedAdamwTolerance, WrongBiasCorrectionFailsEarlySteps) {
  for (const char* uuid : {"check-65543x300-first-step", "check-33333x37-adam-classic"})
    for (Variant v : {Variant::kNoBiasCorrection, Variant::kStepOffByOne}) {
      const Result r = run(v, by_suffix(uuid));
      EXPECT_FALSE(r.output_passed(by_suffix(uuid), "param_out")) << uuid << " accepted " << name(v);
    }
}

TEST_F(FusedAdamwTolerance, L2DecayInsteadOfDecoupledFails) {
  for (const Case& c : *cases_) {
    if (hyper(c.plan).wd == 0.0 || c.axis("P") < 100) continue;
    const Result r = run(Variant::kL2Decay, c);
    EXPECT_FALSE(r.output_passed(c, "param_out")) << c.plan.workload.uuid;
  }
}

TEST_F(FusedAdamwTolerance, TruncatedBf16CopyFails) {
  for (const Case& c : *cases_) {
    if (c.axis("P") < 100) continue;
    const Result r = run(Variant::kTruncatedCopy, c);
    EXPECT_FALSE(r.output_passed(c, "param_bf16_out")) << c.plan.workload.uuid;
    EXPECT_TRUE(r.output_passed(c, "param_out")) << c.plan.workload.uuid;
  }
}

// Hidden draws (P up to 300000, G up to 400, G <= P): the offsets generator follows the drawn
// sizes, the golden accepts them, and the expert's and the naive's arithmetic pass there too.
TEST(FusedAdamwHidden, DrawsAreValidAndHonestArithmeticPasses) {
  const std::vector<Workload> hidden = draw_hidden_workloads(task().def, 777, 6);
  ASSERT_GE(hidden.size(), 3u);
  for (const Workload& w : hidden) {
    const Case c = make_case(task(), reference(), w, 5);
    const std::int64_t P = c.axis("P"), G = c.axis("G");
    const auto* o = static_cast<const std::int64_t*>(c.in("offsets").data());
    ASSERT_EQ(o[0], 0) << w.uuid;
    ASSERT_EQ(o[G], P) << w.uuid;
    for (std::int64_t g = 0; g < G; ++g) ASSERT_LT(o[g], o[g + 1]) << w.uuid;
    for (Variant v : {Variant::kExpert, Variant::kExpertOneRead, Variant::kNaive}) {
      const Result r = run(v, c);
      EXPECT_EQ(r.verdict.status, Status::PASSED) << w.uuid << " " << name(v) << ": " << r.verdict.message;
    }
  }
}

}  // namespace
