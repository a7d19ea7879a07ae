#pragma once
/// The Python tracks: a file with run(**kwargs) called through the embedded interpreter
/// (python_bridge.h). `triton` is a solution track (solution.py, Triton kernels, no vendor
/// kernels unless the task allows them); `torch_eager` and `torch_compile` run a task's
/// pytorch.py as a measured target (vendor kernels allowed) and are not offered to solutions.
#include "tracks/python_bridge.h"
#include "tracks/track.h"

namespace d2k {

class PythonTrack : public Track {
 public:
  explicit PythonTrack(py::PyMode mode) : mode_(mode) {}
  std::string_view name() const override { return py::mode_name(mode_); }
  py::PyMode mode() const { return mode_; }

  /// Passes the machine's Python (find_python) to the worker and exposes it read-only.
  void configure_worker(SandboxOptions& so) const override;
  bool prepares() const override { return true; }
  bool host_paced() const override { return true; }
  /// Starts the interpreter and warms the runtime (torch, Triton, torch.compile's pools) before
  /// any of the candidate's code runs. A failed start is kept and reported by open().
  void start_runtime(const std::filesystem::path& artifact) const override;
  /// Starts the interpreter, imports the file and calls it once per shape. A failed import is
  /// kept and reported by open() (after the lockdown, as a load failure).
  void prepare(const std::filesystem::path& artifact, const std::vector<WorkloadShape>& shapes) const override;
  /// torch_compile: Inductor compiles each shape on one thread (tens of seconds for moe_topk_router's
  /// program, minutes for fused_adamw's hundreds of tensors); triton: a JIT and its autotuning.
  double prepare_seconds_per_shape() const override;
  LoadedImpl open(const std::filesystem::path& artifact) const override;

 private:
  py::PyMode mode_;
};

/// The Python install the worker was given ($D2K_PYTHON_INSTALL), else find_python().
py::PythonInstall worker_python_install();

/// The abi.json a Python artifact carries: the task's inputs and outputs (name, dtype, shape
/// as axis names) in the ABI's order and its scalars, for prepare's stand-in tensors.
nlohmann::json python_abi_json(const Definition& def);

/// Copies `files` (name -> contents) and abi.json into <compile cache>/python/<sha256>/.
std::filesystem::path write_python_artifact(const std::map<std::string, std::string>& files, const std::string& abi);

namespace tracks_detail {
const Track& triton_track();
const Track& torch_eager_track();
const Track& torch_compile_track();
}  // namespace tracks_detail

}  // namespace d2k
