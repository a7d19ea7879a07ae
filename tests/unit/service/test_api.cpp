// The HTTP API in-process on loopback: auth and ownership, errors naming the field, the event
// stream, and a fuzz of the request parser (random and mutated bodies, wrong types, huge fields,
// path traversal, a 1 GB body): every one a 4xx, no crash, nothing written outside a job folder.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <random>
#include <set>

#include "service/api.h"
#include "service/job_spec.h"
#include "service/worker.h"
#include "service_fixture.h"

namespace d2k::service {
namespace {

using nlohmann::json;
using testing::TempDir;
namespace fs = std::filesystem;

struct Api {
  TempDir tmp;
  std::unique_ptr<Store> store;
  std::unique_ptr<ApiServer> server;
  std::thread thread;
  int port = 0;
  std::string alice, bob;
  explicit Api(Limits lim = {}) {
    store = open_sqlite_store((tmp.path / "q.sqlite").string());
    alice = testing::add_token(*store, "alice");
    bob = testing::add_token(*store, "bob");
    ServerConfig cfg;
    cfg.dataset = testing::kDataset;
    cfg.limits = lim;
    cfg.poll_s = 0.05;
    server = std::make_unique<ApiServer>(*store, cfg);
    port = server->bind("127.0.0.1", 0);
    thread = std::thread([this] { server->serve(); });
    EXPECT_TRUE(testing::wait_healthy(port, 5));
  }
  ~Api() {
    server->stop();
    thread.join();
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10, 0);
    return c;
  }
  httplib::Headers auth(const std::string& tok) { return {{"Authorization", "Bearer " + tok}}; }
};

json valid_body() {
  return {{"task", "fused_add_rmsnorm"},
          {"track", "cuda"},
          {"targets", {"solution", "expert"}},
          {"options", {{"time", false}}},
          {"files", {{"solution.cu", base64_encode("__global__ void k() {}\n")}, {"sub/util.h", base64_encode("#pragma once\n")}}}};
}

TEST(ServiceApi, SubmitGetAndOwnership) {
  Api api;
  auto c = api.client();
  auto r = c.Post("/v1/evaluations", api.auth(api.alice), valid_body().dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  auto g = c.Get("/v1/evaluations/" + id, api.auth(api.alice));
  ASSERT_EQ(g->status, 200);
  EXPECT_EQ(json::parse(g->body)["state"], "queued");
  EXPECT_EQ(json::parse(g->body)["task"], "fused_add_rmsnorm");
  // Bob cannot see Alice's evaluation; no token, no access.
  EXPECT_EQ(c.Get("/v1/evaluations/" + id, api.auth(api.bob))->status, 404);
  EXPECT_EQ(c.Get("/v1/evaluations/" + id)->status, 401);
  EXPECT_EQ(c.Get("/v1/tasks")->status, 401);
  auto tasks = c.Get("/v1/tasks", api.auth(api.bob));
  ASSERT_EQ(tasks->status, 200);
  EXPECT_NE(tasks->body.find("fused_add_rmsnorm"), std::string::npos);
  // The stored spec is exactly what was sent.
  EXPECT_EQ(spec_from_json(json::parse(api.store->get(id)->spec_json), Limits{}), spec_from_json(valid_body(), Limits{}));
}

TEST(ServiceApi, IdempotentRetryAndConflict) {
  Api api;
  auto c = api.client();
  auto h = api.auth(api.alice);
  h.emplace("Idempotency-Key", "abc-1");
  auto a = c.Post("/v1/evaluations", h, valid_body().dump(), "application/json");
  auto b = c.Post("/v1/evaluations", h, valid_body().dump(), "application/json");
  ASSERT_EQ(a->status, 202);
  ASSERT_EQ(b->status, 202);
  EXPECT_EQ(json::parse(a->body)["id"], json::parse(b->body)["id"]);
  json other = valid_body();
  other["targets"] = {"solution"};
  auto x = c.Post("/v1/evaluations", h, other.dump(), "application/json");
  EXPECT_EQ(x->status, 409);
  EXPECT_EQ(json::parse(x->body)["code"], "IDEMPOTENCY_KEY_REUSED");
}

TEST(ServiceApi, ErrorsNameTheField) {
  Api api;
  auto c = api.client();
  auto post = [&](const json& body) {
    auto r = c.Post("/v1/evaluations", api.auth(api.alice), body.dump(), "application/json");
    return std::make_pair(r->status, json::parse(r->body));
  };
  json b = valid_body();
  b["targets"] = "solution";
  auto [s1, e1] = post(b);
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(e1["code"], "INVALID_FIELD");
  EXPECT_EQ(e1["message"].get<std::string>().rfind("targets:", 0), 0u) << e1;
  b = valid_body();
  b["files"]["../../etc/passwd"] = base64_encode("x");
  auto [s2, e2] = post(b);
  EXPECT_EQ(s2, 400);
  EXPECT_NE(e2["message"].get<std::string>().find("../../etc/passwd"), std::string::npos) << e2;
  b = valid_body();
  b["task"] = "no_such_task";
  auto [s3, e3] = post(b);
  EXPECT_EQ(s3, 404);
  EXPECT_EQ(e3["code"], "UNKNOWN_TASK");
  b = valid_body();
  b["colour"] = 1;
  auto [s4, e4] = post(b);
  EXPECT_EQ(e4["code"], "UNKNOWN_FIELD");
  b = valid_body();
  b["options"]["isolation"] = "none";  // the service's to choose
  auto [s5, e5] = post(b);
  EXPECT_EQ(s5, 400);
  EXPECT_NE(e5["message"].get<std::string>().find("options.isolation"), std::string::npos);
  auto r = c.Get("/v1/nothing", api.auth(api.alice));
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["code"], "NOT_FOUND");
}

TEST(ServiceApi, MultipartSubmission) {
  Api api;
  auto c = api.client();
  httplib::MultipartFormDataItems items = {
      {"request", R"({"task":"fused_add_rmsnorm","targets":["solution"]})", "", "application/json"},
      {"file", "__global__ void k() {}\n", "solution.cu", "text/plain"},
  };
  auto r = c.Post("/v1/evaluations", api.auth(api.alice), items);
  ASSERT_EQ(r->status, 202) << r->body;
  auto row = api.store->get(json::parse(r->body)["id"]);
  EXPECT_EQ(spec_from_json(json::parse(row->spec_json), Limits{}).files.at("solution.cu"), "__global__ void k() {}\n");
  items[1].filename = "../evil.cu";
  r = c.Post("/v1/evaluations", api.auth(api.alice), items);
  EXPECT_EQ(r->status, 400) << r->body;
}

TEST(ServiceApi, QuotaAndRateLimit) {
  Api api;
  const std::string q = testing::add_token(*api.store, "q", /*quota=*/1, /*rate=*/0);
  const std::string rl = testing::add_token(*api.store, "r", 0, /*rate=*/2);
  auto c = api.client();
  EXPECT_EQ(c.Post("/v1/evaluations", api.auth(q), valid_body().dump(), "application/json")->status, 202);
  auto over = c.Post("/v1/evaluations", api.auth(q), valid_body().dump(), "application/json");
  EXPECT_EQ(over->status, 429);
  EXPECT_EQ(json::parse(over->body)["code"], "QUOTA_EXCEEDED");
  std::vector<int> statuses;
  for (int i = 0; i < 4; ++i)
    statuses.push_back(c.Post("/v1/evaluations", api.auth(rl), valid_body().dump(), "application/json")->status);
  EXPECT_EQ(statuses, (std::vector<int>{202, 202, 429, 429}));
}

TEST(ServiceApi, EventStreamEndsWithTheResult) {
  Api api;
  auto c = api.client();
  auto r = c.Post("/v1/evaluations", api.auth(api.alice), valid_body().dump(), "application/json");
  const std::string id = json::parse(r->body)["id"];
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto cl = api.store->claim("w", 30);
    api.store->heartbeat(id, "w", cl->attempt, 30, "building solution");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    api.store->complete(id, "w", cl->attempt, "PASSED", R"({"verdict":"PASSED","traces":[]})");
  });
  std::string stream;
  auto s = c.Get("/v1/evaluations/" + id + "/events", api.auth(api.alice), [&](const char* d, std::size_t n) {
    stream.append(d, n);
    return true;
  });
  finisher.join();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_NE(stream.find("event: progress"), std::string::npos) << stream;
  EXPECT_NE(stream.find("building solution"), std::string::npos) << stream;
  EXPECT_NE(stream.find("event: done"), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"verdict\":\"PASSED\""), std::string::npos) << stream;
}

