#include "agent/batch_attempt.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "agent/batch_process.h"

namespace d2k::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::map<std::string, std::string> placeholders(const AttemptContext& ctx, const AttemptRecord& a,
                                                const fs::path& ws) {
  const RunConfig& c = ctx.config;
  std::map<std::string, std::string> v = c.vars;
  std::ifstream f(ws / "instruction.md");
  v["workspace"] = ws.string();
  v["instruction"] = (ws / "instruction.md").string();
  v["instruction_text"] = std::string(std::istreambuf_iterator<char>(f), {});
  v["model"] = c.model;
  v["max_turns"] = std::to_string(c.max_turns);
  v["wall_s"] = fmt::format("{:g}", c.wall_s);
  v["task"] = a.task;
  v["track"] = a.track;
  v["level"] = a.level;
  v["attempt"] = a.id;
  v["run"] = c.name;
  return v;
}

int count_turns(const fs::path& log, const std::string& marker) {
  std::ifstream f(log);
  int n = 0;
  for (std::string line; std::getline(f, line);)
    if (line.find(marker) != std::string::npos) ++n;
  return n;
}

bool stopped(const AttemptContext& ctx) { return ctx.stop && ctx.stop->load(); }

/// Sleeps `s` seconds unless stopped first.
void backoff(const AttemptContext& ctx, double s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (!stopped(ctx) && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

double backoff_s(const RunConfig& c, int retry) { return c.backoff_s * std::pow(2.0, retry - 1); }

/// Phase 1: a fresh copy of the pristine workspace; the outputs of an earlier try removed.
fs::path fresh_workspace(const AttemptContext& ctx, const AttemptRecord& a, const fs::path& dir) {
  const fs::path ws = dir / "workspace";
  fs::remove_all(ws);
  fs::remove(dir / "check.json");
  fs::remove(dir / "check.log");
  const WorkspaceKey key{a.task, a.track, parse_level(a.level).level};
  copy_tree(ctx.run_dir / "workspaces" / key.folder(), ws);
  return ws;
}

/// Phase 2: the agent.
ProcessResult run_agent(const AttemptContext& ctx, AttemptRecord& a, const fs::path& dir, const fs::path& ws) {
  const RunConfig& c = ctx.config;
  const auto vars = placeholders(ctx, a, ws);
  const std::string where = "agent template " + c.agent.name;
  ProcessSpec p;
  for (const auto& arg : c.agent.command) p.argv.push_back(expand(arg, vars, where));
  for (const auto& [k, v] : c.agent.env) p.env[k] = expand(v, vars, where);
  p.env["D2K_WORKSPACE"] = ws.string();
  p.env["D2K_RUN"] = c.name;
  p.env["D2K_ATTEMPT"] = a.id;
  if (!ctx.d2k_exe.empty()) p.env["D2K"] = ctx.d2k_exe;
  if (!c.proxy_url.empty()) {
    // The proxy's URL convention: /a/<RUN>/<ATTEMPT>/<api> (docs/batch.md, "Token accounting").
    const std::string base = fmt::format("{}/a/{}/{}", c.proxy_url, c.name, a.id);
    p.env["OPENAI_BASE_URL"] = base + "/openai/v1";
    p.env["ANTHROPIC_BASE_URL"] = base + "/anthropic";
  }
  if (!c.agent.stdin_file.empty()) p.stdin_file = expand(c.agent.stdin_file, vars, where);
  p.cwd = ws;
  p.log = dir / "agent.log";
  p.wall_s = c.wall_s;
  p.grace_s = c.grace_s;
  {
    std::ofstream(p.log, std::ios::app) << fmt::format("=== d2k batch: try {} at {}: {}\n", a.tries, utc_now(),
                                                       fmt::join(p.argv, " "));
  }
  return run_process(p, ctx.stop, [&](int pgid) {
    a.pgid = pgid;
    write_attempt(dir, a);
  });
}

/// Phase 3: the runner's own check, from the pristine `check` (the agent may have edited the
/// workspace's copy).
ProcessResult run_check(const AttemptContext& ctx, const AttemptRecord& a, const fs::path& dir, const fs::path& ws) {
  const WorkspaceKey key{a.task, a.track, parse_level(a.level).level};
  fs::copy_file(ctx.run_dir / "workspaces" / key.folder() / "check", ws / "check", fs::copy_options::overwrite_existing);
  ProcessSpec p;
  p.argv = {(ws / "check").string()};
  if (!ctx.d2k_exe.empty()) p.env["D2K"] = ctx.d2k_exe;
  if (!ctx.config.dataset.empty()) p.env["D2K_DATASET"] = ctx.config.dataset;
  p.env["D2K_CHECK_JSON"] = (dir / "check.json").string();
  p.cwd = ws;
  p.log = dir / "check.log";
  p.wall_s = ctx.config.check_wall_s;
  p.grace_s = ctx.config.grace_s;
  fs::remove(dir / "check.json");
  return run_process(p, ctx.stop);
}

void reset_outcome(AttemptRecord& a) {
  a.failure.reset();
  a.reason.clear();
  a.exit_code.reset();
  a.signal.reset();
  a.wall_s.reset();
  a.turns.reset();
  a.ended.clear();
  a.check_exit.reset();
  a.verdict.clear();
  a.speedup_vs_naive.reset();
}

/// Phase 4: the final record from the agent's and the check's outcomes.
void finish(AttemptRecord& a, const Classified& agent, const CheckVerdict& v, int check_exit) {
  a.state = AttemptState::done;
  a.check_exit = check_exit;
  a.verdict = v.verdict;
  a.speedup_vs_naive = v.speedup_vs_naive;
  if (agent.failure) {
    a.failure = agent.failure;
    a.reason = agent.reason;
  } else if (v.verdict == "NOT_RUN_NO_GPU") {
    a.reason = "solution built; stages not run where the check ran: no GPU, or bench rows skipped (naive not built or failed; see the traces)";
  } else if (v.verdict != "PASSED") {
    a.failure = "agent";
    a.reason = fmt::format("broken solution: {}{}", v.verdict.empty() ? "no verdict" : v.verdict,
                           v.message.empty() ? "" : ": " + v.message.substr(0, 300));
  }
  a.ended = utc_now();
}

}  // namespace

Classified classify_agent(const ProcessResult& r, const RunConfig& c) {
  if (!r.started) return {true, "infra", fmt::format("agent could not start: {} ({})", r.spawn_error, c.agent.command.front())};
  if (r.timed_out) return {false, "agent", fmt::format("agent timed out after the wall budget of {:g} s", c.wall_s)};
  if (r.signal && !r.signal_by_runner)
    return {true, "infra", fmt::format("agent killed by signal {} ({}) that the runner did not send", r.signal,
                                       strsignal(r.signal))};
  if (r.exit_code == 127)  // the shell's "command not found" inside a wrapper script
    return {true, "infra", "agent exited 127 (a command it runs was not found)"};
  if (r.exit_code != 0) return {false, "agent", fmt::format("agent exited with status {}", r.exit_code)};
  return {};
}

Classified classify_check(const ProcessResult& r) {
  if (!r.started) return {true, "infra", fmt::format("check could not start: {}", r.spawn_error)};
  if (r.timed_out) return {true, "infra", "check ran past its wall budget"};
  if (r.signal) return {true, "infra", fmt::format("check killed by signal {}", r.signal)};
  switch (r.exit_code) {
    case 0: case 1: case 3: return {};
    case kCheckExitNoAnswer: return {true, "infra", "check: no answer from the evaluation service"};
    case 126: case 127: return {true, "infra", fmt::format("check: d2k not found or not executable (exit {})", r.exit_code)};
    default: return {true, "infra", fmt::format("check: error of the evaluator (exit {})", r.exit_code)};
  }
}

CheckVerdict verdict_from_traces(const fs::path& check_json, int check_exit) {
  CheckVerdict v;
  std::ifstream f(check_json);
  double log_sum = 0;
  int timed = 0;
  bool any_solution = false;
  for (std::string line; std::getline(f, line);) {
    json t = json::parse(line, nullptr, false);
    if (!t.is_object() || t.value("target", "") != "solution") continue;
    any_solution = true;
    const std::string status = t.value("status", "");
    if (status != "PASSED" && status != "SKIPPED" && v.verdict.empty()) {
      v.verdict = status;
      v.message = t.value("message", "");
    }
    if (status == "PASSED" && t.contains("roofline") && t["roofline"].contains("speedup_vs_naive") &&
        t["roofline"]["speedup_vs_naive"].is_number() && t["roofline"]["speedup_vs_naive"].get<double>() > 0) {
      log_sum += std::log(t["roofline"]["speedup_vs_naive"].get<double>());
      ++timed;
    }
  }
  if (timed) v.speedup_vs_naive = std::exp(log_sum / timed);
  if (!v.verdict.empty()) return v;
  if (check_exit == 3) v.verdict = "NOT_RUN_NO_GPU";
  else if (check_exit == 0 && any_solution) v.verdict = "PASSED";
  else if (check_exit != 0) v.verdict = "FAILED", v.message = fmt::format("check exited {} (see check.log)", check_exit);
  return v;
}

void run_attempt(const AttemptContext& ctx, const fs::path& dir) {
  AttemptRecord a = read_attempt(dir);
  if (a.state == AttemptState::done || a.state == AttemptState::infra_error) return;
  const RunConfig& c = ctx.config;
  if (a.state == AttemptState::running) {
    kill_group(a.pgid);  // an agent left by a runner that died
    ctx.log(fmt::format("{}: was running when the last runner stopped: restarts", a.id));
  }
  for (;;) {
    const fs::path ws = fresh_workspace(ctx, a, dir);
    reset_outcome(a);
    a.state = AttemptState::running;
    a.tries += 1;
    a.started = utc_now();
    write_attempt(dir, a);
    const ProcessResult r = run_agent(ctx, a, dir, ws);
    if (r.stopped) return;  // stays running: the next `batch run` restarts it
    a.pgid = 0;
    a.wall_s = r.wall_s;
    if (r.started && !r.signal) a.exit_code = r.exit_code;
    if (r.signal) a.signal = r.signal;
    if (!c.agent.turns_marker.empty()) a.turns = count_turns(dir / "agent.log", c.agent.turns_marker);
    const Classified agent = classify_agent(r, c);
    if (agent.infra) {
      a.failure = "infra";
      a.reason = agent.reason;
      a.infra_failures += 1;
      if (a.infra_failures > c.retries) {
        a.state = AttemptState::infra_error;
        a.ended = utc_now();
        write_attempt(dir, a);
        ctx.log(fmt::format("{}: infra_error after {} tries: {}", a.id, a.tries, a.reason));
        return;
      }
      write_attempt(dir, a);
      ctx.log(fmt::format("{}: {} (infra): retry {} of {} in {:g} s", a.id, a.reason, a.infra_failures, c.retries,
                          backoff_s(c, a.infra_failures)));
      backoff(ctx, backoff_s(c, a.infra_failures));
      if (stopped(ctx)) return;
      continue;
    }
    // The check, with its own retries: an unreachable service does not make the agent run again.
    for (int check_try = 1;; ++check_try) {
      const ProcessResult cr = run_check(ctx, a, dir, ws);
      if (cr.stopped) return;
      const Classified ch = classify_check(cr);
      if (!ch.infra) {
        finish(a, agent, verdict_from_traces(dir / "check.json", cr.exit_code), cr.exit_code);
        write_attempt(dir, a);
        ctx.log(fmt::format("{}: done: {}{}", a.id, a.verdict.empty() ? "-" : a.verdict,
                            a.failure ? fmt::format(" ({} failure: {})", *a.failure, a.reason) : std::string()));
        return;
      }
      if (check_try > c.retries) {
        a.state = AttemptState::infra_error;
        a.failure = "infra";
        a.reason = ch.reason;
        a.check_exit = cr.started && !cr.signal ? std::optional<int>(cr.exit_code) : std::nullopt;
        a.ended = utc_now();
        write_attempt(dir, a);
        ctx.log(fmt::format("{}: infra_error: {}", a.id, a.reason));
        return;
      }
      ctx.log(fmt::format("{}: {}: check retry {} of {} in {:g} s", a.id, ch.reason, check_try, c.retries,
                          backoff_s(c, check_try)));
      backoff(ctx, backoff_s(c, check_try));
      if (stopped(ctx)) return;
    }
  }
}

}  // namespace d2k::agent
