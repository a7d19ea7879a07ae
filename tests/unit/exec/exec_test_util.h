#pragma once
// Helpers shared by the exec tests.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace d2k::test {

/// The folder of the running test binary.
inline std::filesystem::path exe_dir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
}

/// The source tree: $D2K_SOURCE_DIR; else the one this test was configured from, if it is
/// there; else the nearest folder above the test binary that holds include/d2k/solution.h
/// (a build folder carried to another machine inside its checkout).
inline std::filesystem::path source_dir() {
  namespace fs = std::filesystem;
  if (const char* s = std::getenv("D2K_SOURCE_DIR"); s && *s) return s;
  std::error_code ec;
  if (fs::exists(fs::path(D2K_SOURCE_DIR) / "include" / "d2k" / "solution.h", ec)) return D2K_SOURCE_DIR;
  for (fs::path p = exe_dir(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::exists(p / "include" / "d2k" / "solution.h", ec)) return p;
  return D2K_SOURCE_DIR;
}

/// A helper program built beside the test binary (found there first, so that a carried build
/// folder works), else at the path the build recorded.
inline std::string helper_program(const char* name, const char* recorded) {
  std::error_code ec;
  auto beside = exe_dir() / name;
  return std::filesystem::exists(beside, ec) ? beside.string() : std::string(recorded);
}

/// The fixture libraries built beside the test binary (fixtures/), else where the build put them.
inline std::filesystem::path fixture_lib_dir(const char* recorded) {
  std::error_code ec;
  auto beside = exe_dir() / "fixtures";
  return std::filesystem::is_directory(beside, ec) ? beside : std::filesystem::path(recorded);
}

/// Extra include folders for compiles, from $D2K_EXTRA_INCLUDE_DIRS (colon-separated).
inline std::vector<std::filesystem::path> extra_include_dirs() {
  std::vector<std::filesystem::path> out;
  const char* v = std::getenv("D2K_EXTRA_INCLUDE_DIRS");
  std::string s = v ? v : "";
  for (std::size_t start = 0; start < s.size();) {
    std::size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
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
