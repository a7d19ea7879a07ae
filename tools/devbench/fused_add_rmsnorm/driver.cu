// Development bench for fused_add_rmsnorm: loads the task's implementations through the solution
// ABI (dlopen, RTLD_LOCAL), checks them and times them at every workload of workloads.jsonl.
//
//   check workloads (+ extra awkward shapes): every GPU implementation vs reference.so (fp64, host),
//     outputs poisoned with 0xFF before each call, inputs compared after the call; the expert is also
//     run on 16-byte-misaligned tensors (its fallback path).
//   bench workloads: naive and expert vs reference.so on a slice of rows, expert vs naive on every
//     element, then cold-L2 timing (CUDA events, 256 MB+ memset before each sample).
//
// Usage: far_driver --root <repo> --impl-dir <build>/impl/fused_add_rmsnorm [--samples N] [--md FILE]
//                   [--checks-only] [--only UUID-SUBSTRING]
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "d2k/solution.h"

using namespace devbench;
using json = nlohmann::ordered_json;

namespace {

/// One implementation library and its entry points.
struct Impl {
  std::string name;
  void* handle = nullptr;
  uint32_t (*abi)() = nullptr;
  int32_t (*ws)(const d2k_args*, uint64_t*) = nullptr;
  int32_t (*run)(const d2k_args*) = nullptr;
  ~Impl() {
    if (handle) dlclose(handle);
  }
};

std::unique_ptr<Impl> load_impl(const std::string& dir, const std::string& name, bool required) {
  const std::string path = dir + "/" + name + ".so";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    if (required) throw std::runtime_error("cannot load " + path + ": " + dlerror());
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->handle = h;
  impl->abi = reinterpret_cast<uint32_t (*)()>(dlsym(h, "d2k_abi_version"));
  impl->ws = reinterpret_cast<int32_t (*)(const d2k_args*, uint64_t*)>(dlsym(h, "d2k_workspace_size"));
  impl->run = reinterpret_cast<int32_t (*)(const d2k_args*)>(dlsym(h, "d2k_run"));
  if (!impl->abi || !impl->ws || !impl->run) throw std::runtime_error(path + ": missing an ABI entry point");
  if (impl->abi() != D2K_ABI_VERSION) throw std::runtime_error(path + ": ABI version mismatch");
  return impl;
}

/// The DLTensors, names and scalars of one call; pointers inside stay valid while it lives.
struct Call {
  int64_t th[2], h[1];
  DLTensor in[3]{}, out[2]{};
  const char* in_names[3] = {"x", "residual", "weight"};
  const char* out_names[2] = {"out", "residual_out"};
  d2k_scalar sc[3]{};
  char err[512] = {0};
  d2k_args args{};

