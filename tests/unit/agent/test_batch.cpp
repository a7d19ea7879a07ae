// d2k batch with fake agents (tests/fixtures/fake_agent/), CPU only: the runner's own check
// recorded honestly where no GPU is, a broken solution as the agent's failure, a hang killed at
// the wall budget, an infrastructure crash retried then infra_error, resume after SIGKILL of the
// runner without redoing finished attempts, and the status table (tokens and cost from usage.jsonl).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/batch_attempt.h"
#include "agent/batch_process.h"
#include "agent/batch_record.h"
#include "agent/batch_status.h"
#include "agent/batch_template.h"
#include "agent_fixture.h"

namespace d2k::agent {
namespace {

using namespace testing;
using nlohmann::json;

struct BatchRun {
  TempDir tmp;
  std::string name;
  // One small check workload: the runner's check still builds the solution and runs the golden
  // reference on the host, in a fraction of the time of all of them (the CI share stays small).
  std::map<std::string, std::string> env{{"D2K_DATASET", kDataset.string()},
                                         {"D2K_CHECK_ARGS", "--workloads fused_add_rmsnorm-check-7x264"}};

  fs::path runs() const { return tmp.path / "runs"; }
  fs::path dir() const { return runs() / name; }
  fs::path log() const { return tmp.path / "d2k.log"; }

