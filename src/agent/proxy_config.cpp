#include "agent/proxy_config.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <cstdlib>
#include <stdexcept>
#include <toml++/toml.h>

namespace d2k::agent {

namespace fs = std::filesystem;

namespace {

toml::table parse_toml(const fs::path& file) {
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", file.string(), e.source().begin.line,
                                         e.source().begin.column, e.description()));
  }
}

double price_field(const toml::table& t, const fs::path& file, const std::string& model, const char* key) {
  const auto* node = t.get(key);
  if (!node) throw std::runtime_error(fmt::format("{}: models.\"{}\".{}: missing", file.string(), model, key));
  const auto v = node->value<double>();
  if (!v || *v < 0)
    throw std::runtime_error(fmt::format("{}: models.\"{}\".{}: expected a non-negative number (US dollars per million tokens)",
                                         file.string(), model, key));
  return *v;
}

/// A string field of [proxy], if present; anything but a string is an error naming it.
std::optional<std::string> string_field(const toml::table& proxy, const fs::path& file, const char* key) {
  const auto* node = proxy.get(key);
  if (!node) return std::nullopt;
  const auto v = node->value<std::string>();
  if (!v) throw std::runtime_error(fmt::format("{}: proxy.{}: expected a string", file.string(), key));
  return *v;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace

PriceTable PriceTable::load(const fs::path& file) {
  if (!fs::is_regular_file(file)) throw std::runtime_error(fmt::format("{}: no such price table", file.string()));
  const toml::table root = parse_toml(file);
  const auto* models = root.get_as<toml::table>("models");
  if (!models) throw std::runtime_error(fmt::format("{}: no [models.\"<name>\"] table", file.string()));
  PriceTable out;
  for (const auto& [key, node] : *models) {
    const std::string model(key.str());
    const auto* t = node.as_table();
    if (!t) throw std::runtime_error(fmt::format("{}: models.\"{}\": expected a table", file.string(), model));
    out.set(model, {price_field(*t, file, model, "input"), price_field(*t, file, model, "output"),
                    price_field(*t, file, model, "cached_input")});
  }
  return out;
}

std::optional<ModelPrice> PriceTable::find(const std::string& model) const {
  if (auto it = prices_.find(model); it != prices_.end()) return it->second;
  const ModelPrice* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [name, p] : prices_)
    if (name.size() > best_len && model.compare(0, name.size(), name) == 0) {
      best = &p;
      best_len = name.size();
    }
  if (!best) return std::nullopt;
  return *best;
}

double cost_usd(const TokenUsage& u, const ModelPrice& p) {
  const long long cached = std::min(u.cached_tokens, u.input_tokens);
  return (static_cast<double>(u.input_tokens - cached) * p.input + static_cast<double>(cached) * p.cached_input +
          static_cast<double>(u.output_tokens) * p.output) / 1e6;
}

void parse_listen(ProxyConfig& cfg, const std::string& listen, const std::string& what) {
  const auto colon = listen.rfind(':');
  char* end = nullptr;
  const long port = colon == std::string::npos ? -1 : std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (colon == 0 || colon == std::string::npos || !end || *end != '\0' || port < 0 || port > 65535)
    throw std::runtime_error(fmt::format("{}: '{}' is not HOST:PORT", what, listen));
  cfg.host = listen.substr(0, colon);
  cfg.port = static_cast<int>(port);
}

void load_proxy_config(ProxyConfig& cfg, const fs::path& file, bool required) {
  if (!file.empty() && fs::is_regular_file(file)) {
    const toml::table root = parse_toml(file);
    if (const auto* proxy = root.get_as<toml::table>("proxy")) {
      if (auto v = string_field(*proxy, file, "listen")) parse_listen(cfg, *v, file.string() + ": proxy.listen");
      if (auto v = string_field(*proxy, file, "upstream_openai")) cfg.upstream_openai = *v;
      if (auto v = string_field(*proxy, file, "upstream_anthropic")) cfg.upstream_anthropic = *v;
      if (auto v = string_field(*proxy, file, "usage")) cfg.usage = *v;
      if (auto v = string_field(*proxy, file, "prices")) cfg.prices = *v;
      const auto openai = string_field(*proxy, file, "openai_api_key");
      const auto anthropic = string_field(*proxy, file, "anthropic_api_key");
      if (openai) cfg.openai_key = *openai;
      if (anthropic) cfg.anthropic_key = *anthropic;
      // A file holding keys is a credential: say so when others can read it.
      struct stat st {};
      if ((openai || anthropic) && ::stat(file.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
        fmt::print(stderr, "d2k proxy: warning: {} holds API keys and is readable by others (chmod 600 it)\n", file.string());
    }
  } else if (required) {
    throw std::runtime_error(fmt::format("--config {}: no such file", file.string()));
  }
  cfg.openai_key = env_or("OPENAI_API_KEY", cfg.openai_key);
  cfg.anthropic_key = env_or("ANTHROPIC_API_KEY", cfg.anthropic_key);
}

}  // namespace d2k::agent
