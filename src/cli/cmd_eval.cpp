// d2k check | bench | suite | run: build evaluation requests (engine/request.h), run them, print
// and write the traces. Everything the pipeline does lives in the engine.
#include <chrono>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/dataset.h"
#include "core/cuda_util.h"
#include "engine/request.h"
#include "engine/trace_file.h"
#include "score/suite.h"
#include "engine/worker_process.h"
#include "tracks/track.h"

namespace d2k::cli {

namespace {

struct EvalArgs {
  std::string task, impl, targets = "naive,expert,library", solution_dir, workloads, tasks;
  std::string track = "cuda";
  std::string json_out, markdown_out, dump_dir;
  std::string request_file, out_file;
  std::optional<int> device;
  bool no_time = false, graph = false, quiet = false;
  std::uint64_t seed = 0;
  double max_time_s = 0;  ///< 0: the measure library's default
  std::string isolation = "worker";
  double call_timeout_s = 30;
  std::string worker_impl, worker_track = "cuda", worker_shapes;
  bool no_sample_checks = false;
  bool suite_torch = false;  ///< suite --torch: the torch_eager and torch_compile targets too
  int rounds = 3, bench_rounds = 2;
};

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// On a terminal the progress line rewrites itself in place; into a log or a pipe each update is
/// a plain line (no carriage returns or escape codes in the file).
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress progress_line(bool quiet) {
  if (quiet) return [](const std::string&) {};
  if (!stderr_is_terminal()) {
    // In a log, each line carries the seconds since the command started: a run cut by a deadline
    // still shows where its time went.
    const auto t0 = std::chrono::steady_clock::now();
    return [t0](const std::string& s) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cerr << fmt::format("[{:7.1f}s] {}\n", t, s);
    };
  }
  return [](const std::string& s) {
    std::cerr << "\r\033[K" << s << std::flush;
  };
}

void finish_progress(bool quiet) {
  if (!quiet && stderr_is_terminal()) std::cerr << "\r\033[K" << std::flush;
}

/// A request from the command line. It goes through the JSON form, so that the CLI and
/// `d2k run` accept exactly the same requests (one validation).
EvalRequest build_request(const Globals& g, const EvalArgs& a, const std::string& task,
                          const std::vector<std::string>& target_names) {
  EvalRequest r;
  r.dataset = dataset_dir(g).string();
  r.task = task;
  for (const std::string& n : target_names) {
    RequestTarget t{n, a.track, ""};
    if (n == "solution") {
      if (a.solution_dir.empty()) throw RequestError("--targets names 'solution' but --solution-dir is missing");
      t.dir = a.solution_dir;
    }
    r.targets.push_back(t);
  }
  r.workloads = split_csv(a.workloads);
  RequestOptions& o = r.options;
  if (a.seed) o.seed = a.seed;
  o.time = !a.no_time;
  o.graph = a.graph;
  o.max_time_s = a.max_time_s;
  o.isolation = a.isolation;
  o.call_timeout_s = a.call_timeout_s;
  o.sample_checks = !a.no_sample_checks;
  o.rounds = a.rounds;
  o.bench_rounds = a.bench_rounds;
  o.dump_dir = a.dump_dir;
  r.device = a.device;
  return request_from_json(to_json(r));
}

RunContext context(const EvalArgs& a, std::optional<int> device) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string before = visible ? visible : "(unset)";
  select_device(device);  // before the CUDA runtime starts
  RunContext ctx;
  ctx.gpu = cuda_device_count() > 0;
  // A device that was asked for and is not there is an error, not a run without a GPU.
  if (device && !ctx.gpu)
    throw RequestError(fmt::format("device: no CUDA device {} (CUDA_VISIBLE_DEVICES was {})", *device, before));
  ctx.progress = progress_line(a.quiet);
  return ctx;
}

