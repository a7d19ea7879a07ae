// score_attempt: prompts per level and part, n judge samples each, medians, evidence flags.
#include "capability/scorer.h"

#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capability/prompt.h"

namespace d2k::capability {

namespace fs = std::filesystem;
using nlohmann::json;

Prompts load_prompts(const fs::path& dir) {
  return {load_template(dir, "design_level"), load_template(dir, "impl_level"), load_template(dir, "repair"),
          load_template(dir, "draft_design")};
}

int AttemptScore::flag_count() const {
  int n = 0;
  for (const auto& l : impl) n += static_cast<int>(l.flags.size());
  return n;
}

namespace {

std::string expert_items(const Task& t, int level) {
  std::string out;
  if (!t.design) return "(the task has no design.json)\n";
  for (const auto& it : t.design->level[level - 1])
    out += fmt::format("- {}: {}\n  How to recognise it: {}\n", it.id, it.statement, it.recognise);
  return out;
}

std::map<std::string, std::string> common_vars(const TaskGuidance& g, int level, const AnchorOrder& order,
                                               const std::map<int, std::string>& anchors) {
  const DesignLevel& lv = g.levels.level[level - 1];
  return {{"task", g.task.def.name},
          {"spec", g.spec},
          {"level", std::to_string(level)},
          {"level_title", lv.title},
          {"level_covers", lv.covers},
          {"expert_items", expert_items(g.task, level)},
          {"anchors", render_anchors(anchors, order)}};
}

const std::map<int, std::string>& rubric_anchors(const TaskGuidance& g, bool design, int level) {
  static const std::map<int, std::string> none;
  if (!g.task.rubric) return none;
  return design ? g.task.rubric->design[level - 1] : g.task.rubric->implementation[level - 1];
}

LevelJudgement judge_level(Judge& judge, const Prompts& p, int level, int samples,
                           const std::function<std::string(const AnchorOrder&)>& prompt_for) {
  LevelJudgement lj;
  lj.level = level;
  for (int s = 0; s < samples; ++s) {
    // Rotating by sample and level: over samples and levels each anchor is listed at each
    // position equally often, so a judge's preference for a position cancels out.
    const AnchorOrder order = balanced_order(s + level - 1);
    if (s == 0) lj.order.assign(order.score.begin(), order.score.end());
    lj.samples.push_back(judge_once(judge, prompt_for(order), s, order, p.repair));
  }
  lj.score = median_score(lj.samples);
  return lj;
}

std::optional<double> mean_of(const std::array<LevelJudgement, 3>& l) {
  double sum = 0;
  for (const auto& x : l) {
    if (!x.score) return std::nullopt;
    sum += *x.score;
  }
  return sum / 3;
}

json level_json(const LevelJudgement& l) {
  json samples = json::array();
  for (const auto& s : l.samples) {
    json j{{"sample", s.sample}, {"repaired", s.repaired}, {"position", s.position}};
    if (s.verdict) {
      j["score"] = s.verdict->score;
      j["reason"] = s.verdict->reason;
    } else {
      j["score"] = nullptr;
      j["error"] = s.error;
    }
    samples.push_back(std::move(j));
  }
  json j{{"level", l.level}, {"score", l.score ? json(*l.score) : json(nullptr)}, {"anchor_order", l.order},
         {"samples", samples}};
  if (!l.samples.empty() && l.samples[0].verdict) j["reason"] = l.samples[0].verdict->reason;
  for (const auto& s : l.samples)  // the reason of a sample that gave the median score
    if (s.verdict && l.score && s.verdict->score == *l.score) {
      j["reason"] = s.verdict->reason;
      break;
    }
  if (!l.flags.empty()) j["flags"] = l.flags;
  return j;
}

// The agent's text sits between <<<NAME and NAME>>> markers; a text that closed the marker itself
// could append instructions that look like the prompt's own. Breaking every '<<<' and '>>>' in
// it keeps the markers unforgeable (code never needs three angle brackets in a row to be read).
std::string fence_safe(std::string text) {
  for (const char* m : {"<<<", ">>>"}) {
    const std::string broken = std::string(1, m[0]) + " " + std::string(2, m[0]);
    for (std::size_t at = text.find(m); at != std::string::npos; at = text.find(m, at + 2))
      text.replace(at, 3, broken);
  }
  return text;
}

}  // namespace

std::string design_prompt(const TaskGuidance& g, const Prompts& p, int level, const AnchorOrder& order, const AttemptMaterial& m) {
  auto vars = common_vars(g, level, order, rubric_anchors(g, true, level));
  vars["design_md"] = m.design_md.empty() ? "(the agent wrote no design.md)" : fence_safe(m.design_md);
  return render_template(p.design_level, vars, "design_level.md");
}

std::string impl_prompt(const TaskGuidance& g, const Prompts& p, int level, const AnchorOrder& order, const AttemptMaterial& m,
                        const std::string& evidence_text) {
  auto vars = common_vars(g, level, order, rubric_anchors(g, false, level));
  vars["code"] = m.code.empty() ? "(no source files in solution/)" : fence_safe(m.code);
  vars["evidence"] = evidence_text;
  return render_template(p.impl_level, vars, "impl_level.md");
}

std::vector<std::string> contradiction_flags(int level, std::optional<int> judge_score, const std::vector<ItemEvidence>& evidence) {
  std::vector<std::string> flags;
  if (!judge_score || *judge_score < kCreditThreshold) return flags;
  for (const auto& e : evidence) {
    if (e.level != level) continue;
    if (e.status == "not_built") {
      std::string why = e.found.empty() && !e.sass.empty() ? fmt::format("no {} in the library", fmt::join(e.sass, " or "))
                                                           : fmt::format("found {}", fmt::join(e.forbidden, ", "));
      flags.push_back(fmt::format("L{}: the judge gives {} but the machine code contradicts {}: {}", level, *judge_score, e.id, why));
    } else if (e.ran && !*e.ran) {
      flags.push_back(fmt::format("L{}: the judge gives {} but {} is in no kernel the audit saw run ({} present, never executed)",
                                  level, *judge_score, e.id, fmt::join(e.sass, "/")));
    }
  }
  return flags;
}

AttemptScore score_attempt(const AttemptRef& ref, const AttemptMaterial& m, const TaskGuidance& g, const LibraryEvidence& lib,
                           Judge& judge, const Prompts& p, const ScoreOptions& opts) {
  AttemptScore s;
  s.ref = ref;
  s.library = lib;
  s.kernels_ran = kernels_that_ran(ref.check_json);
  if (g.task.design) s.evidence = collect_evidence(*g.task.design, lib.listing, s.kernels_ran);
  if (m.design_md.find_first_not_of(" \t\n") == std::string::npos) s.notes.push_back("design.md is missing or empty");
  if (m.design_truncated) s.notes.push_back("design.md was cut to the size bound before judging");
  if (m.code_truncated) s.notes.push_back("the sources were cut to the size bound before judging");
  const int n = std::max(1, opts.samples);
  for (int level = 1; level <= 3; ++level) {
    s.design[level - 1] = judge_level(judge, p, level, n, [&](const AnchorOrder& o) { return design_prompt(g, p, level, o, m); });
    const std::string ev = evidence_for_prompt(s.evidence, level, lib.note);
    s.impl[level - 1] = judge_level(judge, p, level, n, [&](const AnchorOrder& o) { return impl_prompt(g, p, level, o, m, ev); });
    s.impl[level - 1].flags = contradiction_flags(level, s.impl[level - 1].score, s.evidence);
  }
  s.js_design = mean_of(s.design);
  s.js_impl = mean_of(s.impl);
  return s;
}

json to_json(const AttemptScore& s) {
  json design = json::array(), impl = json::array(), evidence = json::array(), flags = json::array();
  for (const auto& l : s.design) design.push_back(level_json(l));
  for (const auto& l : s.impl) {
    impl.push_back(level_json(l));
    for (const auto& f : l.flags) flags.push_back(f);
  }
  for (const auto& e : s.evidence) evidence.push_back(to_json(e));
  json lib{{"path", s.library.library.string()}};
  if (s.library.listing) lib["sass"] = histogram_json(*s.library.listing);
  else lib["note"] = s.library.note;
  return {{"attempt", s.ref.name},
          {"task", s.ref.task},
          {"track", s.ref.track},
          {"level", s.ref.level},
          {"k", s.ref.k},
          {"js_design", s.js_design ? json(*s.js_design) : json(nullptr)},
          {"js_impl", s.js_impl ? json(*s.js_impl) : json(nullptr)},
          {"design", design},
          {"implementation", impl},
          {"evidence", evidence},
          {"flags", flags},
          {"kernels_ran", s.kernels_ran ? json(*s.kernels_ran) : json(nullptr)},
          {"library", lib},
          {"notes", s.notes}};
}

}  // namespace d2k::capability
