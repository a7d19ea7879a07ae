#pragma once
/// The run's capability summary: runs/<RUN>/score.json and score.md, per task, per workspace
/// level and per run (docs/scorer.md).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capability/scorer.h"

namespace d2k::capability {

/// What the summary says about the judge that scored (no key, ever).
struct JudgeInfo {
  std::string api, model;
  int samples = 1;
  std::uint64_t calls = 0;  ///< calls that reached the network in this scoring
};

/// Means of JS_design and JS_impl (and of each judged level) per task, per (task, level) and over
/// the run, with attempt and flag counts. Attempts without a score are counted, not averaged.
nlohmann::json summarize(const std::string& run, const std::vector<AttemptScore>& scores, const JudgeInfo& judge);

/// The summary as Markdown: a per-task table, a per-(task, level) table, one table row per
/// attempt, and every evidence flag with its attempt.
std::string summary_markdown(const nlohmann::json& summary);

}  // namespace d2k::capability
