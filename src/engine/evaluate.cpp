#include "engine/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "core/workload.h"
#include "engine/device_backend.h"
#include "engine/host_backend.h"
#include "engine/judge.h"
#include "engine/plan.h"
#include "exec/error.h"
#include "exec/loader.h"
#include "exec/worker.h"
#include "measure/calibrate.h"
#include "measure/roofline.h"
#include "tracks/track.h"
#include "measure/timer.h"
#include "report/npy.h"

namespace d2k {

namespace {

/// Seed of one round of one workload: the secret seed mixed with both, so that rounds differ
/// and no implementation can predict a value from the public workload alone.
std::uint64_t round_seed(std::uint64_t secret, const std::string& uuid, int round) {
  std::uint64_t h = secret ^ 0x9e3779b97f4a7c15ull;
  for (char c : uuid) h = (h ^ static_cast<std::uint8_t>(c)) * 0x100000001b3ull;
  h ^= static_cast<std::uint64_t>(round) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  return h;
}

Trace base_trace(const Task& task, const ImplTarget& t, const Workload& w) {
  Trace tr;
  tr.task = task.def.name;
  tr.target = t.name;
  tr.impl_path = t.so.string();
  tr.workload_uuid = w.uuid;
  tr.role = w.role == WorkloadRole::check ? "check" : "bench";
  tr.hidden = w.hidden;
  tr.axes = w.axes;
  tr.status = Status::PASSED;
  return tr;
}

void fail(Trace& tr, Status s, std::string msg, std::string rule = {}) {
  if (tr.status != Status::PASSED) return;  // the first failure is the verdict
  tr.status = s;
  tr.message = std::move(msg);
  tr.rule = std::move(rule);
  tr.performance.reset();
}

/// Keeps the worst round's per-output results (the failing one, else the largest error).
void record_round(Trace& tr, const OutputsVerdict& v, const std::string& against, int round) {
  if (!tr.correctness) tr.correctness = Correctness{against, 0, {}};
  tr.correctness->rounds = round + 1;
  tr.correctness->against = against;
  bool worse = tr.correctness->outputs.empty() || v.status != Status::PASSED;
  if (!worse)
    for (std::size_t i = 0; i < v.checks.size() && i < tr.correctness->outputs.size(); ++i)
      worse |= v.checks[i].max_abs_error > tr.correctness->outputs[i].max_abs_error;
  if (worse && (tr.status == Status::PASSED)) tr.correctness->outputs = v.checks;
  if (v.status != Status::PASSED) fail(tr, v.status, fmt::format("round {}: {}", round + 1, v.message));
}

std::vector<Workload> select_workloads(const Task& task, const EvalOptions& opt, WorkloadRole role) {
  std::vector<Workload> out;
  for (auto& w : task.workloads) {
    if (w.role != role) continue;
    if (!opt.workloads.empty() && std::find(opt.workloads.begin(), opt.workloads.end(), w.uuid) == opt.workloads.end())
      continue;
    out.push_back(w);
  }
  return out;
}

/// Number of rotating input copies: enough distinct addresses that no sample reuses the previous
/// one's buffers, bounded by memory.
std::size_t rotation_copies(std::size_t input_bytes) {
  const std::size_t budget = std::size_t(8) << 30;
  if (input_bytes == 0) return 2;
  return std::clamp<std::size_t>(budget / input_bytes, 2, 4);
}

/// Writes `ts` as <dump_dir>/<task>/<workload>/<label>.<tensor>.npy when dumping is on.
void dump_tensors(const EvalOptions& opt, const Task& task, const Workload& w, const std::string& label,
                  const std::vector<HostTensor>& ts) {
  if (opt.dump_dir.empty()) return;
  const auto dir = std::filesystem::path(opt.dump_dir) / task.def.name / w.uuid;
  std::filesystem::create_directories(dir);
  for (const auto& t : ts) write_npy(dir / (label + "." + t.name + ".npy"), t);
}

/// A per-target evaluation's runner, restarted after a crash so that one bad workload does not
/// hide the others; given up on after repeated deaths or a failure a restart cannot cure.
struct TargetState {
  ImplTarget target;
  std::unique_ptr<TargetRunner> runner;
  int deaths = 0;
  std::optional<CallOutcome> given_up;
};

class CudaEvaluation {
 public:
  CudaEvaluation(const Task& task, const EvalOptions& opt, const Progress& progress)
      : task_(task), opt_(opt), progress_(progress), ceilings_(measure::ceilings_for_device()) {}

