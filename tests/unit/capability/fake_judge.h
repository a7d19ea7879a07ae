#pragma once
// A local judge for tests: an HTTP server (cpp-httplib) speaking both dialects the scorer uses
// (OpenAI chat/completions at /v1/chat/completions, Anthropic messages at /v1/messages) and
// answering from a fixture file of rules (tests/fixtures/judge/*.json):
//   {"rules": [{"part": "design"|"implementation"|"any", "level": 1..3 (optional),
//               "contains": ["substring", ...],     all must occur in the graded text
//               "score": 75, "reason": "...",       answer {"score","reason"} as JSON text, or
//               "text": "...",                      answer this text verbatim (malformed answers), or
//               "status": 429,                      answer this HTTP status with no completion
//               "delay_ms": 1500,                   wait this long before answering (timeouts)
//               "times": 1 (optional)}]}            use the rule this many times, then skip it
// The first rule that matches answers. The graded text is what the prompt holds between the
// <<<DESIGN / DESIGN>>> or <<<CODE / CODE>>> markers (capability/prompts/*.md).
#include <httplib.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace d2k::test {

class FakeJudge {
 public:
  explicit FakeJudge(const std::string& fixture_file) {
    std::ifstream in(fixture_file);
    if (!in) throw std::runtime_error("cannot read fixture " + fixture_file);
    std::stringstream ss;
    ss << in.rdbuf();
    rules_ = nlohmann::json::parse(ss.str()).at("rules");
    for (auto& r : rules_) r["used"] = 0;
    svr_.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& s) { handle(q, s, false); });
    svr_.Post("/v1/messages", [this](const httplib::Request& q, httplib::Response& s) { handle(q, s, true); });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeJudge() {
    svr_.stop();
    thread_.join();
  }

  std::string openai_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::string anthropic_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  int auth_failures() const { return auth_failures_; }
  std::vector<std::string> prompts() const {
    std::lock_guard<std::mutex> l(mu_);
    return prompts_;
  }

 private:
  void handle(const httplib::Request& q, httplib::Response& s, bool anthropic) {
    ++requests_;
    // The dialect's own authentication headers, as the real services require them.
    const bool auth = anthropic ? q.get_header_value("x-api-key") == "test-key" && q.has_header("anthropic-version")
                                : q.get_header_value("Authorization") == "Bearer test-key";
    if (!auth) {
      ++auth_failures_;
      s.status = 401;
      s.set_content(R"({"error":"unauthorized"})", "application/json");
      return;
    }
    const auto body = nlohmann::json::parse(q.body);
    const std::string prompt = body.at("messages").at(0).at("content").get<std::string>();
    {
      std::lock_guard<std::mutex> l(mu_);
      prompts_.push_back(prompt);
    }
    const nlohmann::json* rule = match(prompt);
    if (!rule) {
      s.status = 500;
      s.set_content(R"({"error":"no fixture rule matches"})", "application/json");
      return;
    }
    if (rule->contains("delay_ms"))
      std::this_thread::sleep_for(std::chrono::milliseconds((*rule)["delay_ms"].get<int>()));
    if (rule->contains("status")) {
      s.status = (*rule)["status"].get<int>();
      s.set_content(R"({"error":"scripted"})", "application/json");
      return;
    }
    const std::string text = rule->contains("text")
                                 ? (*rule)["text"].get<std::string>()
                                 : nlohmann::json{{"score", (*rule)["score"]}, {"reason", (*rule)["reason"]}}.dump();
    nlohmann::json reply = anthropic ? nlohmann::json{{"content", {{{"type", "text"}, {"text", text}}}}}
                                     : nlohmann::json{{"choices", {{{"message", {{"role", "assistant"}, {"content", text}}}}}}};
    s.set_content(reply.dump(), "application/json");
  }

  static std::string graded_text(const std::string& prompt, std::string& part) {
    for (const auto& [open, close, name] : {std::tuple{"<<<DESIGN", "DESIGN>>>", "design"}, std::tuple{"<<<CODE", "CODE>>>", "implementation"}}) {
      const auto b = prompt.find(open);
      const auto e = prompt.rfind(close);
      if (b != std::string::npos && e != std::string::npos && e > b) {
        part = name;
        return prompt.substr(b, e - b);
      }
    }
    part = "other";
    return prompt;
  }

  const nlohmann::json* match(const std::string& prompt) {
    std::lock_guard<std::mutex> l(mu_);
    std::string part;
    const std::string text = graded_text(prompt, part);
    std::smatch m;
    const int level = std::regex_search(prompt, m, std::regex("at level ([123]) only")) ? std::stoi(m[1].str()) : 0;
    for (auto& r : rules_) {
      const std::string rp = r.value("part", "any");
      if (rp != "any" && rp != part) continue;
      if (r.contains("level") && r["level"].get<int>() != level) continue;
      if (r.contains("times") && r["used"].get<int>() >= r["times"].get<int>()) continue;
      bool all = true;
      for (const auto& c : r.value("contains", nlohmann::json::array())) all = all && text.find(c.get<std::string>()) != std::string::npos;
      if (!all) continue;
      r["used"] = r["used"].get<int>() + 1;
      return &r;
    }
    return nullptr;
  }

  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  nlohmann::json rules_;
  mutable std::mutex mu_;
  std::vector<std::string> prompts_;
  std::atomic<int> requests_{0}, auth_failures_{0};
};

}  // namespace d2k::test
