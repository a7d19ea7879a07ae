#pragma once
/// The embedded interpreter of a Python-track worker and the C entry points through which the
/// engine calls a Python solution: the same d2k_args a CUDA solution gets, its tensors wrapped
/// as DLPack capsules ("dltensor", zero copy, the parent-owned buffers) and handed to
/// d2k_shim.py, which calls the solution's run(**kwargs). The timer, flush, audit and checks
/// stay the engine's (C++): Python is only the callee.
#include <d2k/solution.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "exec/loader.h"
#include "tracks/python_runtime.h"

namespace d2k::py {

/// The folder holding d2k_shim.py and d2k_check.py: $D2K_PYTHON_SHIM_DIR, else `python/`
/// beside the build tree the d2k binary is in, else the source tree's copy.
std::filesystem::path shim_dir();

/// How a Python file is called: a Triton solution, or a task's pytorch.py as written
/// (torch_eager) or wrapped in torch.compile (torch_compile).
enum class PyMode { triton, torch_eager, torch_compile };
const char* mode_name(PyMode m);

/// One interpreter per process, one loaded file per worker.
class Bridge {
 public:
  /// Starts the interpreter (first call only) from `install`: PYTHONHOME, sys.path as the
  /// machine's python3 has it, the shim folder first; imports d2k_shim. Throws
  /// std::runtime_error with Python's traceback.
  static Bridge& start(const PythonInstall& install, const std::filesystem::path& shim);
  /// The started bridge, or nullptr.
  static Bridge* current();

  /// The runtime's own start (d2k_shim.warm_runtime), before any candidate code: imports torch
  /// and Triton and starts what they start at first use. Returns the errors seen ("" none).
  std::string warm_runtime(PyMode mode);
  /// Imports `file` and finds run(). Throws ExecError(INVALID_SUBMISSION) with the traceback.
  void load(const std::filesystem::path& file, PyMode mode);
  bool loaded() const { return loaded_ != nullptr; }
  /// Calls run() once per workload shape (JSON: [{uuid, axes}]); returns the errors seen ("" none).
  std::string prepare(const std::string& shapes_json);
  /// One call with the ABI's arguments (the entry point the timer calls). D2K_OK, or
  /// D2K_ERR_INTERNAL with Python's traceback in args->error.
  int32_t run(const d2k_args* args);
  /// d2k_shim.release_cached: the framework's cached device memory back to the driver (after the
  /// engine freed a workload's buffers; PyTorch's caching allocator otherwise keeps the last
  /// row's intermediates, and the next row's rotation sets did not fit: fused_adamw at 1e9).
  void release_cached();

  /// The loaded file as an implementation (entry points into this bridge).
  LoadedImpl entry_points(const std::filesystem::path& file) const;

 private:
  explicit Bridge(const PythonApi& api) : api_(api) {}
  /// Calls d2k_shim.<fn>(args...) with the GIL held; returns a new reference or throws with
  /// Python's error text.
  Obj call_shim(const char* fn, Obj args_tuple);
  std::string fetch_error();
  std::string text(Obj o);

  const PythonApi& api_;
  Obj shim_ = nullptr;
  Obj loaded_ = nullptr;
};

}  // namespace d2k::py
