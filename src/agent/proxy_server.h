#pragma once
/// `d2k proxy`: an OpenAI- and Anthropic-compatible pass-through that records every call's
/// tokens and cost per run and attempt (docs/proxy.md). An agent is pointed at
/// http://HOST:PORT/a/<RUN>/<ATTEMPT>/openai/v1 or .../anthropic; the proxy strips the
/// /a/<RUN>/<ATTEMPT>/<api> prefix, puts the configured key in place of the agent's, forwards,
/// passes the answer back (streams chunk by chunk) and appends one line to the usage file.
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "agent/proxy_config.h"

namespace d2k::agent {

/// The parts of a proxied path: /a/<RUN>/<ATTEMPT>/<api><rest>.
struct ProxyRoute {
  std::string run, attempt, api, rest;  ///< rest keeps the query string
};
/// nullopt when `target` is not a proxied path (run and attempt: [A-Za-z0-9._-]+, api: openai or
/// anthropic, rest starting with '/').
std::optional<ProxyRoute> parse_route(const std::string& target);

/// The request body as forwarded: an OpenAI chat or completions call that streams gets
/// stream_options.include_usage = true (the agent's other stream options kept), so that the
/// last chunk carries the usage. Anything else is returned unchanged.
std::string with_stream_usage(const std::string& rest, const std::string& body);

class ProxyServer {
 public:
  /// `log` gets one line per call (run, attempt, api, path, status, tokens): never a header.
  ProxyServer(ProxyConfig cfg, std::ostream* log = nullptr);
  ~ProxyServer();
  /// Binds cfg.host:cfg.port (0: any free port) and returns the port; throws when it cannot.
  int bind();
  /// Serves until stop(); returns false when the listener failed.
  bool serve();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace d2k::agent
