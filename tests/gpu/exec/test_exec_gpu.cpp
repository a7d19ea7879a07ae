// GPU tests of src/exec: compile-load-call a sample solution on device buffers in process, and
// run sandboxed workers (all layers on) that call it, fault, and export memory over CUDA IPC.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <iostream>
#include <random>
#include <vector>

#include "../../unit/exec/exec_test_util.h"
#include "exec/compile.h"
#include "exec/loader.h"
#include "exec/sandbox.h"
#include "exec/symbols.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;
const std::string kWorker = test::helper_program("exec_gpu_worker", D2K_GPU_WORKER);

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// Compiles a fixture once per test program into a temporary cache.
fs::path compiled(const std::string& fixture) {
  static test::TempDir cache("d2k-exec-gpu-cache");
  CompileOptions o;
  o.cache_dir = cache.path();
  o.include_dir = test::source_dir() / "include";
  o.extra_include_dirs = test::extra_include_dirs();
  CompileResult r = compile_solution(test::fixture_solution(fixture), o);
  EXPECT_EQ(r.status, Status::PASSED) << r.message << "\n" << r.log;
  std::cout << "[compile " << fixture << "] " << status_name(r.status) << " in " << r.seconds
            << " s, cache_hit=" << r.cache_hit << ", layers:";
  for (const auto& l : r.sandbox_layers) std::cout << " " << l;
  std::cout << "\n";
  return r.library;
}

std::string describe(const ProcessResult& r) {
  std::string s = fmt::format("status={} cause='{}' stage={} wall={:.2f}s\n  layers:", status_name(r.status),
                              r.cause, r.last_stage, r.wall_seconds);
  for (const auto& l : r.layers) s += " " + l;
  s += "\n  skipped:";
  for (const auto& l : r.layers_skipped) s += "\n    " + l;
  s += "\n  messages:";
  for (const auto& m : r.messages) s += "\n    " + m.dump();
  if (!r.stderr_tail.empty()) s += "\n  stderr: " + r.stderr_tail;
  return s;
}

const nlohmann::json* find_message(const ProcessResult& r, const std::string& type) {
  for (const auto& m : r.messages)
    if (m.value("type", "") == type) return &m;
  return nullptr;
}

SandboxOptions worker_options() {
  SandboxOptions o;  // every layer on
  o.stage_timeouts = {{"start", 60.0}, {"init", 60.0}, {"load", 30.0}, {"check", 60.0}};
  o.total_timeout = 120;
  return o;
}

class ExecGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(ExecGpu, CompileCheckLoadAndCallInProcess) {
  const fs::path so = compiled("vector_add");
  ASSERT_FALSE(so.empty());
  SymbolReport sym = check_symbols(so, SymbolPolicy::candidate());
  ASSERT_TRUE(sym.ok()) << sym.summary();
  LoadedImpl impl = load_impl(so);

  const int64_t n = (1 << 20) + 3;  // not a multiple of the block size
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<float> a(n), b(n), c(n);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  float *da, *db, *dc;
  const size_t bytes = n * sizeof(float);
  CUDA_OK(cudaMalloc(&da, bytes));
  CUDA_OK(cudaMalloc(&db, bytes));
  CUDA_OK(cudaMalloc(&dc, bytes));
  CUDA_OK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dc, 0xff, bytes));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int64_t shape[1] = {n};
  auto dev = [&](void* p) {
    DLTensor t{};
    t.data = p;
    t.device = {kDLCUDA, 0};
    t.ndim = 1;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape;
    return t;
  };
  DLTensor ins[2] = {dev(da), dev(db)}, outs[1] = {dev(dc)};
  const char* in_names[2] = {"a", "b"};
  const char* out_names[1] = {"c"};
  char err[256] = {0};
  d2k_args args{};
  args.abi_version = D2K_ABI_VERSION;
  args.num_inputs = 2;
  args.num_outputs = 1;
  args.inputs = ins;
  args.input_names = in_names;
  args.outputs = outs;
  args.output_names = out_names;
  args.stream = s;
  args.error = err;
  args.error_capacity = sizeof(err);
  uint64_t ws = 1;
  ASSERT_EQ(impl.workspace_size(&args, &ws), D2K_OK);
  EXPECT_EQ(ws, 0u);
  ASSERT_EQ(impl.run(&args), D2K_OK) << err;
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;
  cudaStreamDestroy(s);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}

TEST_F(ExecGpu, SandboxedWorkerCallsTheSolution) {
  const fs::path so = compiled("vector_add");
  SandboxOptions o = worker_options();
  o.ro_paths = {so};
  ProcessResult r = run_sandboxed({kWorker, "--lockdown", "vector_add", so.string(), "1000003"}, o);
  std::cout << "[sandboxed worker] " << describe(r) << "\n";
  ASSERT_EQ(r.status, Status::PASSED) << describe(r);
  const nlohmann::json* res = find_message(r, "result");
  ASSERT_NE(res, nullptr) << describe(r);
  EXPECT_EQ((*res)["max_abs_err"], 0.0) << res->dump();
  EXPECT_EQ(r.stages, (std::vector<std::string>{"init", "load", "check"}));
  const nlohmann::json* lock = find_message(r, "lockdown");
  ASSERT_NE(lock, nullptr);
  EXPECT_TRUE((*lock)["ok"].get<bool>()) << lock->dump();
  if (geteuid() == 0) {
    EXPECT_NE(std::find(r.layers.begin(), r.layers.end(), "drop_privileges"), r.layers.end()) << describe(r);
    EXPECT_NE(std::find(r.layers.begin(), r.layers.end(), "pid_namespace"), r.layers.end()) << describe(r);
  }
  EXPECT_NE(std::find(r.layers.begin(), r.layers.end(), "seccomp"), r.layers.end()) << describe(r);
}

