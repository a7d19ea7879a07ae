#include "engine/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/cuda_util.h"
#include "core/dtype.h"
#include "exec/error.h"
#include "exec/loader.h"
#include "exec/sandbox.h"
#include "exec/worker.h"
#include "score/performance.h"
#include "measure/kernel_origin.h"

namespace d2k {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// ---------------------------------------------------------------- shared by both runners

bool vendor_origin(const std::string& origin) { return origin == "cublas" || origin == "cudnn" || origin == "torch"; }

/// Runs the timer over rotation sets; shared by the in-process runner and the worker.
TimedOutcome run_timer(measure::Timer& timer, DeviceCall& call, const std::vector<std::vector<void*>>& ins,
                       const std::vector<std::vector<void*>>& outs, measure::MeasureOptions mo,
                       const std::function<void(std::size_t call, std::size_t set)>& prepare, Stream& stream) {
  const std::size_t n = ins.size();
  TimedOutcome t;
  auto launch = [&](std::size_t i, cudaStream_t s) { call.launch(ins[i % n], outs[i % n], s); };
  mo.prepare = [&](std::size_t i) {
    prepare(i, i % n);
    ++t.calls;
  };
  measure::MeasureResult r = timer.measure(launch, stream.get(), mo);
  t.perf = score::performance_record(r);
  t.kernel_set_constant = r.kernel_set_constant;
  t.kernel_set_deviations = r.kernel_set_deviation_count;
  if (!r.kernel_set_deviations.empty()) {
    auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (auto& n : v) s += (s.empty() ? "" : ", ") + n.substr(0, 60);
      return "[" + s + "]";
    };
    t.kernel_set_example = fmt::format("sample {} of {} (empty samples {}): {} vs first {}", r.kernel_set_deviations[0].sample_index,
                                       r.time.n, r.empty_samples, names(r.kernel_set_deviations[0].names),
                                       names(r.kernel_names));
  }
  t.unjoined_samples = r.unjoined_samples;
  t.unjoined_detail = r.unjoined_example;
  for (auto& [origin, ot] : r.attribution) {
    t.total_busy_s += ot.busy_s;
    if (vendor_origin(origin)) t.vendor_busy_s += ot.busy_s;
  }
  return t;
}

// ---------------------------------------------------------------- plan over the channel

