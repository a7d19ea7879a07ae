#pragma once
/// `d2k batch status RUN` (docs/batch.md): one row per attempt (task, track, level, k, state,
/// verdict, speed-up vs naive, the agent's wall time, tokens and cost from usage.jsonl where the
/// proxy wrote it) and progress counts, as a text table or JSON.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/batch_record.h"

namespace d2k::agent {

struct Usage {
  long long input_tokens = 0, output_tokens = 0, calls = 0;
  double cost_usd = 0;
};

struct StatusRow {
  AttemptRecord attempt;
  std::optional<Usage> usage;
};

struct RunStatus {
  RunConfig config;
  std::vector<StatusRow> rows;
  std::map<std::string, int> counts;  ///< by state, plus "passed" and "total"
  int usage_lines_skipped = 0;        ///< usage.jsonl lines that did not parse
};

/// Sums usage.jsonl per attempt (lines of this run only).
std::map<std::string, Usage> read_usage(const std::filesystem::path& file, const std::string& run,
                                        int* skipped = nullptr);
RunStatus read_status(const std::filesystem::path& run_dir);
std::string format_status(const RunStatus& s);
nlohmann::ordered_json status_json(const RunStatus& s);

}  // namespace d2k::agent