  Call(int64_t T, int64_t H, double eps, DLDeviceType dev, void* x, void* r, void* w, void* o, void* ro) {
    th[0] = T; th[1] = H; h[0] = H;
    void* ptrs_in[3] = {x, r, w};
    for (int i = 0; i < 3; ++i) {
      in[i].data = ptrs_in[i];
      in[i].device = {dev, 0};
      in[i].ndim = i == 2 ? 1 : 2;
      in[i].dtype = {kDLBfloat, 16, 1};
      in[i].shape = i == 2 ? h : th;
    }
    void* ptrs_out[2] = {o, ro};
    for (int i = 0; i < 2; ++i) {
      out[i].data = ptrs_out[i];
      out[i].device = {dev, 0};
      out[i].ndim = 2;
      out[i].dtype = {kDLBfloat, 16, 1};
      out[i].shape = th;
    }
    sc[0] = {"T", 0, 0, T, 0.0};
    sc[1] = {"H", 0, 0, H, 0.0};
    sc[2] = {"eps", 1, 0, 0, eps};
    args.abi_version = D2K_ABI_VERSION;
    args.num_inputs = 3; args.num_outputs = 2; args.num_scalars = 3;
    args.inputs = in; args.input_names = in_names;
    args.outputs = out; args.output_names = out_names;
    args.scalars = sc;
    args.error = err; args.error_capacity = sizeof err;
  }
};

void check_status(int32_t st, const Call& c, const std::string& what) {
  if (st != D2K_OK) throw std::runtime_error(what + ": status " + std::to_string(st) + ": " + c.err);
}

struct Tolerance { double atol, rtol; };

struct Problem {
  std::string label;
  int64_t T, H;
  double eps;
  std::vector<uint16_t> x, r, w;
};

Problem make_problem(const std::string& label, int64_t T, int64_t H, double eps, uint64_t seed) {
  Problem p{label, T, H, eps, {}, {}, {}};
  p.x.resize(static_cast<size_t>(T * H));
  p.r.resize(static_cast<size_t>(T * H));
  p.w.resize(static_cast<size_t>(H));
  fill_normal(p.x, seed * 3 + 1, 0.0, 1.0);  // definition.json: x ~ normal(0, 1)
  fill_normal(p.r, seed * 3 + 2, 0.0, 1.0);  // residual ~ normal(0, 1)
  fill_uniform(p.w, seed * 3 + 3, 0.5, 1.5); // weight ~ uniform[0.5, 1.5)
  return p;
}

/// Host reference outputs for the first `rows` rows.
void run_reference(Impl& ref, const Problem& p, int64_t rows, std::vector<uint16_t>& out, std::vector<uint16_t>& ro) {
  out.assign(static_cast<size_t>(rows * p.H), 0xFFFF);
  ro.assign(static_cast<size_t>(rows * p.H), 0xFFFF);
  Call c(rows, p.H, p.eps, kDLCPU, const_cast<uint16_t*>(p.x.data()), const_cast<uint16_t*>(p.r.data()),
         const_cast<uint16_t*>(p.w.data()), out.data(), ro.data());
  check_status(ref.run(&c.args), c, "reference");
}

/// Device copies of a problem's inputs and outputs. `offset` bytes of misalignment (0 or 2).
struct DeviceProblem {
  DeviceBuffer x, r, w, o, ro, ws;
  size_t offset = 0;
  int64_t T, H;
  DeviceProblem(const Problem& p, size_t off) : offset(off), T(p.T), H(p.H) {
    const size_t n = static_cast<size_t>(p.T * p.H) * 2;
    x = DeviceBuffer(n + 16); r = DeviceBuffer(n + 16); w = DeviceBuffer(p.H * 2 + 16);
    o = DeviceBuffer(n + 16); ro = DeviceBuffer(n + 16);
    DB_CUDA(cudaMemcpy(px(), p.x.data(), n, cudaMemcpyHostToDevice));
    DB_CUDA(cudaMemcpy(pr(), p.r.data(), n, cudaMemcpyHostToDevice));
    DB_CUDA(cudaMemcpy(pw(), p.w.data(), p.H * 2, cudaMemcpyHostToDevice));
  }
  char* px() const { return static_cast<char*>(x.get()) + offset; }
  char* pr() const { return static_cast<char*>(r.get()) + offset; }
  char* pw() const { return static_cast<char*>(w.get()) + offset; }
  char* po() const { return static_cast<char*>(o.get()) + offset; }
  char* pro() const { return static_cast<char*>(ro.get()) + offset; }
  size_t nbytes() const { return static_cast<size_t>(T * H) * 2; }
};

/// Runs `impl` once on poisoned outputs; returns its outputs; throws if it changed an input.
void run_gpu(Impl& impl, const Problem& p, DeviceProblem& d, cudaStream_t s, std::vector<uint16_t>& out,
             std::vector<uint16_t>& ro) {
  Call c(p.T, p.H, p.eps, kDLCUDA, d.px(), d.pr(), d.pw(), d.po(), d.pro());
  {
    Call q(p.T, p.H, p.eps, kDLCUDA, nullptr, nullptr, nullptr, nullptr, nullptr);
    q.args.stream = s;
    uint64_t bytes = 0;
    check_status(impl.ws(&q.args, &bytes), q, impl.name + " workspace_size");
    if (d.ws.bytes() < bytes) d.ws = DeviceBuffer(bytes);
  }
  c.args.workspace = d.ws.get();
  c.args.workspace_bytes = d.ws.bytes();
  c.args.stream = s;
  DB_CUDA(cudaMemsetAsync(d.po(), 0xFF, d.nbytes(), s));
  DB_CUDA(cudaMemsetAsync(d.pro(), 0xFF, d.nbytes(), s));
  check_status(impl.run(&c.args), c, impl.name);
  DB_CUDA(cudaStreamSynchronize(s));
  out.resize(d.nbytes() / 2);
  ro.resize(d.nbytes() / 2);
  DB_CUDA(cudaMemcpy(out.data(), d.po(), d.nbytes(), cudaMemcpyDeviceToHost));
  DB_CUDA(cudaMemcpy(ro.data(), d.pro(), d.nbytes(), cudaMemcpyDeviceToHost));
  // Inputs are read-only: compare them with the host originals.
  std::vector<uint16_t> back(p.x.size());
  DB_CUDA(cudaMemcpy(back.data(), d.px(), d.nbytes(), cudaMemcpyDeviceToHost));
  if (std::memcmp(back.data(), p.x.data(), d.nbytes()) != 0) throw std::runtime_error(impl.name + " modified x");
  DB_CUDA(cudaMemcpy(back.data(), d.pr(), d.nbytes(), cudaMemcpyDeviceToHost));
  if (std::memcmp(back.data(), p.r.data(), d.nbytes()) != 0) throw std::runtime_error(impl.name + " modified residual");
}

bool report_compare(const std::string& what, const CompareResult& c) {
  std::printf("  %-44s %s  n=%zu mismatches=%zu unwritten=%zu nonfinite=%zu max_abs=%.3g max_rel=%.3g\n",
              what.c_str(), c.ok() ? "PASS" : "FAIL", c.n, c.mismatches, c.unwritten, c.nonfinite, c.max_abs,
              c.max_rel);
  return c.ok();
}

struct Row {
  std::string workload, impl;
  Stats st;
  double bytes;
};

}  // namespace

