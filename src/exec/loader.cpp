#include "exec/loader.h"

#include <dlfcn.h>

#include <utility>

#include <fmt/format.h>

#include "exec/error.h"

namespace d2k {

LoadedImpl::LoadedImpl(LoadedImpl&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)),
      path_(std::move(o.path_)),
      abi_version_(o.abi_version_),
      workspace_size_(std::exchange(o.workspace_size_, nullptr)),
      run_(std::exchange(o.run_, nullptr)),
      release_(std::exchange(o.release_, nullptr)) {}

LoadedImpl& LoadedImpl::operator=(LoadedImpl&& o) noexcept {
  if (this != &o) {
    if (handle_) dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    path_ = std::move(o.path_);
    abi_version_ = o.abi_version_;
    workspace_size_ = std::exchange(o.workspace_size_, nullptr);
    run_ = std::exchange(o.run_, nullptr);
    release_ = std::exchange(o.release_, nullptr);
  }
  return *this;
}

LoadedImpl::~LoadedImpl() {
  if (handle_) dlclose(handle_);
}

LoadedImpl load_impl(const std::filesystem::path& so) {
  auto invalid = [&](const std::string& what) {
    return ExecError(Status::INVALID_SUBMISSION, fmt::format("{}: {}", so.string(), what));
  };
  // dlopen searches the library path for a bare name; an implementation is always a file.
  std::filesystem::path p = so.has_parent_path() ? so : std::filesystem::path(".") / so;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) throw invalid("no such file");

  dlerror();
  void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    throw invalid(fmt::format("cannot be loaded: {}", e ? e : "unknown dlopen error"));
  }
  LoadedImpl impl;
  impl.handle_ = h;
  impl.path_ = p;

  auto resolve = [&](const char* name) -> void* {
    dlerror();
    void* f = dlsym(h, name);
    if (!f || dlerror())
      throw invalid(fmt::format("does not export {} (declare it extern \"C\" and mark it D2K_EXPORT)", name));
    return f;
  };
  auto abi = reinterpret_cast<LoadedImpl::AbiVersionFn>(resolve("d2k_abi_version"));
  impl.workspace_size_ = reinterpret_cast<LoadedImpl::WorkspaceSizeFn>(resolve("d2k_workspace_size"));
  impl.run_ = reinterpret_cast<LoadedImpl::RunFn>(resolve("d2k_run"));
  impl.abi_version_ = abi();
  if (impl.abi_version_ != D2K_ABI_VERSION)
    throw invalid(fmt::format("ABI version mismatch: the library reports {}, the harness speaks {} "
                              "(rebuild against this include/d2k/solution.h)",
                              impl.abi_version_, D2K_ABI_VERSION));
  return impl;
}

}  // namespace d2k
