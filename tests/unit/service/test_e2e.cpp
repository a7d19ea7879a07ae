// d2k serve + d2k worker as processes on loopback with the stub evaluator: 1000 jobs from 50
// concurrent clients (0 lost, 0 duplicated, p99 submit latency printed), then kill -9 of the
// server and of the worker mid-job, several times, under load: every job ends exactly once.
// D2K_SOAK=1 (the `soak` ctest) makes the kill run long.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "service_fixture.h"

namespace d2k::service {
namespace {

using nlohmann::json;
using testing::Child;
using testing::TempDir;

struct Service {
  TempDir tmp;
  std::string db, token, stub_log;
  int port = 0;
  Child server, worker;
  std::map<std::string, std::string> worker_env;
  int server_starts = 0;

  explicit Service(double stub_sleep) {
    db = (tmp.path / "q.sqlite").string();
    stub_log = (tmp.path / "stub.log").string();
    token = testing::add_token(*open_sqlite_store(db), "load");
    port = testing::free_port();
    worker_env = {{"D2K_STUB_SLEEP", std::to_string(stub_sleep)}, {"D2K_STUB_LOG", stub_log}};
  }
  void start_server() {
    server = Child({testing::kD2k, "--dataset", testing::kDataset, "serve", "--db", db, "--listen",
                    "127.0.0.1:" + std::to_string(port), "--threads", "96", "--max-attempts", "20"},
                   {}, tmp.path / "serve.log");
    ++server_starts;
    ASSERT_TRUE(testing::wait_healthy(port, 20)) << "d2k serve did not come up";
  }
  void start_worker(const std::string& gpus, const std::string& lease = "1") {
    worker = Child({testing::kD2k, "--dataset", testing::kDataset, "worker", "--db", db, "--gpus", gpus, "--evaluator",
                    testing::kStub, "--poll", "0.05", "--lease", lease, "--work-dir", (tmp.path / "work").string()},
                   worker_env, tmp.path / "worker.log");
  }
  std::string log(const char* name) {
    std::ifstream f(tmp.path / name);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
};

std::string body() {
  return json{{"task", "fused_add_rmsnorm"}, {"targets", {"solution"}}, {"files", {{"solution.cu", base64_encode("int x;\n")}}}}
      .dump();
}

/// Submits `per_client` jobs from each of `clients` threads, each with its own Idempotency-Key,
/// retrying a POST that got no answer (same key) until it gets one. Returns key -> id.
std::map<std::string, std::string> submit_all(int port, const std::string& token, int clients, int per_client,
                                              std::vector<double>& latencies_ms, int* failed_posts = nullptr) {
  std::atomic<int> failed{0};
  std::mutex mu;
  std::map<std::string, std::string> ids;
  std::vector<std::thread> threads;
  const std::string b = body();
  for (int ci = 0; ci < clients; ++ci)
    threads.emplace_back([&, ci] {
      httplib::Client c("127.0.0.1", port);
      c.set_connection_timeout(2, 0);
      c.set_read_timeout(20, 0);
      for (int k = 0; k < per_client; ++k) {
        const std::string key = "c" + std::to_string(ci) + "-" + std::to_string(k);
        httplib::Headers h{{"Authorization", "Bearer " + token}, {"Idempotency-Key", key}};
        for (int tries = 0; tries < 400; ++tries) {
          const auto t0 = std::chrono::steady_clock::now();
          auto r = c.Post("/v1/evaluations", h, b, "application/json");
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (r && r->status == 202) {
            std::lock_guard lock(mu);
            ids[key] = json::parse(r->body)["id"];
            latencies_ms.push_back(ms);
            break;
          }
          if (++failed <= 3)
            std::fprintf(stderr, "POST %s: %s\n", key.c_str(),
                         r ? (std::to_string(r->status) + " " + r->body).c_str() : httplib::to_string(r.error()).c_str());
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
    });
  for (auto& t : threads) t.join();
  if (failed_posts) *failed_posts = failed;
  return ids;
}

bool wait_all_done(Store& s, std::size_t n, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    auto q = s.stats();
    if (std::size_t(q.by_state["done"]) == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

/// Every job has exactly one result, it is its own (the stub writes the job id into the trace),
/// and the queue holds no job nobody asked for.
void expect_exactly_once(Store& s, const std::map<std::string, std::string>& ids, std::size_t submitted) {
  EXPECT_EQ(ids.size(), submitted) << "lost submissions";
  std::set<std::string> distinct;
  for (auto& [key, id] : ids) distinct.insert(id);
  EXPECT_EQ(distinct.size(), ids.size()) << "two keys got one job";
  auto q = s.stats();
  EXPECT_EQ(std::size_t(q.by_state["done"]), submitted);
  EXPECT_EQ(q.by_state.count("queued") + q.by_state.count("running"), 0u);
  int bad = 0;
  for (auto& id : distinct) {
    auto row = s.get(id);
    if (!row || row->state != "done" || !row->result_json || row->verdict != "PASSED") {
      if (++bad < 5) ADD_FAILURE() << id << ": " << (row ? row->state + " " + row->verdict : "missing");
      continue;
    }
    json r = json::parse(*row->result_json);
    if (r["traces"].size() != 1 || r["traces"][0]["message"] != id) {
      if (++bad < 5) ADD_FAILURE() << id << ": result is not its own: " << *row->result_json;
    }
  }
  EXPECT_EQ(bad, 0);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

TEST(ServiceE2E, ThousandJobsFromFiftyClients) {
  Service svc(0.01);
  svc.start_server();
  svc.start_worker("0,1,2,3", "30");  // no kills here: a lease that outlives any stall of a loaded machine
  std::vector<double> lat;
  const auto t0 = std::chrono::steady_clock::now();
  int failed_posts = 0;
  auto ids = submit_all(svc.port, svc.token, 50, 20, lat, &failed_posts);
  EXPECT_EQ(failed_posts, 0) << "POSTs without a 202 while nothing was killed";
  const double submit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto store = open_sqlite_store(svc.db);
  ASSERT_TRUE(wait_all_done(*store, 1000, 240)) << svc.log("worker.log");
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_exactly_once(*store, ids, 1000);
  // No kills here: every job ran once.
  std::map<std::string, int> ends;
  std::ifstream f(svc.stub_log);
  for (std::string id, what, pid; f >> id >> what >> pid;)
    if (what == "end") ++ends[id];
  EXPECT_EQ(ends.size(), 1000u);
  EXPECT_TRUE(std::all_of(ends.begin(), ends.end(), [](auto& e) { return e.second == 1; }));
  std::printf("[ service load ] 1000 jobs, 50 clients: submit p50 %.1f ms, p99 %.1f ms, max %.1f ms; all submitted in %.1f s, "
              "all done in %.1f s\n", percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1.0), submit_s, total_s);
}

/// Kills the server and the worker with SIGKILL, alternately, while clients submit and the
/// worker runs jobs; restarts them; then every job must end exactly once with its own result.
void kill_run(int clients, int per_client, int kills, double stub_sleep) {
  Service svc(stub_sleep);
  svc.start_server();
  svc.start_worker("0,1,2,3");
  std::vector<double> lat;
  std::atomic<bool> submitting{true};
  std::map<std::string, std::string> ids;
  std::thread submitter([&] {
    ids = submit_all(svc.port, svc.token, clients, per_client, lat);
    submitting = false;
  });
  int server_kills = 0, worker_kills = 0;
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    if (k % 2 == 0) {
      svc.server.kill9();
      ++server_kills;
      svc.start_server();
    } else {
      svc.worker.kill9();
      ++worker_kills;
      svc.start_worker("0,1,2,3");
    }
  }
  submitter.join();
  auto store = open_sqlite_store(svc.db);
  const std::size_t n = std::size_t(clients * per_client);
  ASSERT_TRUE(wait_all_done(*store, n, 240)) << svc.log("worker.log");
  expect_exactly_once(*store, ids, n);
  const auto q = store->stats();
  std::printf("[ service kill ] %zu jobs, %d server and %d worker kills (-9): %lld retried attempt(s), every job done once\n",
              n, server_kills, worker_kills, static_cast<long long>(q.retries));
  EXPECT_GE(q.retries, 1) << "no kill hit a running job: the test proved nothing";
}

TEST(ServiceE2E, KillNineOfServerAndWorkerMidJob) { kill_run(10, 12, 6, 0.3); }

TEST(ServiceE2E, SoakKillNine) {
  if (!std::getenv("D2K_SOAK")) GTEST_SKIP() << "the long kill run: ctest -L '^soak$' (sets D2K_SOAK=1)";
  kill_run(50, 20, 30, 0.2);
}

}  // namespace
}  // namespace d2k::service
