// d2k batch setup | run | status: an agent over the suite (docs/batch.md). Options here, the work
// in src/agent/.
#include <fmt/core.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "agent/batch_run.h"
#include "agent/batch_status.h"
#include "cli/commands.h"
#include "cli/dataset.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop{false};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct BatchArgs {
  std::string name, tasks, tracks = "cuda", levels = "baseline,design", agent, model, proxy_url, runs_dir = "runs",
                                  run;
  std::vector<std::string> vars;
  int max_turns = 100, attempts = 1, concurrency = 1, retries = 2, run_concurrency = 0;
  double wall_s = 3600, backoff_s = 30, grace_s = 10, check_wall_s = 1800;
  bool json = false;
};

fs::path templates_dir() {
  if (const char* env = std::getenv("D2K_AGENT_TEMPLATES"); env && *env) return env;
  if (fs::is_directory("agent/templates")) return "agent/templates";
  return fs::path(D2K_SOURCE_DIR) / "agent" / "templates";
}

/// RUN is a name under --runs-dir, or a path to a run folder.
fs::path run_dir(const BatchArgs& a) {
  if (a.run.find('/') != std::string::npos) return a.run;
  return fs::path(a.runs_dir) / a.run;
}

int setup_main(const Globals& g, const BatchArgs& a) {
  agent::SetupInput in;
  agent::RunConfig& c = in.config;
  c.name = a.name;
  c.tasks = split(a.tasks);
  c.tracks = split(a.tracks);
  for (const auto& l : split(a.levels)) {
    try {
      c.levels.emplace_back(agent::parse_level(l).name);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("--levels: {}", e.what()));
    }
  }
  if (c.tasks.empty() || c.tracks.empty() || c.levels.empty())
    throw std::runtime_error("--tasks, --tracks and --levels must each name at least one");
  c.agent = agent::load_template(a.agent, templates_dir());
  for (const auto& kv : a.vars) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw std::runtime_error(fmt::format("--var {}: expected KEY=VALUE", kv));
    c.vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  c.model = a.model;
  c.max_turns = a.max_turns;
  c.wall_s = a.wall_s;
  c.attempts = a.attempts;
  c.concurrency = a.concurrency;
  c.retries = a.retries;
  c.backoff_s = a.backoff_s;
  c.grace_s = a.grace_s;
  c.check_wall_s = a.check_wall_s;
  c.proxy_url = a.proxy_url;
  while (!c.proxy_url.empty() && c.proxy_url.back() == '/') c.proxy_url.pop_back();
  c.dataset = fs::absolute(dataset_dir(g)).lexically_normal().string();
  c.created = agent::utc_now();
  in.design_levels_file = dataset_dir(g) / "design_levels.json";
  Diagnostics ldiag;
  in.levels = load_design_levels(in.design_levels_file, ldiag);
  if (!ldiag.ok()) throw std::runtime_error(ldiag.format());
  for (const auto& name : c.tasks) {
    Diagnostics diag;
    in.tasks.push_back(load_one_task(g, name, diag));
  }
  fs::create_directories(a.runs_dir);
  const fs::path dir = agent::setup_run(in, a.runs_dir);
  const std::size_t n = c.tasks.size() * c.tracks.size() * c.levels.size() * static_cast<std::size_t>(c.attempts);
  fmt::print("batch: run {} set up in {}: {} attempt(s), agent {}\n", c.name, dir.string(), n, c.agent.name);
  fmt::print("next: d2k batch run {}{}\n", c.name, a.runs_dir == "runs" ? "" : " --runs-dir " + a.runs_dir);
  return 0;
}

int run_main(const BatchArgs& a) {
  const fs::path dir = run_dir(a);
  if (!fs::exists(dir / "run.json"))
    throw std::runtime_error(fmt::format("{}: no such run (no run.json; `d2k batch setup` makes one)", dir.string()));
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = true; };
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  agent::RunOptions o;
  o.concurrency = a.run_concurrency;
  o.d2k_exe = fs::read_symlink("/proc/self/exe").string();
  o.stop = &g_stop;
  o.log = [](const std::string& line) { fmt::print(stderr, "batch: {}\n", line); };
  const agent::RunOutcome r = agent::run_batch(dir, o);
  fmt::print(stderr, "batch: {}/{} finished (done {}, infra_error {}){}\n", r.done + r.infra_error, r.total, r.done,
             r.infra_error,
             r.interrupted ? fmt::format("; interrupted: {} unfinished, `d2k batch run {}` resumes", r.unfinished, a.run)
                           : "");
  return r.interrupted ? 130 : 0;
}

}  // namespace

