#include "engine/parent_clock.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/cuda_util.h"
#include "engine/checksum.h"
#include "engine/judge.h"

namespace d2k {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr unsigned short kPoisonWord = static_cast<unsigned short>(kPoisonA) * 0x0101u;

/// Poison words in `bytes` at `p` (synchronises `s`).
std::uint64_t count_poison(const void* p, std::size_t bytes, cudaStream_t s) {
  DeviceBuffer acc(sizeof(unsigned long long));
  D2K_CUDA_CHECK(cudaMemsetAsync(acc.get(), 0, acc.size(), s));
  launch_count_words(p, bytes / 2, kPoisonWord, static_cast<unsigned long long*>(acc.get()), s);
  D2K_CUDA_CHECK_LAUNCH();
  unsigned long long h = 0;
  D2K_CUDA_CHECK(cudaMemcpyAsync(&h, acc.get(), sizeof(h), cudaMemcpyDeviceToHost, s));
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

/// Poison words an honest call leaves in its slot: the alignment padding, and whatever poison
/// words naive's outputs on that input set happen to hold.
std::vector<std::uint64_t> honest_poison_per_set(const WorkloadPlan& plan, const BatchShape& b,
                                                 const std::vector<DeviceSet>& expected, cudaStream_t s) {
  DevMem slot(b.stride, MemKind::local);
  std::vector<std::uint64_t> n;
  for (const DeviceSet& e : expected) {
    D2K_CUDA_CHECK(cudaMemsetAsync(slot.get(), kPoisonA, b.stride, s));
    for (std::size_t j = 0; j < plan.outputs.size(); ++j)
      D2K_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(slot.get()) + b.out_offsets[j], e.bufs[j].get(), plan.outputs[j].bytes,
                                     cudaMemcpyDeviceToDevice, s));
    n.push_back(count_poison(slot.get(), b.stride, s));
  }
  return n;
}

/// Copies call i's outputs out of the slab into `outs` (plan order).
void copy_slot(const WorkloadPlan& plan, const BatchShape& b, const DevMem& slab, std::size_t i, DeviceSet& outs, cudaStream_t s) {
  for (std::size_t j = 0; j < plan.outputs.size(); ++j)
    D2K_CUDA_CHECK(cudaMemcpyAsync(outs.bufs[j].get(), static_cast<const char*>(slab.get()) + i * b.stride + b.out_offsets[j],
                                   plan.outputs[j].bytes, cudaMemcpyDeviceToDevice, s));
}

/// The probe's words of one output, read through the copy engine (it does not time-slice the
/// worker's kernels the way a kernel of this context would) into `host`: the layout's strided
/// words, then the last word.
void read_probe_words(const void* out, const ProbeLayout& l, std::vector<unsigned short>& host, cudaStream_t s) {
  host.assign(l.count + 1, 0);
  D2K_CUDA_CHECK(cudaMemcpy2DAsync(host.data(), sizeof(unsigned short), out, std::max<std::size_t>(l.step, 2),
                                   sizeof(unsigned short), l.count, cudaMemcpyDeviceToHost, s));
  D2K_CUDA_CHECK(cudaMemcpyAsync(&host[l.count], static_cast<const char*>(out) + l.last, 2, cudaMemcpyDeviceToHost, s));
}

/// The words of a call's slot the parent looks at to see the call finished: for each output, the
/// probe layout's words that naive wrote on the input set the last call reads. Watching only an
/// output's last word misread every call whose outputs include one it sets first and adds to
/// later (hash_join's match counter, zeroed at the call's start): the parent saw the last call
/// "written" as it began, and its whole-slab counts, each a kernel the GPU time-slices against
/// the worker's, slowed the honest call they waited for (a hash_join expert at 0.76 of the
/// parent's figure on the H200: REWARD_HACK). Words spread over every output are written late by
/// such a call too. A word naive leaves as the poison (capacity past a row count) is not watched.
struct SlotProbe {
  struct Output {
    std::size_t offset = 0;  ///< in the slot
    ProbeLayout layout;
    std::vector<char> watched;  ///< per word read (layout.count strided words, then the last)
    std::vector<unsigned short> naive;  ///< naive's words at the same places
    bool final_words = false;  ///< written means naive's words (probe_final_words)
  };
  std::vector<Output> outs;
  std::size_t watched = 0;  ///< watched words over every output
};

