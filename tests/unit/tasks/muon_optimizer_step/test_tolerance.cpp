// muon_optimizer_step, tolerances checked both ways: the PyTorch Muon step at the precision the
// task states (bf16 operands and intermediates, fp32 accumulation: naive.cu, op for op) passes
// the task's rules at every check shape and at the thinnest hidden shapes; cheaper variants (bf16
// accumulation in the products, a Newton-Schulz step short) fail. Also: param_out is computed
// from the bf16 update the call writes (spec.md), in the golden as in the implementations.
#include <cmath>
#include <vector>

#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {
namespace {

constexpr double kA = 3.4445, kB = -4.7750, kC = 2.0315;

struct Arith {
  bool bf16_accumulate = false;  ///< products accumulate in bf16 (each partial sum rounded)
  int steps = 5;                 ///< Newton-Schulz iterations
};

using Mat = std::vector<float>;

/// C (r x c) = bf16(P Q) for P (r x k), Q (k x c), row-major; fp32 or bf16 accumulation.
Mat gemm(const Mat& P, const Mat& Q, std::int64_t r, std::int64_t k, std::int64_t c, const Arith& a) {
  Mat C(static_cast<std::size_t>(r * c));
  std::vector<float> acc(static_cast<std::size_t>(c));
  for (std::int64_t i = 0; i < r; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::int64_t q = 0; q < k; ++q) {
      const float p = P[static_cast<std::size_t>(i * k + q)];
      const float* row = &Q[static_cast<std::size_t>(q * c)];
      for (std::int64_t j = 0; j < c; ++j) {
        float& s = acc[static_cast<std::size_t>(j)];
        s = a.bf16_accumulate ? bf16_rn(std::fma(p, row[j], s)) : std::fma(p, row[j], s);
      }
    }
    for (std::int64_t j = 0; j < c; ++j) C[static_cast<std::size_t>(i * c + j)] = bf16_rn(acc[static_cast<std::size_t>(j)]);
  }
  return C;
}

Mat transpose(const Mat& X, std::int64_t r, std::int64_t c) {
  Mat T(X.size());
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) T[static_cast<std::size_t>(j * r + i)] = X[static_cast<std::size_t>(i * c + j)];
  return T;
}

/// naive.cu's step, op for op, on the host.
std::vector<HostTensor> run_variant(const Case& c, const Arith& a) {
  const std::int64_t B = c.axis("B"), M = c.axis("M"), N = c.axis("N");
  const std::int64_t S = std::min(M, N), L = std::max(M, N), n = M * N;
  const bool tall = M > N;
  const float beta = 0.95f, lr = 0.02f, eps = 1e-7f;
  const float decay = static_cast<float>(1.0 - 0.02 * 0.1);
  const float scale = static_cast<float>(std::sqrt(std::fmax(1.0, double(M) / double(N))));
  const auto* param = static_cast<const float*>(c.in("param").data());
  const auto* mom = static_cast<const float*>(c.in("momentum").data());
  const HostTensor& grad = c.in("grad");
  std::vector<HostTensor> outs = c.outputs();
  auto* mo_out = static_cast<float*>(outs[c.out_index("momentum_out")].data());
  HostTensor& update = outs[c.out_index("update")];
  auto* p_out = static_cast<float*>(outs[c.out_index("param_out")].data());
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t off = b * n;
    Mat X(static_cast<std::size_t>(n));
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = bf16_at(grad, off + i);
      mo_out[off + i] = beta * mom[off + i] + g;
      X[static_cast<std::size_t>(i)] = bf16_rn(g + beta * mo_out[off + i]);
      ss += double(X[static_cast<std::size_t>(i)]) * X[static_cast<std::size_t>(i)];
    }
    const float norm = static_cast<float>(std::sqrt(ss));
    for (auto& v : X) v = bf16_rn(v / (norm + eps));
    if (tall) X = transpose(X, M, N);  // the iterate is S x L
    for (int it = 0; it < a.steps; ++it) {
      const Mat A = gemm(X, transpose(X, S, L), S, L, S, a);
      const Mat A2 = gemm(A, A, S, S, S, a);
      Mat Bm(A.size());
      for (std::size_t i = 0; i < A.size(); ++i) Bm[i] = bf16_rn(float(kB) * A[i] + float(kC) * A2[i]);
      const Mat BX = gemm(Bm, X, S, S, L, a);
      for (std::size_t i = 0; i < X.size(); ++i) X[i] = bf16_rn(float(kA) * X[i] + BX[i]);
    }
    if (tall) X = transpose(X, S, L);
    for (std::int64_t i = 0; i < n; ++i) {
      const float u = bf16_rn(scale * X[static_cast<std::size_t>(i)]);
      set_bf16(update, off + i, u);
      p_out[off + i] = param[off + i] * decay - lr * u;
    }
  }
  return outs;
}