/// The records of a check, bench or suite: kept for the table, and with --json appended to the
/// file as they finish, so that a run cut by a deadline or a signal keeps them (trace_file.h).
class RunRecords final : public TraceSink {
 public:
  explicit RunRecords(const std::string& json_out) {
    if (!json_out.empty()) file_.emplace(json_out, "--json");
  }
  void put(const Trace& t) override {
    kept_.push_back(t);
    if (file_) file_->put(t);
  }
  void put_partial(const Trace& t) override {
    if (file_) file_->put_partial(t);
  }
  /// The file becomes the final records so far (after each run: a suite's finished tasks too).
  void commit() {
    if (file_) file_->commit();
  }
  const std::vector<Trace>& traces() const { return kept_; }

 private:
  std::optional<TraceFileSink> file_;
  std::vector<Trace> kept_;
};

/// Prints the table (with the summary where anything was timed), writes --markdown (--json was
/// written as the records came: RunRecords),
/// says which stages were not run, and returns the exit code.
int write_outputs(const EvalArgs& a, const std::vector<Trace>& traces, const RunSummary& sum, bool gpu) {
  std::cout << format_table(traces, TableFormat::text);
  std::map<std::string, SuiteSummary> by_target;
  for (auto& t : traces) by_target[t.target];
  for (auto& [name, s] : by_target) s = summarize(traces, name);
  if (gpu) std::cout << "\n" << format_summary(by_target, TableFormat::text);
  if (!a.markdown_out.empty()) {
    std::ofstream f(a.markdown_out);
    if (!f) throw std::runtime_error("--markdown: cannot write " + a.markdown_out);
    f << format_table(traces, TableFormat::markdown);
    if (gpu) f << "\n" << format_summary(by_target, TableFormat::markdown);
  }
  if (!sum.skipped.empty()) {
    fmt::print(stderr, "d2k: NOT RUN{}: {} stage(s) skipped:\n", gpu ? "" : " (no CUDA GPU on this machine)",
               sum.skipped.size());
    for (const auto& s : sum.skipped) fmt::print(stderr, "  skipped: {}\n", s);
    if (gpu)
      fmt::print(stderr, "d2k: exit code {} (stages not run)\n", kExitNoGpu);
    else
      fmt::print(stderr, "d2k: what ran: building every solution, the golden reference on the host; exit code {} "
                         "(not run: no GPU)\n", kExitNoGpu);
  }
  if (sum.failed) fmt::print(stderr, "d2k: {} record(s) failed\n", sum.failed);
  return exit_code(sum);
}

void merge(RunSummary& into, const RunSummary& s) {
  into.records += s.records;
  into.failed += s.failed;
  into.skipped.insert(into.skipped.end(), s.skipped.begin(), s.skipped.end());
}

void add_common(CLI::App* s, EvalArgs& a) {
  s->add_option("--json", a.json_out, "write traces as JSON lines to this file");
  s->add_option("--markdown", a.markdown_out, "write the table as Markdown to this file");
  s->add_option("--workloads", a.workloads, "only these workload uuids (comma-separated)");
  s->add_option("--seed", a.seed, "pin the secret seed (reproduce a run; default: fresh from the OS)");
  s->add_option("--max-time", a.max_time_s, "time cap per target and workload, seconds");
  s->add_option("--rounds", a.rounds, "fresh-input rounds on check workloads");
  s->add_option("--bench-rounds", a.bench_rounds, "fresh-input correctness rounds on bench workloads before timing");
  s->add_option("--device", a.device, "CUDA device index among the visible ones (narrows CUDA_VISIBLE_DEVICES)");
  s->add_flag("--quiet", a.quiet, "no progress line");
  s->add_option("--isolation", a.isolation,
                "worker: each target in its own sandboxed process (default); none: loaded into d2k itself "
                "(debugging, and measuring what isolation costs)")
      ->check(CLI::IsMember({"worker", "none"}));
  s->add_flag("--no-sample-checks", a.no_sample_checks,
              "skip the per-call checks of timing (fresh inputs per call, re-checks, clock cross-check): "
              "only to measure what they cost; never for a score");
  s->add_option("--call-timeout", a.call_timeout_s, "deadline of one untimed call, seconds (TIMEOUT past it)")
      ->check(CLI::PositiveNumber);
}

