#include "engine/parent_clock.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
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

/// Watches the slab on the parent's own stream until every call's outputs are written: first the
/// last call's slot (cheap, polled often; honest batches run in order), then the whole slab.
/// Returns the parent's time of the end and the duration of its final whole-slab check.
struct Watched {
  bool complete = false;
  double end_s = 0, final_check_s = 0;
  std::uint64_t poison_left = 0;
};

/// The last 16-bit word of each output of call i, read through the copy engine (it does not
/// time-slice the worker's kernels the way a kernel of this context would).
bool last_words_written(const DevMem& slab, const BatchShape& b, const WorkloadPlan& plan, std::size_t i, cudaStream_t s) {
  static thread_local std::vector<unsigned short> host;
  host.assign(plan.outputs.size(), 0);
  for (std::size_t j = 0; j < plan.outputs.size(); ++j) {
    const std::size_t end = b.out_offsets[j] + std::max<std::size_t>(plan.outputs[j].bytes, 2) / 2 * 2 - 2;
    D2K_CUDA_CHECK(cudaMemcpyAsync(&host[j], static_cast<const char*>(slab.get()) + i * b.stride + end, 2,
                                   cudaMemcpyDeviceToHost, s));
  }
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  return std::none_of(host.begin(), host.end(), [](unsigned short w) { return w == kPoisonWord; });
}

Watched watch_slab(const DevMem& slab, const BatchShape& b, const WorkloadPlan& plan, std::uint64_t honest_poison,
                   std::uint64_t honest_last, Clock::time_point t0, double expect_s, double timeout_s, double idle_check_s,
                   cudaStream_t s) {
  Watched w;
  // Start looking at 0.6 of the expected time (the worker's cold median; the batch runs warm, so
  // it can end earlier), then look every expect/500: a late look lengthens the parent's figure.
  std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(0.6 * expect_s)));
  const auto every = std::chrono::duration<double>(std::clamp(expect_s / 500, 20e-6, 1e-3));
  const std::size_t last = b.calls - 1;
  while (seconds_since(t0) < timeout_s) {
    // Honest batches run in order: the last call's last words come last. A naive output whose
    // last word is the poison word itself falls back to counting the slot, after 2x the expected time.
    const bool last_done = last_words_written(slab, b, plan, last, s) ||
                           (seconds_since(t0) > 2 * expect_s &&
                            count_poison(static_cast<const char*>(slab.get()) + last * b.stride, b.stride, s) <= honest_last);
    if (last_done) {
      const auto c0 = Clock::now();
      w.poison_left = count_poison(slab.get(), b.calls * b.stride, s);
      // The parent's own check, measured by it; never more than twice its cost on an idle slab
      // (a worker that slows the parent's check must not buy a shorter figure with it).
      w.final_check_s = std::min(seconds_since(c0), 2 * idle_check_s);
      if (w.poison_left <= honest_poison) {
        w.complete = true;
        w.end_s = seconds_since(t0);
        return w;
      }
    }
    std::this_thread::sleep_for(every);
  }
  return w;
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
    if (judge_single_device(plan, expected[i % n], slot, s).status != Status::PASSED) wrong.push_back(i);
    if (i < n) first_sum[i] = sum;
  }
  return wrong;
}

}  // namespace

BatchShape batch_shape(const WorkloadPlan& plan, double median_s) {
  BatchShape b;
  for (const TensorPlan& t : plan.outputs) {
    b.out_offsets.push_back(b.stride);
    b.stride += (std::max<std::size_t>(t.bytes, 2) + 255) / 256 * 256;
  }
  b.stride = std::max<std::size_t>(b.stride, 256);
  const double per = std::max(median_s, 1e-7);
  const std::size_t want = static_cast<std::size_t>(std::ceil(kBatchTarget_s / per));
  b.calls = std::clamp<std::size_t>(want, 3, std::max<std::size_t>(3, std::min(kBatchMaxCalls, kBatchBudgetBytes / b.stride)));
  return b;
}

ParentClockResult time_on_parent_clock(TargetRunner& runner, const WorkloadPlan& plan, const std::vector<DeviceSet>& ins,
                                       const std::vector<DeviceSet>& expected, double median_s, double timeout_s, cudaStream_t s) {
  ParentClockResult res;
  // Phase 1: layout and the honest poison count of every slot.
  const BatchShape b = batch_shape(plan, median_s);
  DevMem slab(b.calls * b.stride, runner.memory_kind());
  const std::vector<std::uint64_t> honest = honest_poison_per_set(plan, b, expected, s);
  std::uint64_t honest_all = 0;
  for (std::size_t i = 0; i < b.calls; ++i) honest_all += honest[i % honest.size()];

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

  // Phase 3: poison every slot (after the capture: work the capture let run is wiped), then time.
  D2K_CUDA_CHECK(cudaMemsetAsync(slab.get(), kPoisonA, b.calls * b.stride, s));
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  const auto c0 = Clock::now();
  count_poison(slab.get(), b.calls * b.stride, s);
  const double idle_check_s = seconds_since(c0);
  const auto t0 = Clock::now();
  if (CallOutcome o = runner.batch_start(); !o.ok) {
    res.call = o;
    return res;
  }
  const Watched w = watch_slab(slab, b, plan, honest_all, honest[(b.calls - 1) % honest.size()], t0,
                               median_s * static_cast<double>(b.calls), timeout_s, idle_check_s, s);
  if (CallOutcome o = runner.batch_wait(timeout_s); !o.ok) {
    res.call = o;
    return res;
  }

  // Phase 4: every call's outputs, judged.
  std::vector<std::size_t> wrong = wrong_calls(plan, b, slab, expected, s);
  if (!w.complete && wrong.empty()) wrong.push_back(b.calls - 1);  // poison the judge did not see (padding): still unfinished
  if (auto v = check_batch_outputs(wrong, b.calls)) {
    res.violation = v;
    return res;
  }
  res.timing.calls = b.calls;
  res.timing.batch_s = w.end_s;
  res.timing.check_s = w.final_check_s;
  return res;
}

}  // namespace d2k
