// d2k check | bench | suite: build the target list, run the pipeline, print and write traces.
#include <fmt/core.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/dataset.h"
#include "core/cuda_util.h"
#include "engine/device_backend.h"
#include "engine/evaluate.h"
#include "engine/solution.h"
#include "engine/worker_process.h"

namespace d2k::cli {

namespace {

struct EvalArgs {
  std::string task, impl, targets = "naive,expert,library", solution_dir, workloads, tasks;
  std::string json_out, markdown_out, dump_dir;
  bool no_time = false, graph = false, quiet = false;
  std::uint64_t seed = 0;
  double max_time_s = 0;  ///< 0: the measure library's default
  std::string isolation = "worker";
  double call_timeout_s = 30;
  std::string worker_impl;
  bool no_sample_checks = false;
  int rounds = 3, bench_rounds = 2;
};

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// A seed the implementation never sees: from the OS unless --seed pins it (for reproducing a run).
std::uint64_t secret_seed(std::uint64_t pinned) {
  if (pinned) return pinned;
  std::random_device rd;
  return (std::uint64_t(rd()) << 32) ^ rd();
}

/// On a terminal the progress line rewrites itself in place; into a log or a pipe each update is
/// a plain line (no carriage returns or escape codes in the file).
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress progress_line(bool quiet) {
  if (quiet) return [](const std::string&) {};
  if (!stderr_is_terminal()) return [](const std::string& s) { std::cerr << s << '\n'; };
  return [](const std::string& s) {
    std::cerr << "\r\033[K" << s << std::flush;
  };
}

void finish_progress(bool quiet) {
  if (!quiet && stderr_is_terminal()) std::cerr << "\r\033[K" << std::flush;
}

int write_outputs(const EvalArgs& a, const std::vector<Trace>& traces, bool gpu) {
  std::cout << format_table(traces, TableFormat::text);
  std::map<std::string, SuiteSummary> by_target;
  for (auto& t : traces) by_target[t.target];
  for (auto& [name, s] : by_target) s = summarize(traces, name);
  if (gpu) std::cout << "\n" << format_summary(by_target, TableFormat::text);
  if (!a.json_out.empty()) {
    std::ofstream f(a.json_out);
    if (!f) throw std::runtime_error("--json: cannot write " + a.json_out);
    for (auto& t : traces) f << to_json(t).dump() << "\n";
  }
  if (!a.markdown_out.empty()) {
    std::ofstream f(a.markdown_out);
    if (!f) throw std::runtime_error("--markdown: cannot write " + a.markdown_out);
    f << format_table(traces, TableFormat::markdown);
    if (gpu) f << "\n" << format_summary(by_target, TableFormat::markdown);
  }
  int failed = 0;
  for (auto& t : traces) failed += t.status != Status::PASSED && t.status != Status::SKIPPED;
  return failed ? 1 : 0;
}

EvalOptions options_from(const EvalArgs& a) {
  EvalOptions o;
  o.secret_seed = secret_seed(a.seed);
  o.time = !a.no_time;
  o.graph = a.graph;
  if (a.max_time_s > 0) o.stopping.max_time_s = a.max_time_s;
  o.isolate = a.isolation == "worker";
  o.sample_checks = !a.no_sample_checks;
  o.worker.exe = std::filesystem::read_symlink("/proc/self/exe");
  o.worker.call_timeout_s = a.call_timeout_s;
  // The timing stage holds warm-up, the sampling loop up to its cap, the parent's preparation
  // of every call and the graph column: generous, it only has to catch a hang.
  o.worker.time_timeout_s = 120 + 20 * o.stopping.max_time_s;
  o.check_rounds = a.rounds;
  o.bench_rounds = a.bench_rounds;
  o.workloads = split_csv(a.workloads);
  o.dump_dir = a.dump_dir;
  return o;
}

/// Targets by name: built-in implementations of the task, or `solution` compiled from a folder.
std::vector<ImplTarget> resolve_targets(const Task& task, const std::vector<std::string>& names,
                                        const std::string& solution_dir, std::vector<Trace>& failures) {
  std::vector<ImplTarget> out;
  for (const std::string& n : names) {
    if (n == "solution") {
      if (solution_dir.empty()) throw std::runtime_error("--targets names 'solution' but --solution-dir is missing");
      auto st = solution_target(task, solution_dir);
      if (st.target) out.push_back(*st.target);
      else failures.push_back(st.failure);
      continue;
    }
    if (n != "naive" && n != "expert" && n != "library" && n != "reference")
      throw std::runtime_error("--targets: unknown target '" + n + "' (naive, expert, library, reference, solution)");
    ImplTarget t = builtin_target(task.def.name, n);
    if (!std::filesystem::exists(t.so)) {
      if (n == "library") continue;  // optional per task
      throw std::runtime_error("--targets: " + n + " of " + task.def.name + " is not built (" + t.so.string() + ")");
    }
    out.push_back(t);
  }
  return out;
}

std::vector<Trace> run_task(const Task& task, const std::vector<std::string>& target_names, const EvalArgs& a,
                            bool gpu) {
  EvalOptions opt = options_from(a);
  auto progress = progress_line(a.quiet);
  ImplTarget reference = builtin_target(task.def.name, "reference");
  reference.host = true;
  std::vector<Trace> traces;
  if (!gpu) {
    auto t = evaluate_host(task, reference, std::nullopt, opt, progress);
    finish_progress(a.quiet);
    return t;
  }
  std::vector<ImplTarget> targets = resolve_targets(task, target_names, a.solution_dir, traces);
  std::optional<ImplTarget> naive;
  ImplTarget nv = builtin_target(task.def.name, "naive");
  if (std::filesystem::exists(nv.so)) naive = nv;
  auto more = evaluate_cuda(task, targets, reference, naive, opt, progress);
  finish_progress(a.quiet);
  traces.insert(traces.end(), more.begin(), more.end());
  score_traces(traces);
  return traces;
}

void no_gpu_notice(const std::string& what) {
  fmt::print(stderr,
             "d2k: no CUDA GPU found on this machine. {}: ran the host pipeline only (task validation and the fp64 "
             "golden reference on check workloads); skipped compiling, checking and timing the GPU implementations.\n",
             what);
}

}  // namespace

void add_eval(CLI::App& app, Globals& g, Runner& run) {
  static EvalArgs a;
  auto common = [&](CLI::App* s) {
    s->add_option("--json", a.json_out, "write traces as JSON lines to this file");
    s->add_option("--markdown", a.markdown_out, "write the table as Markdown to this file");
    s->add_option("--workloads", a.workloads, "only these workload uuids (comma-separated)");
    s->add_option("--seed", a.seed, "pin the secret seed (reproduce a run; default: fresh from the OS)");
    s->add_option("--max-time", a.max_time_s, "time cap per target and workload, seconds");
    s->add_option("--rounds", a.rounds, "fresh-input rounds on check workloads");
    s->add_option("--bench-rounds", a.bench_rounds, "fresh-input correctness rounds on bench workloads before timing");
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
  };

  auto* check = app.add_subcommand("check", "correctness only: every workload, hidden shapes too");
  check->add_option("--task", a.task, "task name")->required();
  check->add_option("--impl", a.impl, "naive | expert | library | a solution folder")->required();
  check->add_option("--dump", a.dump_dir, "write inputs, expected and actual outputs of every workload as .npy files here");
  common(check);
  check->callback([&] {
    run = [&] {
      Diagnostics diag;
      Task task = load_one_task(g, a.task, diag);
      require_workloads(task, split_csv(a.workloads));
      a.no_time = true;
      bool gpu = cuda_device_count() > 0;
      if (!gpu) no_gpu_notice("check");
      bool is_builtin = a.impl == "naive" || a.impl == "expert" || a.impl == "library" || a.impl == "reference";
      if (!is_builtin) a.solution_dir = a.impl;
      auto traces = run_task(task, {is_builtin ? a.impl : "solution"}, a, gpu);
      return write_outputs(a, traces, false);
    };
  });

  auto* bench = app.add_subcommand("bench", "check, then time each target; table and JSON traces");
  bench->add_option("--task", a.task, "task name")->required();
  bench->add_option("--targets", a.targets, "comma-separated: naive, expert, library, solution");
  bench->add_option("--solution-dir", a.solution_dir, "folder with the candidate's solution.cu");
  bench->add_flag("--graph", a.graph, "also time CUDA-graph replay (launch-bound tasks)");
  common(bench);
  bench->callback([&] {
    run = [&] {
      Diagnostics diag;
      Task task = load_one_task(g, a.task, diag);
      require_workloads(task, split_csv(a.workloads));
      bool gpu = cuda_device_count() > 0;
      if (!gpu) no_gpu_notice("bench");
      auto traces = run_task(task, split_csv(a.targets), a, gpu);
      return write_outputs(a, traces, gpu);
    };
  });

  // The worker side of --isolation worker: started by d2k itself inside the sandbox.
  auto* worker = app.add_subcommand("__worker", "");
  worker->group("");
  worker->add_option("--impl", a.worker_impl, "the implementation's shared library")->required();
  worker->callback([&] {
    run = [&] { return worker_main(a.worker_impl); };
  });

  auto* suite = app.add_subcommand("suite", "naive, expert and library of every task: the suite report");
  suite->add_option("--tasks", a.tasks, "only these tasks (comma-separated)");
  common(suite);
  suite->callback([&] {
    run = [&] {
      Diagnostics diag;
      auto only = split_csv(a.tasks);
      int n = 0;
      if (only.empty()) n = validate_tasks(g, "", diag);
      for (auto& name : only) n += validate_tasks(g, name, diag);
      if (!diag.ok()) {
        fmt::print(stderr, "{}suite: the dataset does not validate ({} errors)\n", diag.format(), diag.error_count());
        return 1;
      }
      bool gpu = cuda_device_count() > 0;
      if (!gpu) no_gpu_notice("suite");
      fmt::print(stderr, "suite: {} task(s) validated\n", n);
      std::vector<Trace> all;
      Diagnostics load_diag;
      for (const Task& task : load_all_tasks(g, load_diag)) {
        if (!only.empty() && std::find(only.begin(), only.end(), task.def.name) == only.end()) continue;
        auto t = run_task(task, {"naive", "expert", "library"}, a, gpu);
        all.insert(all.end(), t.begin(), t.end());
      }
      return write_outputs(a, all, gpu);
    };
  });
}

}  // namespace d2k::cli