void add_track_option(CLI::App* s, EvalArgs& a) {
  s->add_option("--track", a.track, fmt::format("the solution's track: {}", fmt::join(track_names(), " | ")))
      ->check(CLI::IsMember(track_names()));
}

/// `d2k check`: correctness only, every workload (hidden shapes too); --dump writes .npy files.
void add_check_command(CLI::App& app, Globals& g, Runner& run, EvalArgs& a) {
  auto* check = app.add_subcommand("check", "correctness only: every workload, hidden shapes too");
  check->add_option("--task", a.task, "task name")->required();
  check->add_option("--impl", a.impl, "naive | expert | expert:<variant> | library | reference | a solution folder")
      ->required();
  check->add_option("--dump", a.dump_dir, "write inputs, expected and actual outputs of every workload as .npy files here");
  add_track_option(check, a);
  add_common(check, a);
  check->callback([&] {
    run = [&] {
      Diagnostics diag;
      Task task = load_one_task(g, a.task, diag);
      require_workloads(task, split_csv(a.workloads));
      a.no_time = true;
      const bool builtin = is_builtin_name(a.impl);
      if (!builtin) a.solution_dir = a.impl;
      EvalRequest req = build_request(g, a, a.task, {builtin ? a.impl : "solution"});
      RunContext ctx = context(a, req.device);
      RunRecords records(a.json_out);
      RunSummary sum = d2k::run(req, task, records, ctx);
      records.commit();
      finish_progress(a.quiet);
      return write_outputs(a, records.traces(), sum, false);
    };
  });
}

/// `d2k bench`: check, then time each target; the table and JSON traces.
void add_bench_command(CLI::App& app, Globals& g, Runner& run, EvalArgs& a) {
  auto* bench = app.add_subcommand("bench", "check, then time each target; table and JSON traces");
  bench->add_option("--task", a.task, "task name")->required();
  bench->add_option("--targets", a.targets,
                    "comma-separated: naive, expert, expert:<variant>, library, torch_eager, torch_compile, solution "
                    "(default naive,expert,library)");
  bench->add_option("--solution-dir", a.solution_dir, "folder with the candidate's sources");
  add_track_option(bench, a);
  bench->add_flag("--graph", a.graph, "also time CUDA-graph replay (launch-bound tasks)");
  add_common(bench, a);
  bench->callback([&] {
    run = [&] {
      Diagnostics diag;
      Task task = load_one_task(g, a.task, diag);
      require_workloads(task, split_csv(a.workloads));
      EvalRequest req = build_request(g, a, a.task, split_csv(a.targets));
      RunContext ctx = context(a, req.device);
      RunRecords records(a.json_out);
      RunSummary sum = d2k::run(req, task, records, ctx);
      records.commit();
      finish_progress(a.quiet);
      return write_outputs(a, records.traces(), sum, ctx.gpu);
    };
  });
}

/// `d2k run`: one evaluation request (JSON) in, its traces out as JSON lines: the service runs this.
void add_request_command(CLI::App& app, Globals& g, Runner& run, EvalArgs& a) {
  auto* req_cmd = app.add_subcommand("run", "run one evaluation request (JSON) and write its traces as JSON lines");
  req_cmd->add_option("request", a.request_file, "the request file (docs/solution-abi.md, \"Requests\")")->required();
  req_cmd->add_option("--out", a.out_file, "write the traces here, one JSON object per line (- for stdout)")->required();
  req_cmd->add_option("--device", a.device, "CUDA device index among the visible ones (overrides the request's)");
  req_cmd->add_flag("--quiet", a.quiet, "no progress line");
  req_cmd->callback([&] {
    run = [&] {
      EvalRequest req = read_request(a.request_file);
      if (req.dataset.empty()) req.dataset = dataset_dir(g).string();
      if (a.device) req.device = a.device;
      RunContext ctx = context(a, req.device);
      std::ofstream file;
      if (a.out_file != "-") {
        file.open(a.out_file);
        if (!file) throw std::runtime_error("--out: cannot write " + a.out_file);
      }
      JsonLinesSink jsonl(a.out_file == "-" ? std::cout : file);
      CollectingSink kept;
      struct Tee final : TraceSink {
        TraceSink& x;
        TraceSink& y;
        Tee(TraceSink& x_, TraceSink& y_) : x(x_), y(y_) {}
        void put(const Trace& t) override { x.put(t), y.put(t); }
      } tee(jsonl, kept);
      RunSummary sum = d2k::run(req, tee, ctx);
      finish_progress(a.quiet);
      if (a.out_file == "-") return exit_code(sum);
      EvalArgs quiet_outputs;
      return write_outputs(quiet_outputs, kept.traces, sum, ctx.gpu);
    };
  });
}