  std::vector<Trace> run(const std::vector<ImplTarget>& targets, const ImplTarget& reference,
                         const std::optional<ImplTarget>& naive) {
    // Trusted code only runs in this process: the host golden and naive (the bench reference).
    reference_ = load_impl(reference.so);
    if (naive) naive_ = load_impl(naive->so);
    // naive is checked first (also when not a target): bench workloads need it to have passed.
    std::vector<ImplTarget> order;
    bool naive_listed = false;
    for (auto& t : targets) naive_listed |= t.name == "naive";
    if (naive) order.push_back(*naive);
    for (auto& t : targets)
      if (t.name != "naive") order.push_back(t);

    std::vector<Workload> checks = select_workloads(task_, opt_, WorkloadRole::check);
    if (opt_.workloads.empty())
      for (auto& h : draw_hidden_workloads(task_.def, opt_.secret_seed, opt_.hidden_workloads)) checks.push_back(h);
    std::vector<Workload> benches = select_workloads(task_, opt_, WorkloadRole::bench);
    for (const auto* set : {&checks, &benches})
      for (const Workload& w : *set) all_shapes_.push_back({w.uuid, w.axes});

    std::vector<Trace> out;
    for (std::size_t ti = 0; ti < order.size(); ++ti) {
      TargetState ts{order[ti], nullptr, 0, std::nullopt};
      const bool is_naive = naive && ts.target.name == naive->name && ti == 0;
      std::vector<Trace> mine;
      for (std::size_t wi = 0; wi < checks.size(); ++wi) mine.push_back(check_workload(ts, checks[wi], wi, checks.size()));
      if (is_naive) {
        naive_ok_ = true;
        for (auto& t : mine) naive_ok_ &= t.status == Status::PASSED;
        // Not asked for: naive stays the untimed reference of the bench outputs, no traces.
        if (!naive_listed) continue;
      }
      for (std::size_t wi = 0; wi < benches.size(); ++wi) mine.push_back(bench_workload(ts, benches[wi], wi, benches.size()));
      out.insert(out.end(), mine.begin(), mine.end());
    }
    return out;
  }

 private:
  void say(const std::string& s) {
    if (progress_) progress_(s);
  }

  TargetRunner* runner(TargetState& ts) {
    if (ts.given_up) return nullptr;
    if (!ts.runner) {
      WorkerOptions wo = opt_.worker;
      if (find_track(ts.target.track).prepares()) wo.shapes = all_shapes_;
      ts.runner = opt_.isolate ? make_worker_runner(ts.target, wo) : make_in_process_runner(ts.target);
    }
    return ts.runner.get();
  }

  /// Records a failed request on the trace; a dead worker is replaced for the next workload.
  void fail_call(Trace& tr, TargetState& ts, const CallOutcome& o) {
    if (!o.rule.empty()) tr.checks_fired.push_back(o.rule + ": " + o.error.substr(0, 300));
    fail(tr, o.status, o.error, o.rule);
    if (!o.fatal) return;
    ts.runner.reset();
    ++ts.deaths;
    // A restart cannot cure a library that does not load, nor a cheat; nor a third death.
    const bool curable = o.status == Status::RUNTIME_ERROR || o.status == Status::TIMEOUT;
    if (!curable || ts.deaths >= 3) ts.given_up = o;
  }

  /// Starts `tr` on `plan`: the runner and its plan; false (trace failed) when that fails.
  bool begin(Trace& tr, TargetState& ts, const WorkloadPlan& plan) {
    if (ts.given_up) {
      fail(tr, ts.given_up->status, "not run: " + ts.given_up->error, ts.given_up->rule);
      return false;
    }
    TargetRunner* r = runner(ts);
    CallOutcome o = r->set_plan(plan);
    if (!o.ok) {
      fail_call(tr, ts, o);
      return false;
    }
    return true;
  }