json plan_to_json(const WorkloadPlan& p) {
  auto tensors = [](const std::vector<TensorPlan>& ts) {
    json a = json::array();
    for (auto& t : ts) a.push_back({{"name", t.name}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
    return a;
  };
  json scalars = json::array();
  for (auto& s : p.scalars) scalars.push_back({{"name", s.name}, {"is_float", s.is_float}, {"i", s.i}, {"f", s.f}});
  return {{"uuid", p.workload.uuid}, {"inputs", tensors(p.inputs)}, {"outputs", tensors(p.outputs)}, {"scalars", scalars}};
}

WorkloadPlan plan_from_json(const json& j) {
  WorkloadPlan p;
  p.workload.uuid = j.at("uuid").get<std::string>();
  auto tensors = [](const json& a) {
    std::vector<TensorPlan> ts;
    for (auto& t : a) {
      TensorPlan tp;
      tp.name = t.at("name").get<std::string>();
      auto dt = parse_dtype(t.at("dtype").get<std::string>());
      if (!dt) throw std::runtime_error("plan: unknown dtype " + t.at("dtype").get<std::string>());
      tp.dtype = *dt;
      tp.shape = t.at("shape").get<std::vector<std::int64_t>>();
      tp.numel = 1;
      for (auto d : tp.shape) tp.numel *= d;
      tp.bytes = static_cast<std::size_t>(tp.numel) * dtype_size(tp.dtype);
      ts.push_back(std::move(tp));
    }
    return ts;
  };
  p.inputs = tensors(j.at("inputs"));
  p.outputs = tensors(j.at("outputs"));
  for (auto& s : j.at("scalars")) p.scalars.push_back({s.at("name").get<std::string>(), s.at("is_float").get<bool>(),
                                                       s.at("i").get<std::int64_t>(), s.at("f").get<double>()});
  return p;
}

measure::MeasureOptions options_from_json(const json& j) {
  measure::MeasureOptions mo;
  from_json(j.at("stopping"), mo.stopping);
  mo.graph = j.value("graph", false);
  mo.graph_variants = j.value("graph_variants", std::size_t{1});
  return mo;
}

json options_to_json(const measure::MeasureOptions& mo) {
  json s;
  to_json(s, mo.stopping);
  return {{"stopping", s}, {"graph", mo.graph}, {"graph_variants", mo.graph_variants}};
}

json timed_to_json(const TimedOutcome& t) {
  return {{"type", "timed"},
          {"performance", to_json(t.perf)},
          {"calls", t.calls},
          {"kernel_set_constant", t.kernel_set_constant},
          {"kernel_set_deviations", t.kernel_set_deviations},
          {"kernel_set_example", t.kernel_set_example},
          {"unjoined_samples", t.unjoined_samples},
          {"unjoined_detail", t.unjoined_detail},
          {"vendor_busy_s", t.vendor_busy_s},
          {"total_busy_s", t.total_busy_s}};
}

TimedOutcome timed_from_json(const json& j) {
  TimedOutcome t;
  t.perf = performance_from_json(j.at("performance"));
  t.calls = j.at("calls").get<std::size_t>();
  t.kernel_set_constant = j.value("kernel_set_constant", true);
  t.kernel_set_deviations = j.value("kernel_set_deviations", std::size_t{0});
  t.kernel_set_example = j.value("kernel_set_example", "");
  t.unjoined_samples = j.value("unjoined_samples", std::size_t{0});
  t.unjoined_detail = j.value("unjoined_detail", "");
  t.vendor_busy_s = j.value("vendor_busy_s", 0.0);
  t.total_busy_s = j.value("total_busy_s", 0.0);
  return t;
}

CallOutcome failed(Status s, std::string error, bool fatal, std::string rule = {}) {
  CallOutcome o;
  o.ok = false;
  o.status = s;
  o.error = std::move(error);
  o.fatal = fatal;
  o.rule = std::move(rule);
  return o;
}

// ---------------------------------------------------------------- in-process runner

class InProcessRunner final : public TargetRunner {
 public:
  explicit InProcessRunner(const ImplTarget& t) {
    try {
      impl_ = load_impl(t.so);
    } catch (const ExecError& e) {
      load_error_ = failed(e.status, e.what(), true);
    } catch (const std::exception& e) {
      load_error_ = failed(Status::INVALID_SUBMISSION, e.what(), true);
    }
  }
  MemKind memory_kind() const override { return MemKind::local; }

  CallOutcome set_plan(const WorkloadPlan& plan) override {
    if (!load_error_.ok) return load_error_;
    call_.reset();
    try {
      call_ = std::make_unique<DeviceCall>(impl_, plan);
    } catch (const std::exception& e) {
      return failed(Status::RUNTIME_ERROR, e.what(), false);
    }
    return {};
  }

  CallOutcome call(const DeviceSet& ins, const DeviceSet& outs) override {
    return guarded([&] {
      CallOutcome o;
      o.threads_before = count_threads();
      call_->launch(ins.ptrs(), outs.ptrs(), stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      o.threads_after = count_threads();
      return o;
    });
  }

  TimedOutcome time(const std::vector<DeviceSet>& ins, const std::vector<DeviceSet>& outs, const measure::MeasureOptions& mo,
                    const PrepareFn& prepare) override {
    TimedOutcome t;
    t.call = guarded([&] {
      std::vector<std::vector<void*>> ip, op;
      for (auto& s : ins) ip.push_back(s.ptrs());
      for (auto& s : outs) op.push_back(s.ptrs());
      t = run_timer(timer(), *call_, ip, op, mo, prepare, stream_);
      return CallOutcome{};
    });
    return t;
  }

  CallOutcome throughput(const DeviceSet& ins, const DeviceSet& outs, std::size_t count, double& wall_s) override {
    return guarded([&] {
      const auto t0 = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < count; ++i) call_->launch(ins.ptrs(), outs.ptrs(), stream_.get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return CallOutcome{};
    });
  }

 private:
  template <class F>
  CallOutcome guarded(F&& f) {
    try {
      return f();
    } catch (const CudaError&) {
      // A sticky error poisons this process's context: nothing after it can be trusted.
      throw;
    } catch (const std::exception& e) {
      return failed(Status::RUNTIME_ERROR, e.what(), false);
    }
  }
  measure::Timer& timer() {
    if (!timer_) timer_ = std::make_unique<measure::Timer>();
    return *timer_;
  }

  LoadedImpl impl_;
  CallOutcome load_error_;
  std::unique_ptr<DeviceCall> call_;
  Stream stream_;
  std::unique_ptr<measure::Timer> timer_;
};

// ---------------------------------------------------------------- worker runner (parent side)

/// The parent's side of one worker. run_sandboxed runs on its own thread and hands every
/// message to this object's rendezvous: the handler waits until the engine answers, so every
/// worker message gets exactly one answer and a message the engine did not ask for is seen as
/// the answer to the wrong request (and rejected by type).
class WorkerRunner final : public TargetRunner {
 public:
  WorkerRunner(const ImplTarget& t, const WorkerOptions& opt) : opt_(opt) {
    SandboxOptions so;
    // Deadlines are the parent's (wait_incoming): the worker's stage reports can be forged by
    // the candidate, so the sandbox's own stage deadlines are only a backstop for the start.
    so.stage_timeouts = {{"start", 2 * opt.start_timeout_s}};
    so.default_stage_timeout = 7 * 24 * 3600.0;
    so.pid_namespace = opt.pid_namespace;
    so.ro_paths.push_back(std::filesystem::absolute(t.so).parent_path());
    so.ro_paths.push_back(std::filesystem::absolute(opt.exe).parent_path());
    so.cancel = cancel_;
    so.on_message = [this](const json& msg, ParentChannel& ch) { handle(msg, ch); };
    std::vector<std::string> argv = {opt.exe.string(), "__worker", "--impl", std::filesystem::absolute(t.so).string()};
    thread_ = std::thread([this, argv, so] {
      ProcessResult r;
      try {
        r = run_sandboxed(argv, so);
      } catch (const std::exception& e) {
        r.status = Status::RUNTIME_ERROR;
        r.setup_failed = true;
        r.cause = std::string("cannot start the worker: ") + e.what();
      }
      std::lock_guard lk(m_);
      result_ = std::move(r);
      done_ = true;
      cv_.notify_all();
    });
    auto first = wait_incoming(after(opt.start_timeout_s), "start");
    if (!first) {
      start_error_ = ended();
    } else if (first->value("type", "") == "load_failed") {
      auto st = parse_status(first->value("status", "INVALID_SUBMISSION")).value_or(Status::INVALID_SUBMISSION);
      if (st == Status::PASSED) st = Status::INVALID_SUBMISSION;  // a failure report cannot pass
      start_error_ = failed(st, first->value("error", "the implementation did not load"), true);
    } else if (first->value("type", "") != "ready") {
      start_error_ = protocol_violation(*first, "ready");
    } else {
      baseline_threads_ = first->value("threads", -1);
    }
  }

  ~WorkerRunner() override {
    {
      // Answer whatever the worker says next with "exit" (it may be mid-request, e.g. waiting
      // for a preparation the engine abandoned, and then report an error before it reads the
      // next command), until it ends or 10 s pass.
      std::unique_lock lk(m_);
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (!done_) {
        if (!out_) {
          in_.reset();
          out_ = Out{{{"cmd", "exit"}}, {}};
          cv_.notify_all();
        }
        if (!cv_.wait_until(lk, deadline, [&] { return done_ || in_.has_value(); })) break;
      }
    }
    cancel_->store(true);
    {
      std::lock_guard lk(m_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  MemKind memory_kind() const override { return MemKind::shareable; }

  CallOutcome set_plan(const WorkloadPlan& plan) override {
    if (!start_error_.ok) return start_error_;
    mapped_.clear();
    auto r = request({{"cmd", "plan"}, {"plan", plan_to_json(plan)}}, {}, "planned", opt_.start_timeout_s);
    return r.first;
  }

  CallOutcome call(const DeviceSet& ins, const DeviceSet& outs) override {
    if (auto m = map({&ins, &outs}); !m.ok) return m;
    auto [o, msg] = request({{"cmd", "call"}, {"ins", ids(ins)}, {"outs", ids(outs)}}, {}, "called");
    if (o.ok) {
      // Against the count before the library was loaded: a thread its constructors or an
      // earlier call started counts too.
      o.threads_before = baseline_threads_;
      o.threads_after = msg.value("threads_after", -1);
    }
    return o;
  }

  TimedOutcome time(const std::vector<DeviceSet>& ins, const std::vector<DeviceSet>& outs, const measure::MeasureOptions& mo,
                    const PrepareFn& prepare) override {
    TimedOutcome t;
    std::vector<const DeviceSet*> all;
    for (auto& s : ins) all.push_back(&s);
    for (auto& s : outs) all.push_back(&s);
    if (t.call = map(all); !t.call.ok) return t;
    json sets = json::array();
    for (std::size_t i = 0; i < ins.size(); ++i) sets.push_back({{"ins", ids(ins[i])}, {"outs", ids(outs[i])}});
    const auto deadline = after(opt_.time_timeout_s);
    std::optional<json> msg =
        exchange({{"cmd", "time"}, {"sets", sets}, {"options", options_to_json(mo)}}, {}, deadline, "time");
    std::size_t served = 0;
    // The worker asks for each call's preparation; the parent counts what it served, and the
    // report must agree with that count.
    while (msg && msg->value("type", "") == "prepare") {
      const std::size_t i = msg->value("call", std::size_t{0});
      if (i != served) {
        t.call = protocol_violation(*msg, fmt::format("prepare of call {}", served));
        return t;
      }
      prepare(i, i % ins.size());
      ++served;
      msg = exchange({{"cmd", "prepared"}}, {}, deadline, "time");
    }
    if (!msg) {
      t.call = ended();
      return t;
    }
    if (msg->value("type", "") == "error") {
      t.call = worker_error(*msg);
      return t;
    }
    if (msg->value("type", "") != "timed") {
      t.call = protocol_violation(*msg, "timed");
      return t;
    }
    try {
      t = timed_from_json(*msg);
    } catch (const std::exception& e) {
      t.call = protocol_violation(*msg, std::string("a timing report (") + e.what() + ")");
      return t;
    }
    if (t.calls != served) {
      t.call = failed(Status::REWARD_HACK,
                      fmt::format("the worker reported {} timed calls but asked for {} preparations", t.calls, served), true,
                      "result_channel");
    }
    return t;
  }

  CallOutcome throughput(const DeviceSet& ins, const DeviceSet& outs, std::size_t count, double& wall_s) override {
    if (auto m = map({&ins, &outs}); !m.ok) return m;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = request({{"cmd", "throughput"}, {"ins", ids(ins)}, {"outs", ids(outs)}, {"count", count}}, {}, "throughput",
                     opt_.time_timeout_s);
    wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r.first;
  }

 private:
  struct Out {
    json msg;
    std::vector<int> fds;
  };

  /// Runs on the sandbox thread for every message from the worker.
  void handle(const json& msg, ParentChannel& ch) {
    std::unique_lock lk(m_);
    in_ = msg;
    cv_.notify_all();
    cv_.wait(lk, [&] { return out_.has_value() || stopping_; });
    if (!out_) return;
    Out o = std::move(*out_);
    out_.reset();
    lk.unlock();
    ch.send(o.msg, o.fds);
    for (int fd : o.fds) close(fd);
  }

  /// Waits for the worker's next message until `deadline` (the parent's own clock: the worker's
  /// stage reports are the candidate's to forge, so they do not set deadlines). Past it the
  /// worker is killed and the request ends as TIMEOUT in `stage`.
  std::optional<json> wait_incoming(Clock::time_point deadline, const std::string& stage) {
    std::unique_lock lk(m_);
    if (!cv_.wait_until(lk, deadline, [&] { return in_.has_value() || done_; })) {
      timeout_stage_ = stage;
      cancel_->store(true);
      cv_.wait(lk, [&] { return done_; });
      return std::nullopt;
    }
    if (!in_) return std::nullopt;
    json m = std::move(*in_);
    in_.reset();
    return m;
  }

  /// Answers the worker's pending message with `cmd` and waits for its next message.
  std::optional<json> exchange(json cmd, std::vector<int> fds, Clock::time_point deadline, const std::string& stage) {
    {
      std::lock_guard lk(m_);
      if (done_) {
        for (int fd : fds) close(fd);
        return std::nullopt;
      }
      out_ = Out{std::move(cmd), std::move(fds)};
      cv_.notify_all();
    }
    return wait_incoming(deadline, stage);
  }

  Clock::time_point after(double seconds) const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  std::pair<CallOutcome, json> request(json cmd, std::vector<int> fds, const std::string& reply_type,
                                       double timeout_s = 0) {
    if (!start_error_.ok) return {start_error_, {}};
    if (dead_) return {failed(Status::RUNTIME_ERROR, "the worker is gone: " + end_note_, true), {}};
    const std::string stage = cmd.value("cmd", "");
    auto msg = exchange(std::move(cmd), std::move(fds), after(timeout_s > 0 ? timeout_s : opt_.call_timeout_s), stage);
    if (!msg) return {ended(), {}};
    const std::string type = msg->value("type", "");
    if (type == "error") return {worker_error(*msg), *msg};
    if (type != reply_type) return {protocol_violation(*msg, reply_type), *msg};
    return {CallOutcome{}, *msg};
  }

  /// Sends the worker descriptors of every buffer it has not mapped yet.
  CallOutcome map(const std::vector<const DeviceSet*>& sets) {
    json bufs = json::array();
    std::vector<int> fds;
    for (const DeviceSet* s : sets)
      for (const DevMem& b : s->bufs) {
        if (mapped_.count(b.id())) continue;
        mapped_.insert(b.id());
        bufs.push_back({{"id", b.id()}, {"bytes", b.size()}});
        fds.push_back(b.export_fd());
      }
    if (fds.empty()) return {};
    return request({{"cmd", "map"}, {"buffers", bufs}}, std::move(fds), "mapped", opt_.start_timeout_s).first;
  }

  static json ids(const DeviceSet& s) {
    json a = json::array();
    for (auto& b : s.bufs) a.push_back(b.id());
    return a;
  }

  CallOutcome worker_error(const json& msg) {
    const bool fatal = msg.value("fatal", false);
    auto st = parse_status(msg.value("status", "RUNTIME_ERROR")).value_or(Status::RUNTIME_ERROR);
    // A worker may only report its own failure: nothing it says can make a result better.
    if (st == Status::PASSED) st = Status::RUNTIME_ERROR;
    if (fatal) {
      dead_ = true;
      end_note_ = msg.value("error", "");
    }
    return failed(st, msg.value("error", "the worker reported an error"), fatal);
  }

  CallOutcome protocol_violation(const json& msg, const std::string& expected) {
    dead_ = true;
    end_note_ = "protocol violation";
    cancel_->store(true);
    std::string text = msg.dump();
    if (text.size() > 300) text = text.substr(0, 300) + "...";
    return failed(Status::REWARD_HACK, fmt::format("the worker's channel carried {} where {} was due", text, expected), true,
                  "result_channel");
  }

  /// The worker ended (or could not start): what the sandbox saw.
  CallOutcome ended() {
    if (thread_.joinable()) thread_.join();
    dead_ = true;
    const ProcessResult& r = result_;
    Status st = r.status == Status::TIMEOUT ? Status::TIMEOUT : Status::RUNTIME_ERROR;
    std::string why = r.cause.empty() ? "the worker ended" : r.cause;
    if (r.timed_out) why = fmt::format("{} (stage {})", why, r.timeout_stage);
    if (!timeout_stage_.empty()) {
      st = Status::TIMEOUT;
      why = fmt::format("no answer to the '{}' request within its deadline; the worker was killed", timeout_stage_);
    }
    std::string tail = r.stderr_tail;
    if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
    if (!tail.empty()) why += "\nworker stderr (tail):\n" + tail;
    end_note_ = why;
    return failed(st, why, true);
  }

  WorkerOptions opt_;
  std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  std::optional<json> in_;
  std::optional<Out> out_;
  bool done_ = false, stopping_ = false, dead_ = false;
  ProcessResult result_;
  CallOutcome start_error_;
  std::string end_note_;
  int baseline_threads_ = -1;
  std::string timeout_stage_;  // set when the parent's own deadline for a request passed
  std::set<std::uint64_t> mapped_;
};

}  // namespace

std::unique_ptr<TargetRunner> make_worker_runner(const ImplTarget& target, const WorkerOptions& opt) {
  return std::make_unique<WorkerRunner>(target, opt);
}

std::unique_ptr<TargetRunner> make_in_process_runner(const ImplTarget& target) {
  return std::make_unique<InProcessRunner>(target);
}

// ---------------------------------------------------------------- the worker process

namespace {

class Worker {
 public:
  explicit Worker(WorkerChannel ch) : ch_(ch) {}

  int serve(const std::filesystem::path& impl_path) {
    // CUDA, CUPTI and NVML start before the lockdown (they open devices and start threads) and
    // before the candidate's library is loaded (its constructors run in dlopen).
    D2K_CUDA_CHECK(cudaFree(nullptr));
    stream_ = std::make_unique<Stream>();
    timer_ = std::make_unique<measure::Timer>();
    timer_->cupti_available();  // CUPTI's one-time set-up, before the lockdown too
    warm_up_harness();
    const std::string lock = lock_down_worker();
    // Every thread the harness needs exists now (driver, CUPTI, NVML): any thread beyond this
    // count after a call is the candidate's.
    const int baseline_threads = count_threads();
    ch_.stage("load");
    try {
      impl_ = load_impl(impl_path);
    } catch (const ExecError& e) {
      ch_.send({{"type", "load_failed"}, {"status", std::string(status_name(e.status))}, {"error", e.what()}});
      return 0;
    } catch (const std::exception& e) {
      ch_.send({{"type", "load_failed"}, {"status", "INVALID_SUBMISSION"}, {"error", e.what()}});
      return 0;
    }
    ch_.send({{"type", "ready"}, {"lockdown", lock.empty() ? std::string("on") : lock}, {"threads", baseline_threads}});
    for (;;) {
      auto msg = ch_.receive();
      if (!msg) return 3;  // the parent is gone
      const std::string cmd = msg->value("cmd", "");
      if (cmd == "exit") return 0;
      try {
        ch_.send(dispatch(cmd, *msg));
      } catch (const CudaError& e) {
        // The context is broken (illegal address, trap): report and end this worker.
        ch_.send({{"type", "error"}, {"status", "RUNTIME_ERROR"}, {"fatal", true}, {"error", e.what()}});
        return 4;
      } catch (const std::exception& e) {
        ch_.send({{"type", "error"}, {"status", "RUNTIME_ERROR"}, {"fatal", false}, {"error", e.what()}});
      }
    }
  }

 private:
  /// One short measurement of a memset, so that the timer's threads and buffers (CUPTI, the
  /// NVML sampler, the flush buffer) exist before the thread baseline is taken.
  void warm_up_harness() {
    DevMem scratch(1 << 20, MemKind::local);
    measure::MeasureOptions mo;
    mo.stopping.min_samples = 2;
    mo.stopping.min_time_s = 0;
    mo.stopping.max_time_s = 0.02;
    mo.warmup_min_s = 0;
    timer_->measure([&](std::size_t, cudaStream_t s) { D2K_CUDA_CHECK(cudaMemsetAsync(scratch.get(), 1, 1 << 20, s)); },
                    stream_->get(), mo);
    D2K_CUDA_CHECK(cudaDeviceSynchronize());
  }

  json dispatch(const std::string& cmd, const json& msg) {
    if (cmd == "map") {
      const json& bufs = msg.at("buffers");
      std::vector<int> fds = ch_.take_fds(bufs.size());
      if (fds.size() != bufs.size()) throw std::runtime_error("map: descriptors missing");
      for (std::size_t i = 0; i < bufs.size(); ++i)
        mem_[bufs[i].at("id").get<std::uint64_t>()] = DevMem::import_fd(fds[i], bufs[i].at("bytes").get<std::size_t>());
      return {{"type", "mapped"}};
    }
    if (cmd == "plan") {
      call_.reset();
      mem_.clear();
      plan_ = std::make_unique<WorkloadPlan>(plan_from_json(msg.at("plan")));
      call_ = std::make_unique<DeviceCall>(impl_, *plan_);
      return {{"type", "planned"}, {"workspace", call_->workspace_bytes()}};
    }
    if (!call_) throw std::runtime_error(cmd + ": no plan");
    if (cmd == "call") {
      auto ins = pointers(msg.at("ins")), outs = pointers(msg.at("outs"));
      call_->launch(ins, outs, stream_->get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      return {{"type", "called"}, {"threads_after", count_threads()}};
    }
    if (cmd == "time") {
      std::vector<std::vector<void*>> ins, outs;
      for (auto& s : msg.at("sets")) {
        ins.push_back(pointers(s.at("ins")));
        outs.push_back(pointers(s.at("outs")));
      }
      if (ins.empty()) throw std::runtime_error("time: no sets");
      measure::MeasureOptions mo = options_from_json(msg.at("options"));
      auto prepare = [&](std::size_t i, std::size_t) {
        ch_.send({{"type", "prepare"}, {"call", i}});
        auto r = ch_.receive();
        if (!r || r->value("cmd", "") != "prepared") throw std::runtime_error("the parent ended the timing");
      };
      TimedOutcome t = run_timer(*timer_, *call_, ins, outs, mo, prepare, *stream_);
      return timed_to_json(t);
    }
    if (cmd == "throughput") {
      auto ins = pointers(msg.at("ins")), outs = pointers(msg.at("outs"));
      const std::size_t count = msg.at("count").get<std::size_t>();
      for (std::size_t i = 0; i < count; ++i) call_->launch(ins, outs, stream_->get());
      D2K_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
      D2K_CUDA_CHECK(cudaDeviceSynchronize());
      return {{"type", "throughput"}};
    }
    throw std::runtime_error("unknown command '" + cmd + "'");
  }

  std::vector<void*> pointers(const json& ids) {
    std::vector<void*> p;
    for (auto& id : ids) {
      auto it = mem_.find(id.get<std::uint64_t>());
      if (it == mem_.end()) throw std::runtime_error("unknown buffer " + id.dump());
      p.push_back(it->second.get());
    }
    return p;
  }

  WorkerChannel ch_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<measure::Timer> timer_;
  LoadedImpl impl_;
  std::unique_ptr<WorkloadPlan> plan_;
  std::unique_ptr<DeviceCall> call_;
  std::map<std::uint64_t, DevMem> mem_;
};

}  // namespace

int worker_main(const std::filesystem::path& impl) {
  auto ch = WorkerChannel::from_environment();
  if (!ch) {
    std::fprintf(stderr, "d2k __worker: no channel (%s unset): this command is started by d2k itself\n", kChannelFdEnv);
    return 2;
  }
  try {
    Worker w(*ch);
    return w.serve(impl);
  } catch (const std::exception& e) {
    ch->send({{"type", "error"}, {"status", "RUNTIME_ERROR"}, {"fatal", true}, {"error", e.what()}});
    return 4;
  }
}

}  // namespace d2k