/// `d2k __worker`: the worker side of --isolation worker, started by d2k itself inside the sandbox.
void add_worker_command(CLI::App& app, Runner& run, EvalArgs& a) {
  auto* worker = app.add_subcommand("__worker", "");
  worker->group("");
  worker->add_option("--impl", a.worker_impl, "the implementation's artifact")->required();
  worker->add_option("--track", a.worker_track, "the track that opens it");
  worker->add_option("--shapes", a.worker_shapes, "the workloads' shapes (JSON), for the track's prepare step");
  worker->callback([&] {
    run = [&] {
      std::vector<WorkloadShape> shapes;
      if (!a.worker_shapes.empty()) shapes = shapes_from_json(nlohmann::json::parse(a.worker_shapes));
      return worker_main(a.worker_impl, a.worker_track, shapes);
    };
  });
}

/// `d2k suite`: validate the dataset, then naive, expert and library of every task.
void add_suite_command(CLI::App& app, Globals& g, Runner& run, EvalArgs& a) {
  auto* suite = app.add_subcommand("suite", "naive, expert and library of every task: the suite report");
  suite->add_option("--tasks", a.tasks, "only these tasks (comma-separated)");
  suite->add_flag("--torch", a.suite_torch,
                  "also time each task's pytorch.py as torch_eager and torch_compile (needs torch on this machine)");
  add_common(suite, a);
  suite->callback([&] {
    run = [&] {
      Diagnostics diag;
      auto only = split_csv(a.tasks);
      int n = 0;
      if (only.empty()) n = validate_tasks(g, "", diag);
      for (auto& name : only) n += validate_tasks(g, name, diag);
      if (!diag.ok()) {
        fmt::print(stderr, "{}suite: the dataset does not validate ({} errors)\n", diag.format(), diag.error_count());
        return kExitFailed;
      }
      fmt::print(stderr, "suite: {} task(s) validated\n", n);
      RunContext ctx = context(a, a.device);
      RunRecords records(a.json_out);
      RunSummary sum;
      Diagnostics load_diag;
      for (const Task& task : load_all_tasks(g, load_diag)) {
        if (!only.empty() && std::find(only.begin(), only.end(), task.def.name) == only.end()) continue;
        std::vector<std::string> targets{"naive", "expert", "library"};
        if (a.suite_torch && std::filesystem::is_regular_file(task.dir / "pytorch.py"))
          targets.insert(targets.end(), {"torch_eager", "torch_compile"});
        EvalRequest req = build_request(g, a, task.def.name, targets);
        merge(sum, d2k::run(req, task, records, ctx));
        records.commit();
      }
      finish_progress(a.quiet);
      return write_outputs(a, records.traces(), sum, ctx.gpu);
    };
  });
}

}  // namespace

void add_eval(CLI::App& app, Globals& g, Runner& run) {
  static EvalArgs a;  // the callbacks run after parsing, when add_eval has returned
  add_check_command(app, g, run, a);
  add_bench_command(app, g, run, a);
  add_request_command(app, g, run, a);
  add_worker_command(app, run, a);
  add_suite_command(app, g, run, a);
}

}  // namespace d2k::cli
