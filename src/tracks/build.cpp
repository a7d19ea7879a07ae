// What the cuda and cutlass tracks share: nvcc in the sandbox into the compile cache, then the
// artifact's dynamic symbols against the track's policy.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <sstream>

#include "exec/compile.h"
#include "exec/error.h"
#include "exec/symbols.h"
#include "tracks/track.h"

namespace d2k {

namespace {

Trace build_failure(const Task& task, const std::filesystem::path& dir) {
  Trace f;
  f.task = task.def.name;
  f.target = "solution";
  f.impl_path = dir.string();
  f.workload_uuid = "*";
  f.role = "build";
  return f;
}

}  // namespace

CompileOptions Track::compile_options(const TrackSpec& spec) const {
  CompileOptions co;
  co.track = std::string(name());
  co.link_libraries = spec.link;
  // Where a machine lacks a header solution.h needs (dlpack.h), $D2K_EXTRA_INCLUDE_DIRS
  // (colon-separated) names folders that hold it.
  if (const char* extra = std::getenv("D2K_EXTRA_INCLUDE_DIRS")) {
    std::stringstream ss(extra);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) co.extra_include_dirs.emplace_back(d);
  }
  return co;
}

SymbolPolicy Track::symbol_policy(const TrackSpec& spec) const { return SymbolPolicy::candidate(spec.link); }

BuiltSolution Track::build(const Task& task, const std::filesystem::path& dir) const {
  BuiltSolution out;
  out.failure = build_failure(task, dir);
  const std::optional<TrackSpec> spec = spec_for(task);
  if (!spec) {
    std::vector<std::string> offered;
    for (const auto& [n, s] : task.def.tracks) offered.push_back(n);
    out.failure.status = Status::INVALID_SUBMISSION;
    out.failure.message = fmt::format("task {} does not offer the {} track (it offers: {})", task.def.name, name(),
                                      fmt::join(offered, ", "));
    return out;
  }
  CompileResult cr = compile_solution(dir, compile_options(*spec));
  out.compile = {{"sandbox", cr.sandbox}, {"layers", cr.sandbox_layers}, {"cache_hit", cr.cache_hit},
                 {"seconds", cr.seconds}, {"key", cr.key}, {"log_bytes", cr.log_bytes}};
  out.failure.environment["compile"] = out.compile;
  if (cr.status != Status::PASSED) {
    out.failure.status = cr.status;
    out.failure.rule = cr.rule;
    // A resource limit is the compile's outcome, not an anti-cheat check that fired.
    if (!cr.rule.empty() && cr.status == Status::REWARD_HACK)
      out.failure.checks_fired.push_back(cr.rule + ": " + cr.message);
    out.failure.message = cr.message + (cr.log.empty() ? "" : "\n" + cr.log);
    return out;
  }
  SymbolReport rep = check_symbols(cr.library, symbol_policy(*spec));
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
  ImplTarget t;
  t.name = "solution";
  t.so = cr.library;
  t.track = std::string(name());
  t.vendor_kernels = spec->vendor_kernels;
  out.target = t;
  return out;
}

}  // namespace d2k
