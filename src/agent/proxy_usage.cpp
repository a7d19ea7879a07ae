#include "agent/proxy_usage.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace d2k::agent {

using json = nlohmann::json;

std::string_view api_name(Api api) { return api == Api::openai ? "openai" : "anthropic"; }

namespace {

long long int_at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return 0;
    p = &(*p)[k];
  }
  return p->is_number_integer() ? p->get<long long>() : 0;
}

/// The `usage` object of either API, normalised; nullopt when it is absent or null.
std::optional<TokenUsage> tokens_of(Api api, const json& usage) {
  if (!usage.is_object()) return std::nullopt;
  TokenUsage t;
  if (api == Api::anthropic) {
    const long long read = int_at(usage, {"cache_read_input_tokens"});
    t.input_tokens = int_at(usage, {"input_tokens"}) + read + int_at(usage, {"cache_creation_input_tokens"});
    t.output_tokens = int_at(usage, {"output_tokens"});
    t.cached_tokens = read;
  } else if (usage.contains("prompt_tokens")) {  // chat completions, completions
    t.input_tokens = int_at(usage, {"prompt_tokens"});
    t.output_tokens = int_at(usage, {"completion_tokens"});
    t.cached_tokens = int_at(usage, {"prompt_tokens_details", "cached_tokens"});
  } else {  // responses
    t.input_tokens = int_at(usage, {"input_tokens"});
    t.output_tokens = int_at(usage, {"output_tokens"});
    t.cached_tokens = int_at(usage, {"input_tokens_details", "cached_tokens"});
  }
  return t;
}

void take_model(const json& j, SeenUsage& seen) {
  if (j.is_object() && j.contains("model") && j["model"].is_string()) seen.model = j["model"].get<std::string>();
}

}  // namespace

void read_usage_json(Api api, std::string_view body, SeenUsage& seen) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return;
  take_model(j, seen);
  if (j.contains("usage"))
    if (auto t = tokens_of(api, j["usage"])) seen.tokens = t;
}

void SseUsageReader::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty()) {  // end of an event
      if (!data_.empty()) on_data(data_);
      data_.clear();
    } else if (line_.rfind("data:", 0) == 0) {
      std::string_view v(line_);
      v.remove_prefix(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (!data_.empty()) data_ += '\n';
      data_ += v;
    }
    line_.clear();
  }
}

void SseUsageReader::finish() {
  feed("\n\n");
}

void SseUsageReader::on_data(std::string_view data) {
  if (data == "[DONE]") return;
  const json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return;
  const std::string type = j.value("type", "");
  if (api_ == Api::anthropic) {
    if (type == "message_start" && j.contains("message")) {
      take_model(j["message"], seen_);
      if (j["message"].contains("usage"))
        if (auto t = tokens_of(api_, j["message"]["usage"])) seen_.tokens = t;
    } else if (type == "message_delta" && j.contains("usage") && j["usage"].is_object()) {
      // Cumulative counts: output_tokens always; the input fields only where this API version sends them.
      TokenUsage t = seen_.tokens.value_or(TokenUsage{});
      const json& u = j["usage"];
      t.output_tokens = int_at(u, {"output_tokens"});
      if (u.contains("input_tokens") || u.contains("cache_read_input_tokens")) {
        const TokenUsage full = *tokens_of(api_, u);
        t.input_tokens = std::max(t.input_tokens, full.input_tokens);
        t.cached_tokens = std::max(t.cached_tokens, full.cached_tokens);
      }
      seen_.tokens = t;
    }
    return;
  }
  if (type == "response.completed" && j.contains("response")) {
    take_model(j["response"], seen_);
    if (j["response"].contains("usage"))
      if (auto t = tokens_of(api_, j["response"]["usage"])) seen_.tokens = t;
    return;
  }
  take_model(j, seen_);
  if (j.contains("usage"))
    if (auto t = tokens_of(api_, j["usage"])) seen_.tokens = t;
}

nlohmann::ordered_json usage_json(const UsageRecord& r) {
  const TokenUsage t = r.tokens.value_or(TokenUsage{});
  nlohmann::ordered_json j;
  j["run"] = r.run;
  j["attempt"] = r.attempt;
  j["api"] = api_name(r.api);
  j["model"] = r.model.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.model);
  j["input_tokens"] = t.input_tokens;
  j["output_tokens"] = t.output_tokens;
  j["cached_tokens"] = t.cached_tokens;
  j["latency_s"] = r.latency_s;
  j["cost_usd"] = r.cost_usd ? nlohmann::ordered_json(*r.cost_usd) : nlohmann::ordered_json(nullptr);
  j["status"] = r.status;
  j["stream"] = r.stream;
  j["ts"] = r.ts;
  return j;
}

std::string utc_now_iso() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms));
}

UsageLog::UsageLog(const std::filesystem::path& file) : file_(file) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("--usage {}: cannot open: {}", file.string(), std::strerror(errno)));
}

UsageLog::~UsageLog() {
  if (fd_ >= 0) ::close(fd_);
}

void UsageLog::append(const UsageRecord& r) {
  const std::string line = usage_json(r).dump() + "\n";
  std::lock_guard lock(mu_);
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fmt::print(stderr, "d2k proxy: cannot append to {}: {}\n", file_.string(), std::strerror(errno));
      return;
    }
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace d2k::agent
