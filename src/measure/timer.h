#pragma once
/// The timing loop the engine calls: warm-up, then per sample flush L2, launch, take the CUPTI span
/// over every stream (and CUDA events on the harness stream beside it), synchronise, and apply
/// the stopping rule. Optionally replays a CUDA graph that holds the flush and the call.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nlohmann/json_fwd.hpp>

#include "measure/l2flush.h"
#include "measure/nvml_sampler.h"
#include "measure/statistics.h"
#include "measure/stopping.h"
#include "measure/tripwires.h"

namespace d2k::measure {

/// Issues the work of one call on `stream`. `sample_index` counts every call of one measure()
/// (warm-up included), so the engine can rotate input copies with it. In graph mode it is called
/// once per captured variant, with the variant index, inside a stream capture.
using LaunchFn = std::function<void(std::size_t sample_index, cudaStream_t stream)>;
/// Runs outside the timed region (before the flush, or after the sample's synchronisation).
using SampleHook = std::function<void(std::size_t sample_index)>;

/// How to measure.
struct MeasureOptions {
  StoppingCriteria stopping;
  std::size_t warmup_min_calls = 2;   ///< at least this many warm-up calls (at least 1 is made)
  double warmup_min_s = 0.05;         ///< and keep warming up until this much wall time is spent
  std::size_t warmup_max_calls = 1000;
  bool flush_l2 = true;               ///< cold L2 before every sample (off only for tests/diagnosis)
  bool use_cupti = true;              ///< false: time with events only
  /// Share of timed samples run with CUPTI recording (audit samples, in runs of random length
  /// starting at random samples; the first two timed samples always are). The others run without CUPTI, whose kernel instrumentation
  /// slows kernels of many short blocks, and are timed with events corrected by the launch offset
  /// the audit samples measure (measure/audited_time.h). 1: every sample under CUPTI, and the
  /// CUPTI span is the time.
  double cupti_audit_share = 0.25;
  std::size_t cupti_audit_min = 8;    ///< audit samples at least (taken after the stopping rule if need be)
  std::size_t cupti_audit_run = 8;    ///< mean length of a run of consecutive audit samples
  /// Hold the harness stream with a spinning kernel until the call is fully enqueued (eager mode;
  /// graph mode ignores it), so host launch latency stays out of the event time and the gaps
  /// between the call's own launches are device gaps, not host enqueue time. A call that waits
  /// for the harness stream inside (cudaStreamSynchronize, a synchronous copy) stalls until the
  /// timeout; after a timeout in any call but the very first, the kernel is turned off for the
  /// rest of the measurement (MeasureResult::blocking_disabled says why).
  bool blocking_kernel = true;
  double blocking_timeout_s = 0.1;
  /// CUPTI records are delivered (a forced activity flush) once per batch of this many samples,
  /// or sooner when cupti_batch_max_s of wall time has passed since the batch began, and
  /// attributed to samples by their time windows. 1: flush after every sample (slower: each
  /// forced flush costs host time and makes CUPTI hand out new buffers at the next launch).
  std::size_t cupti_batch = 64;
  double cupti_batch_max_s = 0.02;
  /// Work that ends this long after the harness stream's synchronisation returned counts as
  /// unjoined (the slack covers the conversion of device timestamps to CUPTI's clock).
  double join_slack_s = 10e-6;  ///< at least; 10% of the sample's span when that is more
  bool sample_clocks = true;          ///< NVML sampler during the loop
  /// Before the warm-up, wait (polling NVML every 10 ms, at most this long) while the GPU reports
  /// a throttle reason (power cap, thermal, slowdown), so a measurement does not start in the
  /// power state the previous one left behind. 0: do not wait. Needs sample_clocks.
  double settle_max_s = 0.5;
  std::chrono::milliseconds clock_period{10};
  bool graph = false;                 ///< capture flush + call into graphs and time their replays
  std::size_t graph_variants = 1;     ///< graphs captured (sample i replays variant i % n)
  /// Recorded warm-up calls whose records are drained one call at a time: the kernel-set rule's
  /// reference (measure/kernel_set.h). Raises the warm-up minimum to 2n - 1 calls with audit sampling.
  std::size_t kernel_set_reference_calls = 3;
  SampleHook prepare;                 ///< before each call's flush (poison outputs, rotate inputs)
};

/// One timed sample.
struct Sample {
  std::size_t index = 0;
  double cupti_s = 0;   ///< CUPTI span (0 when CUPTI is unavailable or saw nothing)
  double event_s = 0;   ///< CUDA events around the call on the harness stream
  std::size_t kernels = 0, memcpys = 0, memsets = 0;
  unsigned sm_mhz = 0;  ///< latest NVML SM clock at the end of the sample (0 if unknown)
  bool unjoined = false;  ///< work of this sample ended after the harness stream was synchronised
  bool blocked = false;   ///< the blocking kernel held the stream during this sample's enqueue
  bool audit = false;     ///< CUPTI recorded this sample (cupti_s and the kernel counts are set)
};

/// Host wall time per timed sample, by phase (seconds, averaged over the timed samples).
struct SampleOverhead {
  double per_sample_s = 0;   ///< sampling-loop wall time / samples (everything below, and the call)
  double prepare_s = 0;      ///< the prepare hook
  double flush_s = 0;        ///< persisting-L2 reset and the flush kernels' enqueue
  double idle_s = 0;         ///< device synchronisation before the window (flush execution)
  double launch_s = 0;       ///< blocking kernel, events and the call's enqueue
  double sync_s = 0;         ///< stream then device synchronisation after the call (its execution)
  double cupti_s = 0;        ///< CUPTI flushes and window analysis (per sample, batches amortised)
  double check_s = 0;        ///< event read-back and the NVML reading
};

/// A sample whose multiset of kernel names differed from the first timed sample's.
struct KernelSetDeviation {
  std::size_t sample_index = 0;
  std::vector<std::string> names;
};

/// Device busy time per origin (kernel_origin()), summed over timed samples.
struct OriginTime {
  double busy_s = 0;
  std::size_t count = 0;
};

/// Everything one measure() call found.
struct MeasureResult {
  /// What `time` summarises: "events_corrected" (events of the samples run without CUPTI, minus
  /// the launch offset measured on audit samples), "cupti" (CUPTI spans: every sample audited, or
  /// work outside the harness stream's events, or an offset that cannot be subtracted) or
  /// "events" (CUPTI unavailable or not requested).
  std::string timer;
  std::string timer_note;     ///< why the time is CUPTI spans when audit sampling was asked for
  std::string cupti_status;   ///< "ok" or why CUPTI was not used
  bool graph = false, l2_flushed = true, blocking_kernel = false;
  Summary time;               ///< primary time (CUPTI when available, else events)
  Summary cupti;              ///< CUPTI spans of the audit samples (n = 0 without CUPTI)
  Summary events;             ///< CUDA event times on the harness stream (samples without CUPTI
                              ///< when some were audited, else every sample)
  Summary audit_events;       ///< CUDA event times of the audit samples (beside their spans)
  std::size_t audit_samples = 0;         ///< timed samples recorded by CUPTI
  double launch_offset_s = 0;            ///< median (events - span) over audit samples
  std::size_t outside_events_samples = 0;  ///< audit samples with work outside the event window
  std::vector<Sample> samples;
  std::vector<std::string> kernel_names;  ///< first timed sample's activities in start order
  bool kernel_set_constant = true;
  std::size_t kernel_set_deviation_count = 0;
  std::vector<KernelSetDeviation> kernel_set_deviations;  ///< the first 16 of them
  /// Audit samples that lacked an expected kernel (a lost record: missing data, not a deviation;
  /// left out of the launch offset).
  std::size_t kernel_set_incomplete_samples = 0;
  std::size_t kernel_set_reference_calls = 0;  ///< warm-up calls drained on their own (the rule's reference)
  /// Tripwires that fired on the timer's numbers (measure/tripwires.h): the engine reports
  /// REWARD_HACK(<rule>).
  std::vector<Violation> violations;
  std::map<std::string, OriginTime> attribution;
  double own_share = 0;       ///< busy time of "own" activities / all busy time (CUPTI only)
  std::size_t empty_samples = 0;  ///< samples in which CUPTI saw no activity
  ClockSummary clocks;
  std::size_t low_clock_samples = 0;  ///< samples whose SM clock read < 75% of the device maximum
  StopReason stop_reason = StopReason::not_stopped;
  std::string stop_detail;
  std::size_t warmup_calls = 0;
  double warmup_s = 0, wall_s = 0;
  double settle_s = 0;              ///< time spent waiting for throttling to end before warm-up
  std::vector<std::string> settle_reasons;  ///< throttle reasons seen at the start (empty: none)
  bool settle_timed_out = false;    ///< still throttled after settle_max_s
  bool blocking_timed_out = false;
  std::uint64_t cupti_dropped = 0;
  /// Why the blocking kernel was turned off during the run (empty when it was not).
  std::string blocking_disabled;
  /// Timed samples in which some kernel, memcpy or memset ended after the harness stream's
  /// synchronisation returned: work the call did not join onto the stream it was given
  /// (docs/design.md, "Anti-cheat rules": time counts every stream). CUPTI only; the engine reports REWARD_HACK.
  std::size_t unjoined_samples = 0;
  std::string unjoined_example;   ///< the first such activity's name
  double join_late_max_s = 0;     ///< max over samples of (last end - harness join); < 0 is joined
  std::size_t cupti_drains = 0;   ///< forced CUPTI flushes during the timed samples
  /// Device time of each kernel / copy name over the timed samples (CUPTI only), in first-seen
  /// order: what a profiler's per-kernel durations compare with, without the gaps between launches.
  std::vector<NamedSummary> kernel_times;
  SampleOverhead overhead;
};

void to_json(nlohmann::json& j, const MeasureResult& r);
void to_json(nlohmann::json& j, const Sample& s);
void to_json(nlohmann::json& j, const SampleOverhead& o);

/// Owns the per-device measurement resources (flush buffer, NVML sampler, blocking flag) and
/// runs measurements. One per device per process; not thread-safe.
class Timer {
 public:
  /// `device` -1: the current device.
  explicit Timer(int device = -1);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  /// Measures `launch` on `stream` (a stream the caller created; not the legacy default stream).
  /// Throws measure_error on a CUDA error, a failed capture or bad options; exceptions from
  /// `launch` and the hooks propagate.
  MeasureResult measure(const LaunchFn& launch, cudaStream_t stream, const MeasureOptions& opts = {});

  L2Flusher& flusher();
  NvmlSampler& clocks();
  bool cupti_available() const;
  std::string cupti_status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace d2k::measure
