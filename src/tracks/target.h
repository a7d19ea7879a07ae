#pragma once
/// An implementation the engine can call: which one, where its library is, and which track
/// opens it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/task.h"

namespace d2k {

/// Which implementation of a task, and where its library is.
struct ImplTarget {
  std::string name;           ///< reference, naive, expert, expert:<variant>, library, solution
  std::filesystem::path so;   ///< the artifact (a shared library on the cuda and cutlass tracks)
  std::string track = "cuda"; ///< the track that opens the artifact in the worker (src/tracks/)
  /// Whether vendor-library kernels (cuBLAS, cuDNN, torch) may run: built-in implementations
  /// (naive may compose cuBLAS calls, library is cuBLAS), and solutions on tracks whose
  /// definition.json entry says `vendor_kernels: true`.
  bool vendor_kernels = true;
};

/// The shapes of one workload, as a track's prepare step sees them (in the worker, before the
/// lockdown).
struct WorkloadShape {
  std::string uuid;
  std::map<std::string, std::int64_t> axes;
  /// The workload's overrides of the task's scalars: torch.compile specialises on scalar values,
  /// so a prepare step that traced with the defaults recompiled at the first call, after the
  /// lockdown (softmax_cross_entropy's grad_scale on the H200).
  std::map<std::string, double> scalars;
};
/// What a track's prepare step gets of workload `w`: every axis, const and expr ones included (a
/// prepare step sizes each tensor from its shape expression: causal_conv1d's weight is [D, W], W
/// const, and a shape it cannot size is never compiled before the lockdown, so torch_compile failed
/// every call), and the workload's scalar overrides.
WorkloadShape workload_shape(const Definition& def, const Workload& w);
nlohmann::json shapes_to_json(const std::vector<WorkloadShape>& shapes);
/// Throws std::invalid_argument naming the field for malformed input.
std::vector<WorkloadShape> shapes_from_json(const nlohmann::json& j);

/// The fp64 golden reference runs on host tensors only: it is never handed device memory
/// (the engine runs it through the host pipeline, whatever the machine has).
inline bool runs_on_host(const ImplTarget& t) { return t.name == "reference"; }

/// The built-in implementations a target list may name (besides `expert:<variant>`).
const std::vector<std::string>& builtin_names();
/// torch_eager or torch_compile: the task's pytorch.py, opened by the track of that name
/// (python_track.h), timed and checked like every other target.
bool is_pytorch_target(const std::string& name);
/// reference, naive, expert, library, torch_eager, torch_compile, or expert:<variant> (a `// %VARIANT% name -DFLAGS`
/// line of expert.cu, built as expert_<variant>.so).
bool is_builtin_name(const std::string& name);

/// Where the built-in implementations of a task are: <impl_dir>/<task>/<impl>.so.
/// The directory is $D2K_IMPL_DIR, else the `impl` folder of the build tree the d2k binary is in.
std::filesystem::path builtin_impl_dir();
/// The built-in `impl` of `task` (expert:<variant> -> expert_<variant>.so). Throws
/// std::invalid_argument naming the target and the names that exist for a name that is none.
ImplTarget builtin_target(const std::string& task, const std::string& impl);

}  // namespace d2k
