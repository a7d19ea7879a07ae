#include "engine/request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "core/diagnostics.h"
#include "core/task_loader.h"
#include "score/suite.h"
#include "tracks/track.h"

namespace d2k {

using nlohmann::json;

// ---------------------------------------------------------------- JSON

namespace {

/// Reads one JSON object's fields, naming `path.key` in every error.
class FieldIn {
 public:
  FieldIn(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_.empty() ? "request" : path_, "expected an object");
  }
  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] static void fail(const std::string& field, const std::string& msg) {
    throw RequestError(field + ": " + msg);
  }
  void known(std::initializer_list<const char*> keys) const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      bool ok = false;
      for (const char* k : keys) ok |= it.key() == k;
      if (!ok) fail(at(it.key()), fmt::format("unknown field (known: {})", fmt::join(keys, ", ")));
    }
  }
  const json* find(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  template <class T>
  void get(const std::string& key, T& out, bool required = false) const {
    const json* v = find(key);
    if (!v) {
      if (required) fail(at(key), "missing");
      return;
    }
    if (!type_ok<T>(*v)) fail(at(key), std::string("expected ") + type_name<T>());
    out = v->get<T>();
  }

 private:
  template <class T>
  static bool type_ok(const json& v) {
    if constexpr (std::is_same_v<T, bool>) return v.is_boolean();
    else if constexpr (std::is_same_v<T, std::string>) return v.is_string();
    else if constexpr (std::is_same_v<T, double>) return v.is_number();
    else if constexpr (std::is_unsigned_v<T>) return v.is_number_unsigned();
    else return v.is_number_integer();
  }
  template <class T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    else if constexpr (std::is_same_v<T, std::string>) return "a string";
    else if constexpr (std::is_same_v<T, double>) return "a number";
    else if constexpr (std::is_unsigned_v<T>) return "a non-negative integer";
    else return "an integer";
  }
  const json& j_;
  std::string path_;
};

RequestTarget target_from_json(const json& j, const std::string& path) {
  FieldIn in(j, path);
  in.known({"name", "track", "dir"});
  RequestTarget t;
  in.get("name", t.name, true);
  in.get("track", t.track);
  in.get("dir", t.dir);
  if (t.name == "solution") {
    if (t.dir.empty()) FieldIn::fail(in.at("dir"), "a solution target needs the folder of its sources");
  } else if (!is_builtin_name(t.name)) {
    FieldIn::fail(in.at("name"), fmt::format("unknown target '{}' (naive, expert, expert:<variant>, library, "
                                             "reference, torch_eager, torch_compile, solution)", t.name));
  } else if (!t.dir.empty()) {
    FieldIn::fail(in.at("dir"), "only a solution target has a folder");
  }
  if (!lookup_track(t.track))
    FieldIn::fail(in.at("track"), fmt::format("unknown track '{}' ({})", t.track, fmt::join(track_names(), ", ")));
  return t;
}

RequestOptions options_from_json(const json& j) {
  FieldIn in(j, "options");
  in.known({"seed", "time", "graph", "max_time_s", "isolation", "call_timeout_s", "sample_checks", "rounds",
            "bench_rounds", "dump_dir"});
  RequestOptions o;
  if (in.find("seed")) {
    std::uint64_t s = 0;
    in.get("seed", s);
    o.seed = s;
  }
  in.get("time", o.time);
  in.get("graph", o.graph);
  in.get("max_time_s", o.max_time_s);
  in.get("isolation", o.isolation);
  in.get("call_timeout_s", o.call_timeout_s);
  in.get("sample_checks", o.sample_checks);
  in.get("rounds", o.rounds);
  in.get("bench_rounds", o.bench_rounds);
  in.get("dump_dir", o.dump_dir);
  if (o.isolation != "worker" && o.isolation != "none") FieldIn::fail("options.isolation", "expected worker or none");
  if (o.call_timeout_s <= 0) FieldIn::fail("options.call_timeout_s", "expected a positive number of seconds");
  if (o.max_time_s < 0) FieldIn::fail("options.max_time_s", "expected a non-negative number of seconds");
  if (o.rounds < 1) FieldIn::fail("options.rounds", "expected at least 1");
  if (o.bench_rounds < 0) FieldIn::fail("options.bench_rounds", "expected 0 or more");
  return o;
}

}  // namespace

json to_json(const EvalRequest& r) {
  json targets = json::array();
  for (const auto& t : r.targets) {
    json tj = {{"name", t.name}, {"track", t.track}};
    if (!t.dir.empty()) tj["dir"] = t.dir;
    targets.push_back(tj);
  }
  const RequestOptions& o = r.options;
  json oj = {{"time", o.time},
             {"graph", o.graph},
             {"max_time_s", o.max_time_s},
             {"isolation", o.isolation},
             {"call_timeout_s", o.call_timeout_s},
             {"sample_checks", o.sample_checks},
             {"rounds", o.rounds},
             {"bench_rounds", o.bench_rounds}};
  if (o.seed) oj["seed"] = *o.seed;
  if (!o.dump_dir.empty()) oj["dump_dir"] = o.dump_dir;
  json j = {{"task", r.task}, {"targets", targets}, {"workloads", r.workloads}, {"options", oj}};
  if (!r.dataset.empty()) j["dataset"] = r.dataset;
  if (r.device) j["device"] = *r.device;
  return j;
}

