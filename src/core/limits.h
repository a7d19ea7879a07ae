#pragma once
/// Bounds on task files. Task files come from contributors and reach `d2k` before any review, so
/// every size that drives memory or time is capped, and a file beyond a cap is refused with an
/// error naming the file and the limit (docs/task-format.md, "Limits"). The caps sit one to two
/// orders of magnitude above what the pilot tasks use (at most 5 axes and 24 workload lines),
/// and their product bounds the work of validation (every workload resolves every axis).
#include <cstddef>

namespace d2k::limits {

/// Bytes of one task file (definition.json, workloads.jsonl, design.json, rubric.json).
inline constexpr std::size_t kMaxFileBytes = std::size_t{4} << 20;
/// Nesting of JSON arrays and objects. The DOM is built only after the parser's callback has
/// seen each level, so a deeper file is refused before it costs memory.
inline constexpr std::size_t kMaxJsonDepth = 32;
/// Keys of one JSON object (insertion into an ordered object is linear in its size).
inline constexpr std::size_t kMaxObjectKeys = 4096;
/// Axes of a definition (var, const and expr together).
inline constexpr std::size_t kMaxAxes = 64;
/// Workload lines of workloads.jsonl.
inline constexpr std::size_t kMaxWorkloads = 4096;

}  // namespace d2k::limits
