// The triton track's build step on the host: the folder's checks (solution.py, no symbolic
// links, no sub-folders), the byte-compile in the sandbox (a syntax error is COMPILE_ERROR
// with file and line), a missing run (INVALID_SUBMISSION), the artifact with abi.json, and the
// torch targets' artifact from a task's pytorch.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tracks/python_track.h"
#include "tracks/track.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

Task make_task() {
  Task t;
  t.def.name = "toy";
  TensorSpec x;
  x.name = "x";
  x.dtype = DType::bf16;
  x.shape = {"T", "H"};
  TensorSpec out = x;
  out.name = "out";
  t.def.inputs = {x};
  t.def.outputs = {out};
  t.def.scalars = {ScalarSpec{"eps", true, 1e-6, ""}};
  t.def.tracks["triton"] = TrackSpec{};
  t.dir = fs::temp_directory_path() / ("d2k_tritonbuild_" + std::to_string(::getpid())) / "task";
  fs::create_directories(t.dir);
  return t;
}

fs::path folder(const std::string& name, const std::string& solution) {
  const fs::path dir = fs::temp_directory_path() / ("d2k_tritonbuild_" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  std::ofstream(dir / "solution.py") << solution;
  return dir;
}

const Track& triton() { return find_track("triton"); }

TEST(TritonBuild, AGoodFolderBecomesAnArtifactWithTheTasksAbi) {
  const Task task = make_task();
  BuiltSolution b = triton().build(task, folder("good", "import math\ndef run(x, out, eps):\n    pass\n"));
  ASSERT_TRUE(b.target) << b.failure.message;
  EXPECT_EQ(b.target->track, "triton");
  EXPECT_FALSE(b.target->vendor_kernels);
  EXPECT_EQ(b.target->so.filename(), "solution.py");
  std::ifstream in(b.target->so.parent_path() / "abi.json");
  const auto abi = nlohmann::json::parse(in);
  EXPECT_EQ(abi["inputs"][0]["name"], "x");
  EXPECT_EQ(abi["inputs"][0]["shape"], (nlohmann::json{"T", "H"}));
  EXPECT_EQ(abi["outputs"][0]["name"], "out");
  EXPECT_EQ(abi["scalars"]["eps"], 1e-6);
}

TEST(TritonBuild, ASyntaxErrorIsACompileErrorWithFileAndLine) {
  const Task task = make_task();
  const fs::path dir = folder("syntax", "def run(x, out, eps):\n    y = (1,\n    return y\n\n");
  BuiltSolution b = triton().build(task, dir);
  ASSERT_FALSE(b.target);
  EXPECT_EQ(b.failure.status, Status::COMPILE_ERROR) << b.failure.message;
  EXPECT_NE(b.failure.message.find((dir / "solution.py").string() + ":2"), std::string::npos) << b.failure.message;
}

TEST(TritonBuild, ASyntaxErrorInASiblingFileNamesThatFile) {
  const Task task = make_task();
  const fs::path dir = folder("sibling", "from helper import f\ndef run(x, out, eps):\n    f()\n");
  std::ofstream(dir / "helper.py") << "def f():\n    pass\ndef g(:\n";
  BuiltSolution b = triton().build(task, dir);
  ASSERT_FALSE(b.target);
  EXPECT_EQ(b.failure.status, Status::COMPILE_ERROR);
  EXPECT_NE(b.failure.message.find("helper.py:3"), std::string::npos) << b.failure.message;
}

TEST(TritonBuild, AMissingRunIsAnInvalidSubmission) {
  const Task task = make_task();
  BuiltSolution b = triton().build(task, folder("norun", "def kernel(x):\n    pass\n"));
  ASSERT_FALSE(b.target);
  EXPECT_EQ(b.failure.status, Status::INVALID_SUBMISSION);
  EXPECT_NE(b.failure.message.find("run"), std::string::npos) << b.failure.message;
}

TEST(TritonBuild, FolderChecksRefuseSymlinksSubfoldersAndAMissingEntry) {
  const Task task = make_task();
  const fs::path link = folder("symlink", "def run(x, out, eps):\n    pass\n");
  fs::create_symlink("/etc/passwd", link / "leak.py");
  BuiltSolution b = triton().build(task, link);
  EXPECT_EQ(b.failure.status, Status::INVALID_SUBMISSION);
  EXPECT_NE(b.failure.message.find("symbolic link"), std::string::npos) << b.failure.message;

  const fs::path sub = folder("subdir", "def run(x, out, eps):\n    pass\n");
  fs::create_directories(sub / "pkg");
  b = triton().build(task, sub);
  EXPECT_EQ(b.failure.status, Status::INVALID_SUBMISSION);
  EXPECT_NE(b.failure.message.find("sub-folders"), std::string::npos) << b.failure.message;

  const fs::path none = folder("noentry", "");
  fs::remove(none / "solution.py");
  b = triton().build(task, none);
  EXPECT_EQ(b.failure.status, Status::INVALID_SUBMISSION);
  EXPECT_NE(b.failure.message.find("no solution.py"), std::string::npos) << b.failure.message;
}

TEST(TritonBuild, ATaskThatDoesNotOfferTheTrackRefuses) {
  Task task = make_task();
  task.def.tracks.erase("triton");
  task.def.tracks["cuda"] = TrackSpec{};
  BuiltSolution b = triton().build(task, folder("offer", "def run(x, out, eps):\n    pass\n"));
  EXPECT_EQ(b.failure.status, Status::INVALID_SUBMISSION);
}

TEST(TorchTargets, OpenATasksPytorchPyWithVendorKernelsAllowed) {
  const Task task = make_task();
  EXPECT_THROW(pytorch_target(task, "torch_eager"), std::runtime_error);  // no pytorch.py yet
  std::ofstream(task.dir / "pytorch.py") << "def run(x, out, eps):\n    out.copy_(x)\n";
  ImplTarget t = pytorch_target(task, "torch_compile");
  EXPECT_EQ(t.track, "torch_compile");
  EXPECT_TRUE(t.vendor_kernels);
  EXPECT_TRUE(fs::is_regular_file(t.so));
  EXPECT_TRUE(fs::is_regular_file(t.so.parent_path() / "abi.json"));
  EXPECT_EQ(&find_track("torch_eager"), lookup_target_track("torch_eager"));
  EXPECT_EQ(lookup_track("torch_eager"), nullptr);  // never offered to solutions
}

}  // namespace
}  // namespace d2k