EvalRequest request_from_json(const json& j) {
  FieldIn in(j, "");
  in.known({"dataset", "task", "targets", "workloads", "options", "device"});
  EvalRequest r;
  in.get("dataset", r.dataset);
  in.get("task", r.task, true);
  if (r.task.empty()) FieldIn::fail("task", "empty");
  const json* targets = in.find("targets");
  if (!targets) FieldIn::fail("targets", "missing");
  if (!targets->is_array() || targets->empty()) FieldIn::fail("targets", "expected a non-empty array of targets");
  for (std::size_t i = 0; i < targets->size(); ++i)
    r.targets.push_back(target_from_json((*targets)[i], fmt::format("targets[{}]", i)));
  if (const json* w = in.find("workloads")) {
    if (!w->is_array()) FieldIn::fail("workloads", "expected an array of workload uuids");
    for (std::size_t i = 0; i < w->size(); ++i) {
      if (!(*w)[i].is_string()) FieldIn::fail(fmt::format("workloads[{}]", i), "expected a string");
      r.workloads.push_back((*w)[i].get<std::string>());
    }
  }
  if (const json* o = in.find("options")) r.options = options_from_json(*o);
  if (in.find("device")) {
    int d = 0;
    in.get("device", d);
    if (d < 0) FieldIn::fail("device", "expected a device index (0 or more)");
    r.device = d;
  }
  return r;
}

EvalRequest read_request(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw RequestError(path + ": cannot be read");
  json j;
  try {
    j = json::parse(f);
  } catch (const json::parse_error& e) {
    throw RequestError(path + ": not JSON: " + e.what());
  }
  try {
    return request_from_json(j);
  } catch (const RequestError& e) {
    throw RequestError(path + ": " + e.what());
  }
}

void JsonLinesSink::put(const Trace& t) { os_ << to_json(t).dump() << "\n" << std::flush; }

// ---------------------------------------------------------------- running

void account(RunSummary& s, const Trace& t) {
  ++s.records;
  s.failed += t.status != Status::PASSED && t.status != Status::SKIPPED;
  // A SKIPPED record is a stage that did not run (no GPU; a bench row whose naive, the judge of its
  // outputs, is not built or failed): listed, so that the exit status never reads as all passed.
  if (t.status == Status::SKIPPED)
    s.skipped.push_back(fmt::format("{} {}{}: {}", t.task, t.target, t.workload_uuid == "*" ? "" : " on " + t.workload_uuid,
                                    t.message));
}

int exit_code(const RunSummary& s) {
  if (s.failed > 0) return kExitFailed;
  if (!s.skipped.empty()) return kExitNoGpu;
  return kExitPassed;
}

void select_device(std::optional<int> device) {
  if (!device) return;
  if (*device < 0) throw RequestError("device: expected a device index (0 or more)");
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string chosen = std::to_string(*device);
  if (visible && *visible) {
    std::vector<std::string> ids;
    std::stringstream ss(visible);
    for (std::string id; std::getline(ss, id, ',');) ids.push_back(id);
    if (*device >= static_cast<int>(ids.size()))
      throw RequestError(fmt::format("device: index {} but CUDA_VISIBLE_DEVICES={} makes {} visible", *device, visible,
                                     ids.size()));
    chosen = ids[static_cast<std::size_t>(*device)];
  }
  // The runtime reads this once, when it starts; workers inherit it (docs/isolation.md).
  ::setenv("CUDA_VISIBLE_DEVICES", chosen.c_str(), 1);
}

