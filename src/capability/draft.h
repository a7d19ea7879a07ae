#pragma once
/// `d2k design draft`: the judge backend drafts a task's design.json from its spec, the expert
/// code and the expert's variant table, for a person to edit. The draft is checked by the same
/// validator as `d2k tasks validate` and shown as a unified diff against the current file.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "capability/judge.h"
#include "capability/scorer.h"
#include "core/diagnostics.h"

namespace d2k::capability {

/// The expert's sources (expert.cu and the task folder's headers, each under a header line) and
/// its variant table (one row per `// %VARIANT%` line of expert.cu), at most `max_bytes` of code.
struct ExpertMaterial {
  std::string code, variants;
};
ExpertMaterial read_expert_material(const Task& task, std::size_t max_bytes = 256 * 1024);

/// The draft prompt (draft_design.md) for `g`.
std::string draft_prompt(const TaskGuidance& g, const Prompts& p, const ExpertMaterial& m, const std::string& design_levels_json);

/// The JSON object of the judge's answer: the whole answer, one fenced block, or the text from
/// the first '{' to the last '}'. nullopt when none parses as an object.
std::optional<nlohmann::ordered_json> extract_json_object(const std::string& answer);

/// Validates `draft` as `task`'s design.json with validate_task; only the findings about the
/// design file are kept. `file` names the draft in the findings.
Diagnostics validate_draft(const Task& task, const DesignLevels& levels, const nlohmann::ordered_json& draft,
                           const std::string& file);

/// A unified diff (diff -u) from `old_text` to `new_text`, labelled with the two names; "" when
/// they are equal. Throws std::runtime_error when diff cannot run.
std::string unified_diff(const std::string& old_text, const std::string& new_text, const std::string& old_name,
                         const std::string& new_name);

}  // namespace d2k::capability
