// The judge's response cache: one JSON file per completion, named by sha256(prompt, model,
// sample), so that re-scoring a run (or scoring it again after adding attempts) only pays for
// prompts it has not seen.
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "capability/judge.h"
#include "exec/sha256.h"

namespace d2k::capability {

namespace fs = std::filesystem;

std::string judge_cache_key(const std::string& prompt, const std::string& model, int sample) {
  Sha256 h;
  h.update_field("d2k-judge-cache-v1");
  h.update_field(prompt);
  h.update_field(model);
  h.update_field(std::to_string(sample));
  return h.hex_digest();
}

namespace {

class CachedJudge final : public Judge {
 public:
  CachedJudge(std::unique_ptr<Judge> inner, fs::path dir, std::string model)
      : inner_(std::move(inner)), dir_(std::move(dir)), model_(std::move(model)) {}

  std::string complete(const std::string& prompt, int sample) override {
    const std::string key = judge_cache_key(prompt, model_, sample);
    const fs::path file = dir_ / key.substr(0, 2) / (key + ".json");
    if (auto hit = read(file, key)) return *hit;
    std::string text = inner_->complete(prompt, sample);
    write(file, key, sample, text);
    return text;
  }

  std::uint64_t calls() const override { return inner_->calls(); }

 private:
  // An unreadable or foreign entry is a miss, not an error: the call is made again and the entry
  // rewritten.
  static std::optional<std::string> read(const fs::path& file, const std::string& key) {
    std::ifstream in(file);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("key", "") != key || !j.contains("text") || !j["text"].is_string())
      return std::nullopt;
    return j["text"].get<std::string>();
  }

  void write(const fs::path& file, const std::string& key, int sample, const std::string& text) const {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec) throw std::runtime_error(fmt::format("judge cache: cannot create {}: {}", file.parent_path().string(), ec.message()));
    const fs::path tmp = file.string() + fmt::format(".tmp{}", ::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << nlohmann::json{{"key", key}, {"model", model_}, {"sample", sample}, {"text", text}}.dump(1) << "\n";
      if (!out) throw std::runtime_error(fmt::format("judge cache: cannot write {}", tmp.string()));
    }
    fs::rename(tmp, file, ec);
    if (ec) throw std::runtime_error(fmt::format("judge cache: cannot rename into {}: {}", file.string(), ec.message()));
  }

  std::unique_ptr<Judge> inner_;
  fs::path dir_;
  std::string model_;
};

}  // namespace

std::unique_ptr<Judge> make_cached_judge(std::unique_ptr<Judge> inner, fs::path dir, std::string model) {
  return std::make_unique<CachedJudge>(std::move(inner), std::move(dir), std::move(model));
}

}  // namespace d2k::capability
