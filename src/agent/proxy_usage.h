#pragma once
/// Token usage read from what the upstream answered, and the usage file (one JSON line per call,
/// the record docs/proxy.md defines and the batch runner reads).
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/proxy_config.h"

namespace d2k::agent {

enum class Api { openai, anthropic };
std::string_view api_name(Api api);

/// What one response said about its model and tokens. Fields the upstream never sent stay unset.
struct SeenUsage {
  std::string model;
  std::optional<TokenUsage> tokens;
};

/// Reads model and usage from a whole (non-streamed) JSON response of either API: OpenAI chat
/// (usage.prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens), OpenAI
/// responses (usage.input_tokens, output_tokens, input_tokens_details.cached_tokens), Anthropic
/// messages (usage.input_tokens + cache_read_input_tokens + cache_creation_input_tokens,
/// output_tokens, cached = cache_read_input_tokens). A body that is not JSON leaves `seen` as is.
void read_usage_json(Api api, std::string_view body, SeenUsage& seen);

/// Reads usage from a server-sent-event stream fed in pieces as they arrive (a line may be split
/// across pieces). OpenAI chat: the last chunk carrying `usage` (asked for with
/// stream_options.include_usage); OpenAI responses: `response.completed`'s response.usage;
/// Anthropic: message_start's message.usage, then message_delta's cumulative usage.
class SseUsageReader {
 public:
  explicit SseUsageReader(Api api) : api_(api) {}
  void feed(std::string_view bytes);
  /// Reads a last event with no blank line after it.
  void finish();
  const SeenUsage& seen() const { return seen_; }

 private:
  void on_data(std::string_view data);
  Api api_;
  std::string line_, data_;
  SeenUsage seen_;
};

/// One call as recorded.
struct UsageRecord {
  std::string run, attempt;
  Api api = Api::openai;
  std::string model;                    ///< empty: unknown (recorded as null)
  std::optional<TokenUsage> tokens;     ///< unset: the upstream reported none (zeros recorded)
  double latency_s = 0;
  std::optional<double> cost_usd;       ///< unset: no tokens, or no price for the model
  int status = 0;                       ///< the HTTP status the agent got
  bool stream = false;
  std::string ts;                       ///< UTC, ISO 8601 with milliseconds
};

nlohmann::ordered_json usage_json(const UsageRecord& r);
/// The current time as UsageRecord::ts wants it.
std::string utc_now_iso();

/// Appends records to the usage file: one write(2) of a whole line per record under a lock, on a
/// descriptor opened O_APPEND, so concurrent calls never interleave within a line.
class UsageLog {
 public:
  explicit UsageLog(const std::filesystem::path& file);
  ~UsageLog();
  UsageLog(const UsageLog&) = delete;
  UsageLog& operator=(const UsageLog&) = delete;
  void append(const UsageRecord& r);

 private:
  std::filesystem::path file_;
  int fd_ = -1;
  std::mutex mu_;
};

}  // namespace d2k::agent
