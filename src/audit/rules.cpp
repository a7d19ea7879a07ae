#include "audit/rules.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <regex>

namespace d2k::audit {

namespace {

struct Pattern {
  const char* rule;
  std::regex re;
  int group;                           // the capture that is the secret (0: the whole match)
  std::vector<std::string> triggers;   // the regex runs only on a line holding one (std::regex is slow)
};

/// The token patterns. Each is anchored on a prefix the issuer puts on every token, so that the
/// false-positive rate stays near zero; the entropy rule catches the rest.
const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> p = [] {
    const auto f = std::regex::ECMAScript | std::regex::optimize;
    std::vector<Pattern> v;
    v.push_back({"secret.aws-access-key", std::regex(R"(\b((?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16})\b)", f), 1,
                 {"AKIA", "ASIA", "AGPA", "AIDA", "AROA"}});
    v.push_back({"secret.aws-secret-key",
                 std::regex(R"((?:aws_?secret_?access_?key|AWS_SECRET_ACCESS_KEY)\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b)",
                            f | std::regex::icase),
                 1, {"secret", "SECRET", "Secret"}});
    v.push_back({"secret.anthropic-key", std::regex(R"(\b(sk-ant-[A-Za-z0-9_-]{20,}))", f), 1, {"sk-ant-"}});
    v.push_back({"secret.openai-key", std::regex(R"(\b(sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}))", f), 1, {"sk-"}});
    v.push_back({"secret.github-token", std::regex(R"(\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))", f), 1,
                 {"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}});
    v.push_back({"secret.slack-token", std::regex(R"(\b(xox[abposr]-[A-Za-z0-9-]{10,}))", f), 1, {"xox"}});
    v.push_back({"secret.slack-webhook", std::regex(R"((hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+))", f), 1, {"hooks.slack.com"}});
    v.push_back({"secret.private-key", std::regex(R"((-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----))", f), 1, {"PRIVATE KEY"}});
    return v;
  }();
  return p;
}

/// NAME = "VALUE" (or NAME: VALUE) where NAME says it holds a credential.
const std::regex& assignment() {
  static const std::regex re(
      R"(([A-Za-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|credential|auth)[A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']([A-Za-z0-9+/=_.~-]{20,})["'])",
      std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  return re;
}

/// Cheap test before the assignment regex: a quote, an = or :, and a credential word.
bool may_assign_credential(const std::string& line) {
  if (line.find_first_of("\"'") == std::string::npos || line.find_first_of("=:") == std::string::npos) return false;
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : {"key", "token", "secret", "passw", "credential", "auth"})
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

bool all_hex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

/// Random enough to be a credential: hex digits carry at most 4 bits a character, other
/// alphabets up to 6; identifiers and words stay well below both thresholds.
bool high_entropy(std::string_view v) {
  const double h = shannon_entropy(v);
  if (all_hex(v)) return v.size() >= 32 && h > 3.0;
  bool upper = false, lower = false, digit = false;
  for (char c : v) {
    upper |= c >= 'A' && c <= 'Z';
    lower |= c >= 'a' && c <= 'z';
    digit |= c >= '0' && c <= '9';
  }
  return upper + lower + digit >= 2 && h > 4.0;
}

std::string redact(std::string_view secret) {
  return fmt::format("{}... ({} chars)", secret.substr(0, std::min<std::size_t>(6, secret.size())), secret.size());
}

}  // namespace

double shannon_entropy(std::string_view s) {
  if (s.empty()) return 0;
  std::array<int, 256> count{};
  for (unsigned char c : s) ++count[c];
  double h = 0;
  for (int n : count)
    if (n) {
      const double p = static_cast<double>(n) / static_cast<double>(s.size());
      h -= p * std::log2(p);
    }
  return h;
}

std::vector<Hit> scan_secrets(std::string_view text) {
  std::vector<Hit> hits;
  if (text.substr(0, 8192).find('\0') != std::string_view::npos) return hits;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string line(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    ++line_no;
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    if (line.size() > 4096) continue;  // minified or data lines: the regexes would crawl
    bool found = false;
    for (const auto& p : patterns()) {
      if (std::none_of(p.triggers.begin(), p.triggers.end(), [&](const std::string& t) { return line.find(t) != std::string::npos; }))
        continue;
      std::smatch m;
      if (std::regex_search(line, m, p.re)) {
        hits.push_back({line_no, p.rule, redact(m[p.group].str())});
        found = true;
      }
    }
    if (found || !may_assign_credential(line)) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), assignment()), end; it != end; ++it) {
      const std::string value = (*it)[2].str();
      if (high_entropy(value)) {
        hits.push_back({line_no, "secret.high-entropy", fmt::format("{} = {}", (*it)[1].str(), redact(value))});
        break;
      }
    }
  }
  return hits;
}

std::vector<Hit> scan_path(std::string_view path) {
  std::vector<Hit> hits;
  const std::string_view name = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  const bool in_results = path.starts_with("docs/results/");
  if (path.starts_with("runs/")) hits.push_back({0, "run-record", "under runs/ (batch run records)"});
  else if (!in_results && (name.ends_with(".trace.jsonl") || name == "usage.jsonl" || name == "agent.log"))
    hits.push_back({0, "run-record", fmt::format("{} outside docs/results/", name)});
  static const std::regex object_name(R"(.*\.(o|a|so|so\.[0-9.]+|obj|dylib|dll|exe|cubin|fatbin)$)");
  if (std::regex_match(name.begin(), name.end(), object_name))
    hits.push_back({0, "binary.object", "an object file or library by its name"});
  return hits;
}

std::vector<Hit> scan_binary(std::string_view head, std::size_t size) {
  std::vector<Hit> hits;
  if (head.size() >= 4 && head.substr(0, 4) == std::string_view("\x7f" "ELF", 4)) hits.push_back({0, "binary.elf", "an ELF binary"});
  if (size > kLargeFileBytes)
    hits.push_back({0, "binary.large", fmt::format("{:.1f} MB (over {} MB)", static_cast<double>(size) / 1e6, kLargeFileBytes >> 20)});
  return hits;
}

}  // namespace d2k::audit
