#include "agent/proxy_server.h"

#include <fmt/core.h>
#include <httplib.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "agent/proxy_upstream.h"
#include "agent/proxy_usage.h"

namespace d2k::agent {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::optional<ProxyRoute> parse_route(const std::string& target) {
  static const std::regex re(R"(^/a/([A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)/(openai|anthropic)(/.*)$)");
  std::smatch m;
  if (!std::regex_match(target, m, re)) return std::nullopt;
  if (m[1] == "." || m[1] == ".." || m[2] == "." || m[2] == "..") return std::nullopt;
  return ProxyRoute{m[1], m[2], m[3], m[4]};
}

std::string with_stream_usage(const std::string& rest, const std::string& body) {
  const std::string path = rest.substr(0, rest.find('?'));
  const bool chat = path.ends_with("/chat/completions") || path.ends_with("/v1/completions");
  if (!chat) return body;
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("stream") || j["stream"] != true) return body;
  if (!j.contains("stream_options") || !j["stream_options"].is_object()) j["stream_options"] = json::object();
  j["stream_options"]["include_usage"] = true;
  return j.dump();
}

namespace {

/// httplib listens with a backlog of 5; a batch of agents connecting at once would wait for SYN
/// retransmits. Linux takes a second listen() as a new backlog.
struct ListeningServer : httplib::Server {
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }
};

/// Headers never forwarded upstream: the agent's credentials (replaced by the configured key),
/// hop-by-hop headers, what curl sets itself, and httplib's own REMOTE_/LOCAL_ entries.
bool drop_request_header(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::set<std::string> drop = {
      "authorization", "x-api-key", "host", "content-length", "connection", "keep-alive", "transfer-encoding",
      "accept-encoding", "expect", "te", "upgrade", "proxy-authorization", "proxy-connection",
      "remote_addr", "remote_port", "local_addr", "local_port"};
  return drop.count(name) > 0;
}

/// Headers of the upstream's answer not passed back: those httplib writes itself for the
/// body it sends, and hop-by-hop ones.
bool drop_response_header(const std::string& lower) {
  static const std::set<std::string> drop = {"content-length", "transfer-encoding", "connection", "keep-alive",
                                             "content-encoding", "content-type"};
  return drop.count(lower) > 0;
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  // Both SDKs read error.message; `type` tells the agent's operator it came from the proxy.
  res.set_content(json{{"error", {{"type", "proxy_error"}, {"message", message}}}}.dump(), "application/json");
}

/// Replaces every occurrence of `secret` in `text` (an upstream error may quote the key).
void scrub(std::string& text, const std::string& secret) {
  if (secret.size() < 8) return;
  for (std::size_t p = text.find(secret); p != std::string::npos; p = text.find(secret, p))
    text.replace(p, secret.size(), "[redacted]");
}

}  // namespace

struct ProxyServer::Impl {
  ProxyConfig cfg;
  std::ostream* log;
  std::mutex log_mu;
  std::unique_ptr<UsageLog> usage;
  std::optional<PriceTable> prices;
  std::set<std::string> unpriced;  // models already warned about
  ListeningServer http;

  /// One call in flight; its usage line is written when it goes away (after the last byte of a
  /// stream, or when the agent hung up), so that no path forgets to record.
  struct Call {
    Impl* owner;
    UsageRecord rec;
    std::string path, request_model;
    Clock::time_point t0 = Clock::now();
    std::optional<Clock::time_point> t_end;
    SeenUsage seen;
    std::string note;  // why a call ended badly (upstream broke off, agent hung up)
    bool recorded = false;
    /// Writes the usage line once: explicitly before a stream's last chunk goes out (so the line
    /// is in the file when the agent sees the end), else when the call goes away.
    void finish() {
      if (recorded) return;
      recorded = true;
      owner->record(*this);
    }
    ~Call() {
      try {
        finish();
      } catch (...) {
      }
    }
  };

  void say(const std::string& line) {
    if (!log) return;
    std::lock_guard lock(log_mu);
    *log << line << std::endl;
  }

  void record(Call& c) {
    c.rec.latency_s = std::chrono::duration<double>(c.t_end.value_or(Clock::now()) - c.t0).count();
    c.rec.model = c.seen.model.empty() ? c.request_model : c.seen.model;
    c.rec.tokens = c.seen.tokens;
    c.rec.ts = utc_now_iso();
    if (c.rec.tokens && prices) {
      if (auto p = prices->find(c.rec.model)) {
        c.rec.cost_usd = cost_usd(*c.rec.tokens, *p);
      } else {
        std::lock_guard lock(log_mu);
        if (unpriced.insert(c.rec.model).second && log)
          *log << fmt::format("d2k proxy: no price for model '{}' in {}: cost_usd null", c.rec.model, cfg.prices.string())
               << std::endl;
      }
    }
    usage->append(c.rec);
    const TokenUsage t = c.rec.tokens.value_or(TokenUsage{});
    say(fmt::format("{}/{} {} {} -> {} model={} in={} out={} cached={} {:.2f}s{}{}", c.rec.run, c.rec.attempt,
                    api_name(c.rec.api), c.path, c.rec.status, c.rec.model.empty() ? "?" : c.rec.model, t.input_tokens,
                    t.output_tokens, t.cached_tokens, c.rec.latency_s, c.note.empty() ? "" : " ", c.note));
  }

  const std::string& key_for(Api api) const { return api == Api::openai ? cfg.openai_key : cfg.anthropic_key; }
  const std::string& base_for(Api api) const { return api == Api::openai ? cfg.upstream_openai : cfg.upstream_anthropic; }

