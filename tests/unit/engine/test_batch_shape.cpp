// The parent's timed batch (engine/parent_clock.h): 0.1 s of calls, each with its own aligned
// outputs, within the memory budget; a forged median changes only the batch's length.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

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


constexpr std::size_t kFree = std::size_t(140) << 30;  // an idle H200

// Cold batch: one rotation's inputs + outputs cover kColdFootprintL2 L2 sizes.
// The probe spreads its words over the whole output: a call that sets one word first (a counter
// zeroed at its start) leaves the others poisoned until it writes them, so the parent does not
// take the call's start for its end. (The last-word probe it replaced read hash_join's honest
// expert as a 24 % forgery on the H200.)
TEST(ProbeLayout, WordsSpanTheWholeOutputAndEndAtItsLastWord) {
  const std::size_t bytes = std::size_t(2) << 30;  // 2 GiB of pairs
  const ProbeLayout l = probe_layout(bytes);
  EXPECT_EQ(l.count, kProbeWords);
  EXPECT_EQ(l.last, bytes - 2);
  EXPECT_EQ(l.step % 2, 0u) << "16-bit words";
  EXPECT_LE((l.count - 1) * l.step, bytes - 2) << "every strided word inside the output";
  EXPECT_GE(l.count * l.step, bytes - l.step) << "the strided words reach the output's last stride";
}

TEST(ProbeLayout, SmallOutputsAreReadWordByWord) {
  const ProbeLayout one = probe_layout(8);  // an int64 counter
  EXPECT_EQ(one.count, 4u);
  EXPECT_EQ(one.step, 2u);
  EXPECT_EQ(one.last, 6u);
  const ProbeLayout odd = probe_layout(1);  // a single byte still has a word at 0
  EXPECT_EQ(odd.count, 1u);
  EXPECT_EQ(odd.last, 0u);
  const ProbeLayout mid = probe_layout(3000);  // 1500 words: every other word, to the end
  EXPECT_EQ(mid.count, 750u);
  EXPECT_EQ(mid.step, 4u);
  EXPECT_EQ(mid.last, 2998u);
  EXPECT_GE((mid.count - 1) * mid.step, 3000u - 2 * mid.step);
}

TEST(BatchInputSets, OneRotationCoversThreeL2Sizes) {
  const std::size_t l2 = std::size_t(50) << 20;  // H100/H200-sized L2
  const std::size_t in = 128 * 7168 * 2 * 2 + 7168 * 2, out = 128 * 7168 * 2 * 2;
  const std::size_t n = batch_input_sets(l2, in, out, kFree);
  EXPECT_GE(static_cast<double>(n * (in + out)), kColdFootprintL2 * static_cast<double>(l2));
  EXPECT_LT(static_cast<double>((n - 1) * (in + out)), kColdFootprintL2 * static_cast<double>(l2));  // no more than needed
  EXPECT_EQ(n, 22u);  // 3 x 50 MiB over 7.35 MB per call
  // A larger L2 needs more sets: the count follows the L2 the parent reads.
  EXPECT_GT(batch_input_sets(2 * l2, in, out, kFree), n);
}

TEST(BatchInputSets, AtLeastTwoWithinTheBudget) {
  EXPECT_EQ(batch_input_sets(std::size_t(50) << 20, std::size_t(512) << 20, std::size_t(512) << 20, kFree), 2u);
  // Tiny calls: the set cap, not the footprint, bounds the count.
  EXPECT_EQ(batch_input_sets(std::size_t(50) << 20, 64, 64, kFree), kBatchMaxInputSets);
  // Huge inputs: the input budget bounds it, never below 2.
  EXPECT_EQ(batch_input_sets(std::size_t(50) << 20, std::size_t(6) << 30, 1, kFree), 2u);
  const std::size_t in = std::size_t(100) << 20;
  EXPECT_LE(batch_input_sets(std::size_t(4) << 30, in, 0, kFree) * in, kBatchInputBudgetBytes);
}

