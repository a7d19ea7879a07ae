// An attempt's library: built through its track, then disassembled.
#include "capability/library.h"

#include <exception>

#include <fmt/format.h>

#include "core/status.h"
#include "tracks/track.h"

namespace d2k::capability {

LibraryEvidence disassemble_library(const std::filesystem::path& so) {
  LibraryEvidence e;
  e.library = so;
  SassResult r = disassemble(so);
  if (r.listing) e.listing = std::move(r.listing);
  else e.note = r.error;
  return e;
}

LibraryEvidence build_and_disassemble(const Task& task, const AttemptRef& a) {
  LibraryEvidence e;
  const Track* found = lookup_track(a.track);
  if (!found) {
    e.note = fmt::format("unknown track '{}'", a.track);
    return e;
  }
  const Track& track = *found;
  if (track.entry_file() != "solution.cu") {
    e.note = fmt::format("the {} track compiles at run time: no machine code ahead of time", a.track);
    return e;
  }
  try {
    BuiltSolution b = track.build(task, a.workspace / "solution");
    if (!b.target) {
      e.note = fmt::format("the solution did not build: {}{}", status_name(b.failure.status),
                           b.failure.message.empty() ? "" : ": " + b.failure.message.substr(0, 300));
      return e;
    }
    return disassemble_library(b.target->so);
  } catch (const std::exception& ex) {
    e.note = fmt::format("the build could not run: {}", ex.what());
    return e;
  }
}

}  // namespace d2k::capability
