#include "measure/timer.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <random>
#include <span>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "measure/audited_time.h"
#include "measure/check.h"
#include "measure/kernels.h"
#include "measure/cupti_timer.h"
#include "measure/kernel_origin.h"

namespace d2k::measure {

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string blocking_kernel_name() {
  static const std::string n = [] {
    const char* name = nullptr;
    D2K_MEASURE_CUDA(cudaFuncGetName(&name, detail::blocking_spin_symbol()));
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
    D2K_MEASURE_CUDA(cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped));
    host_ = static_cast<volatile int*>(p);
    host_[0] = 0;
    host_[1] = 0;
    void* d = nullptr;
    D2K_MEASURE_CUDA(cudaHostGetDevicePointer(&d, p, 0));
    dev_ = static_cast<int*>(d);
  }
  void hold(cudaStream_t s, double timeout_s) {
    host_[0] = 0;
    host_[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const auto ns = static_cast<unsigned long long>(std::max(0.0, timeout_s) * 1e9);
    D2K_MEASURE_CUDA(detail::launch_blocking_spin(s, dev_, dev_ + 1, ns));
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
  Event() { D2K_MEASURE_CUDA(cudaEventCreate(&e_)); }
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
  D2K_MEASURE_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return ms * 1e-3;
}

void sync_after_call(std::size_t index) {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess)
    throw measure_error(fmt::format("sample {}: device error after the call: {} ({})", index,
                                    cudaGetErrorString(e), cudaGetErrorName(e)));
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
    throw measure_error(fmt::format("sample {}: stream error after the call: {} ({})", index, cudaGetErrorString(e),
                                    cudaGetErrorName(e)));
}

// Seconds since `t`, and moves `t` to now.
double lap(clock_type::time_point& t) {
  const auto n = clock_type::now();
  const double d = std::chrono::duration<double>(n - t).count();
  t = n;
  return d;
}

MeasureResult run_measure(const LaunchFn& launch, cudaStream_t stream, const MeasureOptions& opts,
                          L2Flusher& flusher, NvmlSampler* nvml, BlockingFlag& blocking) {
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

  MeasureResult res;
  res.graph = opts.graph;
  res.l2_flushed = opts.flush_l2;
  // A graph is one launch: there is nothing to hold the stream for.
  bool blocking_on = opts.blocking_kernel && !opts.graph;
  const auto t_all = clock_type::now();

  CuptiCollector& col = CuptiCollector::instance();
  LoopGuard guard;
  bool cupti_on = false;
  if (opts.use_cupti) {
    col.start();
    guard.cupti = &col;
    cupti_on = col.available();
    res.cupti_status = col.status();
  } else {
    res.cupti_status = "not requested";
  }
  res.timer = cupti_on ? "cupti" : "events";
  // Audit sampling: CUPTI records only the samples chosen for it; the others run uninstrumented.
  // Not for graph replays: with recording toggled between replays, CUPTI's records of a graph's
  // kernels did not line up with the replay (spans of hundreds of microseconds around a 6 us
  // kernel, on the H200), so graphs are recorded on every sample.
  const bool audit_mode = cupti_on && opts.cupti_audit_share < 1 && !opts.graph;
  if (audit_mode) col.set_recording(false);
  AuditSchedule schedule(opts.cupti_audit_share, opts.cupti_audit_run, std::random_device{}());
  if (nvml && opts.sample_clocks && nvml->available()) {
    nvml->start(opts.clock_period);
    guard.nvml = nvml;
    guard.nvml_running = true;
  }
  if (blocking_on) blocking.ensure();
  const std::string blocking_name = blocking_on ? blocking_kernel_name() : std::string();

  std::vector<std::string> graph_exclude;
  if (opts.graph && opts.flush_l2) {
    graph_exclude.push_back(L2Flusher::write_kernel_name());
    graph_exclude.push_back(L2Flusher::read_kernel_name());
  }
  const auto slack_ns = static_cast<std::uint64_t>(opts.join_slack_s * 1e9);

  Event ev0, ev1;
  std::vector<GraphExec> graphs;
  std::size_t index = 0;

  if (opts.graph) {
    // One eager call first: module loading and one-time set-up must not happen inside a capture.
    if (opts.prepare) opts.prepare(index);
    launch(index, stream);
    sync_after_call(index);
    if (opts.check) opts.check(index);
    ++index;
    for (std::size_t v = 0; v < opts.graph_variants; ++v) {
      GraphExec g;
      D2K_MEASURE_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      try {
        // The flush is inside the graph: a replay without it would time a warm L2.
        if (opts.flush_l2) flusher.enqueue(stream);
        // External records become event-record nodes; a plain cudaEventRecord inside a capture
        // only orders work and never records a time.
        D2K_MEASURE_CUDA(cudaEventRecordWithFlags(g.start.get(), stream, cudaEventRecordExternal));
        launch(v, stream);
        D2K_MEASURE_CUDA(cudaEventRecordWithFlags(g.stop.get(), stream, cudaEventRecordExternal));
      } catch (...) {
        cudaGraph_t junk = nullptr;
        cudaStreamEndCapture(stream, &junk);
        if (junk) cudaGraphDestroy(junk);
        cudaGetLastError();
        throw;
      }
      const cudaError_t e = cudaStreamEndCapture(stream, &g.graph);
      if (e != cudaSuccess) {
        cudaGetLastError();
        throw measure_error(fmt::format(
            "graph capture of the call failed: {} (a call that synchronises, allocates, or leaves a "
            "side stream unjoined cannot be captured)",
            cudaGetErrorString(e)));
      }
      D2K_MEASURE_CUDA(cudaGraphInstantiate(&g.exec, g.graph, 0));
      D2K_MEASURE_CUDA(cudaGraphUpload(g.exec, stream));
      graphs.push_back(std::move(g));
    }
  }

  // A sample whose CUPTI records are not yet delivered: its window and its host-side results.
  struct Pending {
    Sample s;
    std::uint64_t t_begin = 0, t_join = 0, t_end = 0;
    double wall_end = 0;  // seconds since the sampling loop began, at the end of the sample
  };
  SampleOverhead sum;
  std::size_t timed_runs = 0;
  double hooks_s = 0;  // time spent in the prepare and check hooks

  // One call with its flush, hooks and synchronisations. CUPTI records are read later, in batches.
  auto run_one = [&](std::size_t i, bool timed, bool audit) -> Pending {
    Pending p;
    p.s.index = i;
    p.s.audit = cupti_on && (audit || !audit_mode);
    auto t = clock_type::now();
    if (opts.prepare) opts.prepare(i);
    const double d_prepare = lap(t);
    if (opts.flush_l2) {
      flusher.reset_persisting(stream);
      if (!opts.graph) flusher.enqueue(stream);
    }
    const double d_flush = lap(t);
    // Idle device at the start of the window: the flush cannot overlap the call's side-stream
    // work, and every activity that starts inside the window is the call's (or the harness's
    // blocking kernel, left out by name).
    D2K_MEASURE_CUDA(cudaDeviceSynchronize());
    const double d_idle = lap(t);
    // Recording goes off only at a plain sample: the loop delivers an audit run's records (a
    // forced flush) before the next plain sample, since records of short kernels still pending
    // when recording stops were lost on the H200.
    if (audit_mode) col.set_recording(p.s.audit);
    p.t_begin = cupti_on ? col.now() : 0;
    const Event* a = &ev0;
    const Event* b = &ev1;
    if (opts.graph) {
      const GraphExec& g = graphs[i % graphs.size()];
      D2K_MEASURE_CUDA(cudaGraphLaunch(g.exec, stream));
      a = &g.start;
      b = &g.stop;
    } else {
      p.s.blocked = blocking_on;
      if (blocking_on) blocking.hold(stream, opts.blocking_timeout_s);
      try {
        D2K_MEASURE_CUDA(cudaEventRecord(ev0.get(), stream));
        launch(i, stream);
        D2K_MEASURE_CUDA(cudaEventRecord(ev1.get(), stream));
      } catch (...) {
        // Let the stream go before leaving, or it stays held until the spin times out.
        if (blocking_on) blocking.release();
        throw;
      }
      if (blocking_on) blocking.release();
    }
    const double d_launch = lap(t);
    // The harness stream first: whatever ends after this returns was not joined onto it.
    sync_stream(stream, i);
    p.t_join = cupti_on ? col.now() : 0;
    sync_after_call(i);
    p.t_end = cupti_on ? col.now() : 0;
    const double d_sync = lap(t);
    if (p.s.blocked && blocking.timed_out()) {
      res.blocking_timed_out = true;
      // The very first call may legitimately enqueue slowly (module loading, library handles);
      // a timeout after it means the call waits for its own stream, and every further sample
      // would stall for the whole timeout.
      if (i != 0 && blocking_on) {
        blocking_on = false;
        res.blocking_disabled = fmt::format(
            "the blocking kernel timed out ({:.3g} s) in call {}: the call waits for the harness stream before "
            "it returns (a synchronisation or a synchronous copy inside); later samples run without it, so "
            "their event times include host launch latency",
            opts.blocking_timeout_s, i);
      }
    }
    p.s.event_s = event_seconds(*a, *b);
    if (opts.check) opts.check(i);
    if (guard.nvml_running)
      if (auto r = nvml->latest()) p.s.sm_mhz = r->sm_mhz;
    const double d_check = lap(t);
    hooks_s += d_prepare + d_check;
    if (timed) {
      ++timed_runs;
      sum.prepare_s += d_prepare;
      sum.flush_s += d_flush;
      sum.idle_s += d_idle;
      sum.launch_s += d_launch;
      sum.sync_s += d_sync;
      sum.check_s += d_check;
    }
    return p;
  };

  // Settle: a previous measurement (a power-capped GEMM) can leave the clocks throttled for a
  // while; starting now would charge its power state to this call (nvbench's throttle recovery).
  if (guard.nvml_running && opts.settle_max_s > 0) {
    const auto t_settle = clock_type::now();
    for (;;) {
      const std::optional<NvmlReading> r = nvml->read_now();
      if (!r || !is_throttle(r->reasons)) break;
      if (res.settle_reasons.empty()) res.settle_reasons = clock_event_reason_names(r->reasons);
      if (seconds_since(t_settle) >= opts.settle_max_s) {
        res.settle_timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    res.settle_s = seconds_since(t_settle);
  }

  // Warm-up: at least one call (at least warmup_min_calls), until warmup_min_s has passed. With
  // audit sampling, every other call is recorded, so both paths are warm (CUPTI instruments a
  // kernel when it is first launched under recording).
  const auto t_warm = clock_type::now();
  const std::size_t warm_min = std::max<std::size_t>({1, opts.warmup_min_calls, audit_mode ? 2u : 1u});
  const std::size_t warm_max = std::max(warm_min, opts.warmup_max_calls);
  for (std::size_t n = 0; n < warm_max; ++n) {
    (void)run_one(index++, false, n % 2 == 0);
    ++res.warmup_calls;
    if (res.warmup_calls >= warm_min && seconds_since(t_warm) >= opts.warmup_min_s) break;
  }
  if (cupti_on) (void)col.drain();  // the warm-up's records: nothing reads them
  res.warmup_s = seconds_since(t_warm);

  StoppingRule rule(opts.stopping);
  // Audit samples: CUPTI spans with their events (pairs); plain samples: events only.
  std::vector<double> audit_spans, audit_events, plain_events;
  std::vector<double> offsets;  // events - span of the audit samples so far (the rule's correction)
  // Each audit sample's activity names, judged once sampling ends (judge_kernel_sets).
  std::vector<std::size_t> sample_index;
  std::vector<std::vector<std::string>> sample_names;
  double busy_all = 0;
  bool have_join = false;
  bool rule_done = false;  // the stopping rule has decided; only missing audit samples are taken
  NamedDurations per_kernel;
  // The launch offset so far, refreshed while it is young and then every 16 audit samples (a
  // median per plain sample would cost O(n log n) each).
  double offset_cached = 0;
  std::size_t offset_cached_n = 0;
  auto offset_estimate = [&] {
    if (offsets.size() != offset_cached_n && (offsets.size() <= 16 || offsets.size() >= offset_cached_n + 16)) {
      offset_cached = summarize(offsets).median;
      offset_cached_n = offsets.size();
    }
    return offset_cached;
  };
  const unsigned max_mhz = (nvml && nvml->available()) ? nvml->max_sm_mhz() : 0;

  // Attributes one sample's records and feeds the rule (sets rule_done when it says stop).
  auto account = [&](Pending& q, std::span<const ActivityRecord> recs) {
    // After the rule's decision, only audit samples of the top-up count (audit sampling).
    if (rule_done && (!audit_mode || !q.s.audit)) return;
    if (q.s.audit) {
      // Records sorted by start: the window's records are one contiguous run.
      auto lo = std::lower_bound(recs.begin(), recs.end(), q.t_begin,
                                 [](const ActivityRecord& r, std::uint64_t t) { return r.start_ns < t; });
      auto hi = std::upper_bound(lo, recs.end(), q.t_end,
                                 [](std::uint64_t t, const ActivityRecord& r) { return t < r.start_ns; });
      std::vector<std::string> exclude = graph_exclude;
      if (q.s.blocked) {
        // The blocking kernel was the first launch after the window opened, so its record has
        // the window's smallest correlation id: excluded by that, whatever its name's spelling.
        const ActivityRecord* spin = nullptr;
        for (auto it = lo; it != hi; ++it)
          if (it->kind == ActivityRecord::Kind::kernel && (!spin || it->correlation_id < spin->correlation_id))
            spin = &*it;
        exclude.push_back(spin && !spin->raw_name.empty() ? spin->raw_name : blocking_name);
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
        const JoinCheck jc = check_join(w, q.t_join, std::max<std::uint64_t>(slack_ns, span_ns / 10));
        res.join_late_max_s = have_join ? std::max(res.join_late_max_s, jc.late_s) : jc.late_s;
        have_join = true;
        if (jc.unjoined) {
          q.s.unjoined = true;
          ++res.unjoined_samples;
          if (res.unjoined_example.empty()) res.unjoined_example = jc.name;
        }
        audit_spans.push_back(q.s.cupti_s);
        audit_events.push_back(q.s.event_s);
        offsets.push_back(q.s.event_s - q.s.cupti_s);
      } else {
        ++res.empty_samples;
      }
      sample_index.push_back(q.s.index);
      sample_names.push_back(w.names);
      for (const auto& [name, busy] : w.busy) {
        per_kernel.add(name, busy);
        OriginTime& o = res.attribution[std::string(kernel_origin(name))];
        o.busy_s += busy;
        ++o.count;
        busy_all += busy;
      }
    }
    if (!audit_mode || !q.s.audit) plain_events.push_back(q.s.event_s);
    if (max_mhz && q.s.sm_mhz && q.s.sm_mhz < 0.75 * max_mhz) ++res.low_clock_samples;
    if (opts.keep_samples) res.samples.push_back(q.s);
    if (rule_done) return;
    if (!audit_mode)
      rule.add(cupti_on ? q.s.cupti_s : q.s.event_s);
    else if (!q.s.audit)  // the corrected time: the rule's noise is relative to what is reported
      rule.add(q.s.event_s - offset_estimate());
    // Audit samples do not feed the rule (their kernels ran instrumented), but its caps apply.
    rule_done = rule.should_stop(q.wall_end);
  };

  std::vector<Pending> batch;
  double batch_begin = 0, cupti_time = 0;
  std::size_t accounted = 0, timed = 0, timed_at_done = 0;
  const auto t_loop = clock_type::now();
  const double hooks_before_loop = hooks_s;
  auto audits = [&] { return audit_spans.size() + res.empty_samples; };
  for (bool stop = false; !stop;) {
    if (batch.empty()) batch_begin = seconds_since(t_loop);
    // After the rule has decided, only audit samples are taken, until there are enough.
    batch.push_back(run_one(index++, true, schedule.audit() || rule_done));
    ++timed;
    schedule.advance();
    Pending& last = batch.back();
    // The caller's hooks (drawing fresh inputs, re-checks) scale with the workload's size, not
    // with the measurement: they do not count toward the minimum time or the cap.
    last.wall_end = seconds_since(t_loop) - (hooks_s - hooks_before_loop);
    // Deliver the records when the batch is full, old enough, an audit run ends, or a cap may be reached (the rule
    // decides on each sample in order, with the wall time at the end of that sample).
    const bool run_ends = audit_mode && last.s.audit && !schedule.audit();  // deliver before recording stops
    const bool deliver_now = rule_done || run_ends || last.wall_end >= opts.stopping.max_time_s ||
                             accounted + batch.size() >= opts.stopping.max_samples;
    if (cupti_on && !deliver_now && batch.size() < opts.cupti_batch &&
        last.wall_end - batch_begin < opts.cupti_batch_max_s)
      continue;
    auto tc = clock_type::now();
    std::vector<ActivityRecord> recs;
    const bool any_audit = std::any_of(batch.begin(), batch.end(), [](const Pending& q) { return q.s.audit; });
    if (cupti_on && any_audit) {
      // One forced flush for the whole batch: the device was synchronised after its last call,
      // so every record of every sample in it is complete.
      recs = col.drain();
      ++res.cupti_drains;
      std::stable_sort(recs.begin(), recs.end(),
                       [](const ActivityRecord& x, const ActivityRecord& y) { return x.start_ns < y.start_ns; });
    }
    for (Pending& q : batch) {
      ++accounted;
      const bool was_done = rule_done;
      account(q, recs);
      if (rule_done && !was_done) timed_at_done = timed;
    }
    batch.clear();
    cupti_time += seconds_since(tc);
    // Done when the rule has decided and there are enough audit samples; the top-up takes at
    // most cupti_audit_min more calls (a call CUPTI never sees leaves its audits empty).
    if (rule_done && (!audit_mode || audits() >= opts.cupti_audit_min || timed - timed_at_done >= opts.cupti_audit_min))
      stop = true;
  }
  const double loop_s = seconds_since(t_loop);
  {
    KernelSetVerdict ks = judge_kernel_sets(sample_names);
    res.kernel_names = std::move(ks.names);
    res.kernel_set_constant = ks.deviating.empty();
    res.kernel_set_deviation_count = ks.deviating.size();
    for (std::size_t i = 0; i < ks.deviating.size() && i < 16; ++i)
      res.kernel_set_deviations.push_back({sample_index[ks.deviating[i]], sample_names[ks.deviating[i]]});
  }
  if (timed_runs > 0) {
    const double n = static_cast<double>(timed_runs);
    res.overhead.per_sample_s = loop_s / n;
    res.overhead.prepare_s = sum.prepare_s / n;
    res.overhead.flush_s = sum.flush_s / n;
    res.overhead.idle_s = sum.idle_s / n;
    res.overhead.launch_s = sum.launch_s / n;
    res.overhead.sync_s = sum.sync_s / n;
    res.overhead.cupti_s = cupti_time / n;
    res.overhead.check_s = sum.check_s / n;
  }
  res.blocking_kernel = blocking_on;
  res.kernel_times = per_kernel.summaries();
  res.stop_reason = rule.reason();
  res.stop_detail = rule.detail();
  res.cupti = summarize(audit_spans);
  res.events = summarize(plain_events);
  res.audit_samples = audits();
  if (!cupti_on) {
    res.time = res.events;
  } else if (!audit_mode) {
    res.time = res.cupti;
  } else {
    const AuditedTime at = combine_audited(plain_events, audit_events, audit_spans);
    res.time = at.time;
    res.launch_offset_s = at.launch_offset_s;
    res.outside_events_samples = at.outside;
    if (at.use_span) {
      res.timer_note = at.why;
    } else if (audit_spans.empty()) {
      res.timer = "events";
      res.timer_note = "CUPTI recorded no activity in any audit sample: events, uncorrected";
    } else {
      res.timer = "events_corrected";
    }
  }
  if (busy_all > 0 && res.attribution.count("own")) res.own_share = res.attribution["own"].busy_s / busy_all;
  if (cupti_on) res.cupti_dropped = col.dropped();
  if (guard.nvml_running) {
    res.clocks = nvml->stop();
    guard.nvml_running = false;
  } else if (nvml) {
    res.clocks.available = false;
    res.clocks.status = nvml->available() ? "not requested" : nvml->status();
  } else {
    res.clocks.status = "unavailable: no sampler";
  }
  res.wall_s = seconds_since(t_all);
  return res;
}

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
                     {"kernel_names", r.kernel_names},
                     {"kernel_set_constant", r.kernel_set_constant},
                     {"kernel_set_deviation_count", r.kernel_set_deviation_count},
                     {"kernel_set_deviations", deviations},
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
  D2K_MEASURE_CUDA(cudaSetDevice(impl_->flusher.device()));
  return run_measure(launch, stream, opts, impl_->flusher, &impl_->nvml, impl_->blocking);
}

L2Flusher& Timer::flusher() { return impl_->flusher; }
NvmlSampler& Timer::clocks() { return impl_->nvml; }
bool Timer::cupti_available() const { return CuptiCollector::instance().available(); }
std::string Timer::cupti_status() const { return CuptiCollector::instance().status(); }

MeasureResult measure(const LaunchFn& launch, cudaStream_t stream, const MeasureOptions& opts,
                      L2Flusher& flusher) {
  D2K_MEASURE_CUDA(cudaSetDevice(flusher.device()));
  NvmlSampler nvml(flusher.device());
  BlockingFlag blocking;
  return run_measure(launch, stream, opts, flusher, &nvml, blocking);
}

}  // namespace d2k::measure
