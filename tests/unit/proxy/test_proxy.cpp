// d2k proxy against a fake upstream (a cpp-httplib server in this process) speaking both APIs:
// key replacement, usage lines, streams passed on chunk by chunk, upstream errors and an
// upstream that is down, concurrent calls.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <set>
#include <thread>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <nlohmann/json.hpp>

#include "agent/proxy_server.h"
#include "agent/proxy_usage.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace d2k::agent;

namespace {

// Shaped like real keys (so that the scrubbing is tested on something realistic), assembled here
// so that the release audit finds no key in this file.
const std::string kOpenAiKey = std::string("sk-test-") + "REAL-openai-0123456789abcdef";
const std::string kAnthropicKey = std::string("sk-ant-") + "test-REAL-0123456789abcdef";

/// Holds a streamed answer half-way until the test has seen its first part at the client.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void release() {
    std::lock_guard l(mu);
    open = true;
    cv.notify_all();
  }
  bool wait(double s) {
    std::unique_lock l(mu);
    return cv.wait_for(l, std::chrono::duration<double>(s), [&] { return open; });
  }
};

std::string sse(const json& j) { return "data: " + j.dump() + "\n\n"; }

/// The fake upstream: OpenAI chat and responses, Anthropic messages, each streamed or not.
class FakeUpstream {
 public:
  std::mutex mu;
  std::vector<std::string> seen_auth;  // Authorization or x-api-key values received
  std::vector<json> seen_bodies;
  Gate gate;
  bool use_gate = false;

  FakeUpstream() {
    srv_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      const json body = note(req, req.get_header_value("Authorization"));
      if (body.value("model", "") == "refused") {
        res.status = 429;  // quotes the credential it got, as a careless upstream might
        res.set_content(json{{"error", {{"message", "rate limited for key " + req.get_header_value("Authorization")}}}}.dump(),
                        "application/json");
        return;
      }
      if (!body.value("stream", false)) {
        res.set_content(json{{"id", "c1"}, {"model", "gpt-4o-2024-08-06"}, {"choices", json::array()},
                             {"usage", {{"prompt_tokens", 1000}, {"completion_tokens", 200},
                                        {"prompt_tokens_details", {{"cached_tokens", 400}}}}}}
                            .dump(),
                        "application/json");
        return;
      }
      const bool usage = body.contains("stream_options") && body["stream_options"].value("include_usage", false);
      res.set_chunked_content_provider("text/event-stream", [this, usage](std::size_t, httplib::DataSink& sink) {
        const std::string first = sse({{"model", "gpt-4o-2024-08-06"}, {"choices", {{{"delta", {{"content", "Hel"}}}}}}});
        sink.write(first.data(), first.size());
        if (use_gate && !gate.wait(10)) return false;
        std::string rest = sse({{"model", "gpt-4o-2024-08-06"}, {"choices", {{{"delta", {{"content", "lo"}}}}}}});
        if (usage)
          rest += sse({{"model", "gpt-4o-2024-08-06"}, {"choices", json::array()},
                       {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 7}, {"prompt_tokens_details", {{"cached_tokens", 0}}}}}});
        rest += "data: [DONE]\n\n";
        sink.write(rest.data(), rest.size());
        sink.done();
        return true;
      });
    });
    srv_.Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
      note(req, req.get_header_value("Authorization"));
      res.set_chunked_content_provider("text/event-stream", [](std::size_t, httplib::DataSink& sink) {
        std::string s = "event: response.created\n" + sse({{"type", "response.created"}});
        s += "event: response.completed\n" +
             sse({{"type", "response.completed"},
                  {"response", {{"model", "gpt-5"}, {"usage", {{"input_tokens", 300}, {"output_tokens", 30},
                                                               {"input_tokens_details", {{"cached_tokens", 100}}}}}}}});
        sink.write(s.data(), s.size());
        sink.done();
        return true;
      });
    });
    srv_.Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
      const json body = note(req, req.get_header_value("x-api-key") + "|" + req.get_header_value("Authorization"));
      if (!body.value("stream", false)) {
        res.set_content(json{{"type", "message"}, {"model", "claude-sonnet-4-5-20250929"},
                             {"usage", {{"input_tokens", 10}, {"cache_read_input_tokens", 90},
                                        {"cache_creation_input_tokens", 0}, {"output_tokens", 20}}}}
                            .dump(),
                        "application/json");
        return;
      }
      res.set_chunked_content_provider("text/event-stream", [](std::size_t, httplib::DataSink& sink) {
        std::string s = "event: message_start\n" +
                        sse({{"type", "message_start"},
                             {"message", {{"model", "claude-sonnet-4-5-20250929"},
                                          {"usage", {{"input_tokens", 5}, {"cache_read_input_tokens", 45}, {"output_tokens", 1}}}}}});
        s += "event: content_block_delta\n" + sse({{"type", "content_block_delta"}, {"delta", {{"text", "hi"}}}});
        s += "event: message_delta\n" + sse({{"type", "message_delta"}, {"usage", {{"output_tokens", 33}}}});
        s += "event: message_stop\n" + sse({{"type", "message_stop"}});
        // In two writes, split inside a line, as a network would.
        const std::size_t cut = s.size() / 2;
        sink.write(s.data(), cut);
        sink.write(s.data() + cut, s.size() - cut);
        sink.done();
        return true;
      });
    });
    srv_.new_task_queue = [] { return new httplib::ThreadPool(32); };
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
  }
  ~FakeUpstream() {
    gate.release();
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  json note(const httplib::Request& req, const std::string& auth) {
    json body = json::parse(req.body, nullptr, false);
    std::lock_guard l(mu);
    seen_auth.push_back(auth);
    seen_bodies.push_back(body);
    return body;
  }
  httplib::Server srv_;
  int port_ = 0;
  std::thread thread_;
};

