// A worker for the GPU exec tests, run inside run_sandboxed: initialises CUDA, optionally locks
// itself down, loads a solution library and calls it on device buffers, or exports device
// memory to the parent over CUDA IPC. Results go over the worker channel.
//
// Usage: exec_gpu_worker [--lockdown] [--deny-exec-memory] MODE [ARGS]
//   vector_add SO N   c = a + b through the ABI on random inputs; exit 0 if correct, 2 if not
//   run SO N          call the solution, then synchronise; exit 3 on a CUDA error
//   ipc BYTES         export a device buffer with a known pattern; wait for {"type":"done"}
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "exec/error.h"
#include "exec/loader.h"
#include "exec/worker.h"

namespace {

d2k::WorkerChannel& channel() {
  static d2k::WorkerChannel ch = [] {
    auto c = d2k::WorkerChannel::from_environment();
    if (!c) {
      std::fprintf(stderr, "exec_gpu_worker: not started by run_sandboxed\n");
      std::exit(90);
    }
    return *c;
  }();
  return ch;
}

[[noreturn]] void cuda_fail(const char* call, cudaError_t e, int code) {
  channel().send({{"type", "cuda_error"}, {"call", call}, {"error", cudaGetErrorName(e)},
                  {"message", cudaGetErrorString(e)}});
  std::fprintf(stderr, "%s: %s\n", call, cudaGetErrorString(e));
  std::exit(code);
}

#define CHECK(call)                              \
  do {                                           \
    cudaError_t e_ = (call);                     \
    if (e_ != cudaSuccess) cuda_fail(#call, e_, 4); \
  } while (0)

/// Device buffer owned for the worker's lifetime.
struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) { CHECK(cudaMalloc(&p, bytes)); }
  ~Device() { cudaFree(p); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
};

int call_solution(const std::string& so, int64_t n, bool verify) {
  channel().stage("load");
  d2k::LoadedImpl impl;
  try {
    impl = d2k::load_impl(so);
  } catch (const d2k::ExecError& e) {
    channel().send({{"type", "load_error"}, {"message", e.what()}});
    return 5;
  }
  channel().stage("check");
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size(), 0.f);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  const std::size_t bytes = a.size() * sizeof(float);
  Device da(bytes), db(bytes), dc(bytes);
  CHECK(cudaMemcpy(da.p, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db.p, b.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc.p, 0xff, bytes));  // poisoned: NaN until written
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
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
  DLTensor ins[2] = {dev(da.p), dev(db.p)};
  DLTensor outs[1] = {dev(dc.p)};
  const char* in_names[2] = {"a", "b"};
  const char* out_names[1] = {"c"};
  char err[512] = {0};
  d2k_args args{};
  args.abi_version = D2K_ABI_VERSION;
  args.num_inputs = 2;
  args.num_outputs = 1;
  args.inputs = ins;
  args.input_names = in_names;
  args.outputs = outs;
  args.output_names = out_names;
  args.stream = stream;
  args.error = err;
  args.error_capacity = sizeof(err);
  const int threads_before = d2k::count_threads();
  int32_t rc = impl.run(&args);
  if (rc != D2K_OK) {
    channel().send({{"type", "solution_error"}, {"code", rc}, {"message", err}});
    return 6;
  }
  cudaError_t sync = cudaStreamSynchronize(stream);
  if (sync != cudaSuccess) cuda_fail("cudaStreamSynchronize", sync, 3);
  CHECK(cudaMemcpy(c.data(), dc.p, bytes, cudaMemcpyDeviceToHost));
  double max_err = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    // The float sum, rounded once as the device rounds it: the result must be bit-identical.
    const float want = a[i] + b[i];
    double e = std::fabs(double(c[i]) - double(want));
    if (!(e <= max_err)) max_err = std::isnan(e) ? INFINITY : e;
  }
  channel().send({{"type", "result"}, {"n", n}, {"max_abs_err", max_err},
                  {"threads_before", threads_before}, {"threads_after", d2k::count_threads()}});
  cudaStreamDestroy(stream);
  return (!verify || max_err <= 1e-6) ? 0 : 2;
}

int export_ipc(std::size_t bytes) {
  channel().stage("check");
  Device buf(bytes);
  std::vector<unsigned char> pattern(bytes);
  for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>((i * 131 + 7) & 0xff);
  CHECK(cudaMemcpy(buf.p, pattern.data(), bytes, cudaMemcpyHostToDevice));
  cudaIpcMemHandle_t h;
  CHECK(cudaIpcGetMemHandle(&h, buf.p));
  std::string hex;
  static const char* digits = "0123456789abcdef";
  for (std::size_t i = 0; i < sizeof(h.reserved); ++i) {
    unsigned char v = static_cast<unsigned char>(h.reserved[i]);
    hex += digits[v >> 4];
    hex += digits[v & 15];
  }
  channel().send({{"type", "ipc_handle"}, {"handle", hex}, {"bytes", bytes}});
  auto reply = channel().receive(60.0);
  if (!reply || reply->value("type", "") != "done") return 7;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  bool lockdown = false;
  d2k::LockdownOptions lopts;
  for (; i < argc && std::strncmp(argv[i], "--", 2) == 0; ++i) {
    if (std::strcmp(argv[i], "--lockdown") == 0) lockdown = true;
    if (std::strcmp(argv[i], "--deny-exec-memory") == 0) lopts.deny_exec_memory = true;
  }
  if (i >= argc) return 91;
  const std::string mode = argv[i];
  channel().stage("init");
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));  // creates the context: the driver's threads and files exist now
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  channel().send({{"type", "device"}, {"name", prop.name}, {"threads", d2k::count_threads()}});
  if (lockdown) {
    std::string err = d2k::lock_down_worker(lopts);
    channel().send({{"type", "lockdown"}, {"ok", err.empty()}, {"error", err},
                    {"deny_exec_memory", lopts.deny_exec_memory}});
    if (!err.empty()) return 8;
  }
  if ((mode == "vector_add" || mode == "run") && i + 2 < argc)
    return call_solution(argv[i + 1], std::atoll(argv[i + 2]), mode == "vector_add");
  if (mode == "ipc" && i + 1 < argc) return export_ipc(static_cast<std::size_t>(std::atoll(argv[i + 1])));
  return 94;
}