SlotProbe make_probe(const WorkloadPlan& plan, const BatchShape& b, const DeviceSet& expected, cudaStream_t s) {
  SlotProbe p;
  std::vector<std::vector<unsigned short>> host(plan.outputs.size());
  for (std::size_t j = 0; j < plan.outputs.size(); ++j) {
    SlotProbe::Output o;
    o.offset = b.out_offsets[j];
    o.layout = probe_layout(plan.outputs[j].bytes);
    o.final_words = probe_final_words(plan.outputs[j]);
    read_probe_words(expected.bufs[j].get(), o.layout, host[j], s);
    p.outs.push_back(std::move(o));
  }
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  for (std::size_t j = 0; j < p.outs.size(); ++j) {
    const bool watch = probe_watches(plan.outputs[j]);
    p.outs[j].watched.resize(host[j].size());
    p.outs[j].naive = host[j];
    for (std::size_t k = 0; k < host[j].size(); ++k) {
      p.outs[j].watched[k] = watch && host[j][k] != kPoisonWord;
      p.watched += p.outs[j].watched[k];
    }
  }
  return p;
}

/// Whether call i's slot reads as written: at most 1 in kProbeSlack of its watched words still
/// pending (probe_pending_words: the poison, or for an integer output compared exactly, not yet
/// naive's word; an honest output that differs from naive's holds a 0xFFFF word by chance, 1 in
/// 65536; the whole-slab count decides anyway, and a look that passes early only lengthens the
/// parent's figure). False when no word is watched.
bool probe_written(const SlotProbe& p, const DevMem& slab, const BatchShape& b, std::size_t i, cudaStream_t s) {
  if (p.watched == 0) return false;
  static thread_local std::vector<std::vector<unsigned short>> host;
  host.resize(p.outs.size());
  const char* slot = static_cast<const char*>(slab.get()) + i * b.stride;
  for (std::size_t j = 0; j < p.outs.size(); ++j) read_probe_words(slot + p.outs[j].offset, p.outs[j].layout, host[j], s);
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  std::size_t pending = 0;
  for (std::size_t j = 0; j < p.outs.size(); ++j)
    pending += probe_pending_words(host[j], p.outs[j].naive, p.outs[j].watched, p.outs[j].final_words);
  return pending <= p.watched / kProbeSlack;
}

/// Watches the slab on the parent's own stream until `end` decides (every call's outputs written,
/// or a count that holds): first the last call's slot (cheap, polled often; honest batches run in
/// order), then the whole slab. Returns the duration of its last whole-slab count (after the clock).
double watch_slab(const DevMem& slab, const BatchShape& b, const SlotProbe& probe,
                   std::uint64_t honest_last, Clock::time_point t0, double expect_s, double timeout_s, BatchEnd& end,
                   cudaStream_t s) {
  double check_s = 0;
  // Start looking at kFirstLook of the expected time (the worker's cold median; the batch runs
  // cold too), then look every expect/1000: every look is a copy from another context, which the
  // GPU time-slices against the worker's kernels, so looks are few and late. A late look only
  // lengthens the parent's figure; a batch done before the first look gets a figure of
  // kFirstLook x the worker's median, below which the worker's median is trusted anyway.
  static const LookSchedule looks = parse_look_schedule(std::getenv(kParentLooksEnv));
  std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(looks.first * expect_s)));
  const auto every = std::chrono::duration<double>(std::clamp(expect_s / looks.per_expect, 20e-6, 1e-3));
  const std::size_t last = b.calls - 1;
  const char* last_slot = static_cast<const char*>(slab.get()) + last * b.stride;
  std::optional<std::uint64_t> last_slot_count;
  // After 2x the expected time, with the probe not passing (an honest call left more watched
  // words as the poison by chance than the slack allows), the last call's slot is counted: at
  // naive's count, or at the count of the look before (a candidate whose outputs are not bitwise
  // naive's), it has finished. Whole-slab counts start only then, not while a slow call still
  // runs. A probe that watches no word (every output a row set, or left as the poison by naive)
  // counts the last slot from the first look, at naive's count only: waiting for 2x the expected
  // time would put every such honest batch at half its worker's median (a timer_cross_check).
  const auto slot_settled = [&](bool unchanged_ends) {
    const std::uint64_t c = count_poison(last_slot, b.stride, s);
    const bool settled = c <= honest_last || (unchanged_ends && last_slot_count == c);
    last_slot_count = c;
    return settled;
  };
  while (seconds_since(t0) < timeout_s) {
    // Honest batches run in order: the last call's probe words come last.
    const SlotCount rule = slot_count_rule(seconds_since(t0) > 2 * expect_s, probe.watched);
    const bool last_done = probe_written(probe, slab, b, last, s) || (rule.count && slot_settled(rule.unchanged_ends));
    if (last_done) {
      // The clock stops here; the whole-slab count confirms it (BatchEnd: what is charged).
      const double seen = seconds_since(t0);
      const auto c0 = Clock::now();
      const std::uint64_t count = count_poison(slab.get(), b.calls * b.stride, s);
      check_s = seconds_since(c0);
      if (end.look(seen, count, check_s)) return check_s;
    }
    std::this_thread::sleep_for(every);
  }
  return check_s;
}