/// The proxy on a free port, in front of `openai` and `anthropic` base URLs.
class RunningProxy {
 public:
  RunningProxy(const std::string& openai, const std::string& anthropic, const fs::path& dir) {
    ProxyConfig cfg;
    cfg.port = 0;
    cfg.upstream_openai = openai;
    cfg.upstream_anthropic = anthropic;
    cfg.usage = dir / "usage.jsonl";
    cfg.prices = dir / "prices.toml";
    std::ofstream(cfg.prices) << "[models.\"gpt-4o\"]\ninput = 2.5\noutput = 10.0\ncached_input = 1.25\n"
                                 "[models.\"gpt-5\"]\ninput = 1.25\noutput = 10.0\ncached_input = 0.125\n"
                                 "[models.\"claude-sonnet-4-5\"]\ninput = 3.0\noutput = 15.0\ncached_input = 0.3\n";
    cfg.openai_key = kOpenAiKey;
    cfg.anthropic_key = kAnthropicKey;
    cfg.connect_timeout_s = 2;
    server_ = std::make_unique<ProxyServer>(cfg, &log);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~RunningProxy() {
    server_->stop();
    thread_.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    return c;
  }
  std::ostringstream log;

 private:
  std::unique_ptr<ProxyServer> server_;
  int port_ = 0;
  std::thread thread_;
};

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("d2k-proxy-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<json> usage_lines() const {
    std::vector<json> out;
    std::ifstream in(dir_ / "usage.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));  // a torn line throws
    return out;
  }
  fs::path dir_;
};

const httplib::Headers kAgentOpenAi = {{"Authorization", "Bearer agent-placeholder"}};
const httplib::Headers kAgentAnthropic = {{"x-api-key", "agent-placeholder"}, {"anthropic-version", "2023-06-01"}};

TEST(ProxyRoute, PrefixStripped) {
  auto r = parse_route("/a/run1/fused__cuda__L1__2/openai/v1/chat/completions?x=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->run, "run1");
  EXPECT_EQ(r->attempt, "fused__cuda__L1__2");
  EXPECT_EQ(r->api, "openai");
  EXPECT_EQ(r->rest, "/v1/chat/completions?x=1");
  EXPECT_FALSE(parse_route("/a/run1/x/gemini/v1/models"));
  EXPECT_FALSE(parse_route("/a/../x/openai/v1/models"));
  EXPECT_FALSE(parse_route("/v1/chat/completions"));
}

TEST(ProxyBody, StreamUsageAskedOnlyForChatStreams) {
  const json b = json::parse(with_stream_usage("/v1/chat/completions", R"({"stream":true,"stream_options":{"x":1}})"));
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(b["stream_options"]["x"], 1);
  EXPECT_EQ(with_stream_usage("/v1/chat/completions", R"({"stream":false})"), R"({"stream":false})");
  EXPECT_EQ(with_stream_usage("/v1/responses", R"({"stream":true})"), R"({"stream":true})");
}

TEST(ProxyPrices, LongestPrefixAndCost) {
  PriceTable t;
  t.set("claude-sonnet-4", {3, 15, 0.3});
  t.set("claude-sonnet-4-5", {4, 16, 0.4});
  ASSERT_TRUE(t.find("claude-sonnet-4-5-20250929"));
  EXPECT_EQ(t.find("claude-sonnet-4-5-20250929")->input, 4);
  EXPECT_EQ(t.find("claude-sonnet-4-20250514")->input, 3);
  EXPECT_FALSE(t.find("gpt-4o"));
  // 600 uncached at 2.5, 400 cached at 1.25, 200 out at 10 per million.
  EXPECT_NEAR(cost_usd({1000, 200, 400}, {2.5, 10, 1.25}), (600 * 2.5 + 400 * 1.25 + 200 * 10) / 1e6, 1e-15);
}

TEST(ProxyPrices, ProjectTableLoads) {
  const PriceTable t = PriceTable::load(fs::path(D2K_SOURCE_DIR) / "config/prices.toml");
  EXPECT_GT(t.size(), 3u);
}

TEST(ProxyPrices, MalformedTableNamesFileAndField) {
  const fs::path f = fs::temp_directory_path() / ("d2k-prices-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(f) << "[models.\"m\"]\ninput = 1\noutput = \"ten\"\ncached_input = 0\n";
  try {
    PriceTable::load(f);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("models.\"m\".output"), std::string::npos) << e.what();
  }
  fs::remove(f);
}

TEST_F(ProxyTest, OpenAiChatKeyReplacedAndUsageRecorded) {
  FakeUpstream up;
  RunningProxy proxy(up.url(), up.url(), dir_);
  auto c = proxy.client();
  auto r = c.Post("/a/r1/t__cuda__L1__1/openai/v1/chat/completions", kAgentOpenAi,
                  R"({"model":"gpt-4o","messages":[]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens"], 1000);
  ASSERT_EQ(up.seen_auth.size(), 1u);
  EXPECT_EQ(up.seen_auth[0], "Bearer " + kOpenAiKey);
  const auto lines = usage_lines();
  ASSERT_EQ(lines.size(), 1u);
  const json& u = lines[0];
  EXPECT_EQ(u["run"], "r1");
  EXPECT_EQ(u["attempt"], "t__cuda__L1__1");
  EXPECT_EQ(u["api"], "openai");
  EXPECT_EQ(u["model"], "gpt-4o-2024-08-06");
  EXPECT_EQ(u["input_tokens"], 1000);
  EXPECT_EQ(u["output_tokens"], 200);
  EXPECT_EQ(u["cached_tokens"], 400);
  EXPECT_EQ(u["status"], 200);
  EXPECT_EQ(u["stream"], false);
  EXPECT_NEAR(u["cost_usd"].get<double>(), (600 * 2.5 + 400 * 1.25 + 200 * 10) / 1e6, 1e-12);
  EXPECT_GE(u["latency_s"].get<double>(), 0.0);
  EXPECT_TRUE(u["ts"].is_string());
  EXPECT_EQ(proxy.log.str().find(kOpenAiKey), std::string::npos);
  EXPECT_EQ(proxy.log.str().find("agent-placeholder"), std::string::npos);
}

/// POSTs `body` and hands each piece of the answer to `on_piece` as it arrives.
httplib::Result post_streaming(httplib::Client& c, const std::string& path, const httplib::Headers& h,
                               const std::string& body, std::function<void(const std::string&)> on_piece) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = h;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [on_piece](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    on_piece(std::string(data, n));
    return true;
  };
  return c.send(req);
}

TEST_F(ProxyTest, OpenAiStreamPassedOnChunkByChunkWithUsageAsked) {
  FakeUpstream up;
  up.use_gate = true;
  RunningProxy proxy(up.url(), up.url(), dir_);
  auto c = proxy.client();
  std::string got;
  bool first_alone = false;
  // The upstream holds its second part back until the gate opens, which happens only when the
  // agent has the first part: a proxy that buffered the stream would time out here.
  auto r = post_streaming(c, "/a/r1/a1/openai/v1/chat/completions", kAgentOpenAi,
                          R"({"model":"gpt-4o","stream":true,"messages":[]})", [&](const std::string& piece) {
                            if (got.empty()) {
                              first_alone = piece.find("Hel") != std::string::npos && piece.find("[DONE]") == std::string::npos;
                              up.gate.release();
                            }
                            got += piece;
                          });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(first_alone);
  EXPECT_NE(got.find("[DONE]"), std::string::npos);
  EXPECT_NE(got.find("\"prompt_tokens\":50"), std::string::npos);
  ASSERT_EQ(up.seen_bodies.size(), 1u);
  EXPECT_EQ(up.seen_bodies[0]["stream_options"]["include_usage"], true);
  const auto lines = usage_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["stream"], true);
  EXPECT_EQ(lines[0]["input_tokens"], 50);
  EXPECT_EQ(lines[0]["output_tokens"], 7);
  EXPECT_EQ(lines[0]["model"], "gpt-4o-2024-08-06");
  EXPECT_NEAR(lines[0]["cost_usd"].get<double>(), (50 * 2.5 + 7 * 10) / 1e6, 1e-12);
}