void add_batch(CLI::App& app, Globals& g, Runner& run) {
  static BatchArgs a;
  auto* batch = app.add_subcommand("batch", "run an agent over tasks x tracks x levels: setup, run, status");
  batch->require_subcommand(1);

  auto* setup = batch->add_subcommand("setup", "create a run: pristine workspaces and pending attempts");
  setup->add_option("--name", a.name, "the run's name (its folder under --runs-dir)")->required();
  setup->add_option("--tasks", a.tasks, "comma-separated task names")->required();
  setup->add_option("--tracks", a.tracks, "comma-separated tracks (default cuda)");
  setup->add_option("--levels", a.levels, "comma-separated: baseline, L1, L1+L2, design (default baseline,design)");
  setup->add_option("--agent", a.agent, "a template name (agent/templates/NAME.toml) or a .toml file")->required();
  setup->add_option("--var", a.vars, "KEY=VALUE for a template's own placeholder (repeatable)");
  setup->add_option("--model", a.model, "the model the agent is told to use ({model})");
  setup->add_option("--max-turns", a.max_turns, "turn budget ({max_turns}, default 100)")->check(CLI::PositiveNumber);
  setup->add_option("--wall-s", a.wall_s, "wall budget of one attempt, seconds (default 3600)")->check(CLI::PositiveNumber);
  setup->add_option("--attempts", a.attempts, "independent attempts per task x track x level (default 1)")
      ->check(CLI::Range(1, 100));
  setup->add_option("--concurrency", a.concurrency, "attempts at once (default 1)")->check(CLI::Range(1, 256));
  setup->add_option("--retries", a.retries, "retries of an infrastructure failure (default 2)")->check(CLI::Range(0, 20));
  setup->add_option("--backoff-s", a.backoff_s, "first retry's delay, doubled each retry (default 30)")
      ->check(CLI::NonNegativeNumber);
  setup->add_option("--grace-s", a.grace_s, "SIGTERM to SIGKILL at the wall budget (default 10)")
      ->check(CLI::NonNegativeNumber);
  setup->add_option("--check-wall-s", a.check_wall_s, "wall budget of the runner's check (default 1800)")
      ->check(CLI::PositiveNumber);
  setup->add_option("--proxy-url", a.proxy_url, "d2k proxy base URL (http://127.0.0.1:PORT): agents get per-attempt API URLs");
  setup->add_option("--runs-dir", a.runs_dir, "where runs live (default ./runs)");
  setup->callback([&] { run = [&] { return setup_main(g, a); }; });

  auto* run_cmd = batch->add_subcommand("run", "run (or resume) every unfinished attempt of a run");
  run_cmd->add_option("run", a.run, "the run's name (or its folder)")->required();
  run_cmd->add_option("--concurrency", a.run_concurrency, "attempts at once (default: the run's)")
      ->check(CLI::Range(1, 256));
  run_cmd->add_option("--runs-dir", a.runs_dir, "where runs live (default ./runs)");
  run_cmd->callback([&] { run = [&] { return run_main(a); }; });

  auto* status = batch->add_subcommand("status", "the run's attempts as a table, with progress");
  status->add_option("run", a.run, "the run's name (or its folder)")->required();
  status->add_flag("--json", a.json, "JSON instead of the table");
  status->add_option("--runs-dir", a.runs_dir, "where runs live (default ./runs)");
  status->callback([&] {
    run = [&] {
      const agent::RunStatus s = agent::read_status(run_dir(a));
      if (a.json) std::cout << agent::status_json(s).dump(2) << "\n";
      else std::cout << agent::format_status(s);
      return 0;
    };
  });
}

}  // namespace d2k::cli
