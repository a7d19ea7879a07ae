// The triton track: solution.py (with any sibling .py files) whose run(**kwargs) launches
// Triton kernels. Building validates the folder, copies it into a content-addressed artifact
// folder with the task's abi.json, and byte-compiles it in the sandbox (python_track.h).
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "exec/compile.h"
#include "exec/sandbox.h"
#include "exec/sha256.h"
#include "tracks/python_track.h"

namespace d2k {

namespace {

constexpr std::uintmax_t kMaxFileBytes = 256 * 1024;
constexpr std::uintmax_t kMaxFolderBytes = 1024 * 1024;
constexpr std::size_t kMaxFiles = 32;

Trace failure_trace(const Task& task, const std::filesystem::path& dir, Status st, std::string msg) {
  Trace f;
  f.task = task.def.name;
  f.target = "solution";
  f.impl_path = dir.string();
  f.workload_uuid = "*";
  f.role = "build";
  f.status = st;
  f.message = std::move(msg);
  return f;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The folder's .py files (name -> contents), or the reason it is not a valid submission.
std::string collect_sources(const std::filesystem::path& dir, std::map<std::string, std::string>& files) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return fmt::format("{}: not a folder", dir.string());
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(dir / "solution.py")))
    return fmt::format("{}: no solution.py (the triton track's entry file)", dir.string());
  std::uintmax_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (e.is_symlink()) return fmt::format("{}: symbolic links are not accepted", e.path().string());
    if (e.is_directory()) {
      if (name == "__pycache__") continue;
      return fmt::format("{}: sub-folders are not accepted (put every .py beside solution.py)", e.path().string());
    }
    if (e.path().extension() != ".py") continue;  // notes, READMEs: not part of the artifact
    const auto bytes = e.file_size();
    if (bytes > kMaxFileBytes) return fmt::format("{}: {} bytes (at most {})", e.path().string(), bytes, kMaxFileBytes);
    total += bytes;
    files[name] = read_file(e.path());
  }
  if (files.size() > kMaxFiles) return fmt::format("{}: {} .py files (at most {})", dir.string(), files.size(), kMaxFiles);
  if (total > kMaxFolderBytes) return fmt::format("{}: {} bytes of .py (at most {})", dir.string(), total, kMaxFolderBytes);
  return "";
}

}  // namespace

/// <compile cache>/python/<sha256 of the sources and abi.json>/.
std::filesystem::path write_python_artifact(const std::map<std::string, std::string>& files, const std::string& abi) {
  std::string key = abi;
  for (const auto& [n, c] : files) key += "\n--" + n + "--\n" + c;
  const auto dir = default_compile_cache_dir() / "python" / sha256_hex(key);
  std::filesystem::create_directories(dir);
  for (const auto& [n, c] : files) std::ofstream(dir / n, std::ios::binary) << c;
  std::ofstream(dir / "abi.json") << abi;
  return dir;
}

namespace {

/// d2k_check.py on the artifact in the sandbox: nothing of the candidate runs, but its bytes
/// reach the compiler, so the parent never parses them itself.
Trace check_in_sandbox(const Task& task, const std::filesystem::path& src_dir, const std::filesystem::path& artifact,
                       const py::PythonInstall& python, bool& ok) {
  ok = false;
  SandboxOptions so;
  so.gpu_devices = false;
  so.total_timeout = 60;
  so.ro_paths = {artifact, py::shim_dir()};
  for (const auto& r : python.roots) so.ro_paths.push_back(r);
  ProcessResult r = run_sandboxed({python.executable.string(), "-I", "-B", (py::shim_dir() / "d2k_check.py").string(),
                                   artifact.string()},
                                  so);
  if (r.status == Status::TIMEOUT) return failure_trace(task, src_dir, Status::TIMEOUT, "the byte-compile step timed out");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(r.stdout_tail);
  } catch (const nlohmann::json::exception&) {
    return failure_trace(task, src_dir, Status::COMPILE_ERROR,
                         fmt::format("the byte-compile step failed ({}): {}", r.cause, r.stderr_tail));
  }
  const std::string err = j.value("error", "");
  if (err == "syntax")
    return failure_trace(task, src_dir, Status::COMPILE_ERROR,
                         fmt::format("{}:{}: {}", (src_dir / j.value("file", "?")).string(), j.value("line", 0),
                                     j.value("message", "")));
  if (err == "no_run")
    return failure_trace(task, src_dir, Status::INVALID_SUBMISSION,
                         fmt::format("{}: {}", (src_dir / "solution.py").string(), j.value("message", "")));
  ok = j.value("ok", false);
  return failure_trace(task, src_dir, Status::COMPILE_ERROR, ok ? "" : "the byte-compile step reported " + j.dump());
}

class TritonTrack final : public PythonTrack {
 public:
  TritonTrack() : PythonTrack(py::PyMode::triton) {}
  std::string_view summary() const override { return "Python with Triton kernels (solution.py, run(**kwargs))"; }
  std::string_view entry_file() const override { return "solution.py"; }

  BuiltSolution build(const Task& task, const std::filesystem::path& dir) const override {
    BuiltSolution out;
    const std::optional<TrackSpec> spec = spec_for(task);
    if (!spec) {
      out.failure = failure_trace(task, dir, Status::INVALID_SUBMISSION,
                                  fmt::format("task {} does not offer the triton track", task.def.name));
      return out;
    }
    std::map<std::string, std::string> files;
    if (std::string why = collect_sources(dir, files); !why.empty()) {
      out.failure = failure_trace(task, dir, Status::INVALID_SUBMISSION, why);
      return out;
    }
    py::PythonInstall python;
    try {
      python = py::find_python();
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("the triton track needs Python: ") + e.what());  // the harness's fault
    }
    const auto artifact = write_python_artifact(files, python_abi_json(task.def).dump(2));
    bool ok = false;
    out.failure = check_in_sandbox(task, dir, artifact, python, ok);
    if (!ok) return out;
    ImplTarget t;
    t.name = "solution";
    t.so = artifact / "solution.py";
    t.track = "triton";
    t.vendor_kernels = spec->vendor_kernels;
    out.target = t;
    return out;
  }
};

}  // namespace

ImplTarget pytorch_target(const Task& task, const std::string& name) {
  const auto file = task.dir / "pytorch.py";
  if (!std::filesystem::is_regular_file(file))
    throw std::runtime_error(fmt::format("target {} of {}: {} does not exist", name, task.def.name, file.string()));
  ImplTarget t;
  t.name = name;
  t.so = write_python_artifact({{"solution.py", read_file(file)}}, python_abi_json(task.def).dump(2)) / "solution.py";
  t.track = name;
  t.vendor_kernels = true;  // what a user would run: ATen, cuBLAS and cuDNN included
  return t;
}

namespace tracks_detail {
const Track& triton_track() {
  static const TritonTrack t;
  return t;
}
}  // namespace tracks_detail

}  // namespace d2k
