#pragma once
/// A helper program (cuobjdump, diff) run to completion with a deadline and bounded output: the
/// scorer reads candidates' files through such tools and must not hang or run out of memory on a
/// hostile one.
#include <cstddef>
#include <string>
#include <vector>

namespace d2k::capability {

struct ToolResult {
  int exit_code = -1;       ///< -1 when it did not exit normally
  bool timed_out = false;
  bool truncated = false;   ///< stdout passed the bound; the tool was killed
  std::string out, err;     ///< stdout (up to the bound), stderr (the first 64 KiB)
};

/// Runs argv (argv[0] a path) with stdin from /dev/null, in its own process group (killed whole
/// at the deadline or past the output bound). Throws std::runtime_error when it cannot start.
ToolResult run_tool(const std::vector<std::string>& argv, double timeout_s, std::size_t max_out_bytes);

}  // namespace d2k::capability
