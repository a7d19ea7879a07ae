#pragma once
/// The judge's answer: strictly one JSON object {"score": one of 0/25/50/75/100, "reason": short
/// text}, optionally inside one ```json fence. Anything else is refused with the reason, which
/// the repair prompt quotes back to the judge once (docs/scorer.md).
#include <optional>
#include <string>
#include <vector>

#include "capability/judge.h"
#include "capability/prompt.h"

namespace d2k::capability {

struct Verdict {
  int score = 0;
  std::string reason;
};

/// Parses `text`. On failure returns nullopt and sets `error` to one line saying what is wrong.
std::optional<Verdict> parse_verdict(const std::string& text, std::string& error);

/// One judged score: the verdict, whether it needed the repair retry, and where the chosen anchor
/// was listed (for the position-bias check of docs/scorer.md).
struct JudgedSample {
  int sample = 0;
  std::optional<Verdict> verdict;  ///< nullopt: still unparsable after the repair retry
  bool repaired = false;
  int position = -1;               ///< position the chosen anchor was listed at (balanced_order)
  std::string error;               ///< why there is no verdict
};

/// Asks `judge` for `prompt` (sample `sample`); when the answer does not parse, asks once more
/// with the repair template (`repair_tmpl`: {{previous}}, {{error}}, {{prompt}}). `order` maps the
/// verdict back to the position its anchor was shown at. Judge errors (network, key) propagate.
JudgedSample judge_once(Judge& judge, const std::string& prompt, int sample, const AnchorOrder& order,
                        const std::string& repair_tmpl);

/// The median of the parsed scores (the lower middle of an even count, so the result is always an
/// anchor); nullopt when none parsed.
std::optional<int> median_score(const std::vector<JudgedSample>& samples);

}  // namespace d2k::capability