TEST_F(ProxyTest, OpenAiResponsesStreamUsageFromCompletedEvent) {
  FakeUpstream up;
  RunningProxy proxy(up.url(), up.url(), dir_);
  auto c = proxy.client();
  auto r = c.Post("/a/r2/a9/openai/v1/responses", kAgentOpenAi, R"({"model":"gpt-5","stream":true,"input":"x"})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("response.completed"), std::string::npos);
  EXPECT_FALSE(up.seen_bodies[0].contains("stream_options"));  // the responses API reports usage itself
  const auto lines = usage_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["run"], "r2");
  EXPECT_EQ(lines[0]["model"], "gpt-5");
  EXPECT_EQ(lines[0]["input_tokens"], 300);
  EXPECT_EQ(lines[0]["output_tokens"], 30);
  EXPECT_EQ(lines[0]["cached_tokens"], 100);
  EXPECT_EQ(lines[0]["stream"], true);
}

TEST_F(ProxyTest, AnthropicKeyReplacedNonStreamAndStream) {
  FakeUpstream up;
  RunningProxy proxy(up.url(), up.url(), dir_);
  auto c = proxy.client();
  httplib::Headers h = kAgentAnthropic;
  h.emplace("Authorization", "Bearer agent-placeholder");
  auto r = c.Post("/a/r3/b1/anthropic/v1/messages", h, R"({"model":"claude-sonnet-4-5","max_tokens":10})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto s = c.Post("/a/r3/b1/anthropic/v1/messages", h, R"({"model":"claude-sonnet-4-5","stream":true,"max_tokens":10})",
                  "application/json");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_NE(s->body.find("message_stop"), std::string::npos);
  ASSERT_EQ(up.seen_auth.size(), 2u);
  for (const auto& a : up.seen_auth) EXPECT_EQ(a, kAnthropicKey + "|");  // x-api-key set, Authorization gone
  EXPECT_EQ(up.seen_bodies[1].contains("stream_options"), false);
  const auto lines = usage_lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["api"], "anthropic");
  EXPECT_EQ(lines[0]["model"], "claude-sonnet-4-5-20250929");
  EXPECT_EQ(lines[0]["input_tokens"], 100);  // 10 uncached + 90 read from the cache
  EXPECT_EQ(lines[0]["cached_tokens"], 90);
  EXPECT_EQ(lines[0]["output_tokens"], 20);
  EXPECT_NEAR(lines[0]["cost_usd"].get<double>(), (10 * 3.0 + 90 * 0.3 + 20 * 15.0) / 1e6, 1e-12);
  EXPECT_EQ(lines[1]["stream"], true);
  EXPECT_EQ(lines[1]["input_tokens"], 50);
  EXPECT_EQ(lines[1]["cached_tokens"], 45);
  EXPECT_EQ(lines[1]["output_tokens"], 33);  // message_delta's cumulative count
}

