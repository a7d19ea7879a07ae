#include "agent/batch_record.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <stdexcept>

namespace d2k::agent {

namespace fs = std::filesystem;
using nlohmann::json;

nlohmann::ordered_json to_json(const RunConfig& c) {
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["tasks"] = c.tasks;
  j["tracks"] = c.tracks;
  j["levels"] = c.levels;
  j["agent"] = to_json(c.agent);
  j["vars"] = c.vars;
  j["model"] = c.model;
  j["max_turns"] = c.max_turns;
  j["wall_s"] = c.wall_s;
  j["attempts"] = c.attempts;
  j["concurrency"] = c.concurrency;
  j["retries"] = c.retries;
  j["backoff_s"] = c.backoff_s;
  j["grace_s"] = c.grace_s;
  j["check_wall_s"] = c.check_wall_s;
  j["proxy_url"] = c.proxy_url;
  j["dataset"] = c.dataset;
  j["created"] = c.created;
  return j;
}

RunConfig run_config_from_json(const json& j, const std::string& file) {
  try {
    RunConfig c;
    c.name = j.at("name").get<std::string>();
    c.tasks = j.at("tasks").get<std::vector<std::string>>();
    c.tracks = j.at("tracks").get<std::vector<std::string>>();
    c.levels = j.at("levels").get<std::vector<std::string>>();
    c.agent = template_from_json(j.at("agent"));
    c.vars = j.value("vars", std::map<std::string, std::string>{});
    c.model = j.value("model", "");
    c.max_turns = j.value("max_turns", c.max_turns);
    c.wall_s = j.value("wall_s", c.wall_s);
    c.attempts = j.value("attempts", c.attempts);
    c.concurrency = j.value("concurrency", c.concurrency);
    c.retries = j.value("retries", c.retries);
    c.backoff_s = j.value("backoff_s", c.backoff_s);
    c.grace_s = j.value("grace_s", c.grace_s);
    c.check_wall_s = j.value("check_wall_s", c.check_wall_s);
    c.proxy_url = j.value("proxy_url", "");
    c.dataset = j.value("dataset", "");
    c.created = j.value("created", "");
    return c;
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", file, e.what()));
  }
}

std::string_view state_name(AttemptState s) {
  switch (s) {
    case AttemptState::pending: return "pending";
    case AttemptState::running: return "running";
    case AttemptState::done: return "done";
    case AttemptState::infra_error: return "infra_error";
  }
  return "pending";
}

namespace {

AttemptState parse_state(const std::string& s, const std::string& file) {
  for (auto st : {AttemptState::pending, AttemptState::running, AttemptState::done, AttemptState::infra_error})
    if (s == state_name(st)) return st;
  throw std::runtime_error(fmt::format("{}: state: unknown value '{}' (pending, running, done, infra_error)", file, s));
}

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <class T>
std::optional<T> get_opt(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}

}  // namespace

nlohmann::ordered_json to_json(const AttemptRecord& a) {
  nlohmann::ordered_json j;
  j["id"] = a.id;
  j["task"] = a.task;
  j["track"] = a.track;
  j["level"] = a.level;
  j["k"] = a.k;
  j["state"] = std::string(state_name(a.state));
  j["failure"] = opt(a.failure);
  j["reason"] = a.reason;
  j["exit_code"] = opt(a.exit_code);
  j["signal"] = opt(a.signal);
  j["wall_s"] = opt(a.wall_s);
  j["turns"] = opt(a.turns);
  j["started"] = a.started.empty() ? json(nullptr) : json(a.started);
  j["ended"] = a.ended.empty() ? json(nullptr) : json(a.ended);
  j["tries"] = a.tries;
  j["infra_failures"] = a.infra_failures;
  j["pgid"] = a.pgid;
  j["check_exit"] = opt(a.check_exit);
  j["verdict"] = a.verdict;
  j["speedup_vs_naive"] = opt(a.speedup_vs_naive);
  return j;
}

AttemptRecord attempt_from_json(const json& j, const std::string& file) {
  try {
    AttemptRecord a;
    a.id = j.value("id", "");
    a.task = j.at("task").get<std::string>();
    a.track = j.at("track").get<std::string>();
    a.level = j.at("level").get<std::string>();
    a.k = j.value("k", 1);
    a.state = parse_state(j.at("state").get<std::string>(), file);
    a.failure = get_opt<std::string>(j, "failure");
    a.reason = j.value("reason", "");
    a.exit_code = get_opt<int>(j, "exit_code");
    a.signal = get_opt<int>(j, "signal");
    a.wall_s = get_opt<double>(j, "wall_s");
    a.turns = get_opt<int>(j, "turns");
    a.started = get_opt<std::string>(j, "started").value_or("");
    a.ended = get_opt<std::string>(j, "ended").value_or("");
    a.tries = j.value("tries", 0);
    a.infra_failures = j.value("infra_failures", 0);
    a.pgid = j.value("pgid", 0);
    a.check_exit = get_opt<int>(j, "check_exit");
    a.verdict = j.value("verdict", "");
    a.speedup_vs_naive = get_opt<double>(j, "speedup_vs_naive");
    return a;
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", file, e.what()));
  }
}

std::string attempt_id(const std::string& task, const std::string& track, const LevelInfo& level, int k) {
  return fmt::format("{}__{}__{}__{}", task, track, level.folder, k);
}

void write_atomic(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot write", tmp.string()));
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error(fmt::format("{}: write failed", tmp.string()));
    }
    off += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  fs::rename(tmp, path);
}

json read_json(const fs::path& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot read", path.string()));
  json j = json::parse(f, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(fmt::format("{}: not valid JSON", path.string()));
  return j;
}

AttemptRecord read_attempt(const fs::path& dir) {
  const fs::path file = dir / "attempt.json";
  return attempt_from_json(read_json(file), file.string());
}

void write_attempt(const fs::path& dir, const AttemptRecord& a) { write_atomic(dir / "attempt.json", to_json(a).dump(2) + "\n"); }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace d2k::agent
