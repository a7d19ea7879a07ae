// The Python side without a GPU or torch: the machine's python3 found at run time and embedded,
// DLPack capsules over host tensors (shape, strides, dtype, device and data pointer as the
// solution sees them), run()'s arguments by name whatever their order, and the error paths
// (an exception, a parameter the task lacks, a missing run, a failing import).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exec/error.h"
#include "exec/worker.h"
#include "tracks/python_bridge.h"
#include "tracks/python_track.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

/// A solution folder in a fresh temporary folder, with an abi.json for `scalars`.
fs::path write_solution(const std::string& name, const std::string& source,
                        const std::string& abi = R"({"inputs": [], "outputs": [], "scalars": {"eps": 0.5}})") {
  const fs::path dir = fs::temp_directory_path() / ("d2k_pybridge_" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  std::ofstream(dir / "solution.py") << source;
  std::ofstream(dir / "abi.json") << abi;
  return dir / "solution.py";
}

py::Bridge& bridge() {
  ::setenv("D2K_PYTHON_SHIM_DIR", D2K_SOURCE_DIR "/src/tracks/python", 1);
  return py::Bridge::start(py::find_python(), py::shim_dir());
}

/// Host tensors and the d2k_args over them: x is a 2x3 bf16-typed view with explicit strides
/// (row pitch 4: not contiguous), out an int64[16] the solution writes what it saw into.
struct HostCall {
  std::vector<std::uint16_t> x = std::vector<std::uint16_t>(8, 0);
  std::vector<std::int64_t> out = std::vector<std::int64_t>(16, -1);
  std::int64_t x_shape[2] = {2, 3}, x_strides[2] = {4, 1}, out_shape[1] = {16};
  DLTensor ins[1]{}, outs[1]{};
  const char* in_names[1] = {"x"};
  const char* out_names[1] = {"out"};
  d2k_scalar scalars[2]{};
  char error[4096] = {0};
  d2k_args args{};

  HostCall() {
    ins[0].data = x.data();
    ins[0].device = {kDLCPU, 0};
    ins[0].ndim = 2;
    ins[0].dtype = {kDLBfloat, 16, 1};
    ins[0].shape = x_shape;
    ins[0].strides = x_strides;
    outs[0].data = out.data();
    outs[0].device = {kDLCPU, 0};
    outs[0].ndim = 1;
    outs[0].dtype = {kDLInt, 64, 1};
    outs[0].shape = out_shape;
    scalars[0] = {"eps", 1, 0, 0, 0.5};
    scalars[1] = {"T", 0, 0, 2, 0};
    args.abi_version = D2K_ABI_VERSION;
    args.num_inputs = 1;
    args.num_outputs = 1;
    args.num_scalars = 2;
    args.inputs = ins;
    args.input_names = in_names;
    args.outputs = outs;
    args.output_names = out_names;
    args.scalars = scalars;
    args.error = error;
    args.error_capacity = sizeof error;
  }
};

/// Writes what run() received into `out` through ctypes (no numpy, no torch).
constexpr const char* kProbe = R"PY(
import ctypes
def run(out, x, eps, T=-7):   # not the ABI's order; T is an axis, passed because run names it
    vals = [x.data_ptr, x.shape[0], x.shape[1], x.strides[0], x.strides[1],
            x.dtype[0], x.dtype[1], x.dtype[2], x.device[0], int(eps * 1000), T, out.shape[0]]
    ctypes.memmove(out.data_ptr, (ctypes.c_int64 * len(vals))(*vals), 8 * len(vals))
)PY";

TEST(PythonRuntime, FindsTheMachinesPythonAndItsSharedLibrary) {
  const py::PythonInstall& p = py::find_python();
  EXPECT_TRUE(fs::exists(p.libpython)) << p.libpython;
  EXPECT_FALSE(p.sys_path.empty());
  EXPECT_EQ(p.version.rfind("3.", 0), 0u) << p.version;
  EXPECT_EQ(py::install_from_json(py::install_to_json(p)).libpython, p.libpython);
}

