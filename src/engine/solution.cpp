#include "engine/solution.h"

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "exec/compile.h"
#include "exec/error.h"
#include "exec/symbols.h"

namespace d2k {

SolutionTarget solution_target(const Task& task, const std::filesystem::path& dir, const std::string& track) {
  SolutionTarget out;
  out.failure.task = task.def.name;
  out.failure.target = "solution";
  out.failure.impl_path = dir.string();
  out.failure.workload_uuid = "*";
  out.failure.role = "build";
  std::vector<std::string> libs;
  if (auto it = task.def.tracks.find(track); it != task.def.tracks.end()) libs = it->second;
  CompileOptions co;
  co.cutlass = track == "cutlass";
  // Where a machine lacks a header solution.h needs (dlpack.h), $D2K_EXTRA_INCLUDE_DIRS
  // (colon-separated) names folders that hold it.
  if (const char* extra = std::getenv("D2K_EXTRA_INCLUDE_DIRS")) {
    std::stringstream ss(extra);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) co.extra_include_dirs.emplace_back(dir);
  }
  co.link_libraries = libs;
  co.track = track;
  CompileResult cr = compile_solution(dir, co);
  out.compile = {{"sandbox", cr.sandbox}, {"layers", cr.sandbox_layers}, {"cache_hit", cr.cache_hit},
                 {"seconds", cr.seconds}, {"key", cr.key}, {"log_bytes", cr.log_bytes}};
  out.failure.environment["compile"] = out.compile;
  if (cr.status != Status::PASSED) {
    out.failure.status = cr.status;
    out.failure.rule = cr.rule;
    if (!cr.rule.empty() && cr.status == Status::REWARD_HACK)
      out.failure.checks_fired.push_back(cr.rule + ": " + cr.message);
    out.failure.message = cr.message + (cr.log.empty() ? "" : "\n" + cr.log);
    return out;
  }
  SymbolReport rep = check_symbols(cr.library, SymbolPolicy::candidate(libs));
  if (!rep.ok()) {
    // A missing entry point is a broken submission; any other violation is an attempt to
    // reach what the track forbids.
    const bool broken = rep.violations.front().rule == "missing_entry_point";
    out.failure.status = broken ? Status::INVALID_SUBMISSION : Status::REWARD_HACK;
    out.failure.rule = broken ? "" : rep.violations.front().rule;
    for (auto& v : rep.violations) out.failure.checks_fired.push_back(fmt::format("{}: {}", v.rule, v.message));
    out.failure.message = rep.violations.front().message;
    return out;
  }
  out.target = ImplTarget{"solution", cr.library, false, !libs.empty()};
  return out;
}

}  // namespace d2k