  /// Expected outputs of a check round (host golden), shared by every target.
  const std::pair<std::vector<HostTensor>, std::vector<HostTensor>>& golden(const WorkloadPlan& plan, int round) {
    auto key = std::make_pair(plan.workload.uuid, round);
    auto it = golden_.find(key);
    if (it != golden_.end()) return it->second;
    auto host_in = generate_inputs_host(plan, round_seed(opt_.secret_seed, plan.workload.uuid, round));
    auto expected = poisoned_outputs(plan, kPoisonA);
    run_host(reference_, plan, host_in, expected);
    if (round == 0) {
      dump_tensors(opt_, task_, plan.workload, "input", host_in);
      dump_tensors(opt_, task_, plan.workload, "expected", expected);
    }
    return golden_.emplace(key, std::make_pair(std::move(host_in), std::move(expected))).first->second;
  }

  /// naive's outputs on `ins`, on the device (run here; it is trusted).
  DeviceSet naive_outputs(const WorkloadPlan& plan, const DeviceSet& ins) {
    DeviceCall call(naive_, plan);
    DeviceSet outs = DeviceSet::allocate(plan.outputs);
    poison(outs, kPoisonA, stream_.get());
    call.launch(ins, outs, stream_.get());
    D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    D2K_CUDA_CHECK(cudaGetLastError());
    return outs;
  }