int main(int argc, char** argv) try {
  std::string root = ".", impl_dir, md_path;
  int samples = 50, warmup = 5;
  bool checks_only = false;
  std::string only;  // run only workloads whose uuid contains this (for the profiler)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--root") root = next();
    else if (a == "--impl-dir") impl_dir = next();
    else if (a == "--samples") samples = std::stoi(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--md") md_path = next();
    else if (a == "--checks-only") checks_only = true;
    else if (a == "--only") only = next();
    else throw std::runtime_error("unknown argument " + a);
  }
  if (impl_dir.empty()) throw std::runtime_error("--impl-dir is required");
  const std::string task_dir = root + "/dataset/fused_add_rmsnorm";

  std::ifstream def_in(task_dir + "/definition.json");
  if (!def_in) throw std::runtime_error("cannot open " + task_dir + "/definition.json");
  const json def = json::parse(def_in);
  const double eps_default = def.at("scalars").at("eps").at("value").get<double>();
  const Tolerance tol_out{def["outputs"]["out"]["compare"]["atol"].get<double>(),
                          def["outputs"]["out"]["compare"]["rtol"].get<double>()};
  const Tolerance tol_ro{def["outputs"]["residual_out"]["compare"]["atol"].get<double>(),
                         def["outputs"]["residual_out"]["compare"]["rtol"].get<double>()};

  struct Wl { std::string uuid, role; int64_t T, H; double eps; };
  std::vector<Wl> wls;
  {
    std::ifstream wl_in(task_dir + "/workloads.jsonl");
    std::string line;
    while (std::getline(wl_in, line)) {
      if (line.empty()) continue;
      const json j = json::parse(line);
      double eps = eps_default;
      if (j.contains("scalars") && j["scalars"].contains("eps")) eps = j["scalars"]["eps"].get<double>();
      wls.push_back({j["uuid"], j["role"], j["axes"]["T"], j["axes"]["H"], eps});
    }
  }
  // Extra awkward shapes for the bench's own checks: tiny H (sub-warp rows), H not a multiple of the
  // tiling, the public H values with T not a multiple of rows per CTA.
  const std::pair<int64_t, int64_t> extra[] = {{1, 8}, {257, 40}, {5, 5120}, {67, 8192}, {129, 4096},
                                               {17, 12296}, {3, 2056}, {31, 520}, {2, 16384}, {2, 16392}, {9, 1000}, {5, 1002}};
  for (auto [T, H] : extra)
    wls.push_back({"devbench-extra-" + std::to_string(T) + "x" + std::to_string(H), "check", T, H, eps_default});

  auto ref = load_impl(impl_dir, "reference", true);
  std::vector<std::unique_ptr<Impl>> gpu;
  gpu.push_back(load_impl(impl_dir, "naive", true));
  gpu.push_back(load_impl(impl_dir, "expert", true));
  if (auto lib = load_impl(impl_dir, "library", false)) gpu.push_back(std::move(lib));

  cudaDeviceProp prop{};
  DB_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  cudaStream_t stream;
  DB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ColdTimer timer(stream);

  bool all_ok = true;
  std::vector<Row> rows;
  uint64_t seed = 20261129;
  for (const Wl& wl : wls) {
    ++seed;
    const std::string label = std::to_string(wl.T) + "x" + std::to_string(wl.H);
    std::printf("[%s] %s T=%lld H=%lld\n", wl.role.c_str(), wl.uuid.c_str(), (long long)wl.T, (long long)wl.H);
    const Problem p = make_problem(label, wl.T, wl.H, wl.eps, seed);
    const bool bench = wl.role == "bench";
    if (bench && checks_only) continue;
    if (!only.empty() && wl.uuid.find(only) == std::string::npos) continue;
    // fp64 golden: all rows for check shapes, a slice (first rows + the last row's block) for bench.
    const int64_t ref_rows = bench ? std::min<int64_t>(wl.T, 96) : wl.T;
    std::vector<uint16_t> ref_out, ref_ro;
    run_reference(*ref, p, ref_rows, ref_out, ref_ro);
    const size_t ref_n = static_cast<size_t>(ref_rows * wl.H);

    DeviceProblem d(p, 0);
    std::vector<uint16_t> naive_out, naive_ro;
    for (auto& impl : gpu) {
      std::vector<uint16_t> o, ro;
      run_gpu(*impl, p, d, stream, o, ro);
      const std::string tag = impl->name + (bench ? " vs reference (first rows)" : " vs reference");
      all_ok &= report_compare(tag + " out", allclose_bf16(o.data(), ref_out.data(), ref_n, tol_out.atol, tol_out.rtol));
      all_ok &= report_compare(tag + " residual_out", allclose_bf16(ro.data(), ref_ro.data(), ref_n, tol_ro.atol, tol_ro.rtol));
      if (impl->name == "naive") {
        naive_out = std::move(o);
        naive_ro = std::move(ro);
      } else {
        const size_t n = naive_out.size();
        all_ok &= report_compare(impl->name + " vs naive out (all)", allclose_bf16(o.data(), naive_out.data(), n, tol_out.atol, tol_out.rtol));
        all_ok &= report_compare(impl->name + " vs naive residual_out (all)", allclose_bf16(ro.data(), naive_ro.data(), n, tol_ro.atol, tol_ro.rtol));
      }
    }
    if (!bench) {
      // The expert's fallback for misaligned tensors.
      DeviceProblem dm(p, 2);
      for (auto& impl : gpu) {
        if (impl->name != "expert") continue;
        std::vector<uint16_t> o, ro;
        run_gpu(*impl, p, dm, stream, o, ro);
        all_ok &= report_compare("expert (misaligned by 2 B) vs reference out", allclose_bf16(o.data(), ref_out.data(), ref_n, tol_out.atol, tol_out.rtol));
        all_ok &= report_compare("expert (misaligned by 2 B) vs reference residual_out", allclose_bf16(ro.data(), ref_ro.data(), ref_n, tol_ro.atol, tol_ro.rtol));
      }
      continue;
    }
    for (auto& impl : gpu) {
      Call c(p.T, p.H, p.eps, kDLCUDA, d.px(), d.pr(), d.pw(), d.po(), d.pro());
      c.args.workspace = d.ws.get();
      c.args.workspace_bytes = d.ws.bytes();
      c.args.stream = stream;
      const Stats st = timer.time([&] { check_status(impl->run(&c.args), c, impl->name); }, warmup, samples);
      rows.push_back({label, impl->name, st, compulsory_bytes(p.T, p.H)});
    }
  }

  // Table.
  std::ostringstream md;
  md << "| workload (T x H) | impl | median us | p10-p90 us | noise | GB/s | % of SOL | speedup vs naive |\n";
  md << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  std::map<std::string, double> naive_t;
  for (const Row& r : rows)
    if (r.impl == "naive") naive_t[r.workload] = r.st.median_us;
  for (const Row& r : rows) {
    const double t_sol_us = r.bytes / kCopyBytesPerSec * 1e6;
    char line[512];
    std::snprintf(line, sizeof line, "| %s | %s | %.2f | %.2f-%.2f | %.1f%% | %.0f | %.1f | %.2fx |\n", r.workload.c_str(),
                  r.impl.c_str(), r.st.median_us, r.st.p10_us, r.st.p90_us, r.st.rel_noise * 100,
                  r.bytes / (r.st.median_us * 1e-6) / 1e9, 100.0 * t_sol_us / r.st.median_us,
                  naive_t[r.workload] / r.st.median_us);
    md << line;
  }
  std::printf("\nSOL: compulsory bytes / %.2g B/s; cold L2, CUDA events, %d samples, median\n%s", kCopyBytesPerSec,
              samples, md.str().c_str());
  std::printf("correctness: %s\n", all_ok ? "ALL PASS" : "FAILURES (see above)");
  if (!md_path.empty()) {
    std::ofstream f(md_path);
    f << md.str();
  }
  DB_CUDA(cudaStreamDestroy(stream));
  return all_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "far_driver: %s\n", e.what());
  return 2;
}
