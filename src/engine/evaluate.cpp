#include "engine/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string_view>

#include "core/status.h"
#include "core/workload.h"
#include "engine/device_backend.h"
#include "engine/host_backend.h"
#include "engine/judge.h"
#include "engine/parent_clock.h"
#include "engine/plan.h"
#include "engine/rules.h"
#include "engine/worker_process.h"
#include "exec/error.h"
#include "exec/loader.h"
#include "exec/worker.h"
#include "measure/calibrate.h"
#include "score/roofline.h"
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

/// Where one check round's two calls run (host memory or device buffers): the inputs' checksum,
/// a call on output set k after poisoning it, and the outputs as the judge reads them.
class TwoCalls {
 public:
  virtual ~TwoCalls() = default;
  virtual std::uint64_t input_checksum() = 0;
  /// Poisons output set k (0 or 1) with `poison` and calls the target on it. False when the call
  /// failed; the implementation has recorded why on the trace.
  virtual bool call(int k, std::uint8_t poison) = 0;
  virtual OutputsView outputs(int k) = 0;
};

/// One check round, the same for host and CUDA evaluation: two calls with different poison, the
/// inputs' checksum around both, then the judge against `expected` (nullptr: the first run is
/// the expectation of the second: all written, finite, deterministic).
void judged_round(Trace& tr, const WorkloadPlan& plan, TwoCalls& calls, const OutputsView* expected,
                  const std::string& against, int round) {
  if (tr.status != Status::PASSED) return;
  const std::uint64_t before = calls.input_checksum();
  const std::uint8_t poisons[2] = {kPoisonA, kPoisonB};
  for (int k = 0; k < 2; ++k)
    if (!calls.call(k, poisons[k])) return;
  if (calls.input_checksum() != before) {
    tr.checks_fired.push_back("inputs_unchanged: an input changed during the call");
    return fail(tr, Status::REWARD_HACK, "the implementation modified its inputs", "inputs_unchanged");
  }
  const OutputsView a = calls.outputs(0), b = calls.outputs(1);
  record_round(tr, judge_outputs(plan, expected ? *expected : a, a, b), against, round);
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
/// Where device memory holds fewer than two, one (its inputs are still redrawn for every call).
std::size_t rotation_copies(std::size_t input_bytes, std::size_t free_bytes) {
  const std::size_t budget = std::size_t(8) << 30;
  if (input_bytes == 0) return 2;
  const std::size_t fit = sets_that_fit(input_bytes, free_bytes, "rotation set of the timing loop");
  return std::min(fit, std::clamp<std::size_t>(budget / input_bytes, 2, 4));
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
  CudaEvaluation(const Task& task, const EvalOptions& opt, const Progress& progress, const RecordDone& done)
      : task_(task), opt_(opt), progress_(progress), done_(done), ceilings_(measure::ceilings_for_device()) {
    if (done_) environment_ = environment_json();
  }

  std::vector<Trace> run(const std::vector<ImplTarget>& targets, const ImplTarget& reference,
                         const std::optional<ImplTarget>& naive) {
    // Trusted code only runs in this process: the host golden and naive (the bench reference).
    reference_ = load_impl(reference.so);
    if (naive) naive_ = load_impl(naive->so);
    else naive_unusable_ = "no naive build of this task (its naive.so): bench outputs are judged against naive's";
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
      for (const Workload& w : *set) all_shapes_.push_back(workload_shape(task_.def, w));

    std::vector<Trace> out;
    for (std::size_t ti = 0; ti < order.size(); ++ti) {
      TargetState ts{order[ti], nullptr, 0, std::nullopt};
      const bool is_naive = naive && ts.target.name == naive->name && ti == 0;
      // Not asked for: naive stays the untimed reference of the bench outputs, no traces.
      const bool reported = !is_naive || naive_listed;
      std::vector<Trace> mine;
      for (std::size_t wi = 0; wi < checks.size(); ++wi) {
        mine.push_back(check_workload(ts, checks[wi], wi, checks.size()));
        if (reported) finished(mine.back());
      }
      if (is_naive) {
        for (const Trace& t : mine)
          if (t.status != Status::PASSED && naive_unusable_.empty())
            naive_unusable_ = fmt::format("naive did not match the golden reference on the check workloads ({} {}{})",
                                          t.workload_uuid, status_name(t.status), t.rule.empty() ? "" : "(" + t.rule + ")");
        if (!reported) continue;
      }
      for (std::size_t wi = 0; wi < benches.size(); ++wi) {
        mine.push_back(bench_workload(ts, benches[wi], wi, benches.size()));
        finished(mine.back());
      }
      out.insert(out.end(), mine.begin(), mine.end());
    }
    return out;
  }

 private:
  void say(const std::string& s) {
    if (progress_) progress_(s);
  }

  /// A record is complete but for the cross-target columns: the caller gets it at once, marked
  /// partial, with the environment as the run started (the final records get it as the run
  /// ends, evaluate_cuda).
  void finished(const Trace& tr) {
    if (!done_) return;
    Trace early = tr;
    early.partial = true;
    early.environment = environment_;
    done_(early);
  }

  TargetRunner* runner(TargetState& ts) {
    if (ts.given_up) return nullptr;
    if (!ts.runner) {
      WorkerOptions wo = opt_.worker;
      if (const Track& track = find_track(ts.target.track); track.prepares()) {
        wo.shapes = all_shapes_;
        wo.start_timeout_s += track.prepare_seconds_per_shape() * static_cast<double>(all_shapes_.size());
      }
      ts.runner = opt_.isolate ? make_worker_runner(ts.target, wo) : make_in_process_runner(ts.target);
    }
    return ts.runner.get();
  }

  /// Records a failed request on the trace; a dead worker is replaced for the next workload.
  void fail_call(Trace& tr, TargetState& ts, const CallOutcome& o) {
    if (!o.rule.empty()) tr.checks_fired.push_back(o.rule + ": " + o.error.substr(0, 300));
    // A device fault (an access past a buffer's mapping lands in its guard zone) is named as such.
    const bool fault = o.status == Status::RUNTIME_ERROR && o.rule.empty() && o.error.find("illegal memory access") != std::string::npos;
    fail(tr, o.status, o.error, fault ? std::string(violation("illegal_address", "").rule) : o.rule);
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

  /// The target's calls on the device: the thread count after each, outputs dumped in round 0.
  class DeviceCalls final : public TwoCalls {
   public:
    DeviceCalls(CudaEvaluation& ev, Trace& tr, TargetState& ts, const WorkloadPlan& plan, const DeviceSet& ins, int round)
        : ev_(ev), tr_(tr), ts_(ts), plan_(plan), ins_(ins), round_(round),
          outs_{DeviceSet::allocate(plan.outputs, ev.runner(ts)->memory_kind()),
                DeviceSet::allocate(plan.outputs, ev.runner(ts)->memory_kind())} {}
    std::uint64_t input_checksum() override { return device_checksum(ins_, ev_.stream_.get()); }
    OutputsView outputs(int k) override { return OutputsView(outs_[k], ev_.stream_.get()); }
    bool call(int k, std::uint8_t poison_byte) override {
      poison(outs_[k], poison_byte, ev_.stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(ev_.stream_.get()));
      TargetRunner* r = ev_.runner(ts_);
      CallOutcome o = r->call(ins_, outs_[k]);
      if (!o.ok) {
        ev_.fail_call(tr_, ts_, o);
        return false;
      }
      // Workers compare with their count before the library was loaded; in-process runs only
      // around the second call (the first may start the driver's own threads).
      if (k == 1 || ev_.opt_.isolate)
        if (auto v = check_threads_after_call(o.threads_before, o.threads_after)) {
          ev_.fail_with(tr_, *v);
          return false;
        }
      if (auto v = ev_.check_slack(plan_, ins_, outs_[k])) {
        ev_.fail_with(tr_, *v);
        return false;
      }
      if (k == 0 && round_ == 0 && !ev_.opt_.dump_dir.empty())
        dump_tensors(ev_.opt_, ev_.task_, plan_.workload, ts_.target.name,
                     download(plan_.outputs, outs_[0], ev_.stream_.get()));
      return true;
    }

   private:
    CudaEvaluation& ev_;
    Trace& tr_;
    TargetState& ts_;
    const WorkloadPlan& plan_;
    const DeviceSet& ins_;
    int round_;
    DeviceSet outs_[2];
  };

  void run_and_judge(Trace& tr, TargetState& ts, const WorkloadPlan& plan, const DeviceSet& ins, Expected expected,
                     const std::string& against, int round) {
    if (tr.status != Status::PASSED) return;
    DeviceCalls calls(*this, tr, ts, plan, ins, round);
    const OutputsView want = expected.device ? OutputsView(*expected.device, stream_.get()) : OutputsView(*expected.host);
    judged_round(tr, plan, calls, &want, against, round);
  }

  /// out_of_bounds: the canary bytes after every input and output (DeviceSet::allocate wrote
  /// them) must be unchanged after a call.
  std::optional<Violation> check_slack(const WorkloadPlan& plan, const DeviceSet& ins, const DeviceSet& outs) {
    auto each = [&](const char* role, const std::vector<TensorPlan>& ts, const DeviceSet& d) -> std::optional<Violation> {
      for (std::size_t i = 0; i < d.bufs.size() && i < ts.size(); ++i)
        if (auto v = check_canary(fmt::format("{} '{}'", role, ts[i].name), d.bufs[i].read_slack(stream_.get()), kSlackCanary))
          return v;
      return std::nullopt;
    };
    if (auto v = each("output", plan.outputs, outs)) return v;
    return each("input", plan.inputs, ins);
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
      // A sticky error broke this process's context (in-process runs only): nothing after it can
      // be trusted. A non-sticky one (out of memory for one workload's sets) ends this trace only.
      if (e.sticky) throw;
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
    return tr;
  }

  Trace bench_workload(TargetState& ts, const Workload& w, std::size_t wi, std::size_t nw) {
    Trace tr = base_trace(task_, ts.target, w);
    if (!naive_unusable_.empty()) {
      fail(tr, Status::SKIPPED, naive_unusable_);
      return tr;
    }
    auto plan = plan_for(tr, w);
    if (!plan || !begin(tr, ts, *plan)) return tr;
    try {
      check_rounds(tr, ts, *plan, w, wi, nw);
      if (opt_.time && tr.status == Status::PASSED) {
        say(fmt::format("{} {}: bench {}/{} {} timing", task_.def.name, ts.target.name, wi + 1, nw, w.uuid));
        time_target(tr, ts, *plan);
      }
    } catch (const CudaError& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
      if (e.sticky) throw;  // as in check_workload
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
    return tr;
  }

  /// Phase: the bench workload's check rounds. Its input set is freed before the timing, whose
  /// rotation and batch sets need the memory (a 23 GB TPC-H SF100 lineitem, held three times).
  void check_rounds(Trace& tr, TargetState& ts, const WorkloadPlan& plan, const Workload& w, std::size_t wi,
                    std::size_t nw) {
    release_freed(ts);
    DeviceSet ins = DeviceSet::allocate(plan.inputs, runner(ts)->memory_kind());
    for (int r = 0; r < opt_.bench_rounds && tr.status == Status::PASSED; ++r) {
      release_freed(ts);  // the last round's output sets
      say(fmt::format("{} {}: bench {}/{} {} check round {}/{}", task_.def.name, ts.target.name, wi + 1, nw, w.uuid,
                      r + 1, opt_.bench_rounds));
      generate_inputs_device(plan, round_seed(opt_.secret_seed, w.uuid, 100 + r), ins, stream_.get());
      DeviceSet expected = naive_outputs(plan, ins);
      if (r == 0 && !opt_.dump_dir.empty() && !dumped_.count(w.uuid)) {
        dumped_.insert(w.uuid);
        dump_tensors(opt_, task_, w, "input", download(plan.inputs, ins, stream_.get()));
        dump_tensors(opt_, task_, w, "expected", download(plan.outputs, expected, stream_.get()));
      }
      run_and_judge(tr, ts, against_naive(plan), ins, Expected{nullptr, &expected}, "naive", r);
      scrub(expected);
    }
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
    OutputsVerdict v = judge_single(against_naive(plan), OutputsView(expected, stream_.get()), OutputsView(outs, stream_.get()));
    scrub(expected);
    if (v.status != Status::PASSED) throw RecheckFailed{"timed_sample_recheck", "a timed sample's outputs were wrong: " + v.message};
  }

  /// A failed check as the trace's failure.
  void fail_with(Trace& tr, const Violation& v) {
    tr.checks_fired.push_back(v.rule + ": " + v.message);
    fail(tr, v.status, v.message, v.rule);
  }

  /// Rotation sets of a timing run, the seeds their inputs were drawn from, and the last call.
  struct Rotation {
    std::vector<DeviceSet> ins, outs;
    std::vector<std::uint64_t> seed;
    std::vector<bool> filled;
    std::size_t last_call = 0;
    std::size_t size() const { return ins.size(); }
  };

  /// Free device memory less the workspace naive_outputs() allocates while sets are held (a TPC-H
  /// SF100 naive asks for 32 GB): what the parent may spend on input sets.
  std::size_t free_beside_naive(const WorkloadPlan& plan) {
    const std::size_t free_b = device_free_bytes(), ws = workspace_bytes(naive_, plan);
    return free_b > ws ? free_b - ws : 0;
  }

  /// Memory the target's runner still holds of freed buffers goes back before the next sizing.
  /// A failure here is the runner's, and its next request reports it.
  void release_freed(TargetState& ts) { (void)runner(ts)->release_freed(); }

  /// Phase: rotation sets, enough that every call sees other addresses than the last.
  Rotation allocate_rotation(const WorkloadPlan& plan, MemKind kind) {
    Rotation rot;
    // The parent's batch comes later and cannot borrow the rotation's outputs: leave it its least
    // (a slab of its fewest calls, the judge's slot and one set of naive outputs).
    const std::size_t batch_least = (kBatchMinCalls + 2) * plan.output_bytes(), free_b = free_beside_naive(plan);
    const std::size_t n = rotation_copies(plan.input_bytes() + plan.output_bytes(), free_b > batch_least ? free_b - batch_least : 0);
    for (std::size_t i = 0; i < n; ++i) {
      rot.ins.push_back(DeviceSet::allocate(plan.inputs, kind));
      rot.outs.push_back(DeviceSet::allocate(plan.outputs, kind));
    }
    rot.seed.assign(n, 0);
    rot.filled.assign(n, false);
    return rot;
  }

  /// Phase: the timer's loop in the worker, with the parent's preparation of every call and the
  /// re-check of a secret random call and of the last one. nullopt (trace failed) when a re-check
  /// failed; the worker is then mid-loop, waiting for a preparation that will not come: it is
  /// ended, and the next workload gets a fresh one.
  std::optional<TimedOutcome> run_timing(Trace& tr, TargetState& ts, const WorkloadPlan& plan, Rotation& rot,
                                         const measure::MeasureOptions& mo) {
    const std::size_t n = rot.size();
    const std::string key = fmt::format("{}#time#{}", plan.workload.uuid, ts.target.name);
    std::mt19937_64 rng(round_seed(opt_.secret_seed, key, 7));
    const std::size_t recheck_at = 2 + n + rng() % 24;  // a timed call after warm-up has started
    auto prepare = [&](std::size_t call, std::size_t k) {
      if (opt_.sample_checks && call == recheck_at && rot.filled[k]) recheck(plan, rot.ins[k], rot.outs[k], rot.seed[k]);
      // Without the per-call checks each set keeps the inputs drawn for it on its first use.
      if (opt_.sample_checks || !rot.filled[k]) {
        rot.seed[k] = round_seed(opt_.secret_seed, key, 1000 + static_cast<int>(call));
        generate_inputs_device(plan, rot.seed[k], rot.ins[k], stream_.get());
      }
      poison(rot.outs[k], kPoisonA, stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      rot.filled[k] = true;
      rot.last_call = call;
    };
    try {
      TimedOutcome t = runner(ts)->time(rot.ins, rot.outs, mo, prepare);
      const std::size_t k = rot.last_call % n;
      if (t.call.ok) recheck(plan, rot.ins[k], rot.outs[k], rot.seed[k]);
      return t;
    } catch (const RecheckFailed& f) {
      tr.checks_fired.push_back(f.rule + ": " + f.message);
      fail(tr, Status::REWARD_HACK, f.message, f.rule);
      ts.runner.reset();
      return std::nullopt;
    }
  }

  /// Phase: tripwires on the worker's report (engine/rules.h). They catch what a candidate does
  /// not also forge; the parent's clock is the boundary.
  std::optional<Violation> tripwires(const TargetState& ts, const TimedOutcome& t) {
    TimerReport r;
    r.median_s = t.perf.median_us * 1e-6;
    r.audited_event_median_s = t.audited_event_median_s;
    r.plain_event_median_s = t.plain_event_median_s;
    r.audited = t.audited;
    r.plain = t.plain;
    r.launch_offset_s = t.launch_offset_s;
    r.audit_samples = static_cast<std::size_t>(std::max<std::int64_t>(0, t.perf.audit_samples));
    r.kernel_set_constant = t.kernel_set_constant;
    r.kernel_set_deviations = t.kernel_set_deviations;
    r.kernel_set_example = t.kernel_set_example;
    r.unjoined_samples = t.unjoined_samples;
    r.unjoined_detail = t.unjoined_detail;
    r.vendor_busy_s = t.vendor_busy_s;
    r.total_busy_s = t.total_busy_s;
    for (auto v : {check_kernel_set(r, task_.def.launches_vary_with_inputs), check_stream_join(r), check_vendor_kernels(r, ts.target.vendor_kernels),
                   check_launch_offset(r), check_timer_audit_gap(r)})
      if (v) return v;
    return std::nullopt;
  }

  /// Phase: the parent's clock bounds the time (engine/parent_clock.h). Returns false (trace
  /// failed) on a violation or a failed request; sets the time that scores.
  bool bound_by_parent_clock(Trace& tr, TargetState& ts, const WorkloadPlan& plan, Rotation& rot) {
    release_freed(ts);  // the timing loop's re-check sets, before the batch is sized
    Performance& perf = *tr.performance;
    const double median_s = perf.median_us * 1e-6;
    const BatchShape shape = batch_shape(plan, median_s);
    const std::size_t calls = shape.calls;
    // The batch's own input sets, drawn here (the parent's secret seeds), enough to keep the
    // batch's L2 cold (engine/parent_clock.h, kColdFootprintL2); never more sets than calls, and
    // what the device holds beside the batch's output slab. The rotation's input sets are
    // redrawn and reused first (a 23 GB TPC-H SF100 lineitem is not held twice). Beside the slab
    // the parent holds one call's outputs more while it counts and judges (parent_clock.cpp's
    // scratch slot): at fused_adamw's 1e9 parameters that is 14 GB, and without it the batch
    // sized itself into an out-of-memory on the H200.
    const std::size_t slab = calls * shape.stride + shape.stride;
    const std::size_t free_b = free_beside_naive(plan) + rot.size() * plan.input_bytes();
    const std::size_t n_sets = std::min(
        calls, batch_input_sets(l2_cache_bytes(), plan.input_bytes(), plan.output_bytes(), free_b > slab ? free_b - slab : 0));
    const std::string key = fmt::format("{}#batch#{}", plan.workload.uuid, ts.target.name);
    std::vector<DeviceSet> ins, expected;
    const std::size_t reused = std::min(n_sets, rot.size());
    for (std::size_t k = 0; k < n_sets; ++k) {
      ins.push_back(k < reused ? std::move(rot.ins[k]) : DeviceSet::allocate(plan.inputs, runner(ts)->memory_kind()));
      generate_inputs_device(plan, round_seed(opt_.secret_seed, key, 5000 + static_cast<int>(k)), ins.back(), stream_.get());
      // Every input set's naive outputs: what every call of the batch on that set must produce.
      expected.push_back(naive_outputs(plan, ins.back()));
    }
    // The rotation gets its sets back, marked unfilled: the batch drew other inputs into them.
    auto give_back = [&] {
      for (std::size_t k = 0; k < reused; ++k) rot.ins[k] = std::move(ins[k]);
      rot.filled.assign(rot.size(), false);
    };
    // Per batch: 10x the expected time, plus 2 s for the request and the graph's launch (a
    // batch that skips calls waits this long, per shape, before it is judged).
    const double expect_s = median_s * static_cast<double>(calls);
    ParentClockResult pc = time_on_parent_clock(*runner(ts), against_naive(plan), ins, expected, median_s,
                                                std::min(opt_.worker.time_timeout_s, 10 * expect_s + 2), stream_.get());
    for (DeviceSet& e : expected) scrub(e);
    give_back();
    if (!pc.call.ok) {
      fail_call(tr, ts, pc.call);
      return false;
    }
    if (pc.violation) {
      fail_with(tr, *pc.violation);
      return false;
    }
    // Without a graph the worker's loop runs the candidate's host code between launches, which
    // the worker's samples hide behind the blocking kernel: back to back such a batch is paced by
    // the host as an interpreter's is, so it is bounded the same way.
    const Track* track = lookup_target_track(ts.target.track);
    TimeVerdict v = bound_time(median_s, pc.timing, host_paced_batch(track && track->host_paced(), pc.graph), perf.max_us * 1e-6);
    const std::string summary = fmt::format("parent_clock: {} calls in {} batches{} over {} input sets in {:.3f} ms "
                                          "({:.3f} ms checking after the clock): {:.2f} us per call, worker median {:.2f} us; time from the {}",
                                          pc.timing.calls, pc.timing.batches, pc.graph ? " (one CUDA graph)" : " (no graph: " + pc.note + ")",
                                          n_sets, pc.timing.batch_s * 1e3, pc.timing.after_clock_s * 1e3,
                                          pc.timing.per_call_s() * 1e6, perf.median_us, v.source);
    if (v.violation) {
      // The worker's own account of its median (what it reports; evidence for a reader, never
      // a reason to trust the median).
      v.violation->message += fmt::format(" [{}; worker timer {}: {} of {} audit samples lost a kernel record, event median {:.2f} us{}]",
                                          summary, perf.timer, perf.audit_incomplete, perf.audit_samples, perf.event_median_us,
                                          perf.timer_note.empty() ? "" : ", " + perf.timer_note.substr(0, 200));
      fail_with(tr, *v.violation);
      return false;
    }
    // The batch's figures go with every time (the evidence of the band, docs/isolation.md).
    perf.timer_note += (perf.timer_note.empty() ? "" : "; ") + summary;
    if (v.source == "parent_draws")
      perf.timer_note += fmt::format(" (the worker's samples reach it: {:.2f} to {:.2f} us over its draws)", perf.min_us, perf.max_us);
    if (v.source != "worker") {
      perf.median_us = v.time_s * 1e6;
      perf.timer = "parent_clock";
    }
    return true;
  }

  /// Phase: the graph column replays flush + call captured together, so launch gaps shrink but
  /// the L2 stays cold (the flush is inside the graph).
  bool graph_column(Trace& tr, TargetState& ts, const WorkloadPlan& plan, Rotation& rot, measure::MeasureOptions go) {
    go.graph = true;
    go.graph_variants = rot.size();
    std::optional<TimedOutcome> g = run_timing(tr, ts, plan, rot, go);
    if (!g) return false;
    // A call that cannot be captured (it synchronises or allocates) just has no graph column.
    if (g->call.ok) tr.performance->graph_median_us = g->perf.median_us;
    else if (g->call.fatal) {
      fail_call(tr, ts, g->call);
      return false;
    } else tr.checks_fired.push_back("graph column: " + g->call.error.substr(0, 200));
    return true;
  }

  /// Phase: speed of light and the physical floor.
  void roofline(Trace& tr, const WorkloadPlan& plan) {
    const double median_s = tr.performance->median_us * 1e-6;
    Roofline rf;
    score::CostInputs cost = score::cost_inputs(plan.flops, plan.bytes, plan.input_bytes(), plan.output_bytes());
    score::SolTime sol = score::sol_time(cost, ceilings_);
    rf.t_sol_us = sol.t_sol_s * 1e6;
    rf.bound = sol.bound;
    rf.memory_model = sol.memory_model;
    rf.pct_sol = score::percent_of_sol(median_s, sol.t_sol_s);
    rf.ceilings_source = ceilings_.source;
    rf.flops = plan.flops;  // the cost and ceilings behind T_SOL, for the report's roofline plot
    rf.bytes = plan.bytes;
    rf.copy_bw = ceilings_.copy_bw;
    for (const auto& [unit, ops] : plan.flops)
      if (ops > 0) rf.peaks[unit] = ceilings_.peak_of(unit);
    tr.roofline = rf;
    score::FloorVerdict floor = score::physical_floor_check(median_s, cost, ceilings_);
    if (floor.below_floor) fail_with(tr, violation("physical_floor", "faster than the physical floor: " + floor.message));
  }

  void time_target(Trace& tr, TargetState& ts, const WorkloadPlan& plan) {
    release_freed(ts);  // the check rounds' sets, before the rotation is sized
    Rotation rot = allocate_rotation(plan, runner(ts)->memory_kind());
    measure::MeasureOptions mo;
    mo.stopping = opt_.stopping;
    std::optional<TimedOutcome> t = run_timing(tr, ts, plan, rot, mo);
    if (!t) return;
    if (!t->call.ok) return fail_call(tr, ts, t->call);
    if (auto v = tripwires(ts, *t)) return fail_with(tr, *v);
    tr.performance = t->perf;
    if (opt_.sample_checks && !bound_by_parent_clock(tr, ts, plan, rot)) return;
    if (opt_.graph && !graph_column(tr, ts, plan, rot, mo)) return;
    roofline(tr, plan);
  }

  const Task& task_;
  EvalOptions opt_;
  Progress progress_;
  RecordDone done_;
  measure::Ceilings ceilings_;
  nlohmann::json environment_;  ///< device, driver, versions, clocks at the start: on early records
  Stream stream_;
  LoadedImpl reference_, naive_;
  std::map<std::pair<std::string, int>, std::pair<std::vector<HostTensor>, std::vector<HostTensor>>> golden_;
  std::set<std::string> dumped_;
  /// Why bench workloads cannot be judged (their outputs are judged against naive's), empty when
  /// they can: no naive build, or naive failed a check workload.
  std::string naive_unusable_;
  std::vector<WorkloadShape> all_shapes_;  ///< for a track's prepare step
};

}  // namespace

std::vector<Trace> evaluate_cuda(const Task& task, const std::vector<ImplTarget>& targets, const ImplTarget& reference,
                                 const std::optional<ImplTarget>& naive, const EvalOptions& opt,
                                 const Progress& progress, const RecordDone& done) {
  // A malformed measurement knob is the operator's error, named before any target runs (not a
  // candidate's RUNTIME_ERROR in the middle of its batch).
  parse_look_schedule(std::getenv(kParentLooksEnv));
  CudaEvaluation ev(task, opt, progress, done);
  auto traces = ev.run(targets, reference, naive);
  nlohmann::json env = environment_json();
  for (auto& t : traces) t.environment = env;
  return traces;
}

namespace {

/// The target's calls on the host (no GPU): host tensors, the host checksum.
class HostCalls final : public TwoCalls {
 public:
  HostCalls(const LoadedImpl& impl, const WorkloadPlan& plan, const std::vector<HostTensor>& ins)
      : impl_(impl), plan_(plan), ins_(ins) {}
  std::uint64_t input_checksum() override { return checksum(ins_); }
  OutputsView outputs(int k) override { return OutputsView(outs[k]); }
  bool call(int k, std::uint8_t poison_byte) override {
    outs[k] = poisoned_outputs(plan_, poison_byte);
    run_host(impl_, plan_, ins_, outs[k]);  // throws on failure: RUNTIME_ERROR
    return true;
  }
  std::vector<HostTensor> outs[2];

 private:
  const LoadedImpl& impl_;
  const WorkloadPlan& plan_;
  const std::vector<HostTensor>& ins_;
};

}  // namespace

std::vector<Trace> evaluate_host(const Task& task, const ImplTarget& target, const std::optional<ImplTarget>& golden,
                                 const EvalOptions& opt, const Progress& progress, const RecordDone& done) {
  std::vector<Trace> out;
  auto finished = [&](Trace tr) {
    if (done) done(tr);
    out.push_back(std::move(tr));
  };
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
      finished(std::move(tr));
      continue;
    }
    try {
      WorkloadPlan plan = make_plan(task, w);
      for (int r = 0; r < opt.check_rounds; ++r) {
        if (progress) progress(fmt::format("{}: host {} round {}/{}", task.def.name, w.uuid, r + 1, opt.check_rounds));
        auto ins = generate_inputs_host(plan, round_seed(opt.secret_seed, w.uuid, r));
        if (r == 0) dump_tensors(opt, task, w, "input", ins);
        std::optional<std::vector<HostTensor>> expected;
        if (golden) {
          expected = poisoned_outputs(plan, kPoisonA);
          run_host(gold, plan, ins, *expected);
        }
        HostCalls calls(impl, plan, ins);
        std::optional<OutputsView> want;
        if (expected) want.emplace(*expected);
        judged_round(tr, plan, calls, want ? &*want : nullptr, golden ? "reference" : "self", r);
        if (r == 0) dump_tensors(opt, task, w, target.name, calls.outs[0]);
        if (tr.status != Status::PASSED) break;
      }
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
    finished(std::move(tr));
  }
  return out;
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
    env["gpu"] = measure::gpu_environment(dev);  // UUID, driver, clocks: times compare only on one GPU
  }
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  env["cuda_runtime"] = runtime;
  env["cuda_driver"] = driver;
  env["d2k_version"] = D2K_VERSION;
  // The corpus's test knobs weaken the checks: a trace made with one on says so, so that it is
  // never read as a verdict.
  nlohmann::json knobs = nlohmann::json::array();
  for (const char* k : {kAllowProtectionChangesEnv, kSkipGotCheckEnv})
    if (const char* v = std::getenv(k); v && std::string_view(v) == "1") knobs.push_back(k);
  if (const char* v = std::getenv(kParentLooksEnv); v && *v) knobs.push_back(fmt::format("{}={}", kParentLooksEnv, v));
  if (!knobs.empty()) {
    env["test_knobs"] = knobs;
    fmt::print(stderr, "warning: test knobs {} are on: the checks they name are weakened; not a verdict\n", knobs.dump());
  }
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env["date"] = buf;
  return env;
}

}  // namespace d2k
