#include <gtest/gtest.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "exec/sandbox.h"
#include "exec_test_util.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;
const std::string kProbe = test::helper_program("sandbox_probe", D2K_SANDBOX_PROBE);

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string describe(const ProcessResult& r) {
  std::string s = "status=" + std::string(status_name(r.status)) + " cause=" + r.cause + "\nlayers:";
  for (const auto& l : r.layers) s += " " + l;
  s += "\nskipped:";
  for (const auto& l : r.layers_skipped) s += "\n  " + l;
  s += "\nstderr: " + r.stderr_tail;
  return s;
}

const nlohmann::json* find_message(const ProcessResult& r, const std::string& type) {
  for (const auto& m : r.messages)
    if (m.value("type", "") == type) return &m;
  return nullptr;
}

/// The file-system modes this machine can test: bwrap where it works, the mount namespace.
std::vector<FsIsolation> fs_modes() {
  std::vector<FsIsolation> m{FsIsolation::mount_namespace};
  if (bwrap_available()) m.push_back(FsIsolation::bwrap);
  return m;
}

class SandboxFs : public ::testing::TestWithParam<FsIsolation> {
 protected:
  void SetUp() override {
    if (GetParam() != FsIsolation::mount_namespace) return;
    auto ns = permitted_namespaces();
    const bool mount_ok = has(ns, "mount") && (geteuid() == 0 || has(ns, "user"));
    if (!mount_ok)
      GTEST_SKIP() << "the kernel refuses this user a mount namespace"
                   << (geteuid() == 0 ? "" : " (unprivileged user namespaces are off)")
                   << ", so the read-only file system cannot be built here";
  }
  SandboxOptions opts() const {
    SandboxOptions o;
    o.fs = GetParam();
    o.stage_timeouts = {{"start", 20.0}};
    o.total_timeout = 60;
    return o;
  }
};

TEST(Sandbox, ReportsWhatThisMachineAllows) {
  std::cout << "euid " << geteuid() << "; namespaces permitted:";
  for (const auto& n : permitted_namespaces()) std::cout << " " << n;
  std::cout << "; bwrap " << (bwrap_available() ? "works" : "absent or refused") << "\n";
  SUCCEED();
}

TEST_P(SandboxFs, ExitCodesAndLayers) {
  ProcessResult ok = run_sandboxed({kProbe, "exit", "0"}, opts());
  EXPECT_EQ(ok.status, Status::PASSED) << describe(ok);
  EXPECT_EQ(ok.exit_code, 0);
  std::cout << describe(ok) << "\n";
  if (geteuid() == 0) {
    EXPECT_TRUE(has(ok.layers, "drop_privileges")) << describe(ok);
  }
  EXPECT_TRUE(has(ok.layers, "seccomp")) << describe(ok);
  EXPECT_TRUE(has(ok.layers, "fs_readonly")) << describe(ok);

  ProcessResult bad = run_sandboxed({kProbe, "exit", "3"}, opts());
  EXPECT_EQ(bad.status, Status::RUNTIME_ERROR);
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.cause, "exited with code 3");
}

TEST_P(SandboxFs, SignalsAreNamed) {
  ProcessResult segv = run_sandboxed({kProbe, "segv"}, opts());
  EXPECT_EQ(segv.status, Status::RUNTIME_ERROR);
  EXPECT_EQ(segv.signal, SIGSEGV) << describe(segv);
  EXPECT_EQ(segv.signal_name, "SIGSEGV");
  EXPECT_NE(segv.cause.find("invalid memory access"), std::string::npos) << segv.cause;

  ProcessResult ab = run_sandboxed({kProbe, "abort"}, opts());
  EXPECT_EQ(ab.signal, SIGABRT) << describe(ab);
  EXPECT_EQ(ab.signal_name, "SIGABRT");
}

