#include "agent/workspace.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "exec/tree_digest.h"
#include "tracks/track.h"

namespace d2k::agent {

namespace fs = std::filesystem;

const std::vector<LevelInfo>& all_levels() {
  static const std::vector<LevelInfo> levels = {
      {Level::baseline, "baseline", "baseline", 0},
      {Level::L1, "L1", "L1", 1},
      {Level::L1_L2, "L1+L2", "L1_L2", 2},
      {Level::design, "design", "design", 3},
  };
  return levels;
}

const LevelInfo& parse_level(std::string_view s) {
  if (s == "L1+L2+L3" || s == "L1_L2_L3") s = "design";
  for (const auto& l : all_levels())
    if (s == l.name || s == l.folder) return l;
  throw std::invalid_argument(fmt::format("unknown level '{}' (baseline, L1, L1+L2, design)", s));
}

const LevelInfo& level_info(Level l) { return all_levels().at(static_cast<std::size_t>(l)); }

std::string WorkspaceKey::folder() const { return fmt::format("{}__{}__{}", task, track, level_info(level).folder); }

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot read", p.string()));
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write", p.string()));
  f << text;
}

// The files of a folder as generic relative paths, in the order every hash and listing uses
// (tree_files: hidden files and __pycache__ are not part of a task or a starter).
std::vector<std::string> sorted_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& rel : tree_files(dir)) out.push_back(rel.generic_string());
  return out;
}

/// The track's rules for `task`: its definition.json entry, or the track's defaults when the task
/// lists no tracks at all.
TrackSpec track_spec(const Task& task, const Track& track) {
  if (task.def.tracks.empty()) return track.default_spec();
  auto it = task.def.tracks.find(std::string(track.name()));
  if (it == task.def.tracks.end()) {
    std::string offered;
    for (const auto& [name, spec] : task.def.tracks) offered += (offered.empty() ? "" : ", ") + name;
    throw std::runtime_error(
        fmt::format("{}: the task does not offer track '{}' (definition.json tracks: {})", task.def.name, track.name(),
                    offered));
  }
  return it->second;
}

std::string list_or(const std::vector<std::string>& v, std::string_view none) {
  return v.empty() ? std::string(none) : fmt::format("{}", fmt::join(v, ", "));
}

void render_guidance(std::ostringstream& o, const Task& task, const DesignLevels& levels, const LevelInfo& level) {
  o << "## Design guidance (level " << level.name << ")\n\n";
  if (level.guidance_levels == 0 || !task.design) {
    o << "None at this level: the design is yours. Work from the specification above.\n\n";
    return;
  }
  o << "Expert guidance, cumulative: this level gives " << level.guidance_levels << " of the three levels. "
    << "Each item is a statement and why it holds for this task; how you realise it is up to you.\n\n";
  for (int i = 0; i < level.guidance_levels; ++i) {
    const DesignLevel& def = levels.level[static_cast<std::size_t>(i)];
    o << "### Level " << i + 1 << ": " << def.title << "\n\n";
    if (!def.covers.empty()) o << "*What this level covers:* " << def.covers << "\n\n";
    for (const DesignItem& item : task.design->level[i]) {
      o << "- **" << item.id << "**: " << item.statement << "\n";
      o << "  *Why:* " << item.rationale << "\n";
    }
    o << "\n";
  }
  if (level.guidance_levels == 3 && !task.design->cross_level_rationale.empty())
    o << "### How the levels connect\n\n" << task.design->cross_level_rationale << "\n\n";
}