/// Every call's outputs: bitwise equal to those of the first call on the same input set (a
/// deterministic call), else judged against naive's; the first calls are judged in any case.
std::vector<std::size_t> wrong_calls(const WorkloadPlan& plan, const BatchShape& b, const DevMem& slab,
                                     const std::vector<DeviceSet>& expected, cudaStream_t s) {
  const std::size_t n = expected.size();
  DeviceSet slot = DeviceSet::allocate(plan.outputs);
  std::vector<std::uint64_t> first_sum(n, 0);
  std::vector<std::size_t> wrong;
  for (std::size_t i = 0; i < b.calls; ++i) {
    copy_slot(plan, b, slab, i, slot, s);
    const std::uint64_t sum = device_checksum(slot, s);
    if (i >= n && sum == first_sum[i % n]) continue;
    if (judge_single(plan, OutputsView(expected[i % n], s), OutputsView(slot, s)).status != Status::PASSED) wrong.push_back(i);
    if (i < n) first_sum[i] = sum;
  }
  return wrong;
}

}  // namespace

LookSchedule parse_look_schedule(const char* value) {
  LookSchedule l;
  if (value == nullptr || *value == 0) return l;
  const std::string v(value);
  const auto bad = [&] {
    return std::invalid_argument(fmt::format("{}='{}': expected 'first,per_expect' with first in [0.5, 4] and "
                                             "per_expect in [10, 10000] (e.g. '0.9,1000', the default)",
                                             kParentLooksEnv, v));
  };
  const std::size_t comma = v.find(',');
  if (comma == std::string::npos) throw bad();
  try {
    std::size_t used_first = 0, used_per = 0;
    l.first = std::stod(v.substr(0, comma), &used_first);
    l.per_expect = std::stod(v.substr(comma + 1), &used_per);
    if (used_first != comma || used_per != v.size() - comma - 1) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  if (!(l.first >= 0.5 && l.first <= 4) || !(l.per_expect >= 10 && l.per_expect <= 10000)) throw bad();
  return l;
}

BatchShape batch_shape(const WorkloadPlan& plan, double median_s) {
  BatchShape b;
  for (const TensorPlan& t : plan.outputs) {
    b.out_offsets.push_back(b.stride);
    b.stride += (std::max<std::size_t>(t.bytes, 2) + 255) / 256 * 256;
  }
  b.stride = std::max<std::size_t>(b.stride, 256);
  const double per = std::max(median_s, 1e-7);
  const std::size_t want = static_cast<std::size_t>(std::ceil(kBatchTarget_s / per));
  b.calls = std::clamp<std::size_t>(want, kBatchMinCalls,
                                    std::max(kBatchMinCalls, std::min(kBatchMaxCalls, kBatchBudgetBytes / b.stride)));
  return b;
}

ProbeLayout probe_layout(std::size_t bytes) {
  const std::size_t words = std::max<std::size_t>(bytes, 2) / 2;
  // Strided words from the first to the output's last stride (not bunched at its start).
  const std::size_t step_words = (words + kProbeWords - 1) / kProbeWords;
  ProbeLayout l;
  l.count = (words + step_words - 1) / step_words;
  l.step = step_words * 2;
  l.last = words * 2 - 2;
  return l;
}

SlotCount slot_count_rule(bool late, std::size_t watched_words) {
  return {late || watched_words == 0, late};
}

bool probe_watches(const TensorPlan& out) { return out.cmp.rule != "multiset"; }

bool probe_final_words(const TensorPlan& out) {
  return out.cmp.rule == "exact" && !is_floating(out.dtype);
}

std::size_t probe_pending_words(const std::vector<unsigned short>& seen, const std::vector<unsigned short>& naive,
                                const std::vector<char>& watched, bool final_words) {
  std::size_t pending = 0;
  for (std::size_t k = 0; k < seen.size() && k < watched.size(); ++k) {
    if (!watched[k]) continue;
    pending += final_words ? (k >= naive.size() || seen[k] != naive[k]) : seen[k] == kPoisonWord;
  }
  return pending;
}

std::size_t sets_that_fit(std::size_t set_bytes, std::size_t free_bytes, const char* what) {
  const std::size_t usable = free_bytes > kDeviceReserveBytes ? free_bytes - kDeviceReserveBytes : 0;
  const std::size_t n = usable / std::max<std::size_t>(set_bytes, 1);
  if (n == 0)
    throw std::runtime_error(fmt::format("device memory: one {} needs {:.2f} GB; {:.2f} GB are free, of which "
                                         "{:.2f} GB stay reserved for the worker and the candidate",
                                         what, set_bytes / 1e9, free_bytes / 1e9, kDeviceReserveBytes / 1e9));
  return n;
}

std::size_t batch_input_sets(std::size_t l2_bytes, std::size_t in_bytes, std::size_t out_bytes, std::size_t free_bytes) {
  const std::size_t per_call = std::max<std::size_t>(in_bytes + out_bytes, 1);
  const double footprint = kColdFootprintL2 * static_cast<double>(l2_bytes);
  const double need = std::ceil(footprint / static_cast<double>(per_call));
  const std::size_t by_budget = in_bytes == 0 ? kBatchMaxInputSets : kBatchInputBudgetBytes / in_bytes;
  // Each set holds its inputs and its naive outputs (what every call on it must produce).
  const std::size_t by_memory = sets_that_fit(per_call, free_bytes, "input set of the parent's batch");
  const std::size_t floor = by_memory < 2 && static_cast<double>(per_call) >= footprint ? 1 : 2;
  const std::size_t cap = std::min(by_memory, std::max<std::size_t>(floor, std::min(kBatchMaxInputSets, by_budget)));
  if (cap < floor)
    throw std::runtime_error(fmt::format("device memory: the parent's batch needs 2 input sets of {:.2f} GB (one "
                                         "does not cover {} L2 sizes); {:.2f} GB are free",
                                         per_call / 1e9, kColdFootprintL2, free_bytes / 1e9));
  return std::clamp<std::size_t>(static_cast<std::size_t>(need), floor, cap);
}

std::size_t device_free_bytes() {
  std::size_t free_b = 0, total_b = 0;
  D2K_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

std::size_t batch_repeats(std::size_t calls, double median_s) {
  const double one = static_cast<double>(std::max<std::size_t>(calls, 1)) * std::max(median_s, 1e-9);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(kBatchTarget_s / one)), 1, kBatchMaxRepeats);
}

