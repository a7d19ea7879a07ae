// The queue on PostgreSQL: the test starts its own server in a temp folder (initdb, pg_ctl; no
// system service) and checks that two workers claiming at once never run the same job, that
// leases expire and move on, and that a result is written once. Skips, saying why, when the
// PostgreSQL server binaries or libpqxx are absent.
#include <gtest/gtest.h>
#include <grp.h>
#include <pwd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>

#include "service/api_error.h"
#include "service_fixture.h"

namespace d2k::service {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

/// initdb/pg_ctl: on PATH, else in `pg_config --bindir`.
std::string pg_bin(const std::string& name) {
  for (std::string dir : {std::string("/usr/local/bin"), std::string("/usr/bin")}) {
    if (const char* path = std::getenv("PATH")) {
      std::stringstream ss(path);
      for (std::string d; std::getline(ss, d, ':');)
        if (::access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
    }
    if (::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  }
  if (FILE* p = ::popen("pg_config --bindir 2>/dev/null", "r")) {
    char buf[512] = {};
    const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
    ::pclose(p);
    std::string d = got ? std::string(buf) : "";
    while (!d.empty() && d.back() == '\n') d.pop_back();
    if (!d.empty() && ::access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
  }
  return "";
}

/// Runs argv and waits; as `nobody` when this process is root (PostgreSQL refuses to run as root).
int run(const std::vector<std::string>& argv, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("nobody");
      if (!pw || ::setgroups(0, nullptr) != 0 || ::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0) ::_exit(126);
    }
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0666);
    ::dup2(fd, 1), ::dup2(fd, 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class Postgres : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef D2K_HAVE_PQXX
    GTEST_SKIP() << "this build has no libpqxx (apt-get install libpqxx-dev): the PostgreSQL store is not built";
#endif
    initdb_ = pg_bin("initdb");
    pg_ctl_ = pg_bin("pg_ctl");
    if (initdb_.empty() || pg_ctl_.empty())
      GTEST_SKIP() << "PostgreSQL server binaries (initdb, pg_ctl) not on PATH nor in pg_config --bindir: not tested";
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("nobody");
      ASSERT_NE(pw, nullptr);
      ASSERT_EQ(::chown(tmp_.path.c_str(), pw->pw_uid, pw->pw_gid), 0);
    }
    data_ = tmp_.path / "data";
    log_ = tmp_.path / "pg.log";
    ASSERT_EQ(run({initdb_, "-D", data_.string(), "-A", "trust", "-U", "d2k", "--no-sync", "-E", "UTF8"}, log_), 0)
        << "initdb failed; see " << log_;
    port_ = testing::free_port();
    const std::string opts = "-p " + std::to_string(port_) + " -k " + tmp_.path.string() +
                             " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=20";
    ASSERT_EQ(run({pg_ctl_, "-D", data_.string(), "-o", opts, "-l", (tmp_.path / "server.log").string(), "-w", "-t", "60",
                   "start"}, log_), 0)
        << "pg_ctl start failed: " << slurp(tmp_.path / "server.log") << slurp(log_);
    started_ = true;
    url_ = "postgresql://d2k@127.0.0.1:" + std::to_string(port_) + "/postgres";
  }
  void TearDown() override {
    if (started_) run({pg_ctl_, "-D", data_.string(), "-m", "immediate", "stop"}, log_);
  }
  TempDir tmp_;
  fs::path data_, log_;
  std::string initdb_, pg_ctl_, url_;
  int port_ = 0;
  bool started_ = false;
};

NewJob job(const std::string& key) {
  NewJob j;
  j.token_hash = "t";
  j.idempotency_key = key;
  j.spec_json = "{}";
  j.spec_sha256 = sha256_hex("{}");
  j.max_attempts = 2;
  return j;
}

TEST_F(Postgres, TwoWorkersNeverRunTheSameJob) {
  auto s = open_store(url_);
  const int n = 300;
  std::set<std::string> ids;
  for (int i = 0; i < n; ++i) ids.insert(s->submit(job("k" + std::to_string(i))).id);
  EXPECT_EQ(s->submit(job("k0")).created, false);  // idempotency holds here too
  std::mutex mu;
  std::multiset<std::string> claimed;
  std::map<std::string, int> per_worker;
  auto worker = [&](const std::string& name) {
    auto w = open_store(url_);  // its own connection: its own session, as on another host
    while (auto c = w->claim(name, 30)) {
      {
        std::lock_guard lock(mu);
        claimed.insert(c->id);
        ++per_worker[name];
      }
      EXPECT_TRUE(w->complete(c->id, name, c->attempt, "PASSED", R"({"by":")" + name + "\"}"));
    }
  };
  std::thread a(worker, "w1"), b(worker, "w2");
  a.join(), b.join();
  EXPECT_EQ(claimed.size(), std::size_t(n));
  EXPECT_GT(per_worker["w1"], 0);  // both claimed at once
  EXPECT_GT(per_worker["w2"], 0);
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()), ids);
  auto q = s->stats();
  EXPECT_EQ(q.by_state["done"], n);
  EXPECT_EQ(q.by_verdict["PASSED"], n);
  for (auto& id : ids) EXPECT_TRUE(s->get(id)->result_json) << id;
}

TEST_F(Postgres, LeasesExpireAndResultsAreWrittenOnce) {
  auto s = open_store(url_);
  const std::string id = s->submit(job("")).id;
  auto c1 = s->claim("dead", 0.2);
  ASSERT_TRUE(c1);
  EXPECT_FALSE(s->claim("w2", 30));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto c2 = s->claim("w2", 30);
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->attempt, 2);
  EXPECT_FALSE(s->heartbeat(id, "dead", 1, 30, ""));
  EXPECT_FALSE(s->complete(id, "dead", 1, "PASSED", "{}"));
  EXPECT_TRUE(s->heartbeat(id, "w2", 2, 0.2, "p"));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(s->claim("w3", 30));  // both attempts used: finished, not handed out
  auto row = s->get(id);
  EXPECT_EQ(row->state, "done");
  EXPECT_EQ(row->verdict, kVerdictLeaseLost);
  EXPECT_FALSE(s->complete(id, "w2", 2, "PASSED", "{}"));
  const std::string tok = testing::add_token(*s, "pg", 1, 0);
  EXPECT_EQ(authenticate(*s, "Bearer " + tok).quota, 1);
}

}  // namespace
}  // namespace d2k::service