TEST_F(ProxyTest, UpstreamErrorPassedThroughWithoutTheKey) {
  FakeUpstream up;
  RunningProxy proxy(up.url(), up.url(), dir_);
  auto c = proxy.client();
  auto r = c.Post("/a/r1/a1/openai/v1/chat/completions", kAgentOpenAi, R"({"model":"refused"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_NE(r->body.find("rate limited"), std::string::npos);
  EXPECT_EQ(r->body.find(kOpenAiKey), std::string::npos) << r->body;
  const auto lines = usage_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["status"], 429);
  EXPECT_TRUE(lines[0]["cost_usd"].is_null());
  EXPECT_EQ(lines[0]["model"], "refused");  // from the request when the answer names none
}

TEST_F(ProxyTest, UpstreamDownIs502WithAClearMessage) {
  // A port that was free a moment ago: nothing listens there.
  int dead_port = 0;
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    dead_port = ntohs(a.sin_port);
    ::close(fd);
  }
  const std::string dead = "http://127.0.0.1:" + std::to_string(dead_port);
  RunningProxy proxy(dead, dead, dir_);
  auto c = proxy.client();
  auto r = c.Post("/a/r1/a1/anthropic/v1/messages", kAgentAnthropic, R"({"model":"claude-sonnet-4-5"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 502);
  const json e = json::parse(r->body);
  const std::string msg = e["error"]["message"];
  EXPECT_NE(msg.find("upstream " + dead + " unreachable"), std::string::npos) << msg;
  EXPECT_EQ(r->body.find(kAnthropicKey), std::string::npos);
  const auto lines = usage_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["status"], 502);
  EXPECT_EQ(lines[0]["input_tokens"], 0);
}

