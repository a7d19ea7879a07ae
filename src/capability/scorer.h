#pragma once
/// Scoring one attempt: JS_design (the write-up per level against the rubric) and JS_impl (the
/// code per level, with the machine-code evidence in the prompt), each level 0/25/50/75/100 as
/// the median of n judge samples, JS = (L1 + L2 + L3) / 3; an implementation level the judge
/// credits (>= 75) while the machine code contradicts one of its items is flagged
/// (docs/scorer.md).
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capability/attempt.h"
#include "capability/evidence.h"
#include "capability/judge.h"
#include "capability/verdict.h"
#include "core/task.h"

namespace d2k::capability {

/// The prompt templates (capability/prompts/*.md).
struct Prompts {
  std::string design_level, impl_level, repair, draft_design;
};
/// Loads every template from `dir` (prompts_dir()).
Prompts load_prompts(const std::filesystem::path& dir);

/// What the judge is told about a task.
struct TaskGuidance {
  Task task;                 ///< with design and rubric loaded
  DesignLevels levels;       ///< dataset/design_levels.json
  std::string spec;          ///< spec.md
};

/// The machine code of an attempt's built library (or why there is none).
struct LibraryEvidence {
  std::optional<SassListing> listing;
  std::filesystem::path library;
  std::string note;          ///< why there is no listing; empty when there is one
};

/// One level's judgement of one part ("design" or "implementation").
struct LevelJudgement {
  int level = 0;                        ///< 1..3
  std::optional<int> score;             ///< median of the parsed samples; nullopt: none parsed
  std::vector<JudgedSample> samples;
  std::vector<int> order;               ///< the anchor order of sample 0, as listed
  std::vector<std::string> flags;       ///< evidence contradictions at this level
};

struct AttemptScore {
  AttemptRef ref;
  std::array<LevelJudgement, 3> design, impl;
  std::optional<double> js_design, js_impl;   ///< nullopt when a level has no score
  std::vector<ItemEvidence> evidence;
  LibraryEvidence library;
  std::optional<std::vector<std::string>> kernels_ran;
  std::vector<std::string> notes;             ///< truncated inputs, missing design.md, ...
  int flag_count() const;
};

struct ScoreOptions {
  int samples = 1;  ///< self-consistency: n samples per level, median
};

/// The threshold at which a judge's implementation score counts as crediting the level.
inline constexpr int kCreditThreshold = 75;

/// Scores one attempt. Judge failures (network, key) propagate as std::runtime_error.
AttemptScore score_attempt(const AttemptRef& ref, const AttemptMaterial& material, const TaskGuidance& guidance,
                           const LibraryEvidence& library, Judge& judge, const Prompts& prompts, const ScoreOptions& opts);

/// The flags of one implementation level: for each item of that level the machine code says is
/// not built (or built but never run, where the kernel set is known), while the judge credits the
/// level (score >= kCreditThreshold).
std::vector<std::string> contradiction_flags(int level, std::optional<int> judge_score, const std::vector<ItemEvidence>& evidence);

/// The prompts of one level (exposed for tests and for `--dry-run`).
std::string design_prompt(const TaskGuidance& g, const Prompts& p, int level, const AnchorOrder& order, const AttemptMaterial& m);
std::string impl_prompt(const TaskGuidance& g, const Prompts& p, int level, const AnchorOrder& order, const AttemptMaterial& m,
                        const std::string& evidence_text);

/// score.json of one attempt.
nlohmann::json to_json(const AttemptScore& s);

}  // namespace d2k::capability
