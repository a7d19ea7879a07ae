// d2k proxy: the LLM API pass-through that records tokens and cost per run and attempt
// (docs/proxy.md). Options here, the work in src/agent/proxy_*.
#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "agent/proxy_server.h"
#include "cli/commands.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;

struct ProxyArgs {
  std::string config, listen, upstream_openai, upstream_anthropic, usage, prices;
  int threads = 64;
};

/// The config file: --config, else $D2K_CONFIG, else ./d2k.toml when it exists.
fs::path config_path(const ProxyArgs& a, bool& required) {
  required = true;
  if (!a.config.empty()) return a.config;
  if (const char* env = std::getenv("D2K_CONFIG"); env && *env) return env;
  required = false;
  return "d2k.toml";
}

int proxy_main(const ProxyArgs& a) {
  agent::ProxyConfig cfg;
  bool required = false;
  const fs::path config = config_path(a, required);
  agent::load_proxy_config(cfg, config, required);
  if (!a.listen.empty()) agent::parse_listen(cfg, a.listen, "--listen");
  if (!a.upstream_openai.empty()) cfg.upstream_openai = a.upstream_openai;
  if (!a.upstream_anthropic.empty()) cfg.upstream_anthropic = a.upstream_anthropic;
  if (!a.usage.empty()) cfg.usage = a.usage;
  if (!a.prices.empty()) cfg.prices = a.prices;
  cfg.threads = a.threads;

  // Block the stop signals in every thread; one thread waits for them and stops the server.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  // An agent hanging up mid-stream must not kill the proxy.
  signal(SIGPIPE, SIG_IGN);

  agent::ProxyServer server(cfg, &std::cerr);
  const int port = server.bind();
  fmt::print(stderr, "d2k proxy: listening on http://{}:{} (openai -> {}, anthropic -> {}), usage -> {}{}\n", cfg.host,
             port, cfg.upstream_openai, cfg.upstream_anthropic, cfg.usage.string(),
             cfg.prices.empty() ? " (no price table: cost_usd null)" : ", prices " + cfg.prices.string());
  fmt::print(stderr, "d2k proxy: agents use http://{}:{}/a/<RUN>/<ATTEMPT>/openai/v1 and .../anthropic\n", cfg.host, port);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_set, &sig);
    server.stop();
  });
  const bool ok = server.serve();
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return ok ? 0 : 1;
}

}  // namespace

void add_proxy(CLI::App& app, Globals&, Runner& run) {
  auto a = std::make_shared<ProxyArgs>();
  auto* s = app.add_subcommand("proxy", "OpenAI- and Anthropic-compatible pass-through recording tokens and cost per run and attempt");
  s->add_option("--config", a->config, "config file with a [proxy] table (default: $D2K_CONFIG, else ./d2k.toml if present)");
  s->add_option("--listen", a->listen, "HOST:PORT to listen on (default 127.0.0.1:8391)");
  s->add_option("--upstream-openai", a->upstream_openai, "OpenAI-compatible base URL, without /v1 (default https://api.openai.com)");
  s->add_option("--upstream-anthropic", a->upstream_anthropic, "Anthropic base URL (default https://api.anthropic.com)");
  s->add_option("--usage", a->usage, "file that gets one JSON line per call (default usage.jsonl)");
  s->add_option("--prices", a->prices, "price table (TOML, config/prices.toml); without it cost_usd is null");
  s->add_option("--threads", a->threads, "concurrent calls (a stream holds one; default 64)")->check(CLI::PositiveNumber);
  s->callback([a, &run] { run = [a] { return proxy_main(*a); }; });
}

}  // namespace d2k::cli
