// The queue's semantics on SQLite: idempotency, quota, claims in order, leases that expire and
// move on, results written once, attempts that run out; the codecs and the rate limiter.
#include <gtest/gtest.h>

#include <set>

#include "service/api_error.h"
#include "service/auth.h"
#include "service/metrics.h"
#include "service/store.h"
#include "service/verdict.h"
#include "service_fixture.h"

namespace d2k::service {
namespace {

using testing::TempDir;

NewJob job(const std::string& key = "", const std::string& spec = "{}") {
  NewJob j;
  j.token_hash = "t1";
  j.idempotency_key = key;
  j.spec_json = spec;
  j.spec_sha256 = sha256_hex(spec);
  j.max_attempts = 2;
  return j;
}

TEST(ServiceCodec, Base64RoundTripAndStrictness) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  EXPECT_FALSE(base64_decode("abc"));     // length not a multiple of 4
  EXPECT_FALSE(base64_decode("ab=c"));    // '=' inside
  EXPECT_FALSE(base64_decode("ab\ncd=="));
  EXPECT_FALSE(base64_decode("a*cd"));
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ServiceQueue, IdempotencyKeyMakesOneJob) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  auto a = s->submit(job("k1"));
  auto b = s->submit(job("k1"));
  EXPECT_TRUE(a.created);
  EXPECT_FALSE(b.created);
  EXPECT_EQ(a.id, b.id);
  auto c = s->submit(job("k1", R"({"other":1})"));
  EXPECT_TRUE(c.mismatch);
  auto d = s->submit(job(""));
  auto e = s->submit(job(""));
  EXPECT_NE(d.id, e.id);  // no key: every POST is a new job
  EXPECT_EQ(s->active_jobs("t1"), 3);
}

TEST(ServiceQueue, QuotaCountsJobsInFlight) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  NewJob j = job();
  j.max_active = 2;
  EXPECT_FALSE(s->submit(j).over_quota);
  EXPECT_FALSE(s->submit(j).over_quota);
  EXPECT_TRUE(s->submit(j).over_quota);
  auto c = s->claim("w", 30);
  ASSERT_TRUE(c);
  ASSERT_TRUE(s->complete(c->id, "w", c->attempt, "PASSED", "{}"));
  EXPECT_FALSE(s->submit(j).over_quota);  // a finished job frees its place
}

TEST(ServiceQueue, ClaimsOldestFirstAndEachOnce) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(s->submit(job("k" + std::to_string(i))).id);
  std::vector<std::string> got;
  while (auto c = s->claim("w", 30)) got.push_back(c->id);
  EXPECT_EQ(got, ids);
  auto row = s->get(ids[0]);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, "running");
  EXPECT_EQ(row->attempts, 1);
  EXPECT_EQ(row->worker, "w");
}

TEST(ServiceQueue, ExpiredLeaseIsRetriedAndTheOldHolderCannotWrite) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  const std::string id = s->submit(job()).id;
  auto c1 = s->claim("dead", 0.05);
  ASSERT_TRUE(c1);
  EXPECT_FALSE(s->claim("w2", 30));  // leased
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto c2 = s->claim("w2", 30);
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->id, id);
  EXPECT_EQ(c2->attempt, 2);
  EXPECT_FALSE(s->heartbeat(id, "dead", 1, 30, "x"));   // the lease moved on
  EXPECT_FALSE(s->complete(id, "dead", 1, "PASSED", R"({"from":"dead"})"));
  EXPECT_TRUE(s->heartbeat(id, "w2", 2, 30, "half way"));
  EXPECT_EQ(s->get(id)->progress, "half way");
  EXPECT_TRUE(s->complete(id, "w2", 2, "FAILED", R"({"from":"w2"})"));
  EXPECT_FALSE(s->complete(id, "w2", 2, "PASSED", R"({"again":1})"));  // exactly once
  auto row = s->get(id);
  EXPECT_EQ(row->state, "done");
  EXPECT_EQ(row->verdict, "FAILED");
  EXPECT_EQ(*row->result_json, R"({"from":"w2"})");
}