  /// Zeroes what an expected set holds before it is freed, so that no later allocation (the
  /// in-process runner's target) finds the answer.
  void scrub(DeviceSet& expected) {
    poison(expected, 0, stream_.get());
    D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  /// Expected outputs: host tensors (check workloads, from the golden) or a device set (bench
  /// workloads, from naive; judged by the device comparators).
  struct Expected {
    const std::vector<HostTensor>* host = nullptr;
    const DeviceSet* device = nullptr;
  };

  /// Two calls with different poison, the inputs' checksum around both, the thread count after
  /// each, then the judge.
  void run_and_judge(Trace& tr, TargetState& ts, const WorkloadPlan& plan, const DeviceSet& ins, Expected expected,
                     const std::string& against, int round) {
    if (tr.status != Status::PASSED) return;
    TargetRunner* r = runner(ts);
    DeviceSet outs[2] = {DeviceSet::allocate(plan.outputs, r->memory_kind()),
                         DeviceSet::allocate(plan.outputs, r->memory_kind())};
    const std::uint64_t before = device_checksum(ins, stream_.get());
    const std::uint8_t poisons[2] = {kPoisonA, kPoisonB};
    for (int k = 0; k < 2; ++k) {
      poison(outs[k], poisons[k], stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      CallOutcome o = r->call(ins, outs[k]);
      if (!o.ok) return fail_call(tr, ts, o);
      // Workers compare with their count before the library was loaded; in-process runs only
      // around the second call (the first may start the driver's own threads).
      const bool counted = o.threads_before >= 0 && o.threads_after >= 0 && (k == 1 || opt_.isolate);
      if (counted && o.threads_after > o.threads_before) {
        tr.checks_fired.push_back(fmt::format("no_threads_after_call: {} -> {} threads", o.threads_before, o.threads_after));
        return fail(tr, Status::REWARD_HACK, "a thread was left running after the call", "no_threads_after_call");
      }
    }
    if (round == 0 && !opt_.dump_dir.empty())
      dump_tensors(opt_, task_, plan.workload, ts.target.name, download(plan.outputs, outs[0], stream_.get()));
    if (device_checksum(ins, stream_.get()) != before) {
      tr.checks_fired.push_back("inputs_unchanged: an input changed during the call");
      return fail(tr, Status::REWARD_HACK, "the implementation modified its inputs", "inputs_unchanged");
    }
    OutputsVerdict v = expected.device
                           ? judge_outputs_device(plan, *expected.device, outs[0], outs[1], stream_.get())
                           : judge_outputs(plan, *expected.host, download(plan.outputs, outs[0], stream_.get()),
                                           download(plan.outputs, outs[1], stream_.get()));
    record_round(tr, v, against, round);
  }

  std::optional<WorkloadPlan> plan_for(Trace& tr, const Workload& w) {
    try {
      return make_plan(task_, w);
    } catch (const std::exception& e) {
      fail(tr, Status::INCORRECT_SHAPE, std::string("workload cannot be planned: ") + e.what());
      return std::nullopt;
    }
  }

  Trace check_workload(TargetState& ts, const Workload& w, std::size_t wi, std::size_t nw) {
    Trace tr = base_trace(task_, ts.target, w);
    auto plan = plan_for(tr, w);
    if (!plan || !begin(tr, ts, *plan)) return tr;
    try {
      DeviceSet ins = DeviceSet::allocate(plan->inputs, runner(ts)->memory_kind());
      for (int r = 0; r < opt_.check_rounds && tr.status == Status::PASSED; ++r) {
        say(fmt::format("{} {}: check {}/{} {} round {}/{}", task_.def.name, ts.target.name, wi + 1, nw, w.uuid, r + 1,
                        opt_.check_rounds));
        const auto& [host_in, expected] = golden(*plan, r);
        upload(host_in, ins, stream_.get());
        run_and_judge(tr, ts, *plan, ins, Expected{&expected, nullptr}, "reference", r);
      }
    } catch (const CudaError& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
      throw;  // this process's context is broken (in-process runs only): nothing after it can be trusted
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
    return tr;
  }

  Trace bench_workload(TargetState& ts, const Workload& w, std::size_t wi, std::size_t nw) {
    Trace tr = base_trace(task_, ts.target, w);
    if (!naive_ok_) {
      fail(tr, Status::SKIPPED, "naive did not match the golden reference on the check workloads");
      return tr;
    }
    auto plan = plan_for(tr, w);
    if (!plan || !begin(tr, ts, *plan)) return tr;
    try {
      DeviceSet ins = DeviceSet::allocate(plan->inputs, runner(ts)->memory_kind());
      for (int r = 0; r < opt_.bench_rounds && tr.status == Status::PASSED; ++r) {
        say(fmt::format("{} {}: bench {}/{} {} check round {}/{}", task_.def.name, ts.target.name, wi + 1, nw, w.uuid,
                        r + 1, opt_.bench_rounds));
        generate_inputs_device(*plan, round_seed(opt_.secret_seed, w.uuid, 100 + r), ins, stream_.get());
        DeviceSet expected = naive_outputs(*plan, ins);
        if (r == 0 && !opt_.dump_dir.empty() && !dumped_.count(w.uuid)) {
          dumped_.insert(w.uuid);
          dump_tensors(opt_, task_, w, "input", download(plan->inputs, ins, stream_.get()));
          dump_tensors(opt_, task_, w, "expected", download(plan->outputs, expected, stream_.get()));
        }
        run_and_judge(tr, ts, *plan, ins, Expected{nullptr, &expected}, "naive", r);
        scrub(expected);
      }
      if (opt_.time && tr.status == Status::PASSED) {
        say(fmt::format("{} {}: bench {}/{} {} timing", task_.def.name, ts.target.name, wi + 1, nw, w.uuid));
        time_target(tr, ts, *plan);
      }
    } catch (const CudaError& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
      throw;
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
    return tr;
  }

  /// Thrown from the preparation hook when a re-checked sample was wrong; ends the timing.
  struct RecheckFailed {
    std::string rule, message;
  };

  /// Re-checks what rotation set `k` holds: its inputs must still be the ones drawn from `seed`
  /// (redrawn here, away from the target), and its outputs naive's on them.
  void recheck(const WorkloadPlan& plan, const DeviceSet& ins, const DeviceSet& outs, std::uint64_t seed) {
    DeviceSet fresh = DeviceSet::allocate(plan.inputs);
    generate_inputs_device(plan, seed, fresh, stream_.get());
    if (device_checksum(fresh, stream_.get()) != device_checksum(ins, stream_.get()))
      throw RecheckFailed{"inputs_unchanged", "a timed call changed its inputs"};
    DeviceSet expected = naive_outputs(plan, fresh);
    OutputsVerdict v = judge_single_device(plan, expected, outs, stream_.get());
    scrub(expected);
    if (v.status != Status::PASSED) throw RecheckFailed{"timed_sample_recheck", "a timed sample's outputs were wrong: " + v.message};
  }

  void time_target(Trace& tr, TargetState& ts, const WorkloadPlan& plan) {
    TargetRunner* r = runner(ts);
    // Rotation sets: every call sees other addresses than the last, and inputs drawn for it.
    const std::size_t n = rotation_copies(plan.input_bytes() + plan.output_bytes());
    std::vector<DeviceSet> ins, outs;
    for (std::size_t i = 0; i < n; ++i) {
      ins.push_back(DeviceSet::allocate(plan.inputs, r->memory_kind()));
      outs.push_back(DeviceSet::allocate(plan.outputs, r->memory_kind()));
    }
    // Seeds of each call's inputs, and which sampled call is re-checked mid-loop: both from
    // the secret seed, so the target can predict neither.
    const std::string key = fmt::format("{}#time#{}", plan.workload.uuid, ts.target.name);
    std::vector<std::uint64_t> set_seed(n, 0);
    std::vector<bool> filled(n, false);
    std::mt19937_64 rng(round_seed(opt_.secret_seed, key, 7));
    const std::size_t recheck_at = 2 + n + rng() % 24;  // a timed call after warm-up has started
    std::size_t last_call = 0;
    auto prepare = [&](std::size_t call, std::size_t k) {
      if (opt_.sample_checks && call == recheck_at && filled[k]) recheck(plan, ins[k], outs[k], set_seed[k]);
      // Without the per-call checks each set keeps the inputs drawn for it on its first use.
      if (opt_.sample_checks || !filled[k]) {
        set_seed[k] = round_seed(opt_.secret_seed, key, 1000 + static_cast<int>(call));
        generate_inputs_device(plan, set_seed[k], ins[k], stream_.get());
      }
      poison(outs[k], kPoisonA, stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      filled[k] = true;
      last_call = call;
    };
    // A timing run, with the re-check of the last call; nullopt (trace failed) when a re-check
    // failed. The worker is then mid-loop, waiting for a preparation that will not come: it is
    // ended, and the next workload gets a fresh one.
    auto timed = [&](const measure::MeasureOptions& o) -> std::optional<TimedOutcome> {
      try {
        TimedOutcome t = r->time(ins, outs, o, prepare);
        if (t.call.ok) recheck(plan, ins[last_call % n], outs[last_call % n], set_seed[last_call % n]);
        return t;
      } catch (const RecheckFailed& f) {
        tr.checks_fired.push_back(f.rule + ": " + f.message);
        fail(tr, Status::REWARD_HACK, f.message, f.rule);
        ts.runner.reset();
        return std::nullopt;
      }
    };
    measure::MeasureOptions mo;
    mo.stopping = opt_.stopping;
    std::optional<TimedOutcome> timed_main = timed(mo);
    if (!timed_main) return;
    const TimedOutcome& t = *timed_main;
    if (!t.call.ok) return fail_call(tr, ts, t.call);
    // One odd sample can be a CUPTI delivery glitch; a cheat's other path shows repeatedly. Only
    // audit samples are judged (CUPTI records no others).
    if (!t.kernel_set_constant && static_cast<std::int64_t>(t.kernel_set_deviations) >= std::max<std::int64_t>(2, t.perf.audit_samples / 100)) {
      tr.checks_fired.push_back(fmt::format("kernel_set_constant: {} samples launched other kernels; {}",
                                            t.kernel_set_deviations, t.kernel_set_example));
      return fail(tr, Status::REWARD_HACK, "the set of launched kernels changed between samples", "kernel_set_constant");
    }
    if (t.unjoined_samples > 0) {
      tr.checks_fired.push_back(fmt::format("stream_join: {} samples: {}", t.unjoined_samples, t.unjoined_detail));
      return fail(tr, Status::REWARD_HACK, "work was still running after the harness stream synchronised: " + t.unjoined_detail,
                  "stream_join");
    }
    if (!ts.target.vendor_kernels && t.vendor_busy_s > 0) {
      tr.checks_fired.push_back(fmt::format("vendor_kernels: {:.1f}% of device time", 100 * t.vendor_busy_s / std::max(t.total_busy_s, 1e-12)));
      return fail(tr, Status::REWARD_HACK, "vendor-library kernels ran on a track that forbids them", "vendor_kernels");
    }
    tr.performance = t.perf;
    const double median_s = t.perf.median_us * 1e-6;
    const std::size_t k_last = last_call % n;
    if (auto why = opt_.sample_checks ? cross_check_time(r, plan, ins[k_last], outs[k_last], set_seed[k_last], t)
                                      : std::string();
        !why.empty()) {
      tr.checks_fired.push_back("timer_cross_check: " + why);
      return fail(tr, Status::REWARD_HACK, "the reported time is below what the parent's clock allows: " + why,
                  "timer_cross_check");
    }
    if (opt_.graph) {
      // The graph column replays flush + call captured together, so launch gaps shrink but the
      // L2 stays cold (the flush is inside the graph).
      measure::MeasureOptions go = mo;
      go.graph = true;
      go.graph_variants = n;
      std::optional<TimedOutcome> g = timed(go);
      if (!g) return;
      // A call that cannot be captured (it synchronises or allocates) just has no graph column.
      if (g->call.ok) tr.performance->graph_median_us = g->perf.median_us;
      else if (g->call.fatal) return fail_call(tr, ts, g->call);
      else tr.checks_fired.push_back("graph column: " + g->call.error.substr(0, 200));
    }
    Roofline rf;
    measure::CostInputs cost{plan.flops, plan.bytes};
    measure::SolTime sol = measure::sol_time(cost, ceilings_);
    rf.t_sol_us = sol.t_sol_s * 1e6;
    rf.bound = sol.bound;
    rf.pct_sol = measure::percent_of_sol(median_s, sol.t_sol_s);
    rf.ceilings_source = ceilings_.source;
    tr.roofline = rf;
    measure::FloorVerdict floor = measure::physical_floor_check(median_s, cost, ceilings_);
    if (floor.below_floor) {
      tr.checks_fired.push_back("physical_floor: " + floor.message);
      fail(tr, Status::REWARD_HACK, "faster than the physical floor: " + floor.message, "physical_floor");
    }
  }

  /// The worker reports its own GPU time; the parent checks it against its own clock. `count`
  /// calls back to back (warm L2, no preparation) take at least count x the warm time of one,
  /// which is at most the cold time the timer should have seen; the request's round trip is
  /// measured apart and taken off, and launch overhead is allowed for per kernel. The calls
  /// write into poisoned outputs that are re-checked after, so the calls cannot skip the work.
  /// Returns why the report is implausible ("" when it is not).
  std::string cross_check_time(TargetRunner* r, const WorkloadPlan& plan, const DeviceSet& ins, DeviceSet& outs,
                               std::uint64_t seed, const TimedOutcome& t) {
    const double median_s = t.perf.median_us * 1e-6;
    if (median_s <= 0) return "a non-positive median";
    const std::size_t count = std::clamp<std::size_t>(static_cast<std::size_t>(0.1 / median_s), 3, 2000);
    double rtt_s = 0, wall_s = 0;
    if (CallOutcome o = r->throughput(ins, outs, 0, rtt_s); !o.ok) return {};
    poison(outs, kPoisonA, stream_.get());
    D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    // A failed request is reported by the next one; it proves nothing here.
    if (CallOutcome o = r->throughput(ins, outs, count, wall_s); !o.ok) return {};
    try {
      recheck(plan, ins, outs, seed);
    } catch (const RecheckFailed& f) {
      return "the back-to-back calls did not produce the outputs: " + f.message;
    }
    const double per_call = std::max(0.0, wall_s - rtt_s) / static_cast<double>(count);
    const double allowance = 10e-6 + 5e-6 * static_cast<double>(std::max<std::size_t>(t.perf.kernels.size(), 1));
    if (median_s < 0.8 * per_call - allowance)
      return fmt::format("median {:.2f} us, but {} back-to-back calls took {:.2f} us each on the parent's clock",
                         t.perf.median_us, count, per_call * 1e6);
    return {};
  }

  const Task& task_;
  EvalOptions opt_;
  Progress progress_;
  measure::Ceilings ceilings_;
  Stream stream_;
  LoadedImpl reference_, naive_;
  std::map<std::pair<std::string, int>, std::pair<std::vector<HostTensor>, std::vector<HostTensor>>> golden_;
  std::set<std::string> dumped_;
  bool naive_ok_ = false;
  std::vector<WorkloadShape> all_shapes_;  ///< for a track's prepare step
};

}  // namespace

std::vector<Trace> evaluate_cuda(const Task& task, const std::vector<ImplTarget>& targets, const ImplTarget& reference,
                                 const std::optional<ImplTarget>& naive, const EvalOptions& opt,
                                 const Progress& progress) {
  CudaEvaluation ev(task, opt, progress);
  auto traces = ev.run(targets, reference, naive);
  nlohmann::json env = environment_json();
  for (auto& t : traces) t.environment = env;
  return traces;
}

std::vector<Trace> evaluate_host(const Task& task, const ImplTarget& target, const std::optional<ImplTarget>& golden,
                                 const EvalOptions& opt, const Progress& progress) {
  std::vector<Trace> out;
  LoadedImpl impl, gold;
  std::string load_error;
  try {
    impl = load_impl(target.so);
    if (golden) gold = load_impl(golden->so);
  } catch (const std::exception& e) {
    load_error = e.what();
  }
  for (const Workload& w : select_workloads(task, opt, WorkloadRole::check)) {
    Trace tr = base_trace(task, target, w);
    if (!load_error.empty()) {
      fail(tr, Status::INVALID_SUBMISSION, load_error);
      out.push_back(tr);
      continue;
    }
    try {
      WorkloadPlan plan = make_plan(task, w);
      for (int r = 0; r < opt.check_rounds; ++r) {
        if (progress) progress(fmt::format("{}: host {} round {}/{}", task.def.name, w.uuid, r + 1, opt.check_rounds));
        auto ins = generate_inputs_host(plan, round_seed(opt.secret_seed, w.uuid, r));
        const std::uint64_t before = checksum(ins);
        auto a = poisoned_outputs(plan, kPoisonA);
        auto b = poisoned_outputs(plan, kPoisonB);
        run_host(impl, plan, ins, a);
        run_host(impl, plan, ins, b);
        if (r == 0) {
          dump_tensors(opt, task, w, "input", ins);
          dump_tensors(opt, task, w, target.name, a);
        }
        if (checksum(ins) != before) {
          fail(tr, Status::REWARD_HACK, "the implementation modified its inputs", "inputs_unchanged");
          break;
        }
        // Without a golden, run A is the expectation of run B: all written, finite, deterministic.
        std::vector<HostTensor> expected = a;
        if (golden) {
          expected = poisoned_outputs(plan, kPoisonA);
          run_host(gold, plan, ins, expected);
        }
        record_round(tr, judge_outputs(plan, expected, a, b), golden ? "reference" : "self", r);
        if (tr.status != Status::PASSED) break;
      }
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
    out.push_back(std::move(tr));
  }
  return out;
}

void score_traces(std::vector<Trace>& traces) {
  // Median time of each (target, workload) that passed, for the speedup columns.
  std::map<std::pair<std::string, std::string>, double> time;
  for (auto& t : traces)
    if (t.status == Status::PASSED && t.performance) time[{t.target, t.workload_uuid}] = t.performance->median_us;
  auto lookup = [&](const std::string& target, const std::string& uuid) -> std::optional<double> {
    auto it = time.find({target, uuid});
    if (it == time.end()) return std::nullopt;
    return it->second;
  };
  for (auto& t : traces) {
    if (t.status != Status::PASSED || !t.performance || !t.roofline) continue;
    const double mine = t.performance->median_us;
    if (auto n = lookup("naive", t.workload_uuid)) {
      t.roofline->speedup_vs_naive = *n / mine;
      t.roofline->sol_score = measure::sol_score(mine, t.roofline->t_sol_us, *n).score;
    }
    if (auto e = lookup("expert", t.workload_uuid)) t.roofline->speedup_vs_expert = *e / mine;
    if (auto l = lookup("library", t.workload_uuid)) t.roofline->speedup_vs_library = *l / mine;
    if (auto e = lookup("torch_eager", t.workload_uuid)) t.roofline->speedup_vs_torch_eager = *e / mine;
    if (auto c = lookup("torch_compile", t.workload_uuid)) t.roofline->speedup_vs_torch_compile = *c / mine;
  }
}

nlohmann::json environment_json() {
  nlohmann::json env;
  int dev = 0, runtime = 0, driver = 0;
  cudaDeviceProp prop{};
  if (cuda_device_count() > 0 && cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
    env["device"] = prop.name;
    env["sm"] = fmt::format("{}.{}", prop.major, prop.minor);
    env["sm_count"] = prop.multiProcessorCount;
    env["l2_bytes"] = prop.l2CacheSize;
  }
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  env["cuda_runtime"] = runtime;
  env["cuda_driver"] = driver;
  env["d2k_version"] = D2K_VERSION;
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env["date"] = buf;
  return env;
}

}  // namespace d2k