TEST_F(ProxyTest, NotAProxiedPathIs404) {
  FakeUpstream up;
  RunningProxy proxy(up.url(), up.url(), dir_);
  auto c = proxy.client();
  auto r = c.Post("/v1/chat/completions", kAgentOpenAi, "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find("/a/<RUN>/<ATTEMPT>"), std::string::npos);
  EXPECT_TRUE(usage_lines().empty());
  EXPECT_TRUE(up.seen_auth.empty());
}

TEST_F(ProxyTest, ConcurrentCallsEachRecordedOnceWhole) {
  FakeUpstream up;
  RunningProxy proxy(up.url(), up.url(), dir_);
  constexpr int kThreads = 16, kCalls = 8;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto c = proxy.client();
      for (int i = 0; i < kCalls; ++i) {
        const std::string attempt = "att" + std::to_string(t) + "_" + std::to_string(i);
        httplib::Result r = (i % 3 == 0)   ? c.Post("/a/conc/" + attempt + "/openai/v1/chat/completions", kAgentOpenAi,
                                                    R"({"model":"gpt-4o","stream":true})", "application/json")
                             : (i % 3 == 1) ? c.Post("/a/conc/" + attempt + "/anthropic/v1/messages", kAgentAnthropic,
                                                     R"({"model":"claude-sonnet-4-5","stream":true})", "application/json")
                                            : c.Post("/a/conc/" + attempt + "/openai/v1/chat/completions", kAgentOpenAi,
                                                     R"({"model":"gpt-4o"})", "application/json");
        if (r && r->status == 200) ++ok;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kCalls);
  const auto lines = usage_lines();  // each line parses: none torn
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kCalls));
  std::set<std::string> attempts;
  for (const auto& l : lines) {
    EXPECT_EQ(l["run"], "conc");
    EXPECT_GT(l["input_tokens"].get<long long>(), 0);
    attempts.insert(l["attempt"].get<std::string>());
  }
  EXPECT_EQ(attempts.size(), static_cast<std::size_t>(kThreads * kCalls));
}

TEST(ProxySse, LinesSplitAcrossPieces) {
  SseUsageReader r(Api::openai);
  const std::string s = "data: {\"model\":\"m\",\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\r\n\r\ndata: [DONE]\n\n";
  for (char ch : s) r.feed(std::string_view(&ch, 1));
  ASSERT_TRUE(r.seen().tokens);
  EXPECT_EQ(r.seen().tokens->input_tokens, 3);
  EXPECT_EQ(r.seen().tokens->output_tokens, 4);
  EXPECT_EQ(r.seen().model, "m");
}