TEST_F(ExecGpu, IllegalAddressIsARuntimeErrorAndTheParentSurvives) {
  const fs::path so = compiled("illegal_address");
  SandboxOptions o = worker_options();
  o.ro_paths = {so};
  ProcessResult r = run_sandboxed({kWorker, "--lockdown", "run", so.string(), "4096"}, o);
  std::cout << "[illegal address] " << describe(r) << "\n";
  EXPECT_EQ(r.status, Status::RUNTIME_ERROR) << describe(r);
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  const nlohmann::json* e = find_message(r, "cuda_error");
  ASSERT_NE(e, nullptr) << describe(r);
  EXPECT_EQ((*e)["error"], "cudaErrorIllegalAddress") << e->dump();

  // The parent's own context is untouched.
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 1024 * sizeof(float)));
  CUDA_OK(cudaMemset(d, 0, 1024 * sizeof(float)));
  std::vector<float> h(1024, 1.f);
  CUDA_OK(cudaMemcpy(h.data(), d, 1024 * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(h[1023], 0.f);
  CUDA_OK(cudaFree(d));
}

/// A sandboxed worker exports 1 MiB over CUDA IPC; the parent maps it and checks the pattern.
/// Legacy CUDA IPC handles are resolved by process id, and fail across PID namespaces
/// (reported by others for containers); so the worker shares the parent's PID and IPC
/// namespaces here and keeps every other layer.
void ipc_round_trip(bool lockdown) {
  const size_t bytes = 1 << 20;
  SandboxOptions o = worker_options();
  o.pid_namespace = false;
  o.ipc_namespace = false;
  bool verified = false;
  std::string why = "no handle received";
  o.on_message = [&](const nlohmann::json& msg, ParentChannel& ch) {
    if (msg.value("type", "") != "ipc_handle") return;
    cudaIpcMemHandle_t h{};
    const std::string hex = msg["handle"];
    for (size_t i = 0; i < sizeof(h.reserved) && 2 * i + 1 < hex.size(); ++i)
      h.reserved[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    void* p = nullptr;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      why = std::string("cudaIpcOpenMemHandle: ") + cudaGetErrorName(e);
    } else {
      std::vector<unsigned char> got(bytes);
      e = cudaMemcpy(got.data(), p, bytes, cudaMemcpyDeviceToHost);
      verified = e == cudaSuccess;
      for (size_t i = 0; verified && i < bytes; ++i) verified = got[i] == static_cast<unsigned char>((i * 131 + 7) & 0xff);
      if (!verified) why = "pattern mismatch or copy failed";
      cudaIpcCloseMemHandle(p);
    }
    ch.send({{"type", "done"}});
  };
  std::vector<std::string> argv = {kWorker, "ipc", std::to_string(bytes)};
  if (lockdown) argv.insert(argv.begin() + 1, "--lockdown");
  ProcessResult r = run_sandboxed(argv, o);
  std::cout << "[ipc" << (lockdown ? ", lockdown" : "") << "] verified=" << verified << " " << describe(r) << "\n";
  EXPECT_EQ(r.status, Status::PASSED) << describe(r);
  EXPECT_TRUE(verified) << why;
}

TEST_F(ExecGpu, ParentReadsWorkerMemoryOverIpc) { ipc_round_trip(false); }
TEST_F(ExecGpu, ParentReadsLockedDownWorkerMemoryOverIpc) { ipc_round_trip(true); }

TEST_F(ExecGpu, CudaRunsUnderADataLimit) {
  const fs::path so = compiled("vector_add");
  SandboxOptions o = worker_options();
  o.ro_paths = {so};
  o.rlimits.data_bytes = 8ull << 30;
  ProcessResult r = run_sandboxed({kWorker, "vector_add", so.string(), "65536"}, o);
  std::cout << "[RLIMIT_DATA 8 GiB] " << describe(r) << "\n";
  EXPECT_EQ(r.status, Status::PASSED) << describe(r);
}

TEST_F(ExecGpu, CudaRunsWithoutExecutableAnonymousMemory) {
  const fs::path so = compiled("vector_add");
  SandboxOptions o = worker_options();
  o.ro_paths = {so};
  ProcessResult r = run_sandboxed({kWorker, "--lockdown", "--deny-exec-memory", "vector_add", so.string(), "65536"}, o);
  std::cout << "[deny exec memory] " << describe(r) << "\n";
  EXPECT_EQ(r.status, Status::PASSED) << describe(r);
}

}  // namespace
}  // namespace d2k
