#pragma once
/// An implementation the engine can call: a loaded shared library with the ABI entry points.
#include <d2k/solution.h>

#include <filesystem>
#include <string>

namespace d2k {

/// Which implementation of a task, and where its library is.
struct ImplTarget {
  std::string name;             ///< reference, naive, expert, library, solution
  std::filesystem::path so;     ///< the shared library
  bool host = false;            ///< runs on host tensors (the fp64 reference)
  /// Whether vendor-library kernels (cuBLAS, cuDNN, torch) may run: built-in implementations
  /// (naive may compose cuBLAS calls, library is cuBLAS), and solutions on tracks that link them.
  bool vendor_libraries = true;
};

/// Where the built-in implementations of a task are: <impl_dir>/<task>/<impl>.so.
/// The directory is $D2K_IMPL_DIR, else the `impl` folder of the build tree the d2k binary is in.
std::filesystem::path builtin_impl_dir();
ImplTarget builtin_target(const std::string& task, const std::string& impl);

}  // namespace d2k
