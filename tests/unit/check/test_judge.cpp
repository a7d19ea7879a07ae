// The judge over host views (engine/judge.h): unwritten elements need both runs to hold their
// poison, the second run is judged too, multiset groups are judged as one row set, and the
// first failing output names the verdict.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/judge.h"

using namespace d2k;

namespace {

TensorPlan output(std::string name, DType t, std::vector<std::int64_t> shape, CompareSpec cmp) {
  TensorPlan p;
  p.name = std::move(name);
  p.dtype = t;
  p.shape = std::move(shape);
  p.numel = 1;
  for (auto d : p.shape) p.numel *= d;
  p.bytes = static_cast<std::size_t>(p.numel) * (t == DType::i64 ? 8 : 4);
  p.cmp = std::move(cmp);
  return p;
}

HostTensor f32(const std::vector<float>& v) {
  HostTensor h;
  h.name = "y";
  h.dtype = DType::f32;
  h.shape = {static_cast<std::int64_t>(v.size())};
  h.bytes.resize(v.size() * 4);
  std::memcpy(h.bytes.data(), v.data(), h.bytes.size());
  return h;
}

float poison_f32(std::uint8_t byte) {
  std::uint32_t u = 0x01010101u * byte;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

WorkloadPlan plan_one_output(const char* rule) {
  CompareSpec c;
  c.rule = rule;
  c.atol = 1e-3;
  WorkloadPlan p;
  p.outputs.push_back(output("y", DType::f32, {8}, c));
  return p;
}

}  // namespace

TEST(Judge, UnwrittenOnlyWhereBothRunsKeepTheirPoison) {
  const WorkloadPlan plan = plan_one_output("allclose");
  const std::vector<HostTensor> want = {f32({1, 2, 3, 4, 5, 6, 7, 8})};
  std::vector<HostTensor> a = want, b = want;
  a[0].as<float>()[5] = poison_f32(kPoisonA);
  b[0].as<float>()[5] = poison_f32(kPoisonB);
  OutputsVerdict v = judge_outputs(plan, want, a, b);
  EXPECT_EQ(v.status, Status::INCORRECT_WRITE);
  EXPECT_NE(v.message.find("first at index 5"), std::string::npos) << v.message;
  b[0].as<float>()[5] = 6;  // written in run B: not unwritten, but run A is wrong there
  v = judge_outputs(plan, want, a, b);
  EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL) << v.message;
}

TEST(Judge, SecondRunIsJudgedToo) {
  const WorkloadPlan plan = plan_one_output("allclose");
  const std::vector<HostTensor> want = {f32({1, 2, 3, 4, 5, 6, 7, 8})};
  std::vector<HostTensor> b = want;
  b[0].as<float>()[2] = 3.5f;
  const OutputsVerdict v = judge_outputs(plan, want, want, b);
  EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL);
  EXPECT_EQ(v.message.rfind("second run: output y:", 0), 0u) << v.message;
  ASSERT_EQ(v.checks.size(), 1u);
  EXPECT_EQ(v.checks[0].output, "y");
  EXPECT_EQ(judge_outputs(plan, want, want, want).status, Status::PASSED);
}

TEST(Judge, MultisetGroupIsOneRowSetWithItsCount) {
  CompareSpec col;
  col.rule = "multiset";
  col.group = "pairs";
  col.count = "n";
  CompareSpec exact;
  exact.rule = "exact";
  WorkloadPlan plan;
  plan.outputs = {output("k", DType::i32, {4}, col), output("v", DType::i32, {4}, col),
                  output("n", DType::i64, {1}, exact)};
  auto ints = [](std::vector<std::int32_t> v, const char* name) {
    HostTensor h;
    h.name = name;
    h.dtype = DType::i32;
    h.shape = {4};
    h.bytes.resize(16);
    std::memcpy(h.bytes.data(), v.data(), 16);
    return h;
  };
  auto count = [](std::int64_t n) {
    HostTensor h;
    h.name = "n";
    h.dtype = DType::i64;
    h.shape = {1};
    h.bytes.resize(8);
    std::memcpy(h.bytes.data(), &n, 8);
    return h;
  };
  const std::vector<HostTensor> want = {ints({1, 2, 3, 0}, "k"), ints({10, 20, 30, 0}, "v"), count(3)};
  // Rows in another order, the row beyond the count left as anything: passes.
  const std::vector<HostTensor> reordered = {ints({3, 1, 2, 99}, "k"), ints({30, 10, 20, 99}, "v"), count(3)};
  OutputsVerdict v = judge_single(plan, want, reordered);
  EXPECT_EQ(v.status, Status::PASSED) << v.message;
  // Each column right as a multiset, the pairs broken: fails, named by the group.
  const std::vector<HostTensor> broken = {ints({1, 2, 3, 0}, "k"), ints({20, 10, 30, 0}, "v"), count(3)};
  v = judge_single(plan, want, broken);
  EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL);
  EXPECT_EQ(v.message.rfind("rows of pairs:", 0), 0u) << v.message;
}

