#include "engine/impl.h"

#include <cstdlib>
#include <system_error>

namespace d2k {

std::filesystem::path builtin_impl_dir() {
  if (const char* env = std::getenv("D2K_IMPL_DIR"); env && *env) return env;
  // The d2k binary lives at <build>/src/cli/d2k; implementations at <build>/impl.
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (std::filesystem::is_directory(dir / "impl")) return dir / "impl";
  }
  return std::filesystem::path(D2K_BUILD_DIR) / "impl";
}

ImplTarget builtin_target(const std::string& task, const std::string& impl) {
  ImplTarget t;
  t.name = impl;
  t.so = builtin_impl_dir() / task / (impl + ".so");
  t.host = impl == "reference";
  return t;
}

}  // namespace d2k
