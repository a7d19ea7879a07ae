#pragma once
/// The LLM judge of the capability scorer (docs/scorer.md): a configuration file, an HTTP backend
/// speaking the OpenAI-compatible chat/completions or the Anthropic messages dialect over
/// libcurl (retries with exponential backoff on 429, 5xx and timeouts), and a response cache on
/// disk so that a re-run costs no call.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace d2k::capability {

/// The API dialect of a judge endpoint.
enum class JudgeApi { openai, anthropic };

/// config/judge.example.toml, field by field.
struct JudgeConfig {
  JudgeApi api = JudgeApi::openai;
  std::string base_url;          ///< e.g. https://api.openai.com/v1 (chat/completions is appended)
  std::string model;
  std::string api_key_env;       ///< name of the environment variable holding the key (never the key)
  double temperature = 0;
  int max_tokens = 1024;
  double timeout_s = 120;        ///< one HTTP request
  int retries = 5;               ///< further attempts after a 429, 5xx or timeout
  double backoff_s = 2;          ///< first wait; doubled after each retry
  double backoff_max_s = 60;
  std::filesystem::path cache_dir;  ///< empty: no cache
  int samples = 1;               ///< self-consistency: judge each level n times, take the median
};

/// Reads a TOML judge configuration (table [judge]). Throws std::runtime_error naming the file
/// and the field on a missing or ill-typed field. A relative cache_dir is taken relative to the
/// file's folder.
JudgeConfig load_judge_config(const std::filesystem::path& file);
/// "openai" / "anthropic"; throws std::runtime_error for anything else.
JudgeApi judge_api_from_name(const std::string& name);

/// One completion: the judge's text for one prompt. `sample` is the self-consistency index:
/// part of the cache key, so n samples are n calls the first time and none after.
class Judge {
 public:
  virtual ~Judge() = default;
  virtual std::string complete(const std::string& prompt, int sample) = 0;
  /// Calls that reached the network (cache hits not counted).
  virtual std::uint64_t calls() const = 0;
};

/// The HTTP backend. The key is read from the environment variable the configuration names when
/// the first request is made; a missing key is an error naming the variable.
std::unique_ptr<Judge> make_http_judge(const JudgeConfig& config);

/// Wraps `inner` with a cache in `dir`: one file per sha256(prompt, model, sample), written
/// atomically (a killed run leaves no half entry).
std::unique_ptr<Judge> make_cached_judge(std::unique_ptr<Judge> inner, std::filesystem::path dir, std::string model);

/// make_http_judge, cached when the configuration has a cache_dir.
std::unique_ptr<Judge> make_judge(const JudgeConfig& config);

/// The cache key of one completion: sha256 over the length-prefixed prompt, model and sample.
std::string judge_cache_key(const std::string& prompt, const std::string& model, int sample);

}  // namespace d2k::capability
