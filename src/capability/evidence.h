#pragma once
/// Machine-code evidence beside the judge: for every design item with an `evidence` signature
/// (design.json, docs/task-format.md), whether the candidate's built library holds it, and, where
/// the attempt ran on a GPU, whether a kernel that ran holds it (docs/scorer.md).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capability/sass.h"
#include "core/task.h"

namespace d2k::capability {

/// What the machine code says about one design item.
struct ItemEvidence {
  std::string id;
  int level = 0;                       ///< 1..3
  std::vector<std::string> sass, sass_absent;  ///< the signature, as design.json gives it
  /// "built": a `sass` prefix found and no `sass_absent` one; "not_built": otherwise;
  /// "unknown": no machine code to look at (no library, no disassembler, a JIT track).
  std::string status = "unknown";
  std::vector<std::string> found;      ///< "HGMMA.64x128x16.F32.BF16 x24": matching opcodes and counts
  std::vector<std::string> forbidden;  ///< `sass_absent` opcodes that are present, with counts
  /// Where the attempt's check.json has the audit's kernel set: whether a kernel that ran holds
  /// a `sass` opcode (nullopt: no kernel set, or the item is not built).
  std::optional<bool> ran;
  std::vector<std::string> ran_in;     ///< those kernels (mangled names)
};

/// The kernels the audit saw one call of the solution launch, from the traces of check.json
/// (one JSON object per line; records of target "solution", else of any target). nullopt when
/// the file is absent or lists no kernels (it did not run on a GPU).
std::optional<std::vector<std::string>> kernels_that_ran(const std::filesystem::path& check_json);

/// Evidence for every item of `design` that has a signature. `listing` nullopt: every such item is
/// "unknown". `ran` nullopt: `ran` stays unset.
std::vector<ItemEvidence> collect_evidence(const Design& design, const std::optional<SassListing>& listing,
                                           const std::optional<std::vector<std::string>>& ran);

/// One line per item for the implementation prompt ("L3.wgmma (HGMMA): built: HGMMA.64x... x24").
std::string evidence_for_prompt(const std::vector<ItemEvidence>& items, int level, const std::string& unavailable_reason);

nlohmann::json to_json(const ItemEvidence& e);

/// The opcode histogram as JSON: by full opcode, and by mnemonic (the part before the first '.').
nlohmann::json histogram_json(const SassListing& l);

}  // namespace d2k::capability
