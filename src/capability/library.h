#pragma once
/// The machine code of an attempt: its solution/ built with the track's own compile path (the
/// sandboxed, cached compile of src/exec/compile.h, as `d2k validate submission` does), or a
/// library already built, disassembled with cuobjdump.
#include <filesystem>

#include "capability/attempt.h"
#include "capability/scorer.h"
#include "core/task.h"

namespace d2k::capability {

/// Builds `a`'s workspace/solution with its track and disassembles the library. Never throws for
/// anything the candidate does: a failed build, a JIT track (no machine code ahead of time) or a
/// missing disassembler is a note, and the evidence is "unknown".
LibraryEvidence build_and_disassemble(const Task& task, const AttemptRef& a);

/// Disassembles an already built library.
LibraryEvidence disassemble_library(const std::filesystem::path& so);

}  // namespace d2k::capability