  int setup(const std::string& run_name, const std::string& fake, const std::vector<std::string>& extra) {
    name = run_name;
    std::vector<std::string> argv = {kD2k.string(), "--dataset", kDataset.string(), "batch", "setup", "--name", name,
                                     "--tasks", "fused_add_rmsnorm", "--agent", "script", "--var",
                                     "script=" + (kFakes / fake).string(), "--runs-dir", runs().string(),
                                     "--backoff-s", "0.05", "--grace-s", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return testing::run(argv, env, log());
  }
  std::vector<std::string> run_argv() const {
    return {kD2k.string(), "batch", "run", name, "--runs-dir", runs().string()};
  }
  int run() { return testing::run(run_argv(), env, log()); }
  AttemptRecord attempt(const std::string& level, int k = 1) const {
    return read_attempt(dir() / "attempts" / attempt_id("fused_add_rmsnorm", "cuda", parse_level(level), k));
  }
  std::string output() const { return slurp(log()); }
};

TEST(BatchTemplate, ExpandsPlaceholdersAndRefusesUnknownOnes) {
  EXPECT_EQ(expand("--max-turns={max_turns} {{x}}", {{"max_turns", "7"}}, "t"), "--max-turns=7 {x}");
  EXPECT_THROW(expand("{nope}", {{"max_turns", "7"}}, "t"), std::runtime_error);
  const AgentTemplate t = parse_template("command = [\"a\", \"{model}\"]\nstdin = \"{instruction}\"\n", "x", "x.toml");
  EXPECT_EQ(t.command, (std::vector<std::string>{"a", "{model}"}));
  EXPECT_THROW(parse_template("command = []\n", "x", "x.toml"), std::runtime_error);
  EXPECT_THROW(parse_template("command = [\"a\"]\nbogus = 1\n", "x", "x.toml"), std::runtime_error);
  EXPECT_THROW(parse_template("command = [\"a\"\n", "x", "x.toml"), std::runtime_error);
  // Every shipped template parses and names only known placeholders.
  std::map<std::string, std::string> vars{{"script", "s"}};
  for (const auto& n : builtin_placeholders()) vars[n] = "x";
  for (const char* name : {"claude-code", "codex", "mini-swe-agent", "script"}) {
    const AgentTemplate shipped = load_template(name, kSource / "agent" / "templates");
    EXPECT_NO_THROW(check_template(shipped, vars)) << name;
  }
}

TEST(BatchProcess, KillsTheWholeGroupAtTheWallBudget) {
  TempDir tmp;
  ProcessSpec p;
  p.argv = {(kFakes / "hang.sh").string()};
  p.log = tmp.path / "log";
  p.wall_s = 0.5;
  p.grace_s = 0.5;
  int pgid = 0;
  const ProcessResult r = run_process(p, nullptr, [&](int g) { pgid = g; });
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.signal_by_runner);
  EXPECT_LT(r.wall_s, 3.0);
  EXPECT_GT(pgid, 1);
  EXPECT_TRUE(wait_for([&] { return ::kill(-pgid, 0) != 0; }, 2)) << "the hang's sleep outlived its group";
  p.argv = {"/nonexistent/agent"};
  const ProcessResult m = run_process(p, nullptr);
  EXPECT_FALSE(m.started);
  EXPECT_FALSE(m.spawn_error.empty());
}

TEST(BatchVerdict, FromTraces) {
  TempDir tmp;
  const fs::path f = tmp.path / "check.json";
  std::ofstream(f) << R"({"target":"reference","status":"PASSED"})" << "\n"
                   << R"({"target":"solution","status":"PASSED","roofline":{"speedup_vs_naive":2.0}})" << "\n"
                   << R"({"target":"solution","status":"PASSED","roofline":{"speedup_vs_naive":8.0}})" << "\n";
  CheckVerdict v = verdict_from_traces(f, 0);
  EXPECT_EQ(v.verdict, "PASSED");
  ASSERT_TRUE(v.speedup_vs_naive);
  EXPECT_NEAR(*v.speedup_vs_naive, 4.0, 1e-9);
  std::ofstream(f, std::ios::app) << R"({"target":"solution","status":"INCORRECT_NUMERICAL","message":"out: 3 of 9"})" << "\n";
  v = verdict_from_traces(f, 1);
  EXPECT_EQ(v.verdict, "INCORRECT_NUMERICAL");
  EXPECT_EQ(v.message, "out: 3 of 9");
  std::ofstream(f) << R"({"target":"solution","status":"SKIPPED"})" << "\n";
  EXPECT_EQ(verdict_from_traces(f, 3).verdict, "NOT_RUN_NO_GPU");
}

TEST(BatchClassify, AgentAndCheckOutcomes) {
  RunConfig c;
  c.agent.command = {"agent"};
  c.wall_s = 5;
  ProcessResult r;
  r.started = true;
  r.exit_code = 0;
  EXPECT_FALSE(classify_agent(r, c).failure);
  r.exit_code = 3;
  EXPECT_EQ(classify_agent(r, c).failure, "agent");
  EXPECT_FALSE(classify_agent(r, c).infra);
  r.timed_out = true, r.signal = SIGKILL, r.signal_by_runner = true;
  EXPECT_EQ(classify_agent(r, c).failure, "agent");
  r.timed_out = false, r.signal_by_runner = false;  // SIGKILL from elsewhere (the OOM killer)
  EXPECT_TRUE(classify_agent(r, c).infra);
  r = ProcessResult{};
  r.spawn_error = "No such file or directory";
  EXPECT_TRUE(classify_agent(r, c).infra);
  // The check: verdict exits are not failures here; no answer, d2k missing, errors, signals are infra.
  ProcessResult k;
  k.started = true;
  for (int code : {0, 1, 3}) {
    k.exit_code = code;
    EXPECT_FALSE(classify_check(k).infra) << code;
  }
  for (int code : {2, kCheckExitNoAnswer, 126, 127}) {
    k.exit_code = code;
    EXPECT_TRUE(classify_check(k).infra) << code;
  }
  k.exit_code = kCheckExitNoAnswer;
  EXPECT_NE(classify_check(k).reason.find("no answer"), std::string::npos);
  k.exit_code = -1, k.signal = SIGSEGV;
  EXPECT_TRUE(classify_check(k).infra);
}

// The expert copied in: the runner's check builds it and says plainly that nothing ran on a GPU.
TEST(Batch, CopyExpertIsCheckedByTheRunnerAndRecordedHonestly) {
  BatchRun r;
  ASSERT_EQ(r.setup("expert", "copy_expert.sh", {"--levels", "design", "--wall-s", "60"}), 0) << r.output();
  ASSERT_EQ(r.run(), 0) << r.output();
  const AttemptRecord a = r.attempt("design");
  EXPECT_EQ(a.state, AttemptState::done);
  EXPECT_FALSE(a.failure) << a.reason;
  EXPECT_EQ(a.check_exit, 3);
  EXPECT_EQ(a.verdict, "NOT_RUN_NO_GPU");
  EXPECT_FALSE(a.speedup_vs_naive);
  EXPECT_EQ(a.exit_code, 0);
  const fs::path dir = r.dir() / "attempts" / a.id;
  EXPECT_EQ(slurp(dir / "workspace" / "solution" / "solution.cu"), slurp(kDataset / "fused_add_rmsnorm" / "expert.cu"));
  // check.json holds the traces: the solution built (no COMPILE_ERROR) and was skipped, not passed.
  bool solution_skipped = false;
  std::istringstream in(slurp(dir / "check.json"));
  for (std::string line; std::getline(in, line);) {
    const json t = json::parse(line);
    if (t["target"] == "solution") {
      EXPECT_EQ(t["status"], "SKIPPED");
      solution_skipped = true;
    }
  }
  EXPECT_TRUE(solution_skipped);
  EXPECT_NE(slurp(dir / "agent.log").find("copied the expert"), std::string::npos);
}

// The agent claims success with a file that does not compile: the runner's check decides. Then
// the status table of that run, with tokens and cost from a usage.jsonl as the proxy writes it.
TEST(Batch, BrokenSolutionIsTheAgentsFailureAndStatusShowsIt) {
  BatchRun r;
  ASSERT_EQ(r.setup("broken", "broken.sh", {"--levels", "baseline,L1", "--concurrency", "2"}), 0) << r.output();
  {  // before the run: every row pending
    const RunStatus s = read_status(r.dir());
    EXPECT_EQ(s.counts.at("pending"), 2);
    EXPECT_EQ(s.counts.at("total"), 2);
  }
  ASSERT_EQ(r.run(), 0) << r.output();
  for (const auto& level : {"baseline", "L1"}) {
    const AttemptRecord a = r.attempt(level);
    EXPECT_EQ(a.state, AttemptState::done);
    EXPECT_EQ(a.failure, "agent");
    EXPECT_EQ(a.verdict, "COMPILE_ERROR");
    EXPECT_EQ(a.check_exit, 1);
    EXPECT_EQ(a.exit_code, 0) << "the agent said it was done";
    EXPECT_NE(a.reason.find("broken solution: COMPILE_ERROR"), std::string::npos) << a.reason;
  }
  std::ofstream(r.dir() / "usage.jsonl")
      << R"({"run":"broken","attempt":"fused_add_rmsnorm__cuda__L1__1","input_tokens":1000,"output_tokens":200,"cost_usd":0.0125})" << "\n"
      << R"({"run":"broken","attempt":"fused_add_rmsnorm__cuda__L1__1","input_tokens":500,"output_tokens":100,"cost_usd":0.0025})" << "\n"
      << R"({"run":"other","attempt":"fused_add_rmsnorm__cuda__L1__1","input_tokens":99999,"output_tokens":1,"cost_usd":9})" << "\n"
      << "not json\n";
  const fs::path out = r.tmp.path / "status.txt";
  ASSERT_EQ(testing::run({kD2k.string(), "batch", "status", "broken", "--runs-dir", r.runs().string()}, {}, out), 0);
  const std::string table = slurp(out);
  for (const char* col : {"task", "track", "level", "state", "verdict", "vs_naive", "wall_s", "tokens", "cost_usd"})
    EXPECT_NE(table.find(col), std::string::npos) << col;
  EXPECT_NE(table.find("COMPILE_ERROR (agent)"), std::string::npos) << table;
  EXPECT_NE(table.find("1800"), std::string::npos) << "tokens of L1: 1000+200+500+100\n" << table;
  EXPECT_NE(table.find("0.0150"), std::string::npos) << table;
  EXPECT_EQ(table.find("100000"), std::string::npos) << "another run's usage counted\n" << table;
  EXPECT_NE(table.find("2/2 finished (done 2, infra_error 0)"), std::string::npos) << table;
  EXPECT_NE(table.find("1 line(s) skipped"), std::string::npos) << table;
  const fs::path js = r.tmp.path / "status.json";
  ASSERT_EQ(testing::run({kD2k.string(), "batch", "status", "broken", "--json", "--runs-dir", r.runs().string()}, {}, js), 0);
  const json j = json::parse(slurp(js));
  EXPECT_EQ(j["counts"]["done"], 2);
  for (const auto& a : j["attempts"]) {
    if (a["level"] == "L1") {
      EXPECT_EQ(a["usage"]["input_tokens"], 1500);
    } else {
      EXPECT_TRUE(a["usage"].is_null());
    }
  }
}

TEST(Batch, HangIsKilledAtTheWallBudget) {
  BatchRun r;
  ASSERT_EQ(r.setup("hang", "hang.sh", {"--levels", "L1", "--wall-s", "1"}), 0) << r.output();
  ASSERT_EQ(r.run(), 0) << r.output();
  const AttemptRecord a = r.attempt("L1");
  EXPECT_EQ(a.state, AttemptState::done);
  EXPECT_EQ(a.failure, "agent");
  EXPECT_NE(a.reason.find("timed out"), std::string::npos) << a.reason;
  ASSERT_TRUE(a.wall_s);
  EXPECT_GE(*a.wall_s, 1.0);
  EXPECT_LT(*a.wall_s, 4.0);
  EXPECT_EQ(a.tries, 1) << "a timeout is the agent's failure: not retried";
}

TEST(Batch, InfrastructureCrashIsRetriedThenInfraError) {
  BatchRun r;
  const fs::path count = r.tmp.path / "starts";
  r.env["FAKE_AGENT_COUNT"] = count.string();
  ASSERT_EQ(r.setup("crash", "crash.sh", {"--levels", "L1", "--retries", "2"}), 0) << r.output();
  ASSERT_EQ(r.run(), 0) << r.output();
  const AttemptRecord a = r.attempt("L1");
  EXPECT_EQ(a.state, AttemptState::infra_error);
  EXPECT_EQ(a.failure, "infra");
  EXPECT_NE(a.reason.find("signal 9"), std::string::npos) << a.reason;
  EXPECT_EQ(a.tries, 3);
  EXPECT_EQ(a.infra_failures, 3);
  EXPECT_EQ(slurp(count), "start\nstart\nstart\n");
  EXPECT_FALSE(fs::exists(r.dir() / "attempts" / a.id / "check.json")) << "no check after an infra failure";
  // A finished run is not redone.
  ASSERT_EQ(r.run(), 0);
  EXPECT_EQ(slurp(count), "start\nstart\nstart\n");
}

TEST(Batch, MissingAgentBinaryIsInfra) {
  BatchRun r;
  ASSERT_EQ(r.setup("missing", "no_such_agent.sh", {"--levels", "L1", "--retries", "1"}), 0) << r.output();
  ASSERT_EQ(r.run(), 0) << r.output();
  const AttemptRecord a = r.attempt("L1");
  EXPECT_EQ(a.state, AttemptState::infra_error);
  EXPECT_NE(a.reason.find("could not start"), std::string::npos) << a.reason;
  EXPECT_EQ(a.tries, 2);
}

// SIGKILL of `d2k batch run` while an attempt runs: the next run finishes it and redoes nothing
// that was finished. attempt.json is the state; the fake agent counts its starts per attempt.
TEST(Batch, ResumeAfterSigkillRedoesNothingFinished) {
  BatchRun r;
  const fs::path count = r.tmp.path / "starts";
  r.env["FAKE_AGENT_COUNT"] = count.string();
  r.env["FAKE_AGENT_SLEEP"] = "1.5";
  ASSERT_EQ(r.setup("resume", "slow_copy.sh", {"--levels", "baseline,L1,L1+L2", "--concurrency", "1"}), 0)
      << r.output();
  const pid_t pid = start(r.run_argv(), r.env, r.log());
  // Wait until one attempt is done and the next is running, then kill the runner outright.
  const bool ready = wait_for(
      [&] {
        int done = 0, running = 0;
        for (const auto& l : {"baseline", "L1", "L1+L2"}) {
          const AttemptRecord a = r.attempt(l);
          done += a.state == AttemptState::done;
          running += a.state == AttemptState::running && a.pgid > 0;
        }
        return done >= 1 && running == 1;
      },
      120);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(ready) << r.output();
  std::map<std::string, AttemptState> before;
  for (const auto& l : {"baseline", "L1", "L1+L2"}) before[l] = r.attempt(l).state;
  ASSERT_EQ(r.run(), 0) << r.output();
  std::map<std::string, int> starts;
  std::istringstream in(slurp(count));
  for (std::string w, id; in >> w >> id;) ++starts[id];
  for (const auto& l : {"baseline", "L1", "L1+L2"}) {
    const AttemptRecord a = r.attempt(l);
    EXPECT_EQ(a.state, AttemptState::done) << l;
    const int want = before[l] == AttemptState::running ? 2 : 1;  // finished or pending: once
    EXPECT_EQ(starts[a.id], want) << l << " was " << state_name(before[l]) << " when the runner died";
  }
  EXPECT_NE(r.output().find("restarts"), std::string::npos);
}

// Ctrl-C: the runner ends the running agent's whole group, leaves the attempt `running` (so the
// next run restarts it) and exits 130 at once, without waiting for the wall budget.
TEST(Batch, CtrlCStopsAgentsAndLeavesThemToRestart) {
  BatchRun r;
  ASSERT_EQ(r.setup("ctrlc", "hang.sh", {"--levels", "L1", "--wall-s", "600"}), 0) << r.output();
  const pid_t pid = start(r.run_argv(), r.env, r.log());
  int pgid = 0;
  ASSERT_TRUE(wait_for([&] { return (pgid = r.attempt("L1").pgid) > 0; }, 30)) << r.output();
  ::kill(pid, SIGINT);
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  ::waitpid(pid, &status, 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_EQ(r.attempt("L1").state, AttemptState::running);
  EXPECT_TRUE(wait_for([&] { return ::kill(-pgid, 0) != 0; }, 2)) << "the agent's group outlived Ctrl-C";
  EXPECT_NE(r.output().find("interrupted"), std::string::npos) << r.output();
}

TEST(Batch, SetupRefusesBadInput) {
  BatchRun r;
  EXPECT_EQ(r.setup("bad", "broken.sh", {"--levels", "L7"}), 2);
  EXPECT_NE(r.output().find("unknown level 'L7'"), std::string::npos) << r.output();
  EXPECT_EQ(r.setup("twice", "broken.sh", {"--levels", "L1"}), 0);
  EXPECT_EQ(r.setup("twice", "broken.sh", {"--levels", "L1"}), 2);
  EXPECT_NE(r.output().find("the run exists"), std::string::npos);
  EXPECT_EQ(testing::run({kD2k.string(), "batch", "setup", "--name", "x", "--tasks", "fused_add_rmsnorm", "--agent",
                          "script", "--runs-dir", r.runs().string()},
                         r.env, r.log()),
            2);
  EXPECT_NE(r.output().find("unknown placeholder {script}"), std::string::npos) << r.output();
}

}  // namespace
}  // namespace d2k::agent
