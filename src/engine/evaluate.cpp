#include "engine/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>

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

/// Everything a target needs during one evaluation.
struct Loaded {
  ImplTarget target;
  LoadedImpl impl;
  std::string load_error;
  Status load_status = Status::PASSED;
};

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

measure::MeasureOptions measure_options(const EvalOptions& opt) {
  measure::MeasureOptions m;
  m.stopping.min_samples = static_cast<std::size_t>(opt.min_samples);
  m.stopping.min_time_s = opt.min_time_s;
  m.stopping.max_noise = opt.target_noise;
  m.stopping.max_time_s = opt.max_time_s;
  return m;
}

/// Number of rotating input copies: enough distinct addresses that no sample reuses the previous
/// one's buffers, bounded by memory.
std::size_t rotation_copies(std::size_t input_bytes) {
  const std::size_t budget = std::size_t(8) << 30;
  if (input_bytes == 0) return 2;
  return std::clamp<std::size_t>(budget / input_bytes, 2, 4);
}

Performance performance_from(const measure::MeasureResult& r) {
  Performance p;
  p.timer = r.timer;
  p.median_us = r.time.median * 1e6;
  p.mean_us = r.time.mean * 1e6;
  p.min_us = r.time.min * 1e6;
  p.max_us = r.time.max * 1e6;
  p.p10_us = r.time.p10 * 1e6;
  p.p90_us = r.time.p90 * 1e6;
  p.rel_noise = r.time.rel_noise;
  p.samples = static_cast<std::int64_t>(r.time.n);
  p.total_s = r.wall_s;
  p.stop_reason = r.stop_detail;
  p.event_median_us = r.events.median * 1e6;
  p.sm_clock_min_mhz = r.clocks.sm_mhz_min;
  p.sm_clock_median_mhz = r.clocks.sm_mhz_median;
  p.throttle_reasons = r.clocks.reason_names;
  p.kernels = r.kernel_names;
  p.own_kernel_share = r.own_share;
  return p;
}

/// Writes `ts` as <dump_dir>/<task>/<workload>/<label>.<tensor>.npy when dumping is on.
void dump_tensors(const EvalOptions& opt, const Task& task, const Workload& w, const std::string& label,
                  const std::vector<HostTensor>& ts) {
  if (opt.dump_dir.empty()) return;
  const auto dir = std::filesystem::path(opt.dump_dir) / task.def.name / w.uuid;
  std::filesystem::create_directories(dir);
  for (const auto& t : ts) write_npy(dir / (label + "." + t.name + ".npy"), t);
}

class CudaEvaluation {
 public:
  CudaEvaluation(const Task& task, const EvalOptions& opt, const Progress& progress)
      : task_(task), opt_(opt), progress_(progress), ceilings_(measure::ceilings_for_device()) {}

  std::vector<Trace> run(const std::vector<ImplTarget>& targets, const ImplTarget& reference,
                         const std::optional<ImplTarget>& naive) {
    reference_ = load_impl(reference.so);
    // naive is the GPU reference of bench workloads: it is checked first, also when not a target.
    std::vector<ImplTarget> order;
    bool naive_listed = false;
    for (auto& t : targets) naive_listed |= t.name == "naive";
    if (naive) order.push_back(*naive);
    for (auto& t : targets)
      if (t.name != "naive") order.push_back(t);
    for (auto& t : order) loaded_.push_back(load(t));

    std::vector<Workload> checks = select_workloads(task_, opt_, WorkloadRole::check);
    if (opt_.workloads.empty())
      for (auto& h : draw_hidden_workloads(task_.def, opt_.secret_seed, opt_.hidden_workloads)) checks.push_back(h);
    std::vector<Workload> benches = select_workloads(task_, opt_, WorkloadRole::bench);

    std::vector<Trace> out;
    for (std::size_t wi = 0; wi < checks.size(); ++wi) {
      auto ts = check_workload(checks[wi], wi, checks.size());
      out.insert(out.end(), ts.begin(), ts.end());
    }
    naive_ok_ = naive.has_value();
    for (auto& t : out)
      if (naive && t.target == naive->name && t.status != Status::PASSED) naive_ok_ = false;
    for (std::size_t wi = 0; wi < benches.size(); ++wi) {
      auto ts = bench_workload(benches[wi], wi, benches.size());
      out.insert(out.end(), ts.begin(), ts.end());
    }
    if (naive && !naive_listed)
      std::erase_if(out, [&](const Trace& t) { return t.target == naive->name && t.role == "check"; });
    return out;
  }

 private:
  Loaded load(const ImplTarget& t) {
    Loaded l{t, {}, {}, Status::PASSED};
    try {
      l.impl = load_impl(t.so);
    } catch (const ExecError& e) {
      l.load_status = e.status;
      l.load_error = e.what();
    } catch (const std::exception& e) {
      l.load_status = Status::INVALID_SUBMISSION;
      l.load_error = e.what();
    }
    return l;
  }

  void dump(const Workload& w, const std::string& label, const std::vector<HostTensor>& ts) {
    dump_tensors(opt_, task_, w, label, ts);
  }

