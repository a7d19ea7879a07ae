// The parent's side of a sandboxed worker process: starts it (run_sandboxed on its own thread),
// hands it buffer descriptors and requests over the channel (wire.h), and bounds every answer
// with its own deadlines and counts.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "engine/rules.h"
#include "engine/runner.h"
#include "engine/timed_run.h"
#include "engine/wire.h"
#include "engine/worker_process.h"
#include "exec/sandbox.h"
#include "tracks/track.h"

namespace d2k {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

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
    // Test knob of the exploit corpus (scripts/gpu/checks/trust.sh): lets the checks behind the
    // lockdown be shown. Set by whoever starts d2k; the candidate runs only after the worker read it.
    if (const char* k = std::getenv(kAllowProtectionChangesEnv); k && std::string_view(k) == "1")
      so.env[kAllowProtectionChangesEnv] = "1";
    so.ro_paths.push_back(std::filesystem::absolute(t.so).parent_path());
    so.ro_paths.push_back(std::filesystem::absolute(opt.exe).parent_path());
    find_track(t.track).configure_worker(so);
    so.cancel = cancel_;
    so.on_message = [this](const json& msg, ParentChannel& ch) { handle(msg, ch); };
    so.on_start = [this](pid_t pid) { group_ = pid; };
    std::vector<std::string> argv = {opt.exe.string(), "__worker", "--impl", std::filesystem::absolute(t.so).string(),
                                     "--track", t.track};
    if (!opt.shapes.empty()) argv.insert(argv.end(), {"--shapes", shapes_to_json(opt.shapes).dump()});
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
    auto first = start_handshake(after(opt.start_timeout_s));
    if (!first) {
      start_error_ = ended();
    } else if (first->value("type", "") == wire::reply::load_failed) {
      auto st = parse_status(first->value("status", "INVALID_SUBMISSION")).value_or(Status::INVALID_SUBMISSION);
      if (st == Status::PASSED) st = Status::INVALID_SUBMISSION;  // a failure report cannot pass
      start_error_ = failed(st, first->value("error", "the implementation did not load"), true);
    } else if (first->value("type", "") != wire::reply::ready) {
      start_error_ = protocol_violation(*first, wire::reply::ready);
    } else {
      relro_hash_ = first->value("relro_hash", std::uint64_t{0});
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
          out_ = Out{{{"cmd", wire::cmd::exit}}, {}};
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
    auto r = request({{"cmd", wire::cmd::plan}, {"plan", wire::plan_to_json(plan)}}, {}, wire::reply::planned, opt_.start_timeout_s);
    return r.first;
  }

