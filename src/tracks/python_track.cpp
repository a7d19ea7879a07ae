// What the Python tracks share: the machine's interpreter handed to the worker, the prepare
// step before the lockdown, and the bridge's entry points after it.
#include "tracks/python_track.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/dtype.h"
#include "exec/error.h"
#include "exec/sandbox.h"

namespace d2k {

namespace {

/// What failed before the lockdown, reported by open() after it (as the worker's load
/// failure): the candidate's import (INVALID_SUBMISSION) or the interpreter's start
/// (RUNTIME_ERROR: the machine's Python, not the candidate).
struct LoadFailure {
  Status status = Status::PASSED;
  std::string message;
};
LoadFailure& load_failure() {
  static LoadFailure f;
  return f;
}

/// Starts the bridge once per process. nullptr when it failed (the cause in load_failure()).
py::Bridge* started_bridge() {
  if (load_failure().status != Status::PASSED) return nullptr;
  try {
    return &py::Bridge::start(worker_python_install(), py::shim_dir());
  } catch (const ExecError& e) {
    load_failure() = {e.status, e.what()};
  } catch (const std::exception& e) {
    load_failure() = {Status::RUNTIME_ERROR, std::string("cannot start Python: ") + e.what()};
  }
  return nullptr;
}

/// Starts the bridge and loads `artifact` once per process (prepare and open both may come
/// first: the in-process runner opens without preparing). nullptr when either failed.
py::Bridge* bridge_for(const std::filesystem::path& artifact, py::PyMode mode) {
  py::Bridge* started = started_bridge();
  if (!started) return nullptr;
  try {
    py::Bridge& b = *started;
    if (!b.loaded()) b.load(artifact, mode);
    return &b;
  } catch (const ExecError& e) {
    load_failure() = {e.status, e.what()};
  } catch (const std::exception& e) {
    load_failure() = {Status::RUNTIME_ERROR, std::string("cannot start Python: ") + e.what()};
  }
  return nullptr;
}

/// The Python runtime's environment in a worker: its caches in the worker's scratch folder (HOME),
/// never a shared one, and inductor compiling in the worker's own thread.
void set_runtime_environment() {
  const char* home = std::getenv("HOME");
  const std::string base = home && *home ? home : "/tmp";
  ::setenv("TRITON_CACHE_DIR", (base + "/triton-cache").c_str(), 1);
  ::setenv("TORCHINDUCTOR_CACHE_DIR", (base + "/inductor-cache").c_str(), 1);
  ::setenv("TRITON_HOME", base.c_str(), 1);
  // Inductor compiles in the worker's own thread: its pool otherwise grows a thread at the first
  // compile of each new shape, after the thread baseline (torch_compile was flagged
  // no_threads_after_call at fused_add_rmsnorm 4096x4096 on the H200).
  ::setenv("TORCHINDUCTOR_COMPILE_THREADS", "1", 1);
}

}  // namespace

py::PythonInstall worker_python_install() {
  if (const char* env = std::getenv(py::kInstallEnv); env && *env)
    return py::install_from_json(nlohmann::json::parse(env));
  return py::find_python();
}

void PythonTrack::configure_worker(SandboxOptions& so) const {
  try {
    const py::PythonInstall& p = py::find_python();
    so.env[py::kInstallEnv] = py::install_to_json(p).dump();
    for (const auto& r : p.roots) so.ro_paths.push_back(r);
    for (const auto& s : p.sys_path)
      if (std::filesystem::is_directory(s)) so.ro_paths.emplace_back(s);
    so.ro_paths.push_back(py::shim_dir());
  } catch (const std::exception&) {
    // No usable Python: the worker finds none either and reports why as the load failure.
  }
  // Triton and torch start compiler and pool threads; CUDA's own need most of the default.
  so.rlimits.processes = std::max<std::uint64_t>(so.rlimits.processes, 4096);
}

void PythonTrack::start_runtime(const std::filesystem::path&) const {
  set_runtime_environment();
  py::Bridge* b = started_bridge();
  if (!b) return;
  std::string errors;
  try {
    errors = b->warm_runtime(mode_);
  } catch (const std::exception& e) {
    errors = e.what();
  }
  // Not fatal: a runtime that cannot warm up (no GPU for torch) fails the candidate's calls,
  // which say why; a thread it starts later is then blamed on the candidate, so say so here.
  if (!errors.empty()) std::fprintf(stderr, "d2k: %s runtime warm-up: %s\n", py::mode_name(mode_), errors.c_str());
}

void PythonTrack::prepare(const std::filesystem::path& artifact, const std::vector<WorkloadShape>& shapes) const {
  set_runtime_environment();
  py::Bridge* b = bridge_for(artifact, mode_);
  if (!b || shapes.empty()) return;
  std::string errors;
  try {
    errors = b->prepare(shapes_to_json(shapes).dump());
  } catch (const std::exception& e) {
    errors = e.what();
  }
  // Not fatal: the checked calls report what fails; this keeps the first cause visible.
  if (!errors.empty()) std::fprintf(stderr, "d2k: %s prepare: %s\n", py::mode_name(mode_), errors.c_str());
}

double PythonTrack::prepare_seconds_per_shape() const {
  // Measured on the H200 (2026-12-03): the start's 60 s ran out during torch_compile's prepare of
  // moe_topk_router's five shapes and fused_adamw's three; Triton compiles a kernel in seconds.
  switch (mode_) {
    case py::PyMode::torch_compile: return 180;
    case py::PyMode::triton: return 60;
    case py::PyMode::torch_eager: return 10;
  }
  return 0;
}

LoadedImpl PythonTrack::open(const std::filesystem::path& artifact) const {
  py::Bridge* b = bridge_for(artifact, mode_);
  if (!b) throw ExecError(load_failure().status, load_failure().message);
  return b->entry_points(artifact);
}

nlohmann::json python_abi_json(const Definition& def) {
  auto tensors = [](const std::vector<TensorSpec>& specs) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& t : specs) a.push_back({{"name", t.name}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
    return a;
  };
  nlohmann::json scalars = nlohmann::json::object();
  for (const auto& s : def.scalars) scalars[s.name] = s.is_float ? nlohmann::json(s.value) : nlohmann::json(static_cast<std::int64_t>(s.value));
  return {{"task", def.name}, {"inputs", tensors(def.inputs)}, {"outputs", tensors(def.outputs)}, {"scalars", scalars}};
}

namespace tracks_detail {

namespace {
class TorchTarget final : public PythonTrack {
 public:
  using PythonTrack::PythonTrack;
  std::string_view summary() const override {
    return mode() == py::PyMode::torch_eager ? "a task's pytorch.py as written (a measured target)"
                                             : "a task's pytorch.py under torch.compile (a measured target)";
  }
  TrackSpec default_spec() const override { return TrackSpec{{}, {}, true}; }
};
}  // namespace

const Track& torch_eager_track() {
  static const TorchTarget t(py::PyMode::torch_eager);
  return t;
}
const Track& torch_compile_track() {
  static const TorchTarget t(py::PyMode::torch_compile);
  return t;
}

}  // namespace tracks_detail

}  // namespace d2k