// Device memory bounds the sets: a TPC-H SF100 lineitem (22.8 GB) covers the footprint alone, so
// one set where two do not fit; a set that does not cover it needs two or a clear error; and a
// set that does not fit at all is an error naming the sizes, not an allocation failure later.
TEST(BatchInputSets, DeviceMemoryBoundsTheSets) {
  const std::size_t l2 = std::size_t(50) << 20, sf100 = 22'800'000'000;
  EXPECT_EQ(batch_input_sets(l2, sf100, 96, kFree), 2u);
  EXPECT_EQ(batch_input_sets(l2, sf100, 96, std::size_t(40) << 30), 1u);
  EXPECT_THROW(batch_input_sets(l2, sf100, 96, std::size_t(20) << 30), std::runtime_error);
  // 100 MB sets (three L2 sizes need two): 5 GB free beyond the reserve hold at most that many.
  const std::size_t in = 100'000'000;
  EXPECT_EQ(batch_input_sets(l2, in, 0, kDeviceReserveBytes + 2 * in + in / 2), 2u);
  EXPECT_THROW(batch_input_sets(l2, in, 0, kDeviceReserveBytes + in + in / 2), std::runtime_error);
  try {
    sets_that_fit(sf100, std::size_t(20) << 30, "input set of the parent's batch");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("22.80 GB"), std::string::npos) << e.what();
  }
}

// Long batch: where the slab cap limits calls, batches add up to kBatchTarget_s.
TEST(BatchRepeats, AddUpToTheTargetWhereTheSlabCapsCalls) {
  const WorkloadPlan p = plan_with_outputs({std::size_t(4096) * 4096 * 2, std::size_t(4096) * 4096 * 2});
  const BatchShape b = batch_shape(p, 58e-6);
  EXPECT_EQ(b.calls, 256u);  // 16 GiB / 64 MiB
  const std::size_t r = batch_repeats(b.calls, 58e-6);
  EXPECT_GE(static_cast<double>(r * b.calls) * 58e-6, kBatchTarget_s);
  EXPECT_LT(static_cast<double>((r - 1) * b.calls) * 58e-6, kBatchTarget_s);
  // A call-count-bounded batch already long enough: one batch.
  EXPECT_EQ(batch_repeats(batch_shape(plan_with_outputs({4096}), 22e-6).calls, 22e-6), 1u);
  // A forged huge median: one batch; a forged tiny one: the cap.
  EXPECT_EQ(batch_repeats(3, 10.0), 1u);
  EXPECT_EQ(batch_repeats(3, 1e-12), kBatchMaxRepeats);
}

// The clock stops at the last slot seen; the confirming count runs after it and only its excess
// over an idle count (work still running slows it) is charged.
TEST(BatchClock, CheckingIsOutsideTheClockUnlessWorkStillRan) {
  EXPECT_DOUBLE_EQ(batch_end_s(0.030, 0.013, 0.013), 0.030);          // honest: the count on an idle GPU
  EXPECT_DOUBLE_EQ(batch_end_s(0.030, 0.015, 0.013), 0.030);          // within the slack
  EXPECT_NEAR(batch_end_s(0.030, 0.040, 0.013), 0.030 + 0.040 - kConfirmSlack * 0.013, 1e-12);  // slowed by running work: charged
  EXPECT_GT(batch_end_s(0.030, 0.040, 0.013), 0.050);
}

TEST(BatchClock, PerCallIsTheClockOverAllBatchesCalls) {
  ParentTiming t;
  t.batch_s = 7 * 0.0149;
  t.calls = 7 * 256;
  t.batches = 7;
  t.after_clock_s = 7 * 0.013;  // after the clock: not in the figure
  EXPECT_NEAR(t.per_call_s(), 0.0149 / 256, 1e-12);
}

// The batch's end from the parent's counts. The H200 run of flash_attention_forward (S=8192) and
// fused_adamw (1e8 params): an honest expert's fp32 outputs held a few more 0xFFFF halves than
// naive's, the count never reached naive's, and the last call was blamed (batch_outputs).
TEST(BatchEnd, CountAtOrBelowNaivesEndsAtTheFirstLookWithTheIdleDiscount) {
  BatchEnd end(10, 0.013);
  EXPECT_TRUE(end.look(0.030, 8, 0.015));
  EXPECT_TRUE(end.complete());
  EXPECT_DOUBLE_EQ(end.end_s(), batch_end_s(0.030, 0.015, 0.013));
}

