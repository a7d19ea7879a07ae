#pragma once
/// What `d2k proxy` is configured with (docs/proxy.md): where it listens, the two upstreams, the
/// usage file, the price table, and the two API keys. Keys come from the environment
/// (OPENAI_API_KEY, ANTHROPIC_API_KEY) or the config file's [proxy] table, never from the command
/// line (a command line is visible to every user of the machine).
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace d2k::agent {

/// One model's list price in US dollars per million tokens.
struct ModelPrice {
  double input = 0, output = 0, cached_input = 0;
};

/// Model name (or name prefix) -> price. A dated model id (claude-sonnet-4-5-20250929) takes the
/// price of the longest entry it starts with.
class PriceTable {
 public:
  /// Reads a TOML table `[models."<name>"]` with input, output, cached_input (config/prices.toml).
  /// Throws std::runtime_error naming the file and the field on a malformed table.
  static PriceTable load(const std::filesystem::path& file);
  void set(const std::string& model, ModelPrice p) { prices_[model] = p; }
  /// The price of `model`: the exact entry, else the longest entry that is a prefix of it.
  std::optional<ModelPrice> find(const std::string& model) const;
  std::size_t size() const { return prices_.size(); }

 private:
  std::map<std::string, ModelPrice> prices_;
};

/// Tokens of one call, normalised across the two APIs: input_tokens counts every prompt token
/// (cached ones included), cached_tokens the share read from the provider's prompt cache.
struct TokenUsage {
  long long input_tokens = 0, output_tokens = 0, cached_tokens = 0;
};

/// Cost in US dollars: uncached input, cached input and output each at their price.
double cost_usd(const TokenUsage& u, const ModelPrice& p);

struct ProxyConfig {
  std::string host = "127.0.0.1";
  int port = 8391;                      ///< 0: any free port (tests)
  std::string upstream_openai = "https://api.openai.com";
  std::string upstream_anthropic = "https://api.anthropic.com";
  std::filesystem::path usage = "usage.jsonl";
  std::filesystem::path prices;         ///< empty: no costs (cost_usd null)
  std::string openai_key, anthropic_key;
  int threads = 64;                     ///< concurrent calls (a stream holds one thread)
  double connect_timeout_s = 10;
};

/// Fills `cfg` from the config file's [proxy] table (listen, upstream_openai,
/// upstream_anthropic, usage, prices, openai_api_key, anthropic_api_key), then takes the keys
/// from OPENAI_API_KEY / ANTHROPIC_API_KEY where set (the environment wins). A missing file is an
/// error only when `required`. Throws std::runtime_error naming the file and the field.
void load_proxy_config(ProxyConfig& cfg, const std::filesystem::path& file, bool required);

/// Parses "HOST:PORT" into cfg.host and cfg.port; throws naming `what` when it is not one.
void parse_listen(ProxyConfig& cfg, const std::string& listen, const std::string& what);

}  // namespace d2k::agent