void render_rules(std::ostringstream& o, const Task& task, const Track& track) {
  const TrackSpec spec = track_spec(task, track);
  o << "## What is allowed\n\n";
  o << "- Track `" << track.name() << "`: " << track.summary() << ". Your solution is the folder `solution/` "
    << "(entry file `solution/" << track.entry_file() << "`); edit it there. Only `solution/` is evaluated.\n";
  o << "- Header packages: " << list_or(spec.headers, "none beyond the CUDA toolkit and `d2k/solution.h`") << ".\n";
  o << "- Vendor libraries you may link and call: " << list_or(spec.link, "none") << ".\n";
  o << "- Vendor kernels (cuBLAS, cuDNN) while timed: " << (spec.vendor_kernels ? "allowed" : "not allowed")
    << ".\n";
  o << "- The solution ABI: export only `d2k_abi_version`, `d2k_workspace_size` and `d2k_run`; all device work "
       "on `args->stream`; outputs are preallocated and poisoned before every call, so write every element; "
       "scratch memory comes from `d2k_workspace_size` (docs/solution-abi.md of D2K-Bench).\n";
  o << "- Not allowed: timing, profiling, `dlopen`, thread creation, memory protection or tracing calls; work "
       "left running after `d2k_run` returns; detecting the harness, caching results across calls, or "
       "skipping work. The evaluator checks on workloads you do not see and reports such attempts as "
       "`REWARD_HACK`.\n\n";
}

void render_check(std::ostringstream& o) {
  o << "## How to check\n\n"
       "Run `./check` in this folder. It validates, compiles and evaluates `solution/` with d2k: locally "
       "(`d2k bench`) when this machine has a GPU, else through the evaluation service named by `D2K_SERVER` "
       "(its token in `D2K_TOKEN`, or in the file `D2K_TOKEN_FILE`). It prints one row per workload (status, time, speed-ups) and "
       "exits with the verdict: 0 passed, 1 a record failed (the row says why: `COMPILE_ERROR`, "
       "`INCORRECT_NUMERICAL`, ...), 2 an error of the check itself, 3 not run: no GPU (the solution was "
       "built, nothing was timed), 4 no answer from the service.\n\n"
       "Correctness is judged against an fp64 golden reference on the public workloads and on hidden ones; "
       "speed against a naive baseline, an expert implementation and the GPU's speed of light. The final "
       "check after you finish is run by the harness, not taken from your report.\n\n";
}

void render_design_note(std::ostringstream& o) {
  o << "## Your design write-up\n\n"
       "Fill in `design.md`: one section per design level (L1 algorithm and pass structure, L2 dataflow, "
       "L3 low-level techniques). For each decision, say what you chose, why it fits this task's shapes and "
       "bound, and where it is in your code. It is scored beside the kernel.\n";
}

}  // namespace

std::map<std::string, std::string> hash_tree(const fs::path& dir, const std::string& skip) {
  std::map<std::string, std::string> out;
  for (const auto& rel : sorted_files(dir))
    if (rel != skip) out[rel] = sha256_hex(read_file(dir / rel));
  return out;
}

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& rel : sorted_files(from)) {
    fs::create_directories((to / rel).parent_path());
    fs::copy_file(from / rel, to / rel, fs::copy_options::overwrite_existing);
  }
}

std::string dataset_version(const Task& task, const fs::path& design_levels_file) {
  Sha256 h;
  h.update_field("design_levels.json");
  h.update_field(read_file(design_levels_file));
  update_tree(h, task.dir, task.def.name + "/");
  return h.hex_digest().substr(0, 16);
}

std::string render_instruction(const Task& task, const DesignLevels& levels, const std::string& track_name,
                               const LevelInfo& level) {
  const Track& track = find_track(track_name);
  std::ostringstream o;
  o << "# Task: " << task.def.name << " (track " << track.name() << ", level " << level.name << ")\n\n";
  o << "Write a fast, correct implementation of `" << task.def.name << "` for an NVIDIA H200 (Hopper, sm_90a) "
    << "in `solution/`, starting from the starter there, and write up its design in `design.md`.\n\n";
  o << "## Specification\n\n";
  std::string spec = task.has_spec ? read_file(task.dir / "spec.md") : task.def.description + "\n";
  // The spec's own headings move one level down, under this document's.
  std::istringstream in(spec);
  for (std::string line; std::getline(in, line);) o << (line.rfind('#', 0) == 0 ? "##" + line : line) << "\n";
  o << "\n";
  render_guidance(o, task, levels, level);
  render_rules(o, task, track);
  render_check(o);
  render_design_note(o);
  return o.str();
}

std::string render_design_template(const Task& task, const DesignLevels& levels) {
  std::ostringstream o;
  o << "# Design of my " << task.def.name << " solution\n\n";
  o << "<!-- One section per level. Say what you chose, why it fits this task, and where it is in the code. -->\n\n";
  for (int i = 0; i < 3; ++i)
    o << "## L" << i + 1 << ": " << levels.level[static_cast<std::size_t>(i)].title << "\n\n\n";
  return o.str();
}

