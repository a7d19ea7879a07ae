#include "agent/proxy_upstream.h"

#include <curl/curl.h>
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace d2k::agent {

void curl_global_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct UpstreamCall::State {
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  curl_slist* req_headers = nullptr;
  std::string body;              // the request body (curl reads it in place)
  std::string pending;           // response body bytes not yet handed over
  std::vector<std::pair<std::string, std::string>> headers;
  int status = 0;
  bool headers_done = false, finished = false;
  std::string error;
  char errbuf[CURL_ERROR_SIZE] = {};

  // One header line; a blank line ends a header block. Interim (1xx) blocks are dropped.
  static size_t on_header(char* p, size_t size, size_t n, void* self) {
    auto* s = static_cast<State*>(self);
    std::string line(p, size * n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {
      s->headers.clear();
      const auto sp = line.find(' ');
      s->status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
    } else if (line.empty()) {
      if (s->status >= 200) s->headers_done = true;
    } else if (const auto colon = line.find(':'); colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      s->headers.emplace_back(std::move(name), std::move(value));
    }
    return size * n;
  }

  static size_t on_body(char* p, size_t size, size_t n, void* self) {
    auto* s = static_cast<State*>(self);
    s->headers_done = true;  // a body implies the headers are complete
    s->pending.append(p, size * n);
    return size * n;
  }

  // One round of the multi loop: wait for the socket up to 1 s, move data, note completion.
  void step() {
    int running = 0;
    curl_multi_perform(multi, &running);
    int msgs = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &msgs)) {
      if (m->msg != CURLMSG_DONE) continue;
      finished = true;
      if (m->data.result != CURLE_OK)
        error = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(m->data.result));
    }
    if (running == 0) finished = true;
    if (!finished) curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
};

UpstreamCall::UpstreamCall(const UpstreamRequest& req) : s_(std::make_unique<State>()) {
  curl_global_once();
  State& s = *s_;
  s.body = req.body;
  s.easy = curl_easy_init();
  s.multi = curl_multi_init();
  for (const auto& [k, v] : req.headers) s.req_headers = curl_slist_append(s.req_headers, fmt::format("{}: {}", k, v).c_str());
  // No 100-continue round trip; no compressed bodies (the proxy reads usage from the body).
  s.req_headers = curl_slist_append(s.req_headers, "Expect:");
  s.req_headers = curl_slist_append(s.req_headers, "Accept-Encoding: identity");
  curl_easy_setopt(s.easy, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(s.easy, CURLOPT_HTTPHEADER, s.req_headers);
  curl_easy_setopt(s.easy, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  if (req.method == "GET" || req.method == "HEAD") {
    curl_easy_setopt(s.easy, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(s.easy, CURLOPT_POSTFIELDS, s.body.data());
    curl_easy_setopt(s.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(s.body.size()));
  }
  curl_easy_setopt(s.easy, CURLOPT_HEADERFUNCTION, &State::on_header);
  curl_easy_setopt(s.easy, CURLOPT_HEADERDATA, &s);
  curl_easy_setopt(s.easy, CURLOPT_WRITEFUNCTION, &State::on_body);
  curl_easy_setopt(s.easy, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(s.easy, CURLOPT_ERRORBUFFER, s.errbuf);
  curl_easy_setopt(s.easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(s.easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout_s * 1000));
  // A model may think for minutes before its first byte, so no total timeout; a connection
  // silent for 10 minutes is dead.
  curl_easy_setopt(s.easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(s.easy, CURLOPT_LOW_SPEED_TIME, 600L);
  curl_easy_setopt(s.easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_multi_add_handle(s.multi, s.easy);
}

UpstreamCall::~UpstreamCall() {
  if (s_->multi && s_->easy) curl_multi_remove_handle(s_->multi, s_->easy);
  if (s_->easy) curl_easy_cleanup(s_->easy);
  if (s_->multi) curl_multi_cleanup(s_->multi);
  curl_slist_free_all(s_->req_headers);
}

bool UpstreamCall::wait_headers() {
  while (!s_->headers_done && !s_->finished) s_->step();
  if (!s_->headers_done && s_->error.empty()) s_->error = "the connection closed before a response";
  return s_->headers_done && s_->status > 0;
}

int UpstreamCall::status() const { return s_->status; }
const std::vector<std::pair<std::string, std::string>>& UpstreamCall::headers() const { return s_->headers; }
const std::string& UpstreamCall::error() const { return s_->error; }

std::string UpstreamCall::header(const std::string& lower_name) const {
  for (const auto& [k, v] : s_->headers)
    if (k == lower_name) return v;
  return {};
}

bool UpstreamCall::next(std::string& out) {
  while (s_->pending.empty() && !s_->finished) s_->step();
  if (s_->pending.empty()) return false;
  out.swap(s_->pending);
  s_->pending.clear();
  return true;
}

}  // namespace d2k::agent