double batch_end_s(double seen_s, double confirm_s, double idle_s) {
  return seen_s + std::max(0.0, confirm_s - kConfirmSlack * idle_s);
}

bool BatchEnd::look(double seen_s, std::uint64_t count, double check_s) {
  if (count <= honest_) {
    // Only the count's excess over an idle count is charged (work still running slows it). A
    // batch not complete at the first look (it ran out of order) gets no such discount.
    complete_ = true;
    end_s_ = first_ ? batch_end_s(seen_s, check_s, idle_check_s_) : seen_s + check_s;
    return true;
  }
  if (!first_ && count == pending_count_) {
    stable_ = true;
    return true;
  }
  // A count that the next look repeats ends the batch at this look, with the same idle discount
  // as a count at naive's: the work had finished before the count read the slab (the count did
  // not change after it), so only its slowdown beyond an idle count is charged. Charging the
  // whole count put its full duration on every honest batch whose outputs are not bitwise
  // naive's (13.5-32 ms per batch at fused_adamw's 17-42 GB slabs: 0.44 of the parent's figure).
  first_ = false;
  pending_count_ = count;
  pending_s_ = batch_end_s(seen_s, check_s, idle_check_s_);
  return false;
}

void BatchEnd::settle(std::uint64_t final_count, double wait_s) {
  if (complete_ || !stable_) return;  // decided, or the watch timed out (nothing seen: not complete)
  complete_ = true;
  end_s_ = final_count == pending_count_ ? pending_s_ : std::max(pending_s_, wait_s);
}

std::size_t l2_cache_bytes() {
  int dev = 0, l2 = 0;
  D2K_CUDA_CHECK(cudaGetDevice(&dev));
  D2K_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  return static_cast<std::size_t>(std::max(l2, 0));
}