TEST(BatchEnd, ACountThatHoldsAboveNaivesEndsWhenFirstSeenIfTheFinishedSlabAgrees) {
  BatchEnd end(10, 0.013);
  EXPECT_FALSE(end.look(0.030, 14, 0.013));  // an honest expert's own chance 0xFFFF halves
  EXPECT_FALSE(end.complete());
  EXPECT_TRUE(end.look(0.044, 14, 0.013));   // held over the next look
  EXPECT_FALSE(end.complete());              // not before the worker has finished
  end.settle(14, 0.060);
  EXPECT_TRUE(end.complete());
  // The first look, with the idle discount (the count took no longer than an idle one): not the
  // count's own end, which charged a whole-slab count to every such honest batch.
  EXPECT_DOUBLE_EQ(end.end_s(), batch_end_s(0.030, 0.013, 0.013));
  EXPECT_DOUBLE_EQ(end.end_s(), 0.030);
}

TEST(BatchEnd, AHeldCountSlowedByWorkStillRunningIsCharged) {
  BatchEnd end(10, 0.013);
  EXPECT_FALSE(end.look(0.030, 14, 0.040));  // the count took 3x an idle one: work was running
  EXPECT_TRUE(end.look(0.080, 14, 0.013));
  end.settle(14, 0.095);
  EXPECT_DOUBLE_EQ(end.end_s(), batch_end_s(0.030, 0.040, 0.013));
  EXPECT_GT(end.end_s(), 0.030 + 0.020);
}

TEST(BatchEnd, ACountThatChangedAfterItHeldEndsWhenTheWorkerWaitReturned) {
  BatchEnd end(10, 0.013);
  EXPECT_FALSE(end.look(0.030, 500, 0.013));
  EXPECT_TRUE(end.look(0.044, 500, 0.013));  // a pause in the writing, one look long
  end.settle(14, 0.090);                     // the work went on after the pause
  EXPECT_TRUE(end.complete());
  EXPECT_DOUBLE_EQ(end.end_s(), 0.090);
}

TEST(BatchEnd, ACountStillFallingIsNotAnEndAndAWatchThatNeverHeldStaysIncomplete) {
  BatchEnd end(10, 0.013);
  EXPECT_FALSE(end.look(0.030, 900, 0.013));
  EXPECT_FALSE(end.look(0.044, 600, 0.013));
  EXPECT_FALSE(end.look(0.058, 300, 0.013));
  end.settle(300, 0.100);  // the watch timed out before a count held: the judge decides
  EXPECT_FALSE(end.complete());
}

TEST(BatchEnd, ACountThatReachesNaivesAfterALaterLookGetsNoDiscount) {
  BatchEnd end(10, 0.013);
  EXPECT_FALSE(end.look(0.030, 900, 0.013));
  EXPECT_TRUE(end.look(0.050, 10, 0.020));
  EXPECT_DOUBLE_EQ(end.end_s(), 0.070);
}


/// An output of `dtype` compared by `rule` (what the probe's rules read).
TensorPlan output(DType dtype, const char* rule) {
  TensorPlan t;
  t.dtype = dtype;
  t.cmp.rule = rule;
  return t;
}

// An integer output compared exactly reads as written only with naive's words: radix_sort_pairs'
// ping-pong leaves other, non-poison words in its outputs after digit pass 2 of 4, which the
// poison test took for the call's end (a false timer_cross_check at 1e9 keys on the H200).
TEST(ProbeWords, ExactIntegerOutputsWaitForNaivesWords) {
  EXPECT_TRUE(probe_final_words(output(DType::u32, "exact")));
  const std::vector<unsigned short> naive = {1, 2, 3, 4};
  const std::vector<char> watched = {1, 1, 1, 1};
  const std::vector<unsigned short> scratch = {9, 8, 7, 6};  // an earlier pass: written, not final
  EXPECT_EQ(probe_pending_words(scratch, naive, watched, true), 4u);
  EXPECT_EQ(probe_pending_words(scratch, naive, watched, false), 0u) << "the poison test alone passes it";
  EXPECT_EQ(probe_pending_words(naive, naive, watched, true), 0u);
  const std::vector<unsigned short> half = {1, 2, 0xFFFF, 0xFFFF};
  EXPECT_EQ(probe_pending_words(half, naive, watched, true), 2u);
  EXPECT_EQ(probe_pending_words(half, naive, watched, false), 2u);
  EXPECT_EQ(probe_pending_words(scratch, naive, {1, 0, 0, 1}, true), 2u) << "unwatched words never count";
}

