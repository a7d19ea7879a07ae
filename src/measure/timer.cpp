#include "measure/timer.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "measure/audited_time.h"
#include "measure/error.h"
#include "measure/kernels.h"
#include "measure/cupti_timer.h"
#include "measure/kernel_origin.h"
#include "measure/kernel_set.h"
#include "measure/tripwires.h"

namespace d2k::measure {

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string blocking_kernel_name() {
  static const std::string n = [] {
    const char* name = nullptr;
    D2K_CUDA_CHECK(cudaFuncGetName(&name, detail::blocking_spin_symbol()));
    return std::string(name ? name : "");
  }();
  return n;
}

// Host-mapped words the blocking kernel polls: [0] release, [1] timed out.
class BlockingFlag {
 public:
  BlockingFlag() = default;
  ~BlockingFlag() {
    if (host_) cudaFreeHost(const_cast<int*>(host_));
  }
  BlockingFlag(const BlockingFlag&) = delete;
  BlockingFlag& operator=(const BlockingFlag&) = delete;

  void ensure() {
    if (host_) return;
    void* p = nullptr;
    D2K_CUDA_CHECK(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped));
    host_ = static_cast<volatile int*>(p);
    host_[0] = 0;
    host_[1] = 0;
    void* d = nullptr;
    D2K_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
    dev_ = static_cast<int*>(d);
  }
  void hold(cudaStream_t s, double timeout_s) {
    host_[0] = 0;
    host_[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const auto ns = static_cast<unsigned long long>(std::max(0.0, timeout_s) * 1e9);
    D2K_CUDA_CHECK(detail::launch_blocking_spin(s, dev_, dev_ + 1, ns));
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    host_[0] = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  bool timed_out() const { return host_ && host_[1] != 0; }

 private:
  volatile int* host_ = nullptr;
  int* dev_ = nullptr;
};

class Event {
 public:
  Event() { D2K_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

struct GraphExec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  Event start, stop;
  GraphExec() = default;
  GraphExec(GraphExec&& o) noexcept
      : graph(o.graph), exec(o.exec), start(std::move(o.start)), stop(std::move(o.stop)) {
    o.graph = nullptr;
    o.exec = nullptr;
  }
  ~GraphExec() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

double event_seconds(const Event& a, const Event& b) {
  float ms = 0;
  D2K_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return ms * 1e-3;
}

void sync_after_call(std::size_t index) {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess)
    throw CudaError(e, fmt::format("sample {}: device error after the call", index));
}

// Stops CUPTI recording and the NVML thread however the loop ends.
struct LoopGuard {
  CuptiCollector* cupti = nullptr;
  NvmlSampler* nvml = nullptr;
  bool nvml_running = false;
  ~LoopGuard() {
    if (cupti) cupti->stop();
    if (nvml && nvml_running) nvml->stop();
  }
};

void sync_stream(cudaStream_t stream, std::size_t index) {
  const cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess)
    throw CudaError(e, fmt::format("sample {}: stream error after the call", index));
}

// Seconds since `t`, and moves `t` to now.
double lap(clock_type::time_point& t) {
  const auto n = clock_type::now();
  const double d = std::chrono::duration<double>(n - t).count();
  t = n;
  return d;
}

void validate(const LaunchFn& launch, const MeasureOptions& opts) {
  if (!launch) throw measure_error("measure: launch callable is empty");
  opts.stopping.validate();
  if (opts.graph && opts.graph_variants == 0) throw measure_error("measure: graph_variants must be >= 1");
  if (opts.cupti_batch == 0) throw measure_error("measure: cupti_batch must be >= 1");
  if (!(opts.cupti_batch_max_s >= 0)) throw measure_error("measure: cupti_batch_max_s must be >= 0");
  if (!(opts.join_slack_s >= 0)) throw measure_error("measure: join_slack_s must be >= 0");
  if (!(opts.settle_max_s >= 0)) throw measure_error("measure: settle_max_s must be >= 0");
  if (!(opts.cupti_audit_share > 0 && opts.cupti_audit_share <= 1))
    throw measure_error("measure: cupti_audit_share must be in (0, 1]");
  if (opts.blocking_kernel && !(opts.blocking_timeout_s > 0))
    throw measure_error("measure: blocking_timeout_s must be > 0");
}

// The kernels (not copies) of a drain's records, in start order.
KernelNames kernel_names_of(std::vector<ActivityRecord> recs) {
  std::stable_sort(recs.begin(), recs.end(),
                   [](const ActivityRecord& x, const ActivityRecord& y) { return x.start_ns < y.start_ns; });
  KernelNames out;
  for (const auto& r : recs)
    if (r.kind == ActivityRecord::Kind::kernel) out.push_back(r.name);
  return out;
}

/// One measurement, in the phases nvbench names: settle, capture graphs, warm up, sample loop
/// (each batch's records accounted sample by sample), judge the kernel set, summarise.
class MeasureRun {
 public:
  MeasureRun(const LaunchFn& launch, cudaStream_t stream, const MeasureOptions& opts, L2Flusher& flusher,
             NvmlSampler* nvml, BlockingFlag& blocking)
      : launch_(launch), stream_(stream), opts_(opts), flusher_(flusher), nvml_(nvml), blocking_(blocking),
        col_(CuptiCollector::instance()), schedule_(opts.cupti_audit_share, opts.cupti_audit_run, std::random_device{}()),
        rule_(opts.stopping) {}

  MeasureResult run() {
    t_all_ = clock_type::now();
    start_collectors();
    settle();
    if (opts_.graph) capture_graphs();
    warm_up();
    sample_loop();
    judge_kernel_set();
    summarise();
    return std::move(res_);
  }

 private:
  // A sample whose CUPTI records are not yet delivered: its window and its host-side results.
  struct Pending {
    Sample s;
    std::uint64_t t_begin = 0, t_join = 0, t_end = 0;
    double wall_end = 0;  // seconds since the sampling loop began, at the end of the sample
  };

  void start_collectors() {
    res_.graph = opts_.graph;
    res_.l2_flushed = opts_.flush_l2;
    // A graph is one launch: there is nothing to hold the stream for.
    blocking_on_ = opts_.blocking_kernel && !opts_.graph;
    if (opts_.use_cupti) {
      col_.start();
      guard_.cupti = &col_;
      cupti_on_ = col_.available();
      res_.cupti_status = col_.status();
      // The join check leaves the harness stream's own records out (cupti_timer.h check_join).
      if (cupti_on_) harness_stream_id_ = col_.stream_id(stream_);
    } else {
      res_.cupti_status = "not requested";
    }
    res_.timer = cupti_on_ ? "cupti" : "events";
    // Audit sampling, eager and graph replays alike: CUPTI records only the samples chosen for
    // it; the others run uninstrumented. (Graph replays under CUPTI read ~7 % high on many-block
    // kernels.) Recording is switched at plain samples only, after the audit run's records were
    // delivered, as in eager mode.
    audit_mode_ = cupti_on_ && opts_.cupti_audit_share < 1;
    if (audit_mode_) col_.set_recording(false);
    if (nvml_ && opts_.sample_clocks && nvml_->available()) {
      nvml_->start(opts_.clock_period);
      guard_.nvml = nvml_;
      guard_.nvml_running = true;
    }
    if (blocking_on_) blocking_.ensure();
    blocking_name_ = blocking_on_ ? blocking_kernel_name() : std::string();
    if (opts_.graph && opts_.flush_l2) {
      graph_exclude_.push_back(L2Flusher::write_kernel_name());
      graph_exclude_.push_back(L2Flusher::read_kernel_name());
    }
    slack_ns_ = static_cast<std::uint64_t>(opts_.join_slack_s * 1e9);
    max_mhz_ = (nvml_ && nvml_->available()) ? nvml_->max_sm_mhz() : 0;
  }

  // A previous measurement (a power-capped GEMM) can leave the clocks throttled for a while;
  // starting now would charge its power state to this call (nvbench's throttle recovery).
  void settle() {
    if (!guard_.nvml_running || !(opts_.settle_max_s > 0)) return;
    const auto t_settle = clock_type::now();
    for (;;) {
      const std::optional<NvmlReading> r = nvml_->read_now();
      if (!r || !is_throttle(r->reasons)) break;
      if (res_.settle_reasons.empty()) res_.settle_reasons = clock_event_reason_names(r->reasons);
      if (seconds_since(t_settle) >= opts_.settle_max_s) {
        res_.settle_timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    res_.settle_s = seconds_since(t_settle);
  }

  void capture_graphs() {
    // One eager call first: module loading and one-time set-up must not happen inside a capture.
    if (opts_.prepare) opts_.prepare(index_);
    launch_(index_, stream_);
    sync_after_call(index_);
    ++index_;
    for (std::size_t v = 0; v < opts_.graph_variants; ++v) {
      GraphExec g;
      D2K_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      try {
        // The flush is inside the graph: a replay without it would time a warm L2.
        if (opts_.flush_l2) flusher_.enqueue(stream_);
        // External records become event-record nodes; a plain cudaEventRecord inside a capture
        // only orders work and never records a time.
        D2K_CUDA_CHECK(cudaEventRecordWithFlags(g.start.get(), stream_, cudaEventRecordExternal));
        launch_(v, stream_);
        D2K_CUDA_CHECK(cudaEventRecordWithFlags(g.stop.get(), stream_, cudaEventRecordExternal));
      } catch (...) {
        cudaGraph_t junk = nullptr;
        cudaStreamEndCapture(stream_, &junk);
        if (junk) cudaGraphDestroy(junk);
        cudaGetLastError();
        throw;
      }
      const cudaError_t e = cudaStreamEndCapture(stream_, &g.graph);
      if (e != cudaSuccess) {
        cudaGetLastError();
        throw measure_error(fmt::format(
            "graph capture of the call failed: {} (a call that synchronises, allocates, or leaves a "
            "side stream unjoined cannot be captured)",
            cudaGetErrorString(e)));
      }
      D2K_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
      D2K_CUDA_CHECK(cudaGraphUpload(g.exec, stream_));
      graphs_.push_back(std::move(g));
    }
  }

  // Enqueues the call between the two events (eager: behind the blocking kernel), or replays
  // the graph; returns the events that bracket it.
  std::pair<const Event*, const Event*> enqueue_call(std::size_t i, Pending& p) {
    if (opts_.graph) {
      const GraphExec& g = graphs_[i % graphs_.size()];
      D2K_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
      return {&g.start, &g.stop};
    }
    p.s.blocked = blocking_on_;
    if (blocking_on_) blocking_.hold(stream_, opts_.blocking_timeout_s);
    try {
      D2K_CUDA_CHECK(cudaEventRecord(ev0_.get(), stream_));
      launch_(i, stream_);
      D2K_CUDA_CHECK(cudaEventRecord(ev1_.get(), stream_));
    } catch (...) {
      // Let the stream go before leaving, or it stays held until the spin times out.
      if (blocking_on_) blocking_.release();
      throw;
    }
    if (blocking_on_) blocking_.release();
    return {&ev0_, &ev1_};
  }

  // The very first call may legitimately enqueue slowly (module loading, library handles); a
  // timeout after it means the call waits for its own stream, and every further sample would
  // stall for the whole timeout.
  void note_blocking_timeout(std::size_t i) {
    res_.blocking_timed_out = true;
    if (i == 0 || !blocking_on_) return;
    blocking_on_ = false;
    res_.blocking_disabled = fmt::format(
        "the blocking kernel timed out ({:.3g} s) in call {}: the call waits for the harness stream before "
        "it returns (a synchronisation or a synchronous copy inside); later samples run without it, so "
        "their event times include host launch latency",
        opts_.blocking_timeout_s, i);
  }

  // One call with its flush, hooks and synchronisations. CUPTI records are read later.
  Pending run_one(std::size_t i, bool timed, bool audit) {
    Pending p;
    p.s.index = i;
    p.s.audit = cupti_on_ && (audit || !audit_mode_);
    auto t = clock_type::now();
    if (opts_.prepare) opts_.prepare(i);
    const double d_prepare = lap(t);
    if (opts_.flush_l2) {
      flusher_.reset_persisting(stream_);
      if (!opts_.graph) flusher_.enqueue(stream_);
    }
    const double d_flush = lap(t);
    // Idle device at the start of the window: the flush cannot overlap the call's side-stream
    // work, and every activity that starts inside the window is the call's (or the harness's
    // blocking kernel, left out by correlation id).
    D2K_CUDA_CHECK(cudaDeviceSynchronize());
    const double d_idle = lap(t);
    // Recording goes off only at a plain sample: an audit run's records are delivered (a forced
    // flush) before the next plain sample, since records of short kernels still pending when
    // recording stops were lost on the H200.
    if (audit_mode_) col_.set_recording(p.s.audit);
    p.t_begin = cupti_on_ ? col_.now() : 0;
    const auto [a, b] = enqueue_call(i, p);
    const double d_launch = lap(t);
    // The harness stream first: whatever ends after this returns was not joined onto it.
    sync_stream(stream_, i);
    p.t_join = cupti_on_ ? col_.now() : 0;
    sync_after_call(i);
    p.t_end = cupti_on_ ? col_.now() : 0;
    const double d_sync = lap(t);
    if (p.s.blocked && blocking_.timed_out()) note_blocking_timeout(i);
    p.s.event_s = event_seconds(*a, *b);
    if (guard_.nvml_running)
      if (auto r = nvml_->latest()) p.s.sm_mhz = r->sm_mhz;
    const double d_check = lap(t);
    hooks_s_ += d_prepare;
    if (timed) {
      ++timed_runs_;
      sum_.prepare_s += d_prepare;
      sum_.flush_s += d_flush;
      sum_.idle_s += d_idle;
      sum_.launch_s += d_launch;
      sum_.sync_s += d_sync;
      sum_.check_s += d_check;
    }
    return p;
  }

  // At least warmup_min_calls calls, until warmup_min_s has passed. With audit sampling every
  // other call is recorded, so both paths are warm (CUPTI instruments a kernel when it is first
  // launched under recording). The first recorded warm-up calls are the kernel-set rule's
  // reference calls: each one's records are drained on their own after its synchronisation, so
  // they are every record of that call (no time window can lose one).
  void warm_up() {
    const auto t_warm = clock_type::now();
    if (cupti_on_) (void)col_.drain();  // records of earlier work (the graph's eager call)
    const std::size_t refs = cupti_on_ ? std::max<std::size_t>(1, opts_.kernel_set_reference_calls) : 0;
    // Recorded calls: every call, or every other with audit sampling.
    const std::size_t calls_for_refs = audit_mode_ ? 2 * refs - 1 : refs;
    const std::size_t warm_min = std::max<std::size_t>({1, opts_.warmup_min_calls, calls_for_refs});
    const std::size_t warm_max = std::max(warm_min, opts_.warmup_max_calls);
    for (std::size_t n = 0; n < warm_max; ++n) {
      const bool audit = !audit_mode_ || n % 2 == 0;
      (void)run_one(index_++, false, audit);
      if (cupti_on_ && audit && reference_.size() < refs) reference_.push_back(kernel_names_of(col_.drain()));
      ++res_.warmup_calls;
      if (res_.warmup_calls >= warm_min && seconds_since(t_warm) >= opts_.warmup_min_s) break;
    }
    if (cupti_on_) (void)col_.drain();  // the rest of the warm-up's records: nothing reads them
    reference_set_ = reference_kernels(reference_);
    res_.kernel_set_reference_calls = reference_.size();
    res_.warmup_s = seconds_since(t_warm);
  }

  // The launch offset so far (over complete audit samples), refreshed while it is young and then
  // every 16 audit samples (a median per plain sample would cost O(n log n) each).
  double offset_estimate() {
    if (offsets_.size() != offset_cached_n_ && (offsets_.size() <= 16 || offsets_.size() >= offset_cached_n_ + 16)) {
      offset_cached_ = summarize(offsets_).median;
      offset_cached_n_ = offsets_.size();
    }
    return offset_cached_;
  }

  // An audit sample's records: window, join check, per-kernel and per-origin busy time.
  void account_audit(Pending& q, std::span<const ActivityRecord> recs) {
    // Records sorted by start: the window's records are one contiguous run.
    auto lo = std::lower_bound(recs.begin(), recs.end(), q.t_begin,
                               [](const ActivityRecord& r, std::uint64_t t) { return r.start_ns < t; });
    auto hi = std::upper_bound(lo, recs.end(), q.t_end,
                               [](std::uint64_t t, const ActivityRecord& r) { return t < r.start_ns; });
    std::vector<std::string> exclude = graph_exclude_;
    if (q.s.blocked) {
      // The blocking kernel was the first launch after the window opened, so its record has
      // the window's smallest correlation id: excluded by that, whatever its name's spelling.
      const ActivityRecord* spin = nullptr;
      for (auto it = lo; it != hi; ++it)
        if (it->kind == ActivityRecord::Kind::kernel && (!spin || it->correlation_id < spin->correlation_id))
          spin = &*it;
      exclude.push_back(spin && !spin->raw_name.empty() ? spin->raw_name : blocking_name_);
    }
    WindowActivity w = analyze_window(std::span<const ActivityRecord>(lo, hi), q.t_begin, q.t_end, exclude);
    q.s.cupti_s = w.span_s;
    q.s.kernels = w.kernels;
    q.s.memcpys = w.memcpys;
    q.s.memsets = w.memsets;
    if (!w.names.empty()) {
      // The slack grows with the sample: device timestamps are converted to CUPTI's host
      // clock, and over milliseconds the two drift apart by more than a fixed slack.
      const std::uint64_t span_ns = q.t_join > q.t_begin ? q.t_join - q.t_begin : 0;
      const JoinCheck jc = check_join(w, q.t_join, std::max<std::uint64_t>(slack_ns_, span_ns / 10), harness_stream_id_);
      res_.join_late_max_s = have_join_ ? std::max(res_.join_late_max_s, jc.late_s) : jc.late_s;
      have_join_ = true;
      if (jc.unjoined) {
        q.s.unjoined = true;
        ++res_.unjoined_samples;
        if (res_.unjoined_example.empty()) res_.unjoined_example = jc.name;
      }
      audit_spans_.push_back(q.s.cupti_s);
      audit_events_.push_back(q.s.event_s);
      audit_pos_.push_back(sample_names_.size());
      // A sample that lost a record of the reference calls' kernels has a short span: missing
      // data for the stopping rule's offset estimate.
      const std::set<std::string> have = distinct_kernels(w.names);
      if (std::includes(have.begin(), have.end(), reference_set_.begin(), reference_set_.end()))
        offsets_.push_back(q.s.event_s - q.s.cupti_s);
    } else {
      ++res_.empty_samples;
    }
    sample_index_.push_back(q.s.index);
    sample_names_.push_back(w.names);
    for (const auto& [name, busy] : w.busy) {
      per_kernel_.add(name, busy);
      OriginTime& o = res_.attribution[std::string(kernel_origin(name))];
      o.busy_s += busy;
      ++o.count;
      busy_all_ += busy;
    }
  }

  // Attributes one sample's records and feeds the rule (sets rule_done_ when it says stop).
  void account(Pending& q, std::span<const ActivityRecord> recs) {
    // After the rule's decision, only audit samples of the top-up count (audit sampling).
    if (rule_done_ && (!audit_mode_ || !q.s.audit)) return;
    if (q.s.audit) account_audit(q, recs);
    if (!audit_mode_ || !q.s.audit) plain_events_.push_back(q.s.event_s);
    if (max_mhz_ && q.s.sm_mhz && q.s.sm_mhz < 0.75 * max_mhz_) ++res_.low_clock_samples;
    res_.samples.push_back(q.s);
    if (rule_done_) return;
    if (!audit_mode_)
      rule_.add(cupti_on_ ? q.s.cupti_s : q.s.event_s);
    else if (!q.s.audit)  // the corrected time: the rule's noise is relative to what is reported
      rule_.add(q.s.event_s - offset_estimate());
    // Audit samples do not feed the rule (their kernels ran instrumented), but its caps apply.
    rule_done_ = rule_.should_stop(q.wall_end);
  }

  std::size_t audits() const { return audit_spans_.size() + res_.empty_samples; }

  // Delivers the batch's records (one forced flush: the device was synchronised after its last
  // call, so every record of every sample in it is complete) and accounts its samples in order.
  void deliver(std::vector<Pending>& batch, std::size_t timed) {
    std::vector<ActivityRecord> recs;
    const bool any_audit = std::any_of(batch.begin(), batch.end(), [](const Pending& q) { return q.s.audit; });
    if (cupti_on_ && any_audit) {
      recs = col_.drain();
      ++res_.cupti_drains;
      std::stable_sort(recs.begin(), recs.end(),
                       [](const ActivityRecord& x, const ActivityRecord& y) { return x.start_ns < y.start_ns; });
    }
    for (Pending& q : batch) {
      const bool was_done = rule_done_;
      account(q, recs);
      ++accounted_;
      if (rule_done_ && !was_done) timed_at_done_ = timed;
    }
    batch.clear();
  }

  void sample_loop() {
    std::vector<Pending> batch;
    double batch_begin = 0, cupti_time = 0;
    std::size_t timed = 0;
    const auto t_loop = clock_type::now();
    const double hooks_before_loop = hooks_s_;
    for (bool stop = false; !stop;) {
      if (batch.empty()) batch_begin = seconds_since(t_loop);
      // After the rule has decided, only audit samples are taken, until there are enough.
      batch.push_back(run_one(index_++, true, schedule_.audit() || rule_done_));
      ++timed;
      schedule_.advance();
      Pending& last = batch.back();
      // The caller's hook (drawing fresh inputs) scales with the workload's size, not with the
      // measurement: it does not count toward the minimum time or the cap.
      last.wall_end = seconds_since(t_loop) - (hooks_s_ - hooks_before_loop);
      // Deliver the records when the batch is full, old enough, an audit run ends, or a cap may
      // be reached (the rule decides on each sample in order, with the wall time at its end).
      const bool run_ends = audit_mode_ && last.s.audit && !schedule_.audit();  // before recording stops
      const bool deliver_now = rule_done_ || run_ends || last.wall_end >= opts_.stopping.max_time_s ||
                               accounted_ + batch.size() >= opts_.stopping.max_samples;
      if (cupti_on_ && !deliver_now && batch.size() < opts_.cupti_batch &&
          last.wall_end - batch_begin < opts_.cupti_batch_max_s)
        continue;
      auto tc = clock_type::now();
      deliver(batch, timed);
      cupti_time += seconds_since(tc);
      // Done when the rule has decided and there are enough audit samples; the top-up takes at
      // most cupti_audit_min more calls (a call CUPTI never sees leaves its audits empty).
      if (rule_done_ && (!audit_mode_ || audits() >= opts_.cupti_audit_min ||
                         timed - timed_at_done_ >= opts_.cupti_audit_min))
        stop = true;
    }
    const double loop_s = seconds_since(t_loop);
    if (timed_runs_ > 0) {
      const double n = static_cast<double>(timed_runs_);
      res_.overhead.per_sample_s = loop_s / n;
      res_.overhead.prepare_s = sum_.prepare_s / n;
      res_.overhead.flush_s = sum_.flush_s / n;
      res_.overhead.idle_s = sum_.idle_s / n;
      res_.overhead.launch_s = sum_.launch_s / n;
      res_.overhead.sync_s = sum_.sync_s / n;
      res_.overhead.cupti_s = cupti_time / n;
      res_.overhead.check_s = sum_.check_s / n;
    }
  }

  void judge_kernel_set() {
    KernelSetVerdict ks = judge_kernel_sets(sample_names_, reference_);
    res_.kernel_names = std::move(ks.names);
    res_.kernel_set_constant = ks.deviating.empty();
    res_.kernel_set_deviation_count = ks.deviating.size();
    res_.kernel_set_incomplete_samples = ks.incomplete.size();
    for (std::size_t i = 0; i < ks.deviating.size() && i < 16; ++i)
      res_.kernel_set_deviations.push_back({sample_index_[ks.deviating[i]], sample_names_[ks.deviating[i]]});
    // Audit samples with spans (audit_pos_ maps them to sample_names_) that lost a record.
    std::vector<bool> lost(sample_names_.size(), false);
    for (std::size_t i : ks.incomplete) lost[i] = true;
    audit_complete_.clear();
    for (std::size_t pos : audit_pos_) audit_complete_.push_back(!lost[pos]);
  }

  void summarise_time() {
    res_.cupti = summarize(audit_spans_);
    res_.events = summarize(plain_events_);
    res_.audit_events = summarize(audit_events_);
    res_.audit_samples = audits();
    if (!cupti_on_) {
      res_.time = res_.events;
      return;
    }
    if (!audit_mode_) {
      res_.time = res_.cupti;
      return;
    }
    const AuditedTime at = combine_audited(plain_events_, audit_events_, audit_spans_, audit_complete_);
    res_.time = at.time;
    res_.launch_offset_s = at.launch_offset_s;
    res_.outside_events_samples = at.outside;
    if (at.use_span) {
      res_.timer_note = at.why;
    } else if (at.uncorrected) {
      res_.timer = "events";
      res_.timer_note = at.why;
    } else {
      res_.timer = "events_corrected";
    }
    // The tripwires read the samples CUPTI saw whole.
    std::vector<double> ev, sp;
    for (std::size_t i = 0; i < audit_spans_.size(); ++i)
      if (audit_complete_.empty() || audit_complete_[i]) ev.push_back(audit_events_[i]), sp.push_back(audit_spans_[i]);
    res_.violations = timer_tripwires(res_.events, summarize(ev.empty() ? audit_events_ : ev), at.launch_offset_s,
                                      summarize(sp.empty() ? audit_spans_ : sp));
  }

  void summarise() {
    res_.blocking_kernel = blocking_on_;
    res_.kernel_times = per_kernel_.summaries();
    res_.stop_reason = rule_.reason();
    res_.stop_detail = rule_.detail();
    summarise_time();
    if (busy_all_ > 0 && res_.attribution.count("own")) res_.own_share = res_.attribution["own"].busy_s / busy_all_;
    if (cupti_on_) res_.cupti_dropped = col_.dropped();
    if (guard_.nvml_running) {
      res_.clocks = nvml_->stop();
      guard_.nvml_running = false;
    } else if (nvml_) {
      res_.clocks.available = false;
      res_.clocks.status = nvml_->available() ? "not requested" : nvml_->status();
    } else {
      res_.clocks.status = "unavailable: no sampler";
    }
    res_.wall_s = seconds_since(t_all_);
  }

  const LaunchFn& launch_;
  cudaStream_t stream_;
  const MeasureOptions& opts_;
  L2Flusher& flusher_;
  NvmlSampler* nvml_;
  BlockingFlag& blocking_;
  CuptiCollector& col_;
  AuditSchedule schedule_;
  StoppingRule rule_;
  MeasureResult res_;
  LoopGuard guard_;
  clock_type::time_point t_all_;
  bool cupti_on_ = false, audit_mode_ = false, blocking_on_ = false;
  std::string blocking_name_;
  std::vector<std::string> graph_exclude_;
  std::uint64_t slack_ns_ = 0;
  std::optional<std::uint32_t> harness_stream_id_;  ///< CUPTI's id of stream_, when known
  unsigned max_mhz_ = 0;
  Event ev0_, ev1_;
  std::vector<GraphExec> graphs_;
  std::size_t index_ = 0;
  SampleOverhead sum_;
  std::size_t timed_runs_ = 0;
  double hooks_s_ = 0;  // time spent in the prepare hook
  // Kernel-set rule: the reference calls (warm-up) and each audit sample's activity names.
  std::vector<KernelNames> reference_;
  std::set<std::string> reference_set_;
  std::vector<std::size_t> sample_index_;
  std::vector<KernelNames> sample_names_;
  // Audit samples with records: CUPTI spans with their events (pairs), and their position in
  // sample_names_; plain samples: events only.
  std::vector<double> audit_spans_, audit_events_, plain_events_;
  std::vector<std::size_t> audit_pos_;
  std::vector<bool> audit_complete_;
  std::vector<double> offsets_;  // events - span of the complete audit samples so far
  double offset_cached_ = 0;
  std::size_t offset_cached_n_ = 0;
  double busy_all_ = 0;
  bool have_join_ = false;
  bool rule_done_ = false;  // the stopping rule has decided; only missing audit samples are taken
  std::size_t accounted_ = 0, timed_at_done_ = 0;
  NamedDurations per_kernel_;
};

}  // namespace

void to_json(nlohmann::json& j, const Sample& s) {
  j = nlohmann::json{{"index", s.index},     {"cupti_s", s.cupti_s}, {"event_s", s.event_s},
                     {"kernels", s.kernels}, {"memcpys", s.memcpys}, {"memsets", s.memsets},
                     {"sm_mhz", s.sm_mhz},   {"unjoined", s.unjoined}, {"blocked", s.blocked},
                     {"audit", s.audit}};
}

void to_json(nlohmann::json& j, const SampleOverhead& o) {
  j = nlohmann::json{{"per_sample_s", o.per_sample_s}, {"prepare_s", o.prepare_s}, {"flush_s", o.flush_s},
                     {"idle_s", o.idle_s},             {"launch_s", o.launch_s},   {"sync_s", o.sync_s},
                     {"cupti_s", o.cupti_s},           {"check_s", o.check_s}};
}

void to_json(nlohmann::json& j, const MeasureResult& r) {
  nlohmann::json attribution = nlohmann::json::object();
  for (const auto& [origin, t] : r.attribution)
    attribution[origin] = {{"busy_s", t.busy_s}, {"count", t.count}};
  nlohmann::json deviations = nlohmann::json::array();
  for (const auto& d : r.kernel_set_deviations)
    deviations.push_back({{"sample_index", d.sample_index}, {"names", d.names}});
  j = nlohmann::json{{"timer", r.timer},
                     {"timer_note", r.timer_note},
                     {"audit_samples", r.audit_samples},
                     {"launch_offset_s", r.launch_offset_s},
                     {"outside_events_samples", r.outside_events_samples},
                     {"cupti_status", r.cupti_status},
                     {"graph", r.graph},
                     {"l2_flushed", r.l2_flushed},
                     {"blocking_kernel", r.blocking_kernel},
                     {"time", r.time},
                     {"cupti", r.cupti},
                     {"events", r.events},
                     {"audit_events", r.audit_events},
                     {"kernel_names", r.kernel_names},
                     {"kernel_set_constant", r.kernel_set_constant},
                     {"kernel_set_deviation_count", r.kernel_set_deviation_count},
                     {"kernel_set_deviations", deviations},
                     {"kernel_set_incomplete_samples", r.kernel_set_incomplete_samples},
                     {"kernel_set_reference_calls", r.kernel_set_reference_calls},
                     {"violations", r.violations},
                     {"attribution", attribution},
                     {"own_share", r.own_share},
                     {"empty_samples", r.empty_samples},
                     {"clocks", r.clocks},
                     {"low_clock_samples", r.low_clock_samples},
                     {"stop_reason", std::string(to_string(r.stop_reason))},
                     {"stop_detail", r.stop_detail},
                     {"warmup_calls", r.warmup_calls},
                     {"warmup_s", r.warmup_s},
                     {"settle_s", r.settle_s},
                     {"settle_reasons", r.settle_reasons},
                     {"settle_timed_out", r.settle_timed_out},
                     {"wall_s", r.wall_s},
                     {"blocking_timed_out", r.blocking_timed_out},
                     {"cupti_dropped", r.cupti_dropped},
                     {"blocking_disabled", r.blocking_disabled},
                     {"unjoined_samples", r.unjoined_samples},
                     {"unjoined_example", r.unjoined_example},
                     {"join_late_max_s", r.join_late_max_s},
                     {"cupti_drains", r.cupti_drains},
                     {"overhead", r.overhead},
                     {"kernel_times", r.kernel_times},
                     {"samples", r.samples}};
}

struct Timer::Impl {
  explicit Impl(int device) : flusher(device), nvml(flusher.device()) {}
  L2Flusher flusher;
  NvmlSampler nvml;
  BlockingFlag blocking;
};

Timer::Timer(int device) : impl_(std::make_unique<Impl>(device)) {}
Timer::~Timer() = default;

MeasureResult Timer::measure(const LaunchFn& launch, cudaStream_t stream, const MeasureOptions& opts) {
  D2K_CUDA_CHECK(cudaSetDevice(impl_->flusher.device()));
  validate(launch, opts);
  return MeasureRun(launch, stream, opts, impl_->flusher, &impl_->nvml, impl_->blocking).run();
}

L2Flusher& Timer::flusher() { return impl_->flusher; }
NvmlSampler& Timer::clocks() { return impl_->nvml; }
bool Timer::cupti_available() const { return CuptiCollector::instance().available(); }
std::string Timer::cupti_status() const { return CuptiCollector::instance().status(); }

}  // namespace d2k::measure