/// Sends raw bytes and returns the status line's code (0: no answer).
int raw_request(int port, const std::string& head, std::size_t body_bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return ::close(fd), 0;
  (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const std::string chunk(64 << 10, 'x');
  for (std::size_t sent = 0; sent < body_bytes;) {  // the server may stop reading: stop at the first error
    const ssize_t n = ::send(fd, chunk.data(), std::min(chunk.size(), body_bytes - sent), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;
    sent += std::size_t(n);
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[512] = {};
  const ssize_t n = ::recv(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  if (n < 12) return 0;
  return std::atoi(buf + 9);
}

TEST(ServiceFuzz, OneGigabyteBodyIsRefusedByTheLimit) {
  Api api;
  const std::string head = "POST /v1/evaluations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api.alice +
                           "\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n";
  EXPECT_EQ(raw_request(api.port, head, 4 << 20), 413);
  EXPECT_TRUE(testing::wait_healthy(api.port, 2));  // still serving
  EXPECT_EQ(api.store->stats().by_state.count("queued"), 0u);
}

/// Every kind of damage to a valid body: each answer is a 4xx (or a 202 for a body that is
/// still valid), never a 5xx, and the server keeps serving.
TEST(ServiceFuzz, MutatedAndRandomBodiesGet4xx) {
  // Every body here stays under the body limit: a body over it is refused from its
  // Content-Length before it is read (OneGigabyteBodyIsRefusedByTheLimit), and a client still
  // writing when the server closes can see a reset instead of the 413, which is no verdict on the
  // parser. The file limits below are what the oversized-files body meets.
  Limits lim;
  lim.max_body_bytes = 1 << 20;
  lim.max_file_bytes = 256 << 10;
  lim.max_total_file_bytes = 384 << 10;
  Api api(lim);
  auto c = api.client();
  std::mt19937_64 rng(19);
  std::vector<std::string> bodies;
  const std::string good = valid_body().dump();
  for (int i = 0; i < 300; ++i) {  // byte flips, deletions, insertions, truncations
    std::string b = good;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !b.empty(); ++e) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0: b[at] = char(rng() % 256); break;
        case 1: b.erase(at, 1 + rng() % 8); break;
        case 2: b.insert(at, 1, "{}[]\":,\\0"[rng() % 9]); break;
        case 3: b.resize(at); break;
      }
    }
    bodies.push_back(b);
  }
  for (int i = 0; i < 50; ++i) {  // random bytes
    std::string b(rng() % 2000, '\0');
    for (char& ch : b) ch = char(rng() % 256);
    bodies.push_back(b);
  }
  // Wrong types for every field, huge fields, deep nesting, traversal in every spelling.
  for (const char* field : {"task", "track", "targets", "workloads", "options", "files"})
    for (json v : {json(1), json(nullptr), json::array({1, 2}), json::object(), json("x"), json(true), json(1.5)}) {
      json b = valid_body();
      b[field] = v;
      bodies.push_back(b.dump());
    }
  {
    json b = valid_body();
    b["task"] = std::string(200000, 'a');
    bodies.push_back(b.dump());
    b = valid_body();
    b["files"]["solution.cu"] = base64_encode(std::string(300000, 'x'));  // over max_file_bytes
    bodies.push_back(b.dump());
    b = valid_body();
    b["files"]["solution.cu"] = base64_encode(std::string(200000, 'x'));  // each under, together over the total
    b["files"]["b.cu"] = base64_encode(std::string(200000, 'x'));
    bodies.push_back(b.dump());
    bodies.push_back(std::string(100000, '[') + std::string(100000, ']'));
    b = valid_body();
    b["targets"] = json::array();
    for (int i = 0; i < 1000; ++i) b["targets"].push_back("expert");
    bodies.push_back(b.dump());
  }
  for (const std::string& name : std::vector<std::string>{"../x.cu", "/etc/passwd", "a/../../x", "./x", "a//b", "a/", ".hidden", "a\\..\\x", std::string("x\0y", 3),
                           "a/b/c/d/e/f.cu", "..", "sub/../../../tmp/x", std::string(300, 'a'), "ok name.cu", "%2e%2e/x"}) {
    json b = valid_body();
    b["files"][name] = base64_encode("x");
    bodies.push_back(b.dump());
  }
  int accepted = 0;
  for (const auto& body : bodies) {
    ASSERT_LE(body.size(), lim.max_body_bytes);
    auto r = c.Post("/v1/evaluations", api.auth(api.alice), body, "application/json");
    ASSERT_TRUE(r) << "no answer";
    if (r->status == 202) {
      ++accepted;
      continue;
    }
    EXPECT_GE(r->status, 400) << body.substr(0, 200);
    EXPECT_LT(r->status, 500) << r->body;
    json e = json::parse(r->body, nullptr, false);
    EXPECT_TRUE(e.is_object() && e.contains("code") && e.contains("message")) << r->body;
  }
  // Whatever was accepted is a spec the worker writes strictly inside its job folder: run every
  // accepted job through the real worker with a stub evaluator and look at the temp folder.
  WorkerConfig w;
  w.evaluator = "/bin/true";
  w.work_dir = (api.tmp.path / "work").string();
  w.keep_jobs = true;
  int ran = 0;
  while (auto cl = api.store->claim("fuzz", 30)) {
    auto out = run_job(*cl, w, "0", [](const std::string&) { return true; });
    ASSERT_TRUE(out);
    ++ran;
  }
  EXPECT_EQ(ran, accepted);
  for (auto& e : fs::recursive_directory_iterator(api.tmp.path)) {
    const std::string rel = fs::relative(e.path(), api.tmp.path).string();
    EXPECT_TRUE(rel.rfind("q.sqlite", 0) == 0 || rel.rfind("work", 0) == 0) << rel;
  }
  EXPECT_TRUE(testing::wait_healthy(api.port, 2));
}

/// A row written past the API (a bad actor with the database): the worker re-checks names and
/// refuses, writing nothing.
TEST(ServiceFuzz, WorkerRefusesATraversalRowWrittenPastTheApi) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  NewJob j;
  j.token_hash = "x";
  j.spec_json = json{{"task", "t"}, {"files", {{"../../escaped", base64_encode("x")}}}}.dump();
  j.spec_sha256 = "h";
  s->submit(j);
  WorkerConfig w;
  w.evaluator = "/bin/true";
  w.work_dir = (t.path / "work").string();
  auto cl = s->claim("w", 30);
  auto out = run_job(*cl, w, "0", [](const std::string&) { return true; });
  ASSERT_TRUE(out);
  EXPECT_EQ(out->verdict, "ERROR");
  EXPECT_NE(out->result["message"].get<std::string>().find("'..'"), std::string::npos) << out->result;
  EXPECT_FALSE(fs::exists(t.path / "escaped"));
  EXPECT_FALSE(fs::exists(t.path / "work" / "escaped"));
}