namespace {

/// A seed the implementation never sees: from the OS unless the request pins it.
std::uint64_t secret_seed(const std::optional<std::uint64_t>& pinned) {
  if (pinned) return *pinned;
  std::random_device rd;
  return (std::uint64_t(rd()) << 32) ^ rd();
}

/// The targets of a request, by where they run.
struct ResolvedTargets {
  std::vector<ImplTarget> host;    ///< the golden reference: host pipeline only
  std::vector<ImplTarget> device;  ///< checked and timed on the GPU
};

ResolvedTargets resolve_targets(const EvalRequest& r, const Task& task, const std::function<void(const Trace&)>& emit,
                                const Progress& progress) {
  ResolvedTargets out;
  for (const RequestTarget& rt : r.targets) {
    if (rt.name == "solution") {
      if (progress) progress(fmt::format("{}: building {} ({} track)", task.def.name, rt.dir, rt.track));
      BuiltSolution b = find_track(rt.track).build(task, rt.dir);
      if (b.target) out.device.push_back(*b.target);
      else emit(b.failure);
      continue;
    }
    ImplTarget t = is_pytorch_target(rt.name) ? pytorch_target(task, rt.name) : builtin_target(task.def.name, rt.name);
    if (!std::filesystem::exists(t.so)) {
      if (rt.name == "library") continue;  // optional per task
      throw std::runtime_error(fmt::format("target {} of {} is not built ({}){}", rt.name, task.def.name, t.so.string(),
                                           rt.name.find(':') != std::string::npos ? "; expert variants are built with -DD2K_EXPERT_VARIANTS=ON" : ""));
    }
    (runs_on_host(t) ? out.host : out.device).push_back(t);
  }
  return out;
}

/// The record of a target whose GPU stages did not run.
Trace not_run(const Task& task, const ImplTarget& t, const std::string& why) {
  Trace tr;
  tr.task = task.def.name;
  tr.target = t.name;
  tr.impl_path = t.so.string();
  tr.workload_uuid = "*";
  tr.role = "gpu";
  tr.status = Status::SKIPPED;
  tr.message = why;
  return tr;
}

}  // namespace

EvalOptions options_from(const EvalRequest& r, const RunContext& ctx) {
  const RequestOptions& a = r.options;
  EvalOptions o;
  o.secret_seed = secret_seed(a.seed);
  o.time = a.time;
  o.graph = a.graph;
  if (a.max_time_s > 0) o.stopping.max_time_s = a.max_time_s;
  o.isolate = a.isolation == "worker";
  o.sample_checks = a.sample_checks;
  o.worker.exe = ctx.exe.empty() ? std::filesystem::read_symlink("/proc/self/exe") : std::filesystem::path(ctx.exe);
  o.worker.call_timeout_s = a.call_timeout_s;
  // The timing stage holds warm-up, the sampling loop up to its cap, the parent's preparation
  // of every call and the graph column: generous, it only has to catch a hang.
  o.worker.time_timeout_s = 120 + 20 * o.stopping.max_time_s;
  o.check_rounds = a.rounds;
  o.bench_rounds = a.bench_rounds;
  o.workloads = r.workloads;
  o.dump_dir = a.dump_dir;
  return o;
}

RunSummary run(const EvalRequest& r, const Task& task, TraceSink& sink, const RunContext& ctx) {
  const EvalOptions opt = options_from(r, ctx);
  RunSummary sum;
  auto emit = [&](const Trace& t) {
    sink.put(t);
    account(sum, t);
  };

  // Build and resolve every target first: a broken solution is reported whatever the machine.
  ResolvedTargets targets = resolve_targets(r, task, emit, ctx.progress);

  // The golden reference runs through the host pipeline only (never on device tensors).
  // Without a GPU it always runs: validating the task and its golden is what can be done here.
  if (!ctx.gpu && targets.host.empty()) targets.host.push_back(builtin_target(task.def.name, "reference"));
  for (const ImplTarget& h : targets.host)
    evaluate_host(task, h, std::nullopt, opt, ctx.progress, emit);  // each record as its workload finishes

  if (targets.device.empty()) return sum;
  if (!ctx.gpu) {
    const std::string stages = opt.time ? "checking and timing" : "checking";
    for (const ImplTarget& t : targets.device) {
      emit(not_run(task, t, "not run: no CUDA GPU on this machine (" + stages + (opt.time ? " need" : " needs") + " one)"));
    }
    return sum;
  }
  std::optional<ImplTarget> naive;
  if (ImplTarget nv = builtin_target(task.def.name, "naive"); std::filesystem::exists(nv.so)) naive = nv;
  auto partial = [&](const Trace& t) { sink.put_partial(t); };
  std::vector<Trace> traces = evaluate_cuda(task, targets.device, builtin_target(task.def.name, "reference"), naive,
                                            opt, ctx.progress, partial);
  // Speedups only against times of this run, on this machine.
  score_traces(traces);
  for (const Trace& t : traces) emit(t);
  return sum;
}

RunSummary run(const EvalRequest& r, TraceSink& sink, const RunContext& ctx) {
  if (r.dataset.empty()) throw RequestError("dataset: missing (the folder holding the task)");
  const std::filesystem::path dataset = r.dataset;
  if (!std::filesystem::is_directory(dataset / r.task))
    throw RequestError(fmt::format("task: no task '{}' in {}", r.task, dataset.string()));
  Diagnostics diag;
  DesignLevels levels = load_design_levels(dataset / "design_levels.json", diag);
  Task task = load_and_validate_task(dataset / r.task, levels, diag);
  check_task_tracks(task, diag);
  if (!diag.ok()) throw RequestError("task " + r.task + " does not validate:\n" + diag.format());
  return run(r, task, sink, ctx);
}

}  // namespace d2k