TEST(PythonRuntime, AnInterpreterThatIsNotThereIsNamed) {
  try {
    py::query_python("/nonexistent/python3");
    ADD_FAILURE() << "a missing interpreter was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/python3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(py::install_from_json(nlohmann::json{{"executable", "x"}}), std::invalid_argument);
}

TEST(PythonBridge, DlpackCapsuleCarriesShapeStridesDtypeDeviceAndPointer) {
  py::Bridge& b = bridge();
  b.load(write_solution("probe", kProbe), py::PyMode::triton);
  HostCall c;
  ASSERT_EQ(b.run(&c.args), D2K_OK) << c.error;
  EXPECT_EQ(c.out[0], reinterpret_cast<std::intptr_t>(c.x.data()));  // zero copy: the parent's buffer
  EXPECT_EQ(c.out[1], 2);
  EXPECT_EQ(c.out[2], 3);
  EXPECT_EQ(c.out[3], 4);  // the row pitch, not the compact 3
  EXPECT_EQ(c.out[4], 1);
  EXPECT_EQ(c.out[5], kDLBfloat);
  EXPECT_EQ(c.out[6], 16);
  EXPECT_EQ(c.out[7], 1);
  EXPECT_EQ(c.out[8], kDLCPU);
  EXPECT_EQ(c.out[9], 500);  // eps by name
  EXPECT_EQ(c.out[10], 2);   // the axis T, because run() names it
  EXPECT_EQ(c.out[11], 16);
}

TEST(PythonBridge, AxesAreLeftOutWhenRunDoesNotNameThem) {
  py::Bridge& b = bridge();
  b.load(write_solution("no_axis", R"PY(
import ctypes
def run(x, out, eps):
    ctypes.memmove(out.data_ptr, (ctypes.c_int64 * 1)(int(eps * 10)), 8)
)PY"),
         py::PyMode::triton);
  HostCall c;
  ASSERT_EQ(b.run(&c.args), D2K_OK) << c.error;
  EXPECT_EQ(c.out[0], 5);
}

TEST(PythonBridge, KwargsReceiveEveryNameIncludingAxes) {
  py::Bridge& b = bridge();
  b.load(write_solution("kwargs", R"PY(
import ctypes
def run(**kw):
    names = sorted(kw)
    assert names == ['T', 'eps', 'out', 'x'], names
    ctypes.memmove(kw['out'].data_ptr, (ctypes.c_int64 * 1)(len(names)), 8)
)PY"),
         py::PyMode::triton);
  HostCall c;
  ASSERT_EQ(b.run(&c.args), D2K_OK) << c.error;
  EXPECT_EQ(c.out[0], 4);
}

TEST(PythonBridge, AnExceptionBecomesTheCallsErrorWithItsTraceback) {
  py::Bridge& b = bridge();
  b.load(write_solution("raises", "def run(x, out, eps):\n    raise ValueError('boom at call')\n"), py::PyMode::triton);
  HostCall c;
  EXPECT_EQ(b.run(&c.args), D2K_ERR_INTERNAL);
  const std::string err = c.error;
  EXPECT_NE(err.find("ValueError: boom at call"), std::string::npos) << err;
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
  // The bridge stays usable after a failed call.
  b.load(write_solution("probe2", kProbe), py::PyMode::triton);
  HostCall again;
  EXPECT_EQ(b.run(&again.args), D2K_OK) << again.error;
}

TEST(PythonBridge, AParameterTheTaskLacksIsNamed) {
  py::Bridge& b = bridge();
  b.load(write_solution("extra_param", "def run(x, out, eps, gamma):\n    pass\n"), py::PyMode::triton);
  HostCall c;
  EXPECT_EQ(b.run(&c.args), D2K_ERR_INTERNAL);
  EXPECT_NE(std::string(c.error).find("gamma"), std::string::npos) << c.error;
}

TEST(PythonBridge, AMissingRunIsAnInvalidSubmission) {
  py::Bridge& b = bridge();
  try {
    b.load(write_solution("no_run", "def compute(x):\n    pass\n"), py::PyMode::triton);
    ADD_FAILURE() << "a file without run() loaded";
  } catch (const ExecError& e) {
    EXPECT_EQ(e.status, Status::INVALID_SUBMISSION);
    EXPECT_NE(std::string(e.what()).find("no callable run"), std::string::npos) << e.what();
  }
}

// Issue #14: the worker takes its thread baseline after the runtime's warm-up and before the
// candidate's import, so that a thread started at import (or in prepare's calls) is beyond it. The
// warm-up runs none of the candidate's code; without a GPU it has nothing to start.
TEST(PythonBridge, ARuntimeWarmUpRunsNoCandidateCodeAndAThreadStartedAtImportIsCounted) {
  py::Bridge& b = bridge();
  EXPECT_EQ(b.warm_runtime(py::PyMode::triton), "");
  const int baseline = count_threads();
  ASSERT_GT(baseline, 0);
  b.load(write_solution("thread_at_import",
                        "import threading, time\n"
                        "threading.Thread(target=lambda: time.sleep(30), daemon=True).start()\n"
                        "def run(x, out):\n    pass\n"),
         py::PyMode::triton);
  EXPECT_EQ(count_threads(), baseline + 1) << "the import's thread is beyond the baseline";
}

TEST(PythonBridge, AFailingImportIsAnInvalidSubmissionWithTheTraceback) {
  py::Bridge& b = bridge();
  try {
    b.load(write_solution("import_fails", "import d2k_no_such_module_xyz\ndef run(x, out):\n    pass\n"),
           py::PyMode::triton);
    ADD_FAILURE() << "a failing import loaded";
  } catch (const ExecError& e) {
    EXPECT_EQ(e.status, Status::INVALID_SUBMISSION);
    const std::string what = e.what();
    // The first line (what a table prints under a failed row) names the exception and the module.
    const std::string first = what.substr(0, what.find('\n'));
    EXPECT_NE(first.find("ModuleNotFoundError"), std::string::npos) << what;
    EXPECT_NE(first.find("d2k_no_such_module_xyz"), std::string::npos) << what;
  }
}

TEST(PythonBridge, EntryPointsCallTheLoadedSolution) {
  py::Bridge& b = bridge();
  const fs::path file = write_solution("entry", kProbe);
  b.load(file, py::PyMode::triton);
  LoadedImpl impl = b.entry_points(file);
  ASSERT_TRUE(impl.loaded());
  HostCall c;
  std::uint64_t ws = 1;
  EXPECT_EQ(impl.workspace_size(&c.args, &ws), D2K_OK);
  EXPECT_EQ(ws, 0u);
  ASSERT_EQ(impl.run(&c.args), D2K_OK) << c.error;
  EXPECT_EQ(c.out[1], 2);
}

}  // namespace
}  // namespace d2k
