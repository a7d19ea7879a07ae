// The parent's timed batch (engine/parent_clock.h): 0.1 s of calls, each with its own aligned
// outputs, within the memory budget; a forged median changes only the batch's length.
#include <gtest/gtest.h>

#include "engine/parent_clock.h"

namespace d2k {
namespace {

WorkloadPlan plan_with_outputs(std::vector<std::size_t> bytes) {
  WorkloadPlan p;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    TensorPlan t;
    t.name = "o" + std::to_string(i);
    t.bytes = bytes[i];
    p.outputs.push_back(t);
  }
  return p;
}

TEST(BatchShape, OutputsAreAlignedAndDisjoint) {
  const BatchShape b = batch_shape(plan_with_outputs({1000, 3, 256}), 10e-6);
  ASSERT_EQ(b.out_offsets.size(), 3u);
  EXPECT_EQ(b.out_offsets[0], 0u);
  EXPECT_EQ(b.out_offsets[1], 1024u);
  EXPECT_EQ(b.out_offsets[2], 1280u);
  EXPECT_EQ(b.stride, 1536u);
  for (std::size_t o : b.out_offsets) EXPECT_EQ(o % 256, 0u);
}

TEST(BatchShape, EnoughCallsForTheTargetTimeWithinTheBudget) {
  const WorkloadPlan small = plan_with_outputs({128 * 7168 * 2, 128 * 7168 * 2});
  const BatchShape b = batch_shape(small, 22.85e-6);
  EXPECT_GE(static_cast<double>(b.calls) * 22.85e-6, kBatchTarget_s * 0.999);
  EXPECT_LE(b.calls * b.stride, kBatchBudgetBytes);
  const WorkloadPlan big = plan_with_outputs({std::size_t(32768) * 5120 * 2, std::size_t(32768) * 5120 * 2});
  const BatchShape g = batch_shape(big, 1e-3);
  EXPECT_LE(g.calls * g.stride, kBatchBudgetBytes);  // 25 calls: memory, not time, bounds it
  EXPECT_GE(g.calls, 3u);
}

TEST(BatchShape, ForgedMediansOnlyChangeTheLength) {
  const WorkloadPlan p = plan_with_outputs({4096});
  EXPECT_EQ(batch_shape(p, 1e-12).calls, kBatchMaxCalls);  // a forged tiny median: the cap
  EXPECT_EQ(batch_shape(p, 10.0).calls, 3u);               // a huge one: the floor
}

}  // namespace
}  // namespace d2k