TEST(Judge, ExactWithCountComparesTheFirstRowsInOrder) {
  CompareSpec col;
  col.rule = "exact";
  col.count = "n";
  CompareSpec exact;
  exact.rule = "exact";
  WorkloadPlan plan;
  plan.outputs = {output("k", DType::i32, {4}, col), output("n", DType::i64, {1}, exact)};
  using Outs = std::vector<HostTensor>;
  auto run = [](std::vector<std::int32_t> v, std::int64_t n) {
    HostTensor k("k", DType::i32, {4}), c("n", DType::i64, {1});
    std::memcpy(k.bytes.data(), v.data(), 16);
    std::memcpy(c.bytes.data(), &n, 8);
    return Outs{k, c};
  };
  std::int32_t pa, pb;  // the integer poison of the two runs
  std::memset(&pa, kPoisonA, 4);
  std::memset(&pb, kPoisonB, 4);
  const Outs want = run({1, 2, 3, 0}, 3);
  // The rows past the count are capacity: anything there passes, poison included.
  Outs a = run({1, 2, 3, pa}, 3), b = run({1, 2, 3, pb}, 3);
  EXPECT_EQ(judge_outputs(plan, want, a, b).status, Status::PASSED);
  // The same rows in another order: fails (a multiset would pass).
  a = run({3, 1, 2, 0}, 3);
  OutputsVerdict v = judge_single(plan, want, a);
  EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL);
  EXPECT_EQ(v.message.rfind("output k:", 0), 0u) << v.message;
  // A row inside the count left unwritten: INCORRECT_WRITE.
  a = run({1, pa, 3, 0}, 3);
  b = run({1, pb, 3, 0}, 3);
  v = judge_outputs(plan, want, a, b);
  EXPECT_EQ(v.status, Status::INCORRECT_WRITE) << v.message;
  // A count the other side does not have: the column fails too, whatever its rows hold.
  a = run({1, 2, 3, 0}, 4);
  v = judge_single(plan, want, a);
  EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL);
  EXPECT_NE(v.message.find("4 row(s) reported by 'n', 3 expected"), std::string::npos) << v.message;
  // An empty selection: nothing to compare, nothing must be written.
  const Outs none = run({0, 0, 0, 0}, 0);
  a = run({pa, pa, pa, pa}, 0);
  b = run({pb, pb, pb, pb}, 0);
  EXPECT_EQ(judge_outputs(plan, none, a, b).status, Status::PASSED);
}

TEST(Judge, TopkReadsTheValuesOutputOfEachSideForTies) {
  CompareSpec idx;
  idx.rule = "topk";
  idx.k = 2;
  idx.values = "v";
  CompareSpec vals;
  vals.rule = "allclose";
  vals.atol = 1e-6;
  WorkloadPlan plan;
  plan.outputs = {output("i", DType::i32, {1, 2}, idx), output("v", DType::f32, {1, 2}, vals)};
  using Outs = std::vector<HostTensor>;
  auto run = [](std::vector<std::int32_t> ids, std::vector<float> v) {
    HostTensor i("i", DType::i32, {1, 2}), w("v", DType::f32, {1, 2});
    std::memcpy(i.bytes.data(), ids.data(), 8);
    std::memcpy(w.bytes.data(), v.data(), 8);
    return Outs{i, w};
  };
  // Scores 9, 5, 5: the reference keeps {0, 1}; {0, 2} selects the other of two equal scores.
  const Outs want = run({0, 1}, {9, 5});
  EXPECT_EQ(judge_single(plan, want, run({0, 2}, {9, 5})).status, Status::PASSED);
  // An index whose value is below the k-th expected value is not a tie.
  const OutputsVerdict v = judge_single(plan, want, run({0, 2}, {9, 4}));
  EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL) << v.message;
  EXPECT_EQ(v.message.rfind("output i:", 0), 0u) << v.message;
}
