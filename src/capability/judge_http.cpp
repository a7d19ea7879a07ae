// The judge over HTTP (libcurl): one POST per completion in the endpoint's dialect, retried with
// exponential backoff on 429, 5xx and transport timeouts; any other failure is an error that
// names the endpoint and the status (never the key).
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capability/judge.h"

namespace d2k::capability {

namespace {

using nlohmann::json;

struct HttpReply {
  long status = 0;             ///< 0 when the transport failed
  CURLcode transport = CURLE_OK;
  std::string body;
  double retry_after_s = -1;   ///< Retry-After in seconds, when the server sent one
};

std::size_t on_body(char* p, std::size_t size, std::size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  // A judge's answer is a few kB; a body past 16 MiB is a misbehaving endpoint, not an answer.
  if (s->size() + size * n > (16u << 20)) return 0;
  s->append(p, size * n);
  return size * n;
}

std::size_t on_header(char* p, std::size_t size, std::size_t n, void* out) {
  const std::string line(p, size * n);
  const std::string key = "retry-after:";
  if (line.size() > key.size()) {
    std::string head = line.substr(0, key.size());
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (head == key) {
      char* end = nullptr;
      const double v = std::strtod(line.c_str() + key.size(), &end);
      if (end != line.c_str() + key.size() && v >= 0) static_cast<HttpReply*>(out)->retry_after_s = v;
    }
  }
  return size * n;
}

class HttpJudge final : public Judge {
 public:
  explicit HttpJudge(JudgeConfig c) : c_(std::move(c)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  // The sample index only keys the cache: the request is the same, the answer may differ.
  std::string complete(const std::string& prompt, int /*sample*/) override {
    const std::string key = api_key();
    const std::string url = endpoint();
    const std::string body = request_body(prompt).dump();
    double wait = c_.backoff_s;
    for (int attempt = 0;; ++attempt) {
      ++calls_;
      HttpReply r = post(url, key, body);
      if (r.transport == CURLE_OK && r.status >= 200 && r.status < 300) return reply_text(r.body, url);
      const bool retryable = r.transport == CURLE_OPERATION_TIMEDOUT || r.transport == CURLE_COULDNT_CONNECT ||
                             r.transport == CURLE_RECV_ERROR || r.transport == CURLE_SEND_ERROR ||
                             r.transport == CURLE_GOT_NOTHING || r.status == 429 || (r.status >= 500 && r.status < 600);
      if (!retryable || attempt >= c_.retries) throw std::runtime_error(describe_failure(url, r, attempt + 1));
      double delay = std::min(wait, c_.backoff_max_s);
      if (r.retry_after_s >= 0) delay = std::min(std::max(delay, r.retry_after_s), c_.backoff_max_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      wait *= 2;
    }
  }

  std::uint64_t calls() const override { return calls_; }

 private:
  std::string api_key() const {
    const char* v = c_.api_key_env.empty() ? nullptr : std::getenv(c_.api_key_env.c_str());
    if (!v || !*v)
      throw std::runtime_error(fmt::format("judge: the environment variable {} (api_key_env) is not set",
                                           c_.api_key_env.empty() ? "(none named)" : c_.api_key_env));
    return v;
  }

  // OpenAI-compatible base URLs end in /v1 (chat/completions follows); Anthropic's are the host
  // (its SDK convention: /v1/messages follows), so one base URL works with either SDK too.
  std::string endpoint() const {
    return c_.api == JudgeApi::openai ? c_.base_url + "/chat/completions" : c_.base_url + "/v1/messages";
  }

  json request_body(const std::string& prompt) const {
    json msg = json::array({{{"role", "user"}, {"content", prompt}}});
    return {{"model", c_.model}, {"messages", msg}, {"temperature", c_.temperature}, {"max_tokens", c_.max_tokens}};
  }

  HttpReply post(const std::string& url, const std::string& key, const std::string& body) const {
    HttpReply r;
    CURL* h = curl_easy_init();
    if (!h) throw std::runtime_error("judge: curl_easy_init failed");
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    if (c_.api == JudgeApi::openai) {
      headers = curl_slist_append(headers, ("Authorization: Bearer " + key).c_str());
    } else {
      headers = curl_slist_append(headers, ("x-api-key: " + key).c_str());
      headers = curl_slist_append(headers, "anthropic-version: 2023-06-01");
    }
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(c_.timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(c_.timeout_s, 30.0) * 1000));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    r.transport = curl_easy_perform(h);
    if (r.transport == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    return r;
  }

  std::string reply_text(const std::string& body, const std::string& url) const {
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error(fmt::format("judge: {} answered with a body that is not JSON", url));
    try {
      if (c_.api == JudgeApi::openai) return j.at("choices").at(0).at("message").at("content").get<std::string>();
      std::string text;
      for (const auto& part : j.at("content"))
        if (part.value("type", "") == "text") text += part.at("text").get<std::string>();
      return text;
    } catch (const json::exception&) {
      throw std::runtime_error(fmt::format("judge: {} answered without the {} reply fields ({})", url,
                                           c_.api == JudgeApi::openai ? "choices[0].message.content" : "content[].text",
                                           body.substr(0, 200)));
    }
  }

  static std::string describe_failure(const std::string& url, const HttpReply& r, int attempts) {
    if (r.transport != CURLE_OK)
      return fmt::format("judge: {}: {} (after {} attempt(s))", url, curl_easy_strerror(r.transport), attempts);
    return fmt::format("judge: {}: HTTP {} (after {} attempt(s)): {}", url, r.status, attempts, r.body.substr(0, 300));
  }

  JudgeConfig c_;
  std::atomic<std::uint64_t> calls_{0};
};

}  // namespace

std::unique_ptr<Judge> make_http_judge(const JudgeConfig& config) { return std::make_unique<HttpJudge>(config); }

std::unique_ptr<Judge> make_judge(const JudgeConfig& config) {
  auto http = make_http_judge(config);
  if (config.cache_dir.empty()) return http;
  return make_cached_judge(std::move(http), config.cache_dir, config.model);
}

}  // namespace d2k::capability