TEST(ServiceQueue, AttemptsRunOutIntoRuntimeError) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  const std::string id = s->submit(job()).id;  // max_attempts 2
  ASSERT_TRUE(s->claim("a", 0.02));
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  ASSERT_TRUE(s->claim("b", 0.02));
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_FALSE(s->claim("c", 30));  // no attempt left: finished, not handed out
  auto row = s->get(id);
  EXPECT_EQ(row->state, "done");
  EXPECT_EQ(row->verdict, kVerdictLeaseLost);
  ASSERT_TRUE(row->result_json);
  EXPECT_NE(row->result_json->find("no attempt left"), std::string::npos);
  EXPECT_FALSE(s->complete(id, "b", 2, "PASSED", "{}"));
  EXPECT_EQ(s->stats().retries, 1);
}

TEST(ServiceQueue, SurvivesReopenAndConcurrentProcesses) {
  TempDir t;
  const std::string db = (t.path / "q.sqlite").string();
  std::string id;
  {
    auto s = open_sqlite_store(db);
    id = s->submit(job("durable")).id;
  }
  // Two processes claim concurrently from one file: each job goes to one of them.
  for (int i = 0; i < 40; ++i) open_sqlite_store(db)->submit(job("k" + std::to_string(i)));
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  std::vector<pid_t> kids;
  for (int k = 0; k < 2; ++k) {
    const pid_t p = ::fork();
    if (p == 0) {
      auto s = open_sqlite_store(db);
      while (auto c = s->claim("p" + std::to_string(k), 30)) {
        const std::string line = c->id + "\n";
        if (::write(pipefd[1], line.data(), line.size()) < 0) ::_exit(3);
      }
      ::_exit(0);
    }
    kids.push_back(p);
  }
  ::close(pipefd[1]);
  for (pid_t p : kids) ::waitpid(p, nullptr, 0);
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) all.append(buf, std::size_t(n));
  ::close(pipefd[0]);
  std::multiset<std::string> claimed;
  std::stringstream ss(all);
  for (std::string l; std::getline(ss, l);) claimed.insert(l);
  EXPECT_EQ(claimed.size(), 41u);
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()).size(), 41u);
  EXPECT_EQ(claimed.count(id), 1u);
}

TEST(ServiceAuth, TokensAreStoredHashedAndChecked) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  const std::string tok = testing::add_token(*s, "alice", 3, 10);
  EXPECT_FALSE(s->find_token(tok));  // not the token itself
  EXPECT_EQ(authenticate(*s, "Bearer " + tok).name, "alice");
  for (const std::string& bad : std::vector<std::string>{"", "Bearer ", "Basic " + tok, "Bearer " + tok + "x", "bearer " + tok}) {
    try {
      authenticate(*s, bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.http, 401);
      EXPECT_EQ(e.code, "UNAUTHORIZED");
    }
  }
}

TEST(ServiceAuth, RateLimiterAllowsAMinutesWorth) {
  RateLimiter r;
  int allowed = 0;
  for (int i = 0; i < 20; ++i) allowed += r.allow("t", 5);
  EXPECT_EQ(allowed, 5);
  EXPECT_TRUE(r.allow("other", 5));
  EXPECT_TRUE(r.allow("t", 0));  // no limit
}

TEST(ServiceMetrics, ExpositionHasTheFamilies) {
  QueueStats q;
  q.by_state = {{"queued", 4}, {"done", 2}};
  q.by_verdict = {{"PASSED", 2}};
  q.running_by_worker = {{"h:1:gpu0", 1}};
  q.bucket_bounds = {1, 5};
  q.bucket_counts = {1, 2};
  q.eval_count = 2, q.eval_sum_s = 3.5;
  const std::string m = metrics_text(q, {});
  for (const char* want : {"d2k_queue_depth 4", "d2k_jobs{state=\"done\"} 2", "d2k_jobs_done_total{verdict=\"PASSED\"} 2",
                           "d2k_worker_busy{worker=\"h:1:gpu0\"} 1", "d2k_evaluation_seconds_bucket{le=\"5\"} 2",
                           "d2k_evaluation_seconds_bucket{le=\"+Inf\"} 2", "d2k_evaluation_seconds_sum 3.5"})
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
}

TEST(ServiceVerdict, ExitCodesRoundTrip) {
  for (int code : {0, 1, 3}) EXPECT_EQ(exit_for_verdict(verdict_for_exit(code)), code);
  EXPECT_EQ(exit_for_verdict(verdict_for_exit(2)), 2);
  EXPECT_EQ(exit_for_verdict(verdict_for_exit(-9)), 1);
  EXPECT_EQ(exit_for_verdict("TIMEOUT"), 1);
}

}  // namespace
}  // namespace d2k::service