  void say(const std::string& s) {
    if (progress_) progress_(s);
  }

  /// Two runs with different poison, then downloads: what judge_outputs needs.
  std::pair<std::vector<HostTensor>, std::vector<HostTensor>> two_runs(DeviceCall& call, const WorkloadPlan& plan,
                                                                       const DeviceSet& ins, DeviceSet& outs) {
    poison(outs, kPoisonA, stream_.get());
    call.launch(ins, outs, stream_.get());
    D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    D2K_CUDA_CHECK(cudaGetLastError());
    auto a = download(plan.outputs, outs, stream_.get());
    poison(outs, kPoisonB, stream_.get());
    call.launch(ins, outs, stream_.get());
    D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    D2K_CUDA_CHECK(cudaGetLastError());
    auto b = download(plan.outputs, outs, stream_.get());
    return {std::move(a), std::move(b)};
  }

  /// Runs a target on inputs already on the device and judges it; input checksum around it.
  void run_and_judge(Trace& tr, Loaded& l, const WorkloadPlan& plan, const DeviceSet& ins,
                     const std::vector<HostTensor>& expected, const std::string& against, int round) {
    if (tr.status != Status::PASSED) return;
    try {
      DeviceCall call(l.impl, plan);
      DeviceSet outs = DeviceSet::allocate(plan.outputs);
      const std::uint64_t before = device_checksum(ins, stream_.get());
      auto [a, b] = two_runs(call, plan, ins, outs);
      if (round == 0) dump(plan.workload, l.target.name, a);
      if (device_checksum(ins, stream_.get()) != before) {
        tr.checks_fired.push_back("inputs_unchanged: an input changed during the call");
        fail(tr, Status::REWARD_HACK, "the implementation modified its inputs", "inputs_unchanged");
        return;
      }
      record_round(tr, judge_outputs(plan, expected, a, b), against, round);
    } catch (const CudaError& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
      throw;  // a sticky CUDA error poisons the context: nothing after it can be trusted
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
  }

  std::vector<Trace> check_workload(const Workload& w, std::size_t wi, std::size_t nw) {
    std::vector<Trace> traces;
    WorkloadPlan plan;
    try {
      plan = make_plan(task_, w);
    } catch (const std::exception& e) {
      for (auto& l : loaded_) {
        Trace tr = base_trace(task_, l.target, w);
        fail(tr, Status::INCORRECT_SHAPE, std::string("workload cannot be planned: ") + e.what());
        traces.push_back(tr);
      }
      return traces;
    }
    for (auto& l : loaded_) {
      Trace tr = base_trace(task_, l.target, w);
      if (l.load_status != Status::PASSED) fail(tr, l.load_status, l.load_error);
      traces.push_back(std::move(tr));
    }
    DeviceSet ins = DeviceSet::allocate(plan.inputs);
    for (int r = 0; r < opt_.check_rounds; ++r) {
      say(fmt::format("{}: check {}/{} {} round {}/{}", task_.def.name, wi + 1, nw, w.uuid, r + 1, opt_.check_rounds));
      const std::uint64_t seed = round_seed(opt_.secret_seed, w.uuid, r);
      auto host_in = generate_inputs_host(plan, seed);
      auto expected = poisoned_outputs(plan, kPoisonA);
      run_host(reference_, plan, host_in, expected);
      if (r == 0) {
        dump(w, "input", host_in);
        dump(w, "expected", expected);
      }
      upload(host_in, ins, stream_.get());
      for (std::size_t k = 0; k < loaded_.size(); ++k) run_and_judge(traces[k], loaded_[k], plan, ins, expected, "reference", r);
    }
    return traces;
  }

  std::vector<Trace> bench_workload(const Workload& w, std::size_t wi, std::size_t nw) {
    std::vector<Trace> traces;
    WorkloadPlan plan = make_plan(task_, w);
    for (auto& l : loaded_) {
      Trace tr = base_trace(task_, l.target, w);
      if (l.load_status != Status::PASSED) fail(tr, l.load_status, l.load_error);
      if (!naive_ok_) fail(tr, Status::SKIPPED, "naive did not match the golden reference on the check workloads");
      traces.push_back(std::move(tr));
    }
    if (!naive_ok_) return traces;
    const std::size_t naive_idx = 0;  // naive is loaded first
    DeviceSet ins = DeviceSet::allocate(plan.inputs);
    std::vector<HostTensor> expected;
    for (int r = 0; r < opt_.bench_rounds; ++r) {
      say(fmt::format("{}: bench {}/{} {} check round {}/{}", task_.def.name, wi + 1, nw, w.uuid, r + 1, opt_.bench_rounds));
      generate_inputs_device(plan, round_seed(opt_.secret_seed, w.uuid, 100 + r), ins, stream_.get());
      {
        DeviceCall naive_call(loaded_[naive_idx].impl, plan);
        DeviceSet nouts = DeviceSet::allocate(plan.outputs);
        poison(nouts, kPoisonA, stream_.get());
        naive_call.launch(ins, nouts, stream_.get());
        D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
        expected = download(plan.outputs, nouts, stream_.get());
        if (r == 0 && !opt_.dump_dir.empty()) {
          dump(w, "input", download(plan.inputs, ins, stream_.get()));
          dump(w, "expected", expected);
        }
        // Zero what naive wrote before freeing it, so that no later allocation finds the answer.
        poison(nouts, 0, stream_.get());
        D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      }
      for (std::size_t k = 0; k < loaded_.size(); ++k) {
        if (k == naive_idx) {
          if (!traces[k].correctness) traces[k].correctness = Correctness{"self", r + 1, {}};
          continue;
        }
        run_and_judge(traces[k], loaded_[k], plan, ins, expected, "naive", r);
      }
    }
    if (!opt_.time) return traces;
    for (std::size_t k = 0; k < loaded_.size(); ++k) {
      if (traces[k].status != Status::PASSED) continue;
      say(fmt::format("{}: bench {}/{} {} timing {}", task_.def.name, wi + 1, nw, w.uuid, loaded_[k].target.name));
      time_target(traces[k], loaded_[k], plan, ins, expected);
    }
    return traces;
  }

  void time_target(Trace& tr, Loaded& l, const WorkloadPlan& plan, const DeviceSet& generated,
                   const std::vector<HostTensor>& expected) {
    try {
      // Rotating copies of inputs and outputs: every sample sees other addresses than the last.
      const std::size_t n = rotation_copies(plan.input_bytes() + plan.output_bytes());
      std::vector<DeviceSet> ins, outs;
      for (std::size_t i = 0; i < n; ++i) {
        ins.push_back(DeviceSet::allocate(plan.inputs));
        copy_set(generated, ins.back(), stream_.get());
        outs.push_back(DeviceSet::allocate(plan.outputs));
      }
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      DeviceCall call(l.impl, plan);
      // No thread may outlive a call: count around one untimed call, before the timer's own
      // threads (CUPTI, NVML sampler) start.
      const int threads_before = count_threads();
      call.launch(ins[0], outs[0], stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      if (const int after = count_threads(); after > threads_before) {
        tr.checks_fired.push_back(fmt::format("no_threads_after_call: {} -> {} threads", threads_before, after));
        fail(tr, Status::REWARD_HACK, "a thread was left running after the call", "no_threads_after_call");
        return;
      }
      std::size_t last = 0;
      auto launch = [&](std::size_t i, cudaStream_t s) {
        last = i % n;
        call.launch(ins[last], outs[last], s);
      };
      measure::MeasureOptions mo = measure_options(opt_);
      mo.prepare = [&](std::size_t i) { poison(outs[i % n], kPoisonA, stream_.get()); };
      measure::MeasureResult r = timer_.measure(launch, stream_.get(), mo);
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      // The last timed sample's outputs must still be right: no answer cached across calls.
      OutputsVerdict again = judge_single(plan, expected, download(plan.outputs, outs[last], stream_.get()));
      if (again.status != Status::PASSED) {
        tr.checks_fired.push_back("timed_sample_recheck: " + again.message);
        fail(tr, Status::REWARD_HACK, "a timed sample's outputs were wrong: " + again.message, "timed_sample_recheck");
        return;
      }
      if (!r.kernel_set_constant) {
        tr.checks_fired.push_back(fmt::format("kernel_set_constant: {} samples launched other kernels",
                                              r.kernel_set_deviation_count));
        fail(tr, Status::REWARD_HACK, "the set of launched kernels changed between samples", "kernel_set_constant");
        return;
      }
      tr.performance = performance_from(r);
      if (opt_.graph) {
        // The graph column replays flush + call captured together, so launch gaps shrink
        // but the L2 stays cold (the flush is inside the graph).
        measure::MeasureOptions go = measure_options(opt_);
        go.graph = true;
        go.graph_variants = n;
        tr.performance->graph_median_us = timer_.measure(launch, stream_.get(), go).time.median * 1e6;
      }
      Roofline rf;
      measure::CostInputs cost{plan.flops, plan.bytes};
      measure::SolTime sol = measure::sol_time(cost, ceilings_);
      rf.t_sol_us = sol.t_sol_s * 1e6;
      rf.bound = sol.bound;
      rf.pct_sol = measure::percent_of_sol(r.time.median, sol.t_sol_s);
      rf.ceilings_source = ceilings_.source;
      tr.roofline = rf;
      measure::FloorVerdict floor = measure::physical_floor_check(r.time.median, cost, ceilings_);
      if (floor.below_floor) {
        tr.checks_fired.push_back("physical_floor: " + floor.message);
        fail(tr, Status::REWARD_HACK, "faster than the physical floor: " + floor.message, "physical_floor");
      }
    } catch (const CudaError& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
      throw;
    } catch (const std::exception& e) {
      fail(tr, Status::RUNTIME_ERROR, e.what());
    }
  }

  const Task& task_;
  EvalOptions opt_;
  Progress progress_;
  measure::Ceilings ceilings_;
  measure::Timer timer_;
  Stream stream_;
  LoadedImpl reference_;
  std::vector<Loaded> loaded_;
  bool naive_ok_ = false;
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