namespace {

/// One batch: poison the slab, start, watch, wait for the worker, judge every call. Adds the
/// batch's clock to `res.timing`; returns false when `res` holds a failure.
bool one_batch(TargetRunner& runner, const WorkloadPlan& plan, const BatchShape& b, const DevMem& slab,
               const SlotProbe& probe, const std::vector<std::uint64_t>& honest, std::uint64_t honest_all, const std::vector<DeviceSet>& expected,
               double median_s, double timeout_s, cudaStream_t s, ParentClockResult& res) {
  // Poisoned after the capture and before every batch (work a capture let run, or the last
  // batch's outputs, are wiped); the 16 GiB-scale memset also leaves the L2 without inputs.
  D2K_CUDA_CHECK(cudaMemsetAsync(slab.get(), kPoisonA, b.calls * b.stride, s));
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  const auto c0 = Clock::now();
  count_poison(slab.get(), b.calls * b.stride, s);
  const double idle_check_s = seconds_since(c0);
  const auto t0 = Clock::now();
  if (CallOutcome o = runner.batch_start(); !o.ok) {
    res.call = o;
    return false;
  }
  BatchEnd end(honest_all, idle_check_s);
  const double final_check_s = watch_slab(slab, b, probe, honest[(b.calls - 1) % honest.size()], t0,
                               median_s * static_cast<double>(b.calls), timeout_s, end, s);
  if (CallOutcome o = runner.batch_wait(timeout_s); !o.ok) {
    res.call = o;
    return false;
  }
  const double wait_s = seconds_since(t0);
  if (!end.complete()) end.settle(count_poison(slab.get(), b.calls * b.stride, s), wait_s);
  std::vector<std::size_t> wrong = wrong_calls(plan, b, slab, expected, s);
  if (!end.complete() && wrong.empty()) wrong.push_back(b.calls - 1);  // poison the judge did not see (padding): still unfinished
  if (auto v = check_batch_outputs(wrong, b.calls)) {
    res.violation = v;
    return false;
  }
  res.timing.calls += b.calls;
  res.timing.batches += 1;
  res.timing.batch_s += end.end_s();
  res.timing.after_clock_s += final_check_s;
  return true;
}

}  // namespace

ParentClockResult time_on_parent_clock(TargetRunner& runner, const WorkloadPlan& plan, const std::vector<DeviceSet>& ins,
                                       const std::vector<DeviceSet>& expected, double median_s, double timeout_s, cudaStream_t s) {
  ParentClockResult res;
  // Phase 1: layout, the honest poison count of every slot, the input sets' checksums.
  const BatchShape b = batch_shape(plan, median_s);
  DevMem slab(b.calls * b.stride, runner.memory_kind());
  const std::vector<std::uint64_t> honest = honest_poison_per_set(plan, b, expected, s);
  std::uint64_t honest_all = 0;
  for (std::size_t i = 0; i < b.calls; ++i) honest_all += honest[i % honest.size()];
  const SlotProbe probe = make_probe(plan, b, expected[(b.calls - 1) % expected.size()], s);
  std::vector<std::uint64_t> in_sums;
  for (const DeviceSet& d : ins) in_sums.push_back(device_checksum(d, s));

  // Phase 2: the worker readies the batch (captures a graph). Nothing runs yet.
  BatchSpec spec;
  for (const DeviceSet& d : ins) spec.ins.push_back(&d);
  spec.slab = &slab;
  spec.stride = b.stride;
  spec.out_offsets = b.out_offsets;
  spec.calls = b.calls;
  BatchPrepared prep = runner.batch_prepare(spec);
  if (!prep.call.ok) {
    res.call = prep.call;
    return res;
  }
  res.graph = prep.graph;
  res.note = prep.note;
  if (prep.unjoined) {
    res.violation = violation("stream_join", "the batch's capture ended with work on a stream never joined back to the harness stream: " + prep.note);
    return res;
  }

  // Phase 3: the batches, each timed on the parent's clock and fully judged; their times add up.
  const std::size_t repeats = batch_repeats(b.calls, median_s);
  for (std::size_t r = 0; r < repeats; ++r)
    if (!one_batch(runner, plan, b, slab, probe, honest, honest_all, expected, median_s, timeout_s, s, res)) return res;

  // Phase 4: the input sets, unchanged by every call of every batch.
  for (std::size_t k = 0; k < ins.size(); ++k)
    if (device_checksum(ins[k], s) != in_sums[k]) {
      res.violation = violation("inputs_unchanged", fmt::format("input set {} of the parent's batch changed during the batch", k));
      return res;
    }
  return res;
}

}  // namespace d2k
