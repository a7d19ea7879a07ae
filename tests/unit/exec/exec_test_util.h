#pragma once
// Helpers shared by the exec tests.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace d2k::test {

/// The source tree: $D2K_SOURCE_DIR (for a build carried to another machine), else the one
/// this test was configured from.
inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("D2K_SOURCE_DIR"); s && *s) return s;
  return D2K_SOURCE_DIR;
}

inline std::filesystem::path fixture_solution(const std::string& name) {
  return source_dir() / "tests" / "fixtures" / "solutions" / name;
}

/// A fresh folder under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "d2k-exec-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (tag + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace d2k::test