std::string render_check_script(const Task& task, const std::string& track) {
  return fmt::format(R"SH(#!/bin/sh
# Validates, compiles and evaluates this workspace's solution/ with d2k, prints the table and exits
# with the verdict: 0 passed, 1 a record failed, 2 an error of the check, 3 not run: no GPU (built
# only), 4 no answer from the evaluation service.
#   local:  `d2k bench` on this machine (a GPU here, or no service configured)
#   remote: `d2k submit` to $D2K_SERVER (token file $D2K_TOKEN_FILE) when this machine has no GPU
# D2K: the d2k binary (default: d2k on PATH); D2K_CHECK_MODE: auto | local | remote;
# D2K_CHECK_JSON: also write the traces there (one JSON object per line);
# D2K_CHECK_TARGETS: what runs beside the solution locally (default solution,naive);
# D2K_CHECK_ARGS: more `d2k bench` arguments, split at spaces (e.g. --max-time 2).
set -u
here=$(cd "$(dirname "$0")" && pwd)
d2k=${{D2K:-d2k}}
task={task}
track={track}
mode=${{D2K_CHECK_MODE:-auto}}
if [ "$mode" = auto ]; then
  if [ -n "${{D2K_SERVER:-}}" ] && ! nvidia-smi -L >/dev/null 2>&1; then mode=remote; else mode=local; fi
fi
if [ "$mode" = remote ]; then
  set -- "$d2k" submit "$here/solution" --task "$task" --track "$track"
  if [ -n "${{D2K_TOKEN_FILE:-}}" ]; then set -- "$@" --token-file "$D2K_TOKEN_FILE"; fi
else
  set -- "$d2k" bench --task "$task" --track "$track" --targets "${{D2K_CHECK_TARGETS:-solution,naive}}" \
    --solution-dir "$here/solution"
  # shellcheck disable=SC2086 # split on purpose: a list of arguments
  set -- "$@" ${{D2K_CHECK_ARGS:-}}
fi
if [ -n "${{D2K_CHECK_JSON:-}}" ]; then set -- "$@" --json "$D2K_CHECK_JSON"; fi
exec "$@"
)SH",
                     fmt::arg("task", task.def.name), fmt::arg("track", track));
}

nlohmann::ordered_json build_workspace(const Task& task, const DesignLevels& levels, const std::string& track_name,
                                       const LevelInfo& level, const std::string& version, const fs::path& dir,
                                       bool force) {
  const Track& track = find_track(track_name);
  (void)track_spec(task, track);  // throws when the task does not offer the track
  const fs::path starter = track.starter_dir(task.dir);
  if (!fs::is_regular_file(starter / track.entry_file()))
    throw std::runtime_error(
        fmt::format("{}: no starter for track {} ({} is missing)", task.def.name, track_name,
                    (starter / track.entry_file()).string()));
  if (fs::exists(dir)) {
    if (!force) throw std::runtime_error(fmt::format("{}: exists (--force replaces it)", dir.string()));
    fs::remove_all(dir);
  }
  fs::create_directories(dir);
  copy_tree(starter, dir / "solution");
  write_file(dir / "instruction.md", render_instruction(task, levels, track_name, level));
  write_file(dir / "design.md", render_design_template(task, levels));
  write_file(dir / "check", render_check_script(task, track_name));
  fs::permissions(dir / "check", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);

  nlohmann::ordered_json m;
  m["task"] = task.def.name;
  m["track"] = track_name;
  m["level"] = std::string(level.name);
  m["dataset_version"] = version;
  m["files"] = hash_tree(dir, "manifest.json");
  m["check"] = {{"command", "./check"},
                {"local", fmt::format("d2k bench --task {} --track {} --targets solution,naive --solution-dir solution",
                                      task.def.name, track_name)},
                {"remote", fmt::format("d2k submit solution --task {} --track {}", task.def.name, track_name)}};
  write_file(dir / "manifest.json", m.dump(2) + "\n");
  return m;
}

}  // namespace d2k::agent
