// The registry of tracks and what every track shares: the default open/prepare and the check
// of a definition's tracks section.
#include "tracks/track.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "tracks/registered.h"

namespace d2k {

namespace {

const std::vector<const Track*>& registry() {
  static const std::vector<const Track*> tracks{&tracks_detail::cuda_track(), &tracks_detail::cutlass_track(),
                                                &tracks_detail::triton_track()};
  return tracks;
}

/// Tracks that open built-in targets only (a task's pytorch.py): found by name, never offered
/// to solutions or listed.
const std::vector<const Track*>& target_only() {
  static const std::vector<const Track*> tracks{&tracks_detail::torch_eager_track(),
                                                &tracks_detail::torch_compile_track()};
  return tracks;
}

bool is_vendor_library(const std::string& name) {
  for (const VendorLibrary& lib : known_vendor_libraries())
    if (lib.name == name) return true;
  return false;
}

}  // namespace

std::vector<std::string> track_names() {
  std::vector<std::string> out;
  for (const Track* t : registry()) out.emplace_back(t->name());
  return out;
}

const Track* lookup_track(std::string_view name) {
  for (const Track* t : registry())
    if (t->name() == name) return t;
  return nullptr;
}

const Track* lookup_target_track(std::string_view name) {
  if (const Track* t = lookup_track(name)) return t;
  for (const Track* t : target_only())
    if (t->name() == name) return t;
  return nullptr;
}

const Track& find_track(std::string_view name) {
  if (const Track* t = lookup_target_track(name)) return *t;
  throw std::invalid_argument(fmt::format("unknown track '{}' ({})", name, fmt::join(track_names(), ", ")));
}

void Track::start_runtime(const std::filesystem::path&) const {}

void Track::prepare(const std::filesystem::path&, const std::vector<WorkloadShape>&) const {}

LoadedImpl Track::open(const std::filesystem::path& artifact) const { return load_impl(artifact); }

std::filesystem::path Track::starter_dir(const std::filesystem::path& task_dir) const {
  return task_dir / "starter" / std::string(name());
}

std::optional<TrackSpec> Track::spec_for(const Task& task) const {
  if (task.def.tracks.empty()) return default_spec();
  auto it = task.def.tracks.find(std::string(name()));
  if (it == task.def.tracks.end()) return std::nullopt;
  return it->second;
}

void check_definition_tracks(const Definition& def, const std::string& file, Diagnostics& diag) {
  for (const auto& [name, spec] : def.tracks) {
    const std::string field = "tracks." + name;
    const Track* track = lookup_track(name);
    if (!track) {
      diag.error(file, 0, field, fmt::format("unknown track ({})", fmt::join(track_names(), ", ")));
      continue;
    }
    const auto known = track->known_headers();
    for (std::size_t i = 0; i < spec.headers.size(); ++i)
      if (std::find(known.begin(), known.end(), spec.headers[i]) == known.end())
        diag.error(file, 0, fmt::format("{}.headers[{}]", field, i),
                   known.empty() ? fmt::format("'{}': the {} track adds no header packages", spec.headers[i], name)
                                 : fmt::format("'{}': not a header package of the {} track ({})", spec.headers[i], name,
                                               fmt::join(known, ", ")));
    for (std::size_t i = 0; i < spec.link.size(); ++i) {
      const std::string& lib = spec.link[i];
      if (std::find(known.begin(), known.end(), lib) != known.end())
        diag.error(file, 0, fmt::format("{}.link[{}]", field, i),
                   fmt::format("'{}' is a header package: list it under headers (there is no lib{} to link)", lib, lib));
      else if (!is_vendor_library(lib))
        diag.error(file, 0, fmt::format("{}.link[{}]", field, i), fmt::format("'{}' is not a known vendor library", lib));
    }
  }
}

void check_task_tracks(const Task& task, Diagnostics& diag) {
  const std::string file = (task.dir / "definition.json").string();
  check_definition_tracks(task.def, file, diag);
  for (const auto& [name, spec] : task.def.tracks)
    if (const Track* t = lookup_track(name); t && !std::filesystem::is_regular_file(t->starter_dir(task.dir) / t->entry_file()))
      diag.error(file, 0, "tracks." + name,
                 fmt::format("the task offers the {} track but has no {}", name,
                             (std::filesystem::path("starter") / name / t->entry_file()).string()));
}

}  // namespace d2k
