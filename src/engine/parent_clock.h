#pragma once
/// The timing boundary (docs/isolation.md, "The timing boundary"): the parent times, on its own
/// clock, a batch of back-to-back calls in which every call writes its own freshly poisoned
/// outputs, and the batch ends when the parent has seen every output written, not when the
/// worker says so. Nothing the worker measures is subtracted; only the parent's own checking time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_backend.h"
#include "engine/plan.h"
#include "engine/rules.h"
#include "engine/runner.h"

namespace d2k {

/// Sizes of a batch.
struct BatchShape {
  std::size_t calls = 0;   ///< calls, each with its own outputs
  std::size_t stride = 0;  ///< bytes of one call's outputs in the slab (each output 256-aligned)
  std::vector<std::size_t> out_offsets;
};

inline constexpr double kBatchTarget_s = 0.1;               ///< calls on the parent's clock, all batches together
inline constexpr std::size_t kBatchMinCalls = 3;  ///< even where one call's outputs pass the budget
inline constexpr std::size_t kBatchMaxCalls = 20000;
inline constexpr std::size_t kBatchBudgetBytes = std::size_t(16) << 30;  ///< device memory for the batch's outputs
inline constexpr std::size_t kBatchMaxRepeats = 32;         ///< batches (each fully checked) whose times add up
/// Cold batch: the input sets one rotation of the batch reads, plus the outputs it writes, cover
/// at least this many L2 sizes, so that every call reads inputs the L2 no longer holds, as the
/// worker's cold-L2 samples do (no flush inside the worker's graph: the worker could drop it).
inline constexpr double kColdFootprintL2 = 3.0;
inline constexpr std::size_t kBatchMaxInputSets = 256;
inline constexpr std::size_t kBatchInputBudgetBytes = std::size_t(8) << 30;  ///< device memory for the batch's input sets
/// The confirmation after the clock (a whole-slab poison count) may take this many times its
/// idle duration before the excess counts on the clock (work still running slows it).
inline constexpr double kConfirmSlack = 1.2;

/// The parent's first look at the batch, as a share of the expected time (the worker's median x
/// calls); looks follow every 1/1000 of it.
inline constexpr double kFirstLook = 0.9;
/// Looks after the first: every expected time / kLooksPerExpect (clamped to 20 us .. 1 ms).
inline constexpr double kLooksPerExpect = 1000;

/// When the parent looks: the first look at `first` x the expected time, then every expected
/// time / `per_expect`. A measurement knob, not a setting: each look is a copy from another
/// context that the GPU time-slices against the worker's kernels, and how much the looks slow a
/// batch is measured by moving them (D2K_PARENT_LOOKS="first,per_expect"); a trace made with it
/// lists it under environment.test_knobs and is not a verdict.
struct LookSchedule {
  double first = kFirstLook;
  double per_expect = kLooksPerExpect;
};
inline constexpr const char* kParentLooksEnv = "D2K_PARENT_LOOKS";
/// Parses "first,per_expect" (first in [0.5, 4], per_expect in [10, 10000]); null or empty: the
/// defaults. Anything else throws std::invalid_argument naming D2K_PARENT_LOOKS (pure: unit-tested).
LookSchedule parse_look_schedule(const char* value);

/// Where the parent looks to see that a call wrote one output of `bytes` bytes: `count` 16-bit
/// words `step` bytes apart from the first, and the last word at `last` (pure: unit-tested).
struct ProbeLayout {
  std::size_t step = 0;
  std::size_t count = 0;
  std::size_t last = 0;
};
/// Words of an output the probe reads (fewer when the output is smaller): each look is one strided
/// copy per output on the copy engine, so the words can be many without slowing the worker.
inline constexpr std::size_t kProbeWords = 1024;
/// A look passes with at most 1 in this many watched words still the poison.
inline constexpr std::size_t kProbeSlack = 256;
ProbeLayout probe_layout(std::size_t bytes);

/// Whether the probe reads output `out` as written only once its watched words are naive's: an
/// integer output compared exactly, whose honest final words are naive's bit for bit. A call may
/// use such an output as scratch before its last pass (radix_sort_pairs' ping-pong writes keys
/// and values into the outputs at digit pass 2 of 4): read as "not the poison", its slot passed
/// the probe at half the last call, and the whole-slab counts that followed, time-sliced against
/// the worker's kernels, made the honest 1e9-key sort read 1.36x its median on the parent's clock
/// (a false timer_cross_check on the H200, 2026-12-03). Float outputs keep the poison test (an
/// exact float compare passes -0.0 for 0.0, which differ in bits).
bool probe_final_words(const TensorPlan& out);

/// When the parent counts the last call's slot itself instead of trusting the probe (pure:
/// unit-tested): after 2x the expected time (`late`), settled at naive's count or at a count
/// unchanged since the look before; with no watched word from the first look, at naive's count
/// only (a count unchanged between two looks may be a call that has not started).
struct SlotCount {
  bool count = false;           ///< count the last slot at this look
  bool unchanged_ends = false;  ///< a count equal to the last look's ends the batch
};
SlotCount slot_count_rule(bool late, std::size_t watched_words);

/// Whether the probe watches output `out` at fixed places: not a row set compared as a multiset,
/// whose honest rows may sit in any order. Another order puts honest words that equal the poison
/// (the sign extension of a negative int64: every group-by min row) where naive's rows did not
/// have them, so the probe of groupby_aggregate's expert never passed, the fallback counted the
/// last slot only after 2x the expected time, and the honest expert read 0.50 of the parent's
/// figure on three rows (a false timer_cross_check on the H200, 2026-12-03). The row set's count
/// (an exact integer output, read as written only at naive's final count) is watched instead;
/// the whole-slab count after the clock, which does not depend on the order, confirms the rows.
bool probe_watches(const TensorPlan& out);

/// Watched words of one output's probe not yet written: `seen` and `naive` as read_probe_words
/// reads them, `watched` per word; with `final_words`, a word other than naive's, else a word
/// that is still the poison (pure: unit-tested).
std::size_t probe_pending_words(const std::vector<unsigned short>& seen, const std::vector<unsigned short>& naive,
                                const std::vector<char>& watched, bool final_words);

/// How many calls (at the worker's median `median_s`) and how the outputs are laid out. The worker's
/// median only sizes the batch: a forged one makes the batch longer or shorter, never the bound looser.
BatchShape batch_shape(const WorkloadPlan& plan, double median_s);

/// Device memory the parent leaves free when it sizes input sets: the worker's and the
/// candidate's own allocations (scratch, workspaces) and the comparators need it.
inline constexpr std::size_t kDeviceReserveBytes = std::size_t(4) << 30;

/// How many sets of `set_bytes` fit in `free_bytes` beyond kDeviceReserveBytes. Throws
/// std::runtime_error naming the sizes when not even one does (`what` names the sets).
std::size_t sets_that_fit(std::size_t set_bytes, std::size_t free_bytes, const char* what);

/// Input sets the parent draws for the batch: `in_bytes` + `out_bytes` per call, enough sets that
/// one rotation covers kColdFootprintL2 x `l2_bytes`, at least 2, within kBatchInputBudgetBytes,
/// kBatchMaxInputSets and the device memory `free_bytes` (sets_that_fit). Where memory holds only
/// one set and that set alone covers the footprint (a 23 GB TPC-H SF100 lineitem), one set.
std::size_t batch_input_sets(std::size_t l2_bytes, std::size_t in_bytes, std::size_t out_bytes, std::size_t free_bytes);

/// Free device memory as the parent sees it (cudaMemGetInfo: every process's allocations count).
std::size_t device_free_bytes();

/// How many batches of `calls` calls at `median_s` (the worker's median: it only sizes the work)
/// add up to kBatchTarget_s, at least 1, at most kBatchMaxRepeats.
std::size_t batch_repeats(std::size_t calls, double median_s);

/// The clock's end of one batch: `seen_s`, when the parent saw the last call's slot written, plus
/// whatever the confirming whole-slab count that followed took beyond kConfirmSlack x its idle
/// duration `idle_s` (work still running when the clock stopped slows that count: it is charged).
double batch_end_s(double seen_s, double confirm_s, double idle_s);

/// When a batch ended, decided from the parent's whole-slab poison counts (pure: unit-tested).
/// The fast end: a count at or below `honest`, the poison words naive's outputs leave in the slab.
/// A candidate whose outputs are not bitwise naive's leaves its own number of poison words (the
/// 0xFFFF halves of fp32 values occur by chance, 1 in 65536), so the count can stay above `honest`
/// on an honest batch; then the end is the first look at a count that the next look repeats (with
/// the same idle discount), and it stands only if the slab holds that same count once the worker
/// has finished (settle). A count
/// that still changed after it means the work went on: the end is when the worker's wait returned.
class BatchEnd {
 public:
  BatchEnd(std::uint64_t honest, double idle_check_s) : honest_(honest), idle_check_s_(idle_check_s) {}
  /// One whole-slab count of `count` poison words, finished `seen_s` + `check_s` after the start
  /// (taken once the last call's slot looked written). True: stop looking.
  bool look(double seen_s, std::uint64_t count, double check_s);
  /// The worker has finished: the slab's count now, and when its wait returned (from the start).
  void settle(std::uint64_t final_count, double wait_s);
  bool complete() const { return complete_; }
  double end_s() const { return end_s_; }

 private:
  std::uint64_t honest_;
  double idle_check_s_;
  bool complete_ = false, first_ = true, stable_ = false;
  double end_s_ = 0, pending_s_ = 0;
  std::uint64_t pending_count_ = 0;
};

/// The L2 size of the current device, read by the parent (cudaDevAttrL2CacheSize).
std::size_t l2_cache_bytes();

/// What the parent's batch came to.
struct ParentClockResult {
  CallOutcome call;                    ///< a failed request (then nothing else is set)
  ParentTiming timing;
  bool graph = false;
  std::string note;
  std::optional<Violation> violation;  ///< batch_outputs, stream_join
};

/// Runs batch_repeats() batches on `runner` over the parent-drawn input sets `ins`, whose naive
/// outputs are `expected` (one per input set), judges every call's outputs after each batch, and
/// checks after the last that no input set changed (inputs_unchanged).
ParentClockResult time_on_parent_clock(TargetRunner& runner, const WorkloadPlan& plan, const std::vector<DeviceSet>& ins,
                                       const std::vector<DeviceSet>& expected, double median_s, double timeout_s, cudaStream_t s);

}  // namespace d2k
