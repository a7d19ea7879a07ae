#pragma once
/// Prompts of the capability scorer: templates are files (capability/prompts/*.md) with
/// {{placeholder}} fields; the rubric's anchors are listed in a balanced order so that the
/// position an anchor is shown at cancels out over samples and levels (docs/scorer.md).
#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace d2k::capability {

/// The folder of the prompt templates: `explicit_dir` when given, else $D2K_PROMPTS_DIR, else
/// share/d2k/prompts of an installed tree (beside bin/), else capability/prompts of the source
/// tree d2k was built from. Throws std::runtime_error when the
/// folder holds no templates.
std::filesystem::path prompts_dir(const std::filesystem::path& explicit_dir = {});

/// The text of template `name` (e.g. "design_level") from `dir`/<name>.md; throws naming the file.
std::string load_template(const std::filesystem::path& dir, std::string_view name);

/// Replaces every {{key}} of `tmpl` by vars[key]. A placeholder without a value is an error
/// naming it and `what` (the template), so a renamed field cannot silently reach the judge as
/// literal braces. Values are inserted verbatim (never re-expanded).
std::string render_template(std::string_view tmpl, const std::map<std::string, std::string>& vars, std::string_view what);

/// The order in which the five anchors (0, 25, 50, 75, 100) are listed. Orders are the five
/// rotations of the ascending list and the five of the descending list: over any 10 consecutive
/// indices every anchor is shown at every position exactly twice and every pair in both relative
/// orders equally often (a balanced Latin square).
struct AnchorOrder {
  std::array<int, 5> score;  ///< score[p]: the anchor listed at position p
  /// The position anchor `s` is listed at; -1 when `s` is not an anchor.
  int position_of(int s) const;
};
/// The order for `index` (sample index + level, so that levels of one sample differ too).
AnchorOrder balanced_order(int index);

/// The anchors as the prompt lists them, labelled with their scores, in `order`:
/// "- score 50: <text>" lines. `anchors` maps each of 0/25/50/75/100 to its text.
std::string render_anchors(const std::map<int, std::string>& anchors, const AnchorOrder& order);

}  // namespace d2k::capability