/// The smallest shapes hidden workloads can draw, where Newton-Schulz has converged least and the
/// honest error is largest (up to ~0.035 on some inputs).
std::vector<Workload> smallest_shapes() {
  return {shape("small-16x16", {{"B", 1}, {"M", 16}, {"N", 16}}), shape("small-17x16", {{"B", 1}, {"M", 17}, {"N", 16}}),
          shape("small-2x24x24", {{"B", 2}, {"M", 24}, {"N", 24}})};
}

/// The suite's cases: the check shapes, and the thinnest shapes hidden workloads can draw (a side of 16).
class ToleranceMuon : public TaskSuite<ToleranceMuon> {
 public:
  static constexpr const char* kTask = "muon_optimizer_step";
  static constexpr std::uint64_t kSeed = 0x5EED;
  static std::vector<Workload> extra_workloads(const Task&) {
    return {shape("thin-16x256", {{"B", 1}, {"M", 16}, {"N", 256}}), shape("thin-256x16", {{"B", 1}, {"M", 256}, {"N", 16}}),
            shape("thin-17x251", {{"B", 2}, {"M", 17}, {"N", 251}})};
  }
};

double update_rel_l2(const OutputsVerdict& v) {
  for (const auto& c : v.checks)
    if (c.output == "update") return c.rel_l2;
  return NAN;
}

TEST_F(ToleranceMuon, Bf16OperandsWithFp32AccumulationPassEveryCheckShape) {
  for (const Case& c : *cases_) {
    const std::string& uuid = c.plan.workload.uuid;
    const OutputsVerdict v = judge(c, run_variant(c, {}));
    EXPECT_EQ(v.status, Status::PASSED) << uuid << ": " << v.message;
    EXPECT_LT(update_rel_l2(v), 0.025) << uuid;  // spec.md: 0.015-0.021 at these shapes
  }
  for (std::uint64_t seed = 1; seed <= 8; ++seed)
    for (const Workload& w : smallest_shapes()) {
      const Case c = make_case(task(), *ref_, w, seed);
      const OutputsVerdict v = judge(c, run_variant(c, {}));
      EXPECT_EQ(v.status, Status::PASSED) << w.uuid << " seed " << seed << ": " << v.message;
    }
}

// Fails at every check shape and wherever the long side is 64 or more. At the smallest shapes
// (sides 16-24) bf16 accumulation over 16-24 terms lands 0.039-0.047, inside the bound that the
// honest computation needs there (spec.md, "Tolerance").
TEST_F(ToleranceMuon, Bf16AccumulationFails) {
  for (const Case& c : *cases_) {
    const std::string& uuid = c.plan.workload.uuid;
    const OutputsVerdict v = judge(c, run_variant(c, {true, 5}));
    EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL) << uuid << ": bf16 accumulation passes";
    EXPECT_GT(update_rel_l2(v), 0.1) << uuid;  // spec.md: 0.11-0.16
  }
}

TEST_F(ToleranceMuon, FourNewtonSchulzStepsFail) {
  for (const Case& c : *cases_) {
    const std::string& uuid = c.plan.workload.uuid;
    const OutputsVerdict v = judge(c, run_variant(c, {false, 4}));
    EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL) << uuid << ": four steps pass";
  }
}

// spec.md: param_out is computed from the bf16 value written to update, so a user can rebuild
// param_out from what the call returned. The golden agrees to fp32 rounding.
TEST_F(ToleranceMuon, GoldenParamOutUsesTheWrittenBf16Update) {
  const Case c = make_case(task(), *ref_, task().workloads[0], kSeed);
  const auto* param = static_cast<const float*>(c.in("param").data());
  const HostTensor& update = c.expected[c.out_index("update")];
  const auto* p_out = static_cast<const float*>(c.expected[c.out_index("param_out")].data());
  const double decay = 1.0 - 0.02 * 0.1;
  for (std::int64_t i = 0; i < update.numel(); ++i) {
    const float want = static_cast<float>(double(param[i]) * decay - 0.02 * double(bf16_at(update, i)));
    ASSERT_EQ(p_out[i], want) << "element " << i;
  }
}

}  // namespace
}  // namespace d2k::tolerance_test