TEST_P(SandboxFs, IdentityHomeAndScratch) {
  ProcessResult r = run_sandboxed({kProbe, "ids"}, opts());
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* ids = find_message(r, "ids");
  ASSERT_NE(ids, nullptr) << describe(r);
  if (geteuid() == 0) {
    // Each sandbox runs as a uid of its own, so RLIMIT_NPROC binds each one separately.
    const auto uid = (*ids)["uid"].get<std::uint64_t>();
    EXPECT_GE(uid, kUniqueUidBase) << ids->dump();
    EXPECT_LT(uid, std::uint64_t{kUniqueUidBase} + kUniqueUidCount) << ids->dump();
    ProcessResult again = run_sandboxed({kProbe, "ids"}, opts());
    const nlohmann::json* ids2 = find_message(again, "ids");
    ASSERT_NE(ids2, nullptr) << describe(again);
    EXPECT_NE((*ids2)["uid"], (*ids)["uid"]) << "two sandboxes, two uids";
    auto shared = opts();
    shared.unique_uid = false;
    ProcessResult fixed = run_sandboxed({kProbe, "ids"}, shared);
    const nlohmann::json* ids3 = find_message(fixed, "ids");
    ASSERT_NE(ids3, nullptr) << describe(fixed);
    EXPECT_EQ((*ids3)["uid"], 65534) << ids3->dump();
  }
  EXPECT_EQ((*ids)["capeff"], "0000000000000000") << "no capabilities inside: " << ids->dump();
  EXPECT_EQ((*ids)["home"], r.scratch_dir.string());
  // A user name for programs that ask (the uid has no passwd entry; torch.compile asks).
  EXPECT_EQ((*ids)["user"], "d2k-sandbox");
  EXPECT_EQ((*ids)["cwd"], r.scratch_dir.string());
  if (has(r.layers, "pid_namespace") && GetParam() == FsIsolation::mount_namespace) {
    EXPECT_LE((*ids)["pid"].get<int>(), 3) << "a fresh PID namespace numbers from 1";
  }
}

TEST_P(SandboxFs, NoWritesOutsideScratch) {
  test::TempDir outside("d2k-outside");
  chmod(outside.path().c_str(), 0777);  // writable by anyone: only the sandbox may stop it
  const std::string in_scratch = "inside.txt";
  const std::string etc = "/etc/d2k-sandbox-probe";
  const std::string other = (outside.path() / "escaped.txt").string();
  ProcessResult r = run_sandboxed({kProbe, "write", in_scratch, etc, other}, [&] {
    auto o = opts();
    o.keep_scratch = true;
    return o;
  }());
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* w = find_message(r, "write");
  ASSERT_NE(w, nullptr) << describe(r);
  EXPECT_EQ((*w)["results"][in_scratch], 0) << w->dump();
  EXPECT_NE((*w)["results"][etc], 0) << w->dump();
  EXPECT_NE((*w)["results"][other], 0) << w->dump();
  EXPECT_TRUE(fs::exists(r.scratch_dir / in_scratch));
  EXPECT_FALSE(fs::exists(etc));
  EXPECT_FALSE(fs::exists(other));
  fs::remove_all(r.scratch_dir);
}

TEST_P(SandboxFs, ThreadNamesCanBeWrittenThroughProc) {
  // The CUDA driver writes /proc/self/task/<tid>/comm in cuInit and fails if it cannot; a
  // read-only /proc broke every sandboxed CUDA worker on the H200 (2026-11-29).
  ProcessResult r = run_sandboxed({kProbe, "comm"}, opts());
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* m = find_message(r, "comm");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["errno"], 0) << m->dump();
}

TEST_P(SandboxFs, SocketsOtherThanUnixAreRefused) {
  ProcessResult r = run_sandboxed({kProbe, "socket"}, opts());
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* s = find_message(r, "socket");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*s)["inet"], EACCES) << s->dump();
  EXPECT_EQ((*s)["inet6"], EACCES) << s->dump();
  EXPECT_EQ((*s)["netlink"], EACCES) << s->dump();
  EXPECT_EQ((*s)["unix"], 0) << s->dump();
}

TEST_P(SandboxFs, NetworkNamespaceHasNoRoute) {
  auto o = opts();
  o.seccomp = false;  // only the namespace stands between the child and the network
  ProcessResult r = run_sandboxed({kProbe, "connect"}, o);
  if (!has(r.layers, "net_namespace")) GTEST_SKIP() << "no network namespace here: " << describe(r);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* c = find_message(r, "connect");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["errno"], ENETUNREACH) << c->dump();
}