// Float outputs, and tolerance rules, keep the poison test: an honest float output is not naive's
// bit for bit (an exact float compare passes -0.0 for 0.0).
TEST(ProbeWords, FloatAndToleranceOutputsKeepThePoisonTest) {
  EXPECT_FALSE(probe_final_words(output(DType::f32, "exact")));
  EXPECT_FALSE(probe_final_words(output(DType::i32, "multiset")));
  EXPECT_FALSE(probe_final_words(output(DType::i32, "allclose")));
}

// A row set compared as a multiset is not watched at fixed places: its honest rows may come in
// another order than naive's (groupby_aggregate's expert), so words that equal the poison by
// chance (a negative int64's sign extension) land where naive's did not, and the probe never
// passed. Its exact integer count is watched, and waits for naive's final count.
TEST(ProbeWords, MultisetRowsAreNotWatchedTheirCountIs) {
  EXPECT_FALSE(probe_watches(output(DType::i64, "multiset")));
  EXPECT_TRUE(probe_watches(output(DType::i64, "exact")));
  EXPECT_TRUE(probe_final_words(output(DType::i64, "exact")));
  // Naive's min rows and the expert's same rows in another order: as the poison test reads them
  // at fixed places, half the watched words would stay pending for ever.
  const std::vector<unsigned short> naive = {0x1234, 0xFFFF, 0x0042, 0xFFFF};
  const std::vector<unsigned short> other_order = {0x0042, 0xFFFF, 0x1234, 0xFFFF};
  const std::vector<char> positional = {1, 0, 1, 0};
  EXPECT_EQ(probe_pending_words(other_order, naive, positional, false), 0u);
  const std::vector<unsigned short> swapped = {0xFFFF, 0x1234, 0xFFFF, 0x0042};
  EXPECT_EQ(probe_pending_words(swapped, naive, positional, false), 2u) << "why multiset rows are not watched";
  EXPECT_TRUE(probe_watches(output(DType::f32, "allclose")));
}

// The parent counts the last slot itself only late (2x the expected time), where a count that
// held since the look before also ends the batch; a probe with nothing to watch counts from the
// first look, ended only by naive's count: waiting for 2x would read every such honest batch at
// half its median, and an unchanged count early may be a last call that has not started.
TEST(ProbeWords, LastSlotCountedLateOrWhenNothingIsWatched) {
  const SlotCount watched_early = slot_count_rule(false, 5), watched_late = slot_count_rule(true, 5);
  EXPECT_FALSE(watched_early.count);
  EXPECT_TRUE(watched_late.count);
  EXPECT_TRUE(watched_late.unchanged_ends);
  const SlotCount none_early = slot_count_rule(false, 0), none_late = slot_count_rule(true, 0);
  EXPECT_TRUE(none_early.count);
  EXPECT_FALSE(none_early.unchanged_ends);
  EXPECT_TRUE(none_late.count);
  EXPECT_TRUE(none_late.unchanged_ends);
}

}  // namespace
}  // namespace d2k

namespace d2k {

TEST(LookSchedule, DefaultsWithoutTheKnobAndParsesFirstAndRate) {
  for (const char* none : {static_cast<const char*>(nullptr), ""}) {
    const LookSchedule d = parse_look_schedule(none);
    EXPECT_DOUBLE_EQ(d.first, kFirstLook);
    EXPECT_DOUBLE_EQ(d.per_expect, kLooksPerExpect);
  }
  const LookSchedule l = parse_look_schedule("1.0,100");
  EXPECT_DOUBLE_EQ(l.first, 1.0);
  EXPECT_DOUBLE_EQ(l.per_expect, 100);
}

TEST(LookSchedule, MalformedOrOutOfRangeNamesTheKnob) {
  for (const char* bad : {"1.0", "1.0,", ",100", "x,100", "1.0,100x", "0.1,100", "5,100", "1.0,5", "1.0,20000", "1.0;100"}) {
    try {
      parse_look_schedule(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("D2K_PARENT_LOOKS"), std::string::npos) << e.what();
    }
  }
}

}  // namespace d2k
