// load_judge_config: the [judge] table of a TOML file into JudgeConfig, each field checked for
// type so that a typo names its field instead of silently falling back to a default.
#include <stdexcept>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "capability/judge.h"

namespace d2k::capability {

namespace fs = std::filesystem;

JudgeApi judge_api_from_name(const std::string& name) {
  if (name == "openai") return JudgeApi::openai;
  if (name == "anthropic") return JudgeApi::anthropic;
  throw std::runtime_error(fmt::format("unknown judge api '{}' (openai or anthropic)", name));
}

namespace {

struct Reader {
  const toml::table& t;
  std::string file;

  [[noreturn]] void fail(std::string_view key, std::string_view what) const {
    throw std::runtime_error(fmt::format("{}: judge.{}: {}", file, key, what));
  }
  std::string string(std::string_view key, bool required, std::string def = {}) const {
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) fail(key, "missing");
      return def;
    }
    auto v = n->value<std::string>();
    if (!v || !n->is_string()) fail(key, "expected a string");
    return *v;
  }
  double number(std::string_view key, double def, double lo, double hi) const {
    const toml::node* n = t.get(key);
    if (!n) return def;
    if (!n->is_number()) fail(key, "expected a number");
    const double v = *n->value<double>();
    if (v < lo || v > hi) fail(key, fmt::format("{} is outside [{}, {}]", v, lo, hi));
    return v;
  }
  int integer(std::string_view key, int def, int lo, int hi) const {
    const toml::node* n = t.get(key);
    if (!n) return def;
    if (!n->is_integer()) fail(key, "expected an integer");
    const auto v = *n->value<std::int64_t>();
    if (v < lo || v > hi) fail(key, fmt::format("{} is outside [{}, {}]", v, lo, hi));
    return static_cast<int>(v);
  }
};

}  // namespace

JudgeConfig load_judge_config(const fs::path& file) {
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", file.string(), where.line, where.column, e.description()));
  }
  const toml::table* t = root["judge"].as_table();
  if (!t) throw std::runtime_error(fmt::format("{}: no [judge] table", file.string()));
  static const char* kKnown[] = {"api", "base_url", "model", "api_key_env", "temperature", "max_tokens",
                                 "timeout_s", "retries", "backoff_s", "backoff_max_s", "cache_dir", "samples"};
  for (const auto& [k, v] : *t) {
    bool known = false;
    for (const char* n : kKnown) known = known || k.str() == n;
    if (!known) throw std::runtime_error(fmt::format("{}: judge.{}: unknown key", file.string(), k.str()));
  }
  const Reader r{*t, file.string()};
  JudgeConfig c;
  const std::string api = r.string("api", true);
  if (api != "openai" && api != "anthropic") r.fail("api", fmt::format("'{}' is not openai or anthropic", api));
  c.api = judge_api_from_name(api);
  c.base_url = r.string("base_url", true);
  while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
  c.model = r.string("model", true);
  c.api_key_env = r.string("api_key_env", false, c.api == JudgeApi::openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY");
  c.temperature = r.number("temperature", 0, 0, 2);
  c.max_tokens = r.integer("max_tokens", 1024, 16, 65536);
  c.timeout_s = r.number("timeout_s", 120, 1, 3600);
  c.retries = r.integer("retries", 5, 0, 20);
  c.backoff_s = r.number("backoff_s", 2, 0, 600);
  c.backoff_max_s = r.number("backoff_max_s", 60, 0, 3600);
  c.samples = r.integer("samples", 1, 1, 15);
  const std::string cache = r.string("cache_dir", false);
  if (!cache.empty()) {
    fs::path p = cache;
    if (cache.rfind("~/", 0) == 0) {
      const char* home = std::getenv("HOME");
      if (home) p = fs::path(home) / cache.substr(2);
    }
    c.cache_dir = p.is_relative() ? file.parent_path() / p : p;
  }
  return c;
}

}  // namespace d2k::capability
