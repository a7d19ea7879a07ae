#pragma once
/// What the scorer reads of an attempt: a batch run's runs/<RUN>/attempts/<task>__<track>__<level>__<k>/
/// (its workspace/, check.json) or one workspace folder <task>__<track>__<level>/ (docs/scorer.md
/// has the layout): the design write-up (design.md) and the code (solution/).
#include <filesystem>
#include <string>
#include <vector>

namespace d2k::capability {

struct AttemptRef {
  std::string name;                  ///< the folder name
  std::filesystem::path dir;         ///< the attempt folder (a workspace scored alone: the workspace)
  std::filesystem::path workspace;   ///< the workspace folder: design.md and solution/
  std::string task, track, level;    ///< level: baseline, L1, L1+L2, design
  int k = 0;                         ///< attempt number (0 for a workspace scored alone)
  std::filesystem::path check_json;  ///< the runner's final check (may not exist)
};

/// Every attempt of runs/<RUN>/attempts/, in name order. Task, track and level come from the
/// workspace's manifest.json where it has them, else from the folder name. Throws
/// std::runtime_error naming the folder when there is no attempts/ or a name does not parse.
std::vector<AttemptRef> find_run_attempts(const std::filesystem::path& run_dir);

/// A workspace folder as one attempt.
AttemptRef workspace_attempt(const std::filesystem::path& workspace);

/// The text the judge reads.
struct AttemptMaterial {
  std::string design_md;                ///< design.md ("" when the agent wrote none)
  std::string code;                     ///< every source of solution/, each under a "=== path ===" header
  std::vector<std::string> files;       ///< the files in `code`
  bool code_truncated = false;          ///< the sources passed the bound; the rest is left out
  bool design_truncated = false;
};

/// Reads design.md and solution/ (sources: .cu .cuh .h .hpp .cpp .cc .inl .py, sorted; symbolic
/// links and other files skipped). At most `max_bytes` of code and of design text.
AttemptMaterial read_attempt_material(const AttemptRef& a, std::size_t max_bytes = 256 * 1024);

/// The workspace level folder name's level ("L1_L2" -> "L1+L2").
std::string level_from_folder(const std::string& folder_level);

}  // namespace d2k::capability
