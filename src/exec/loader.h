#pragma once
/// Loads an implementation library and resolves the three ABI entry points.
///
/// Loading runs the library's static constructors, so for a candidate this happens only in a
/// sandboxed worker process, never in the trusted parent (docs/isolation.md).
#include <d2k/solution.h>

#include <filesystem>
#include <string>

namespace d2k {

/// A loaded implementation. Owns the dlopen handle (dlclose on destruction); move-only.
///
/// The library is opened RTLD_NOW | RTLD_LOCAL: its symbols never join the global scope, so
/// nothing resolved later (by the harness or another library) can bind to a symbol the
/// candidate defines. RTLD_DEEPBIND is not needed: it only changes how the candidate's own
/// references resolve (its own definitions first), which cannot affect the harness, and the
/// harness resolves its timing and CUDA symbols through its own link-time dependencies
/// (build the d2k binary with -Wl,-z,now so that all of them are bound before any candidate
/// is loaded).
class LoadedImpl {
 public:
  using AbiVersionFn = uint32_t (*)();
  using WorkspaceSizeFn = int32_t (*)(const d2k_args*, uint64_t*);
  using RunFn = int32_t (*)(const d2k_args*);
  using ReleaseFn = void (*)();

  LoadedImpl() = default;
  LoadedImpl(LoadedImpl&& o) noexcept;
  LoadedImpl& operator=(LoadedImpl&& o) noexcept;
  LoadedImpl(const LoadedImpl&) = delete;
  LoadedImpl& operator=(const LoadedImpl&) = delete;
  ~LoadedImpl();

  /// The ABI version the library reported (== D2K_ABI_VERSION after a successful load).
  uint32_t abi_version() const { return abi_version_; }
  /// Calls d2k_workspace_size.
  int32_t workspace_size(const d2k_args* args, uint64_t* bytes) const { return workspace_size_(args, bytes); }
  /// Calls d2k_run.
  int32_t run(const d2k_args* args) const { return run_(args); }
  const std::filesystem::path& path() const { return path_; }
  /// Returns what the implementation's runtime caches of device memory (a Python track's
  /// framework allocator) once the engine has freed the buffers of a workload; nothing for a
  /// shared library, which owns no allocator of its own.
  void release_cached() const {
    if (release_) release_();
  }
  bool loaded() const { return handle_ != nullptr || run_ != nullptr; }

  /// Entry points that are not a shared library's (a Python track's bridge into its
  /// interpreter): nothing is dlopened or closed.
  static LoadedImpl from_entry_points(std::filesystem::path path, WorkspaceSizeFn workspace_size, RunFn run,
                                      ReleaseFn release = nullptr) {
    LoadedImpl impl;
    impl.path_ = std::move(path);
    impl.abi_version_ = D2K_ABI_VERSION;
    impl.workspace_size_ = workspace_size;
    impl.run_ = run;
    impl.release_ = release;
    return impl;
  }

 private:
  friend LoadedImpl load_impl(const std::filesystem::path& so);
  void* handle_ = nullptr;
  std::filesystem::path path_;
  uint32_t abi_version_ = 0;
  WorkspaceSizeFn workspace_size_ = nullptr;
  RunFn run_ = nullptr;
  ReleaseFn release_ = nullptr;
};

/// Opens `so` and resolves d2k_abi_version, d2k_workspace_size and d2k_run, then checks that
/// d2k_abi_version() == D2K_ABI_VERSION. Throws ExecError(INVALID_SUBMISSION) with a message
/// naming the file and what is wrong: cannot be opened (dlerror text, e.g. an undefined
/// symbol), a missing entry point, or an ABI version mismatch.
LoadedImpl load_impl(const std::filesystem::path& so);

}  // namespace d2k