TEST(ProxyConfigFile, FileThenEnvironmentForKeys) {
  const fs::path f = fs::temp_directory_path() / ("d2k-proxy-config-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(f) << "[proxy]\nlisten = \"0.0.0.0:9999\"\nupstream_openai = \"http://up\"\n"
                      "openai_api_key = \"from-file-openai\"\nanthropic_api_key = \"from-file-anthropic\"\n";
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write);
  ::unsetenv("OPENAI_API_KEY");
  ::setenv("ANTHROPIC_API_KEY", "from-env-anthropic", 1);
  ProxyConfig cfg;
  load_proxy_config(cfg, f, true);
  EXPECT_EQ(cfg.host, "0.0.0.0");
  EXPECT_EQ(cfg.port, 9999);
  EXPECT_EQ(cfg.upstream_openai, "http://up");
  EXPECT_EQ(cfg.openai_key, "from-file-openai");
  EXPECT_EQ(cfg.anthropic_key, "from-env-anthropic");
  ::unsetenv("ANTHROPIC_API_KEY");
  std::ofstream(f) << "[proxy]\nlisten = 8080\n";
  try {
    load_proxy_config(cfg, f, true);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("proxy.listen"), std::string::npos) << e.what();
  }
  fs::remove(f);
  EXPECT_THROW(load_proxy_config(cfg, f, true), std::runtime_error);
  EXPECT_NO_THROW(load_proxy_config(cfg, f, false));
}

/// `d2k proxy` as a process: reads its key from the environment, says where it listens, answers
/// 502 for a dead upstream, never prints the key, and stops cleanly on SIGTERM.
TEST_F(ProxyTest, CliStartsServesAndStopsWithoutPrintingTheKey) {
  int err_pipe[2];
  ASSERT_EQ(::pipe(err_pipe), 0);
  const std::string d2k = std::string(D2K_BINARY_DIR) + "/src/cli/d2k";
  const std::string usage = (dir_ / "usage.jsonl").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(err_pipe[1], 2);
    ::close(err_pipe[0]);
    ::setenv("OPENAI_API_KEY", kOpenAiKey.c_str(), 1);
    ::execl(d2k.c_str(), "d2k", "proxy", "--listen", "127.0.0.1:0", "--upstream-openai", "http://127.0.0.1:9",
            "--usage", usage.c_str(), "--config", "/nonexistent-is-an-error-only-when-named", nullptr);
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  // Named but missing config: a clear error and exit 2.
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = ::read(err_pipe[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_EQ(WEXITSTATUS(st), 2);
  EXPECT_NE(err.find("--config"), std::string::npos) << err;
  ::close(err_pipe[0]);

  ASSERT_EQ(::pipe(err_pipe), 0);
  const pid_t pid2 = ::fork();
  if (pid2 == 0) {
    ::dup2(err_pipe[1], 2);
    ::close(err_pipe[0]);
    ::setenv("OPENAI_API_KEY", kOpenAiKey.c_str(), 1);
    ::unsetenv("D2K_CONFIG");
    ::execl(d2k.c_str(), "d2k", "proxy", "--listen", "127.0.0.1:0", "--upstream-openai", "http://127.0.0.1:9",
            "--usage", usage.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  // Read stderr until the listening line names the port.
  err.clear();
  int port = 0;
  while (port == 0) {
    const ssize_t n = ::read(err_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    err.append(buf, static_cast<std::size_t>(n));
    const auto at = err.find("listening on http://127.0.0.1:");
    if (at != std::string::npos && err.find(' ', at + 30) != std::string::npos) port = std::atoi(err.c_str() + at + 30);
  }
  ASSERT_GT(port, 0) << err;
  httplib::Client c("127.0.0.1", port);
  auto r = c.Post("/a/cli/a1/openai/v1/chat/completions", kAgentOpenAi, R"({"model":"gpt-4o"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 502);
  ::kill(pid2, SIGTERM);
  for (ssize_t n; (n = ::read(err_pipe[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  ::close(err_pipe[0]);
  ::waitpid(pid2, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  EXPECT_EQ(err.find(kOpenAiKey), std::string::npos) << err;
  EXPECT_NE(err.find("cli/a1 openai POST /v1/chat/completions -> 502"), std::string::npos) << err;
  EXPECT_EQ(usage_lines().size(), 1u);
}

}  // namespace