TEST_P(SandboxFs, PtraceOfTheParentKillsTheChild) {
  ProcessResult r = run_sandboxed({kProbe, "ptrace"}, opts());
  EXPECT_EQ(r.status, Status::RUNTIME_ERROR) << describe(r);
  EXPECT_EQ(r.signal, SIGSYS) << describe(r);
  EXPECT_NE(r.cause.find("seccomp"), std::string::npos) << r.cause;
  EXPECT_EQ(find_message(r, "ptrace"), nullptr) << "the call must not return";
}

TEST_P(SandboxFs, ForkBombHitsTheProcessLimit) {
  if (geteuid() == 0 && GetParam() != FsIsolation::bwrap) {
    // Root ignores RLIMIT_NPROC; the drop to nobody makes it bind.
  }
  auto o = opts();
  o.rlimits.processes = 24;
  ProcessResult r = run_sandboxed({kProbe, "forkbomb", "2000"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* f = find_message(r, "forkbomb");
  ASSERT_NE(f, nullptr);
  EXPECT_LT((*f)["forked"].get<int>(), 100) << f->dump();
  EXPECT_EQ((*f)["errno"], EAGAIN) << f->dump();
}

TEST_P(SandboxFs, StageDeadlinesNameTheStage) {
  auto o = opts();
  o.stage_timeouts = {{"start", 1.0}};
  ProcessResult hang = run_sandboxed({kProbe, "sleep", "100"}, o);
  EXPECT_EQ(hang.status, Status::TIMEOUT) << describe(hang);
  EXPECT_EQ(hang.timeout_stage, "start");
  EXPECT_LT(hang.wall_seconds, 10.0);

  o.stage_timeouts = {{"start", 20.0}, {"check", 1.0}};
  ProcessResult check = run_sandboxed({kProbe, "stage", "check", "100"}, o);
  EXPECT_EQ(check.status, Status::TIMEOUT) << describe(check);
  EXPECT_EQ(check.timeout_stage, "check");
  EXPECT_EQ(check.stages, std::vector<std::string>{"check"});
  EXPECT_NE(check.cause.find("stage 'check'"), std::string::npos) << check.cause;

  o.stage_timeouts = {{"start", 20.0}, {"check", 20.0}};
  o.total_timeout = 1.0;
  ProcessResult total = run_sandboxed({kProbe, "stage", "check", "100"}, o);
  EXPECT_EQ(total.status, Status::TIMEOUT);
  EXPECT_EQ(total.timeout_stage, "total");
}

TEST_P(SandboxFs, ChannelRoundTrip) {
  auto o = opts();
  int calls = 0;
  o.on_message = [&](const nlohmann::json& msg, ParentChannel& ch) {
    ++calls;
    if (msg.value("type", "") == "hello") ch.send({{"type", "reply"}, {"value", msg["value"].get<int>() + 1}});
  };
  ProcessResult r = run_sandboxed({kProbe, "echo"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_EQ(calls, 2);
  const nlohmann::json* e = find_message(r, "echoed");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ((*e)["reply"]["value"], 42) << e->dump();
  EXPECT_EQ(r.last_stage, "check");
}

// Issue #14: the parent counts the threads of the child's process group itself (the worker's own
// count is the candidate's to forge); on_start hands it the group before the child runs.
TEST_P(SandboxFs, ParentCountsTheGroupsThreadsItself) {
  auto o = opts();
  pid_t group = -1;
  int before = -1, after = -1;
  o.on_start = [&](pid_t pid) { group = pid; };
  o.on_message = [&](const nlohmann::json& msg, ParentChannel& ch) {
    const std::string type = msg.value("type", "");
    (type == "before" ? before : after) = process_group_threads(group);
    ch.send({{"type", "go"}});
  };
  ProcessResult r = run_sandboxed({kProbe, "threads", "3"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  ASSERT_GT(group, 0);
  EXPECT_GE(before, 1);
  EXPECT_EQ(after, before + 3) << "three threads started between the two counts";
  // Under bwrap the group's last process (bwrap's own) can still be exiting when the run returns:
  // it must be gone within a moment, not at once.
  int left = process_group_threads(group);
  for (int i = 0; i < 200 && left != -1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left = process_group_threads(group);
  }
  EXPECT_EQ(left, -1) << "the group is gone after the run";
}

TEST_P(SandboxFs, ChannelFloodIsCut) {
  auto o = opts();
  o.channel_limit_bytes = 8u << 20;
  ProcessResult r = run_sandboxed({kProbe, "flood"}, o);
  EXPECT_EQ(r.status, Status::RUNTIME_ERROR) << describe(r);
  EXPECT_NE(r.cause.find("channel"), std::string::npos) << r.cause;
}

TEST_P(SandboxFs, OutputTailIsBounded) {
  auto o = opts();
  o.output_tail_bytes = 1000;
  ProcessResult r = run_sandboxed({kProbe, "spew", "3000000"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_EQ(r.stdout_bytes, 3000000u);
  EXPECT_EQ(r.stdout_tail.size(), 1000u);
}

TEST_P(SandboxFs, OutputHeadKeepsTheFirstBytes) {
  auto o = opts();
  o.output_tail_bytes = 100;
  o.output_head_bytes = 64;
  ProcessResult r = run_sandboxed({kProbe, "spew_lines", "100000"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_EQ(r.stdout_head.rfind("line 1\nline 2\n", 0), 0u) << r.stdout_head;
  EXPECT_EQ(r.stdout_head.size(), 64u);
  EXPECT_NE(r.stdout_tail.find("line 100000\n"), std::string::npos) << r.stdout_tail;
  EXPECT_GT(r.stdout_bytes, 100000u);
}

/// A minimal root shows the program, the system folders, the read-only and scratch paths, and
/// nothing else of the host: not a world-readable file beside them, not /etc/passwd, not /home.
TEST_P(SandboxFs, MinimalRootShowsOnlyWhatWasBound) {
  const fs::path outside_dir = test::exe_dir() / "d2k-minimal-root-test";
  fs::create_directories(outside_dir / "bound");
  std::ofstream(outside_dir / "bound" / "visible.txt") << "visible-ok";
  std::ofstream(outside_dir / "secret.txt") << "secret-host-bytes";
  fs::permissions(outside_dir / "secret.txt", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  auto o = opts();
  o.minimal_root = true;
  o.allow_fallback = false;
  o.ro_paths = {outside_dir / "bound"};
  const std::string secret = (outside_dir / "secret.txt").string();
  const std::string visible = (outside_dir / "bound" / "visible.txt").string();
  ProcessResult r = run_sandboxed({kProbe, "read", secret, visible, "/etc/passwd", "/usr/include/stdio.h"}, o);
  fs::remove_all(outside_dir);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_TRUE(has(r.layers, "minimal_root")) << describe(r);
  EXPECT_EQ(r.sandbox, GetParam() == FsIsolation::bwrap ? "bwrap" : "mount_namespace");
  const nlohmann::json* m = find_message(r, "read");
  ASSERT_NE(m, nullptr) << describe(r);
  EXPECT_EQ((*m)["results"][secret], ENOENT) << m->dump();
  EXPECT_EQ((*m)["results"]["/etc/passwd"], ENOENT) << m->dump();
  EXPECT_EQ((*m)["results"][visible], "visible-ok") << m->dump();
  EXPECT_TRUE((*m)["results"]["/usr/include/stdio.h"].is_string()) << "the toolchain stays visible: " << m->dump();
}

/// A read-only path reached through a symbolic link inside another bound folder (as
/// /usr/local/cuda -> cuda-13.0 inside /usr) is bound at its canonical path: bubblewrap
/// refused to bind onto the link ("Can't bind mount").
TEST_P(SandboxFs, ReadOnlyPathsThroughLinksAreCanonicalised) {
  const fs::path dir = test::exe_dir() / "d2k-link-test";
  fs::remove_all(dir);
  fs::create_directories(dir / "toolkit-13.0");
  std::ofstream(dir / "toolkit-13.0" / "version.txt") << "13.0";
  // An absolute link, as /usr/local/cuda's: bubblewrap then refused "Can't bind mount".
  fs::create_directory_symlink(dir / "toolkit-13.0", dir / "toolkit");
  auto o = opts();
  o.minimal_root = true;
  o.allow_fallback = false;
  o.ro_paths = {dir, dir / "toolkit"};
  const std::string through_link = (dir / "toolkit" / "version.txt").string();
  ProcessResult r = run_sandboxed({kProbe, "read", through_link}, o);
  fs::remove_all(dir);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* m = find_message(r, "read");
  ASSERT_NE(m, nullptr) << describe(r);
  EXPECT_EQ((*m)["results"][through_link], "13.0") << m->dump();
}

TEST_P(SandboxFs, OrphansDoNotHoldTheRunOpen) {
  ProcessResult r = run_sandboxed({kProbe, "orphan"}, opts());
  EXPECT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_LT(r.wall_seconds, 5.0) << "the orphan holding stdout must be killed with the group";
}

TEST_P(SandboxFs, WorkerLockdownAllowsThreadsButNotProcesses) {
  ProcessResult t = run_sandboxed({kProbe, "lockdown", "thread"}, opts());
  ASSERT_EQ(t.status, Status::PASSED) << describe(t);
  const nlohmann::json* m = find_message(t, "thread");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["value"], 7);

  ProcessResult f = run_sandboxed({kProbe, "lockdown", "fork"}, opts());
  EXPECT_EQ(f.signal, SIGSYS) << describe(f);
  ProcessResult e = run_sandboxed({kProbe, "lockdown", "exec"}, opts());
  EXPECT_EQ(e.signal, SIGSYS) << describe(e);
}

// Issue #24: the candidate made the worker's GOT writable with a raw mprotect and could have
// written it through /proc/self/mem. After the lockdown neither works; threads and malloc still do.
TEST_P(SandboxFs, WorkerLockdownRefusesWritableProtectionAndProcMemWrites) {
  ProcessResult m = run_sandboxed({kProbe, "lockdown", "mprotect"}, opts());
  ASSERT_EQ(m.status, Status::PASSED) << describe(m);
  const nlohmann::json* mp = find_message(m, "mprotect");
  ASSERT_NE(mp, nullptr);
  EXPECT_EQ((*mp)["write_errno"], EPERM) << mp->dump();
  EXPECT_EQ((*mp)["none_rc"], 0) << mp->dump();

  ProcessResult p = run_sandboxed({kProbe, "lockdown", "procmem"}, opts());
  ASSERT_EQ(p.status, Status::PASSED) << describe(p);
  const nlohmann::json* pm = find_message(p, "procmem");
  ASSERT_NE(pm, nullptr);
  EXPECT_EQ((*pm)["errno"], EACCES) << pm->dump();
  EXPECT_EQ((*pm)["read_ok"], true) << pm->dump();

  ProcessResult a = run_sandboxed({kProbe, "lockdown", "malloc"}, opts());
  ASSERT_EQ(a.status, Status::PASSED) << describe(a);
  const nlohmann::json* am = find_message(a, "malloc");
  ASSERT_NE(am, nullptr);
  EXPECT_EQ((*am)["blocks"], 600);
}

INSTANTIATE_TEST_SUITE_P(Modes, SandboxFs, ::testing::ValuesIn(fs_modes()),
                         [](const ::testing::TestParamInfo<FsIsolation>& i) {
                           return i.param == FsIsolation::bwrap ? std::string("bwrap") : std::string("mount_namespace");
                         });

TEST(Sandbox, BwrapRefusalIsASetupFailureNotTheProgramsExit) {
  if (!bwrap_available()) GTEST_SKIP() << "bwrap is not usable here";
  SandboxOptions o;
  o.fs = FsIsolation::bwrap;
  o.allow_fallback = false;
  // A tmpfs where bubblewrap must create a folder inside read-only /usr: it exits 1 with
  // "bwrap: Can't mkdir ..." before the program runs.
  o.private_tmp_paths = {"/usr/d2k-no-such-folder"};
  ProcessResult r = run_sandboxed({kProbe, "exit", "0"}, o);
  EXPECT_TRUE(r.setup_failed) << describe(r);
  EXPECT_NE(r.cause.find("bwrap: "), std::string::npos) << r.cause;
  // The program's own exit code 1 stays the program's.
  SandboxOptions fine;
  fine.fs = FsIsolation::bwrap;
  ProcessResult one = run_sandboxed({kProbe, "exit", "1"}, fine);
  EXPECT_FALSE(one.setup_failed) << describe(one);
  EXPECT_EQ(one.exit_code, 1);
}

TEST(Sandbox, NoSilentFallbackFromBwrap) {
  if (!bwrap_available() || geteuid() != 0) GTEST_SKIP() << "needs root and a usable bwrap";
  // bubblewrap runs as the unprivileged uid; a folder only root can enter cannot be bound.
  test::TempDir locked("d2k-locked");
  fs::create_directories(locked.path() / "inc");
  chmod(locked.path().c_str(), 0700);
  SandboxOptions o;
  o.fs = FsIsolation::automatic;
  o.minimal_root = true;
  o.allow_fallback = false;
  o.ro_paths = {locked.path() / "inc"};
  ProcessResult r = run_sandboxed({kProbe, "exit", "0"}, o);
  EXPECT_TRUE(r.setup_failed) << describe(r);
  EXPECT_NE(r.cause.find("cannot reach"), std::string::npos) << r.cause;
  EXPECT_NE(r.cause.find("not allowed"), std::string::npos) << r.cause;
  // Asked for, the fallback happens, and the result says so.
  o.allow_fallback = true;
  ProcessResult fb = run_sandboxed({kProbe, "exit", "0"}, o);
  EXPECT_EQ(fb.status, Status::PASSED) << describe(fb);
  EXPECT_EQ(fb.sandbox, "mount_namespace");
  bool said = false;
  for (const auto& s : fb.layers_skipped) said |= s.rfind("bwrap: ", 0) == 0 && s.find("using mount_namespace") != std::string::npos;
  EXPECT_TRUE(said) << describe(fb);
}

TEST(Sandbox, MissingProgramIsASetupFailure) {
  ProcessResult r = run_sandboxed({"/nonexistent/program"}, SandboxOptions{});
  EXPECT_EQ(r.status, Status::RUNTIME_ERROR);
  EXPECT_TRUE(r.setup_failed) << r.cause;
}

TEST(Sandbox, RootWithoutTheDropKeepsNoCapabilities) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  SandboxOptions o;
  o.fs = FsIsolation::mount_namespace;
  o.drop_privileges = false;
  ProcessResult r = run_sandboxed({kProbe, "ids"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_TRUE(has(r.layers, "drop_capabilities")) << describe(r);
  const nlohmann::json* ids = find_message(r, "ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ((*ids)["uid"], 0);
  EXPECT_EQ((*ids)["capeff"], "0000000000000000") << ids->dump();
}

TEST(Sandbox, EveryLayerCanBeSwitchedOff) {
  SandboxOptions o;
  o.pid_namespace = o.net_namespace = o.ipc_namespace = o.uts_namespace = o.mount_namespace = false;
  o.user_namespace_if_unprivileged = false;
  o.fs = FsIsolation::none;
  o.drop_privileges = false;
  o.drop_capabilities = false;
  o.seccomp = false;
  o.no_new_privs = false;
  o.rlimits = Rlimits{};
  o.rlimits.processes = 0;
  o.rlimits.file_size_bytes = 0;
  o.rlimits.open_files = 0;
  o.rlimits.no_core_dumps = false;
  ProcessResult r = run_sandboxed({kProbe, "ids"}, o);
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_TRUE(r.layers.empty()) << describe(r);
  EXPECT_EQ((*find_message(r, "ids"))["uid"], geteuid());
}

}  // namespace
}  // namespace d2k