  UpstreamRequest upstream_request(const httplib::Request& req, const ProxyRoute& route, Api api) const {
    UpstreamRequest up;
    up.method = req.method;
    std::string base = base_for(api);
    while (!base.empty() && base.back() == '/') base.pop_back();
    up.url = base + route.rest;
    up.connect_timeout_s = cfg.connect_timeout_s;
    for (const auto& [k, v] : req.headers)
      if (!drop_request_header(k)) up.headers.emplace_back(k, v);
    const std::string& key = key_for(api);
    if (!key.empty()) {
      if (api == Api::openai) up.headers.emplace_back("Authorization", "Bearer " + key);
      else up.headers.emplace_back("x-api-key", key);
    }
    up.body = api == Api::openai ? with_stream_usage(route.rest, req.body) : req.body;
    return up;
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    const auto route = parse_route(req.target);
    if (!route) {
      send_error(res, 404, fmt::format("d2k proxy: {} is not /a/<RUN>/<ATTEMPT>/(openai|anthropic)/...", req.path));
      return;
    }
    const Api api = route->api == "openai" ? Api::openai : Api::anthropic;
    auto call = std::make_shared<Call>();
    call->owner = this;
    call->rec.run = route->run;
    call->rec.attempt = route->attempt;
    call->rec.api = api;
    call->path = req.method + " " + route->rest.substr(0, route->rest.find('?'));
    if (const json b = json::parse(req.body, nullptr, false); b.is_object()) {
      call->request_model = b.value("model", "");
      call->rec.stream = b.value("stream", false) == true;
    }

    auto up = std::make_shared<UpstreamCall>(upstream_request(req, *route, api));
    if (!up->wait_headers()) {
      call->rec.status = 502;
      call->note = "upstream unreachable";
      send_error(res, 502, fmt::format("d2k proxy: upstream {} unreachable: {}", base_for(api), up->error()));
      return;
    }
    res.status = up->status();
    call->rec.status = up->status();
    for (const auto& [k, v] : up->headers())
      if (!drop_response_header(k)) res.set_header(k, v);
    const std::string type = up->header("content-type");
    if (type.rfind("text/event-stream", 0) == 0) {
      stream_back(res, up, call, api, type);
      return;
    }
    std::string body, piece;
    while (up->next(piece)) body += piece;
    if (!up->error().empty()) call->note = "upstream broke off: " + up->error();
    if (up->status() >= 400) scrub(body, key_for(api));
    read_usage_json(api, body, call->seen);
    call->t_end = Clock::now();
    call->finish();
    res.set_content(body, type.empty() ? "application/json" : type);
  }

  /// Passes the event stream on as each piece arrives, reading usage on the way.
  void stream_back(httplib::Response& res, std::shared_ptr<UpstreamCall> up, std::shared_ptr<Call> call, Api api,
                   const std::string& type) {
    call->rec.stream = true;
    res.set_header("Cache-Control", "no-cache");
    auto reader = std::make_shared<SseUsageReader>(api);
    res.set_chunked_content_provider(type, [up, call, reader](std::size_t, httplib::DataSink& sink) {
      std::string piece;
      bool agent_gone = false;
      while (up->next(piece)) {
        reader->feed(piece);
        if (!sink.write(piece.data(), piece.size())) {
          agent_gone = true;
          break;
        }
      }
      reader->finish();
      call->seen = reader->seen();
      call->t_end = Clock::now();
      if (agent_gone) call->note = "agent hung up";
      else if (!up->error().empty()) call->note = "upstream broke off: " + up->error();
      if (agent_gone) return false;
      call->finish();
      sink.done();
      return true;
    });
  }
};

ProxyServer::ProxyServer(ProxyConfig cfg, std::ostream* log) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = std::move(cfg);
  impl_->log = log;
  impl_->usage = std::make_unique<UsageLog>(impl_->cfg.usage);
  if (!impl_->cfg.prices.empty()) impl_->prices = PriceTable::load(impl_->cfg.prices);
  curl_global_once();
  auto& http = impl_->http;
  const auto threads = static_cast<std::size_t>(std::max(1, impl_->cfg.threads));
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(64u << 20);
  http.set_read_timeout(300, 0);
  http.set_write_timeout(300, 0);
  Impl* self = impl_.get();
  auto handler = [self](const httplib::Request& req, httplib::Response& res) { self->handle(req, res); };
  const std::string pattern = R"(/a/.*)";
  http.Post(pattern, handler);
  http.Get(pattern, handler);
  http.Delete(pattern, handler);
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, "d2k proxy: " + what);
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty())
      send_error(res, 404, fmt::format("d2k proxy: {} is not /a/<RUN>/<ATTEMPT>/(openai|anthropic)/...", req.path));
  });
}

ProxyServer::~ProxyServer() { stop(); }

int ProxyServer::bind() {
  auto& cfg = impl_->cfg;
  int port = cfg.port;
  if (port == 0) {
    port = impl_->http.bind_to_any_port(cfg.host);
    if (port <= 0) throw std::runtime_error(fmt::format("--listen {}:0: cannot bind", cfg.host));
  } else if (!impl_->http.bind_to_port(cfg.host, port)) {
    throw std::runtime_error(fmt::format("--listen {}:{}: cannot bind", cfg.host, port));
  }
  impl_->http.widen_backlog(1024);
  for (Api api : {Api::openai, Api::anthropic})
    if (impl_->key_for(api).empty())
      impl_->say(fmt::format("d2k proxy: no {} key (set {} or [proxy].{}_api_key in the config file): calls go upstream "
                             "without credentials",
                             api_name(api), api == Api::openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY", api_name(api)));
  return port;
}

bool ProxyServer::serve() { return impl_->http.listen_after_bind(); }

void ProxyServer::stop() { impl_->http.stop(); }

}  // namespace d2k::agent