TEST(ServiceWorker, RunsTheEvaluatorAndCollectsTraces) {
  TempDir t;
  auto s = open_sqlite_store((t.path / "q.sqlite").string());
  NewJob j;
  j.token_hash = "x";
  j.spec_json = to_json(spec_from_json(valid_body(), Limits{})).dump();
  j.spec_sha256 = "h";
  const std::string id = s->submit(j).id;
  WorkerConfig w;
  w.evaluator = testing::kStub;
  w.work_dir = (t.path / "work").string();
  w.lease_s = 0.3;
  ::setenv("D2K_STUB_SLEEP", "0.3", 1);
  auto cl = s->claim("w", w.lease_s);
  int beats = 0;
  auto out = run_job(*cl, w, "0", [&](const std::string&) { return ++beats, true; });
  ::unsetenv("D2K_STUB_SLEEP");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->verdict, "PASSED") << out->result;
  EXPECT_GE(beats, 2);  // every lease/3
  ASSERT_EQ(out->result["traces"].size(), 1u);
  EXPECT_EQ(out->result["traces"][0]["message"], id);
  EXPECT_FALSE(fs::exists(fs::path(w.work_dir) / id / "a1"));  // cleaned after the result
  // A lost lease kills the evaluator and yields no result.
  auto again = run_job(*cl, w, "0", [](const std::string&) { return false; });
  EXPECT_FALSE(again);
  // A wall-time limit ends in TIMEOUT.
  w.job_timeout_s = 0.1;
  ::setenv("D2K_STUB_SLEEP", "5", 1);
  auto slow = run_job(*cl, w, "0", [](const std::string&) { return true; });
  ::unsetenv("D2K_STUB_SLEEP");
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->verdict, "TIMEOUT");
}

}  // namespace
}  // namespace d2k::service
