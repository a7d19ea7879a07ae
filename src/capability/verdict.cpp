// Strict parsing of the judge's verdict, the one repair retry, and the self-consistency median.
#include "capability/verdict.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/task.h"

namespace d2k::capability {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The body of one ```json ... ``` (or ``` ... ```) fence spanning the whole answer, else the
// answer itself. Text around the object is not accepted: a judge that argues first and answers
// after is asked to repair, so that the reason stored is the one it committed to.
std::string unfence(const std::string& text) {
  std::string t = trim(text);
  if (t.rfind("```", 0) != 0) return t;
  const auto nl = t.find('\n');
  if (nl == std::string::npos || t.size() < 6 || t.compare(t.size() - 3, 3, "```") != 0) return t;
  return trim(t.substr(nl + 1, t.size() - 3 - (nl + 1)));
}

}  // namespace

std::optional<Verdict> parse_verdict(const std::string& text, std::string& error) {
  const std::string body = unfence(text);
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    error = "the answer is not one JSON object (text outside the object, or invalid JSON)";
    return std::nullopt;
  }
  if (!j.is_object()) {
    error = "the answer is JSON but not an object";
    return std::nullopt;
  }
  auto s = j.find("score");
  if (s == j.end() || !s->is_number_integer()) {
    error = "\"score\" is missing or not an integer";
    return std::nullopt;
  }
  const int score = s->get<int>();
  if (std::find(kRubricAnchors.begin(), kRubricAnchors.end(), score) == kRubricAnchors.end()) {
    error = fmt::format("\"score\" is {}: it must be one of 0, 25, 50, 75, 100", score);
    return std::nullopt;
  }
  auto r = j.find("reason");
  if (r == j.end() || !r->is_string() || trim(r->get<std::string>()).empty()) {
    error = "\"reason\" is missing, empty or not a string";
    return std::nullopt;
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "score" && it.key() != "reason") {
      error = fmt::format("unexpected field \"{}\" (only \"score\" and \"reason\")", it.key());
      return std::nullopt;
    }
  std::string reason = trim(r->get<std::string>());
  if (reason.size() > 1000) reason = reason.substr(0, 1000) + "...";
  return Verdict{score, reason};
}

JudgedSample judge_once(Judge& judge, const std::string& prompt, int sample, const AnchorOrder& order,
                        const std::string& repair_tmpl) {
  JudgedSample out;
  out.sample = sample;
  std::string answer = judge.complete(prompt, sample);
  std::string error;
  out.verdict = parse_verdict(answer, error);
  if (!out.verdict) {
    const std::string repair = render_template(
        repair_tmpl, {{"prompt", prompt}, {"previous", answer.substr(0, 4000)}, {"error", error}}, "repair.md");
    out.repaired = true;
    answer = judge.complete(repair, sample);
    out.verdict = parse_verdict(answer, error);
  }
  if (out.verdict) out.position = order.position_of(out.verdict->score);
  else out.error = "unparsable after the repair retry: " + error;
  return out;
}

std::optional<int> median_score(const std::vector<JudgedSample>& samples) {
  std::vector<int> s;
  for (const auto& x : samples)
    if (x.verdict) s.push_back(x.verdict->score);
  if (s.empty()) return std::nullopt;
  std::sort(s.begin(), s.end());
  return s[(s.size() - 1) / 2];
}

}  // namespace d2k::capability