  CallOutcome call(const DeviceSet& ins, const DeviceSet& outs) override {
    if (auto m = map({&ins, &outs}); !m.ok) return m;
    auto [o, msg] = request({{"cmd", wire::cmd::call}, {"ins", ids(ins)}, {"outs", ids(outs)}}, {}, wire::reply::called);
    if (o.ok) {
      // Against the count before the library was loaded: a thread its constructors or an
      // earlier call started counts too.
      bound_thread_counts(o, msg.value("threads_after", -1));
      if (auto v = skip_got_check_ ? std::nullopt : check_got(relro_hash_, msg.value("relro_hash", std::uint64_t{0}))) {
        dead_ = true;
        end_note_ = v->message;
        return failed(v->status, v->message, true, v->rule);
      }
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
        exchange({{"cmd", wire::cmd::time}, {"sets", sets}, {"options", wire::options_to_json(mo)}}, {}, deadline, "time");
    std::size_t served = 0;
    // The worker asks for each call's preparation; the parent counts what it served, and the
    // report must agree with that count.
    while (msg && msg->value("type", "") == wire::reply::prepare) {
      const std::size_t i = msg->value("call", std::size_t{0});
      if (i != served) {
        t.call = protocol_violation(*msg, fmt::format("prepare of call {}", served));
        return t;
      }
      prepare(i, i % ins.size());
      ++served;
      msg = exchange({{"cmd", wire::cmd::prepared}}, {}, deadline, "time");
    }
    if (!msg) {
      t.call = ended();
      return t;
    }
    if (msg->value("type", "") == wire::reply::error) {
      t.call = worker_error(*msg);
      return t;
    }
    if (msg->value("type", "") != wire::reply::timed) {
      t.call = protocol_violation(*msg, wire::reply::timed);
      return t;
    }
    try {
      t = wire::timed_from_json(*msg);
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

  BatchPrepared batch_prepare(const BatchSpec& b) override {
    BatchPrepared p;
    std::vector<const DevMem*> bufs{b.slab};
    for (const DeviceSet* s : b.ins)
      for (const DevMem& m : s->bufs) bufs.push_back(&m);
    if (p.call = map_buffers(bufs); !p.call.ok) return p;
    json sets = json::array();
    for (const DeviceSet* s : b.ins) sets.push_back(ids(*s));
    auto [o, msg] = request({{"cmd", wire::cmd::batch}, {"sets", sets}, {"slab", b.slab->id()}, {"stride", b.stride},
                             {"offsets", b.out_offsets}, {"calls", b.calls}},
                            {}, wire::reply::batch_ready, opt_.time_timeout_s);
    p.call = o;
    if (o.ok) {
      p.graph = msg.value("graph", false);
      p.unjoined = msg.value("unjoined", false);
      p.note = msg.value("note", "");
    }
    return p;
  }

  CallOutcome batch_start() override {
    if (!start_error_.ok) return start_error_;
    if (dead_) return failed(Status::RUNTIME_ERROR, "the worker is gone: " + end_note_, true);
    std::lock_guard lk(m_);
    if (done_) return failed(Status::RUNTIME_ERROR, "the worker is gone", true);
    out_ = Out{{{"cmd", wire::cmd::batch_run}}, {}};
    cv_.notify_all();
    return {};
  }

  CallOutcome batch_wait(double timeout_s) override {
    auto msg = wait_incoming(after(timeout_s), wire::cmd::batch_run);
    if (!msg) return ended();
    const std::string type = msg->value("type", "");
    if (type == wire::reply::error) return worker_error(*msg);
    if (type != wire::reply::batch_done) return protocol_violation(*msg, wire::reply::batch_done);
    return {};
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

  /// The worker's first message is its thread baseline, sent before any candidate code runs and
  /// answered with "load": the parent counts the worker's threads itself before answering. Returns
  /// the message after the load ("ready", "load_failed"), or whatever else came first.
  std::optional<json> start_handshake(Clock::time_point deadline) {
    auto first = wait_incoming(deadline, "start");
    if (!first || first->value("type", "") != wire::reply::baseline) return first;
    baseline_threads_ = first->value("threads", -1);
    observed_baseline_ = process_group_threads(group_.load());
    return exchange({{"cmd", wire::cmd::load}}, {}, deadline, "start");
  }

  /// Thread counts of a call as the rule sees them: the worker's report (the count before the
  /// candidate's code, the count after the call), bounded by the parent's own count of the
  /// worker's process group at the same two moments. The candidate can write whatever the worker
  /// reports, never /proc as the parent reads it: where the parent's pair shows more threads
  /// than at the baseline, that pair is the one judged.
  void bound_thread_counts(CallOutcome& o, int reported_after) const {
    std::tie(o.threads_before, o.threads_after) =
        bounded_thread_counts(baseline_threads_, reported_after, observed_baseline_, process_group_threads(group_.load()));
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
    if (type == wire::reply::error) return {worker_error(*msg), *msg};
    if (type != reply_type) return {protocol_violation(*msg, reply_type), *msg};
    return {CallOutcome{}, *msg};
  }

  CallOutcome release_freed() override {
    if (!start_error_.ok || dead_) return {};  // the next request reports it
    json ids = json::array();
    for (auto it = mapped_.begin(); it != mapped_.end();) {
      if (DevMem::alive(*it)) {
        ++it;
        continue;
      }
      ids.push_back(*it);
      it = mapped_.erase(it);
    }
    if (ids.empty()) return {};
    return request({{"cmd", wire::cmd::unmap}, {"ids", ids}}, {}, wire::reply::unmapped, opt_.start_timeout_s).first;
  }

  /// Sends the worker descriptors of every buffer it has not mapped yet.
  CallOutcome map(const std::vector<const DeviceSet*>& sets) {
    std::vector<const DevMem*> bufs;
    for (const DeviceSet* s : sets)
      for (const DevMem& b : s->bufs) bufs.push_back(&b);
    return map_buffers(bufs);
  }

  /// One map request per kFdsPerMap buffers: a message carries at most SCM_MAX_FD (253)
  /// descriptors, and a batch of a small workload maps up to 256 input sets of several buffers
  /// each (moe_topk_router 512 x 256 failed on the H200: "more than 250 descriptors").
  static constexpr std::size_t kFdsPerMap = 200;

  CallOutcome map_buffers(const std::vector<const DevMem*>& all) {
    std::vector<const DevMem*> todo;
    for (const DevMem* b : all)
      if (mapped_.insert(b->id()).second) todo.push_back(b);
    for (std::size_t first = 0; first < todo.size(); first += kFdsPerMap) {
      json bufs = json::array();
      std::vector<int> fds;
      for (std::size_t i = first; i < std::min(todo.size(), first + kFdsPerMap); ++i) {
        bufs.push_back({{"id", todo[i]->id()}, {"bytes", todo[i]->size()}});
        fds.push_back(todo[i]->export_fd());
      }
      CallOutcome o = request({{"cmd", wire::cmd::map}, {"buffers", bufs}}, std::move(fds), wire::reply::mapped,
                              opt_.start_timeout_s).first;
      if (!o.ok) return o;
    }
    return {};
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
  int baseline_threads_ = -1;   ///< the worker's report, before any candidate code
  int observed_baseline_ = -1;  ///< the parent's count of the worker's group at that moment
  std::atomic<pid_t> group_{-1};  ///< the worker's process group (set when the sandbox forks)
  // Test knob (kSkipGotCheckEnv): read by the parent at start, never from the worker.
  const bool skip_got_check_ = [] {
    const char* k = std::getenv(kSkipGotCheckEnv);
    return k && std::string_view(k) == "1";
  }();
  std::uint64_t relro_hash_ = 0;  // the worker's GOT pages after the library loaded (a tripwire)
  std::string timeout_stage_;  // set when the parent's own deadline for a request passed
  std::set<std::uint64_t> mapped_;
};


}  // namespace

std::unique_ptr<TargetRunner> make_worker_runner(const ImplTarget& target, const WorkerOptions& opt) {
  return std::make_unique<WorkerRunner>(target, opt);
}

}  // namespace d2k
