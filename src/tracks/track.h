#pragma once
/// A track: one way of writing a solution (plain CUDA, CUTLASS/CuTe, later Triton). A track knows
/// how to build a candidate folder into an artifact (sandboxed), how the worker opens that
/// artifact into the ABI's entry points, what the artifact may import and whether vendor kernels
/// may run, and where its starter lives. The engine and the CLI only ever go through this seam.
///
/// Adding a track (the Triton track is the next one): derive from Track in a file of its own,
/// override what differs (a JIT track overrides `build` to package the sources, `open` to load
/// its launcher, and `prepare` to compile for the workloads' shapes), and add it to
/// `registry()` in track.cpp.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/task.h"
#include "exec/compile.h"
#include "exec/loader.h"
#include "exec/symbols.h"
#include "report/trace.h"
#include "tracks/target.h"

namespace d2k {

struct SandboxOptions;

/// A solution folder after its track built it.
struct BuiltSolution {
  std::optional<ImplTarget> target;  ///< set when it built and passed the track's checks
  Trace failure;                     ///< otherwise: COMPILE_ERROR, TIMEOUT, INVALID_SUBMISSION or REWARD_HACK
  /// How it was compiled: sandbox (bwrap, mount_namespace, none), layers, cache_hit, seconds,
  /// key. Also in failure.environment["compile"].
  nlohmann::json compile;
};

class Track {
 public:
  virtual ~Track() = default;

  virtual std::string_view name() const = 0;
  /// One line for `--help`-style listings.
  virtual std::string_view summary() const = 0;
  /// What a task that lists this track without saying more allows (also used when no task is
  /// given, e.g. `d2k validate submission DIR --track T`).
  virtual TrackSpec default_spec() const { return {}; }
  /// Header packages a definition.json may name under tracks.<name>.headers.
  virtual std::vector<std::string> known_headers() const { return {}; }

  /// Compile options for a solution under `spec` (include trees, libraries to link).
  virtual CompileOptions compile_options(const TrackSpec& spec) const;
  /// What the built artifact may export and import under `spec`.
  virtual SymbolPolicy symbol_policy(const TrackSpec& spec) const;
  /// Builds `dir` for `task` into an artifact (sandboxed compile, then the symbol check).
  virtual BuiltSolution build(const Task& task, const std::filesystem::path& dir) const;

  /// Whether a call runs host code between its launches that back-to-back calls pay for (an
  /// interpreter): the parent's clock then reports its figure for a large gap instead of
  /// REWARD_HACK(timer_cross_check) (engine/rules.h, bound_time).
  virtual bool host_paced() const { return false; }
  /// Worker side, before any of the candidate's code runs (its import included): starts what the
  /// track's own runtime needs (an interpreter, its imports, their thread pools), so that the
  /// thread baseline the worker takes right after it holds no thread of the candidate's and
  /// every thread of the runtime's. cuda and cutlass need nothing (the harness is up already).
  virtual void start_runtime(const std::filesystem::path& artifact) const;
  /// Whether `prepare` does anything: the workloads' shapes are handed to the worker only then.
  virtual bool prepares() const { return false; }
  /// Worker side, before the lockdown filter: whatever the artifact needs done per shape while
  /// exec and the file system are still open (a JIT compile). cuda and cutlass need nothing.
  virtual void prepare(const std::filesystem::path& artifact, const std::vector<WorkloadShape>& shapes) const;
  /// Seconds the worker's start may take per shape handed to `prepare`, on top of the start's own
  /// deadline (WorkerOptions::start_timeout_s): a JIT that compiles every shape before the lockdown
  /// takes that long per shape, and the start's deadline alone killed honest workers mid-compile.
  virtual double prepare_seconds_per_shape() const { return 0; }
  /// Parent side, before a worker for this track starts: what the sandbox must add (a Python
  /// track exposes the machine's interpreter read-only and passes where it is).
  virtual void configure_worker(SandboxOptions&) const {}
  /// Worker side, after the lockdown: opens the artifact into the ABI's entry points.
  virtual LoadedImpl open(const std::filesystem::path& artifact) const;

  /// The file a solution folder of this track must hold (and its starter).
  virtual std::string_view entry_file() const { return "solution.cu"; }
  /// The starter an implementer copies: <task_dir>/starter/<name>/.
  std::filesystem::path starter_dir(const std::filesystem::path& task_dir) const;

 protected:
  /// The spec this track uses for `task`: its definition.json entry, else default_spec() when
  /// the task names no tracks at all. nullopt when the task offers tracks but not this one.
  std::optional<TrackSpec> spec_for(const Task& task) const;
};

/// Every registered track's name, in registration order.
std::vector<std::string> track_names();
/// The solution track called `name`, or nullptr.
const Track* lookup_track(std::string_view name);
/// lookup_track, or a track that only opens built-in targets (torch_eager, torch_compile).
const Track* lookup_target_track(std::string_view name);
/// The track called `name`; throws std::invalid_argument "unknown track 'x' (cuda, cutlass)".
const Track& find_track(std::string_view name);

/// The target torch_eager or torch_compile of `task`: its pytorch.py with the task's abi.json,
/// copied into the compile cache (python_track.cpp). Throws std::runtime_error naming the file
/// when the task has no pytorch.py.
ImplTarget pytorch_target(const Task& task, const std::string& name);

/// Checks a definition's tracks section against the registry: known track names, header
/// packages the track knows, link names that are vendor libraries. Errors name
/// `file` and the field (tracks.<name>.<key>).
void check_definition_tracks(const Definition& def, const std::string& file, Diagnostics& diag);
/// check_definition_tracks on the task's definition.json, and a starter (starter/<track>/
/// solution.cu) for every track the task offers.
void check_task_tracks(const Task& task, Diagnostics& diag);

}  // namespace d2k
