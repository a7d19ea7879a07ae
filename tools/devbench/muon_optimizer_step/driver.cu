// muon_optimizer_step devbench driver: loads the implementations (build/<task>/impl/<task>/*.so),
// checks them and times them at the task's workloads, until the d2k evaluator exists.
//
//   muon_devbench [--impl-dir DIR] [--impls naive,expert,...] [--only UUID_SUBSTR] [--samples N]
//
// Correctness: check workloads against reference.so (fp64, host); bench workloads against
// naive.so (naive itself is validated on the check workloads). Outputs are poisoned (0xFF bytes,
// NaN in fp32 and bf16) before every call, so an unwritten element fails. Inputs are compared
// byte for byte before and after (read-only). Expert is run twice on the same inputs and must
// give bit-identical outputs (determinism).
// Timing: cudaEvents around each call on one stream, L2 flushed (256 MiB memset) before every
// sample, 2 warm-up calls, median of N samples; % of SOL by the definition's symmetric cost
// model at 790 TFLOP/s bf16 and 4.3 TB/s.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "d2k/solution.h"

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

namespace {

constexpr double kPeakFlops = 790e12, kPeakBytes = 4.3e12;
constexpr double kLr = 0.02, kBeta = 0.95, kWd = 0.1, kEps = 1e-7;

struct Workload {
  std::string uuid;
  bool check;
  int64_t B, M, N;
  double tol_update;
  double atol_param;
};

const std::vector<Workload> kWorkloads = {
    {"muon-check-wide-odd", true, 1, 127, 300, 0.05, 1e-3},
    {"muon-check-tall-batch", true, 2, 264, 136, 0.05, 1e-3},
    {"muon-check-square-batch", true, 3, 192, 192, 0.05, 1e-3},
    {"muon-check-tall-odd", true, 1, 301, 67, 0.05, 1e-3},
    {"muon-4096x4096", false, 1, 4096, 4096, 0.05, 1.5e-4},
    {"muon-4096x14336", false, 1, 4096, 14336, 0.05, 1.5e-4},
    {"muon-16x1024x1024", false, 16, 1024, 1024, 0.05, 1.5e-4},
    {"muon-8192x8192", false, 1, 8192, 8192, 0.05, 1.5e-4},
};

double sol_seconds(const Workload& w) {
  const double S = double(std::min(w.M, w.N)), L = double(std::max(w.M, w.N));
  const double flops = 5.0 * w.B * (S * (S + 1) * L + S * S * (S + 1) + 2 * S * S * L);
  const double bytes = double(w.B) * w.M * w.N * 20.0;
  return std::max(flops / kPeakFlops, bytes / kPeakBytes);
}
double sym_flops(const Workload& w) {
  const double S = double(std::min(w.M, w.N)), L = double(std::max(w.M, w.N));
  return 5.0 * w.B * (S * (S + 1) * L + S * S * (S + 1) + 2 * S * S * L);
}

struct Impl {
  std::string name;
  void* so = nullptr;
  uint32_t (*abi)(void) = nullptr;
  int32_t (*ws)(const d2k_args*, uint64_t*) = nullptr;
  int32_t (*run)(const d2k_args*) = nullptr;
};

bool load_impl(Impl& im, const std::string& dir) {
  const std::string path = dir + "/" + im.name + ".so";
  im.so = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!im.so) {
    std::fprintf(stderr, "skip %s: %s\n", im.name.c_str(), dlerror());
    return false;
  }
  im.abi = reinterpret_cast<uint32_t (*)(void)>(dlsym(im.so, "d2k_abi_version"));
  im.ws = reinterpret_cast<int32_t (*)(const d2k_args*, uint64_t*)>(dlsym(im.so, "d2k_workspace_size"));
  im.run = reinterpret_cast<int32_t (*)(const d2k_args*)>(dlsym(im.so, "d2k_run"));
  if (!im.abi || !im.ws || !im.run || im.abi() != D2K_ABI_VERSION) {
    std::fprintf(stderr, "skip %s: missing entry points or ABI mismatch\n", im.name.c_str());
    return false;
  }
  return true;
}

// Deterministic host normal(0,1) generator (splitmix64 + Box-Muller).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  void normal_pair(double& a, double& b) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), t = 6.283185307179586 * uniform();
    a = r * std::cos(t);
    b = r * std::sin(t);
  }
};
uint16_t f2bf(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float bf2f(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct HostData {
  std::vector<float> param, momentum;
  std::vector<uint16_t> grad;
};
HostData make_inputs(int64_t n, uint64_t seed) {
  HostData h;
  h.param.resize(n);
  h.momentum.resize(n);
  h.grad.resize(n);
  Rng r{seed};
  for (int64_t i = 0; i < n; i += 2) {
    double a, b;
    r.normal_pair(a, b);
    h.param[i] = float(a);
    if (i + 1 < n) h.param[i + 1] = float(b);
    r.normal_pair(a, b);
    h.momentum[i] = float(a);
    if (i + 1 < n) h.momentum[i + 1] = float(b);
    r.normal_pair(a, b);
    h.grad[i] = f2bf(float(a));
    if (i + 1 < n) h.grad[i + 1] = f2bf(float(b));
  }
  return h;
}

struct Outputs {
  std::vector<float> momentum_out, param_out;
  std::vector<uint16_t> update;
};

/// Everything one call of an implementation needs: tensors, names, scalars.
struct Call {
  int64_t shape[3];
  DLTensor in[3], out[3];
  const char* in_names[3] = {"param", "grad", "momentum"};
  const char* out_names[3] = {"momentum_out", "update", "param_out"};
  d2k_scalar sc[9];
  char err[512] = {0};
  d2k_args a{};
  Call(const Workload& w, DLDeviceType dev, void* const in_ptr[3], void* const out_ptr[3]) {
    shape[0] = w.B; shape[1] = w.M; shape[2] = w.N;
    auto mk = [&](DLTensor& t, void* p, uint8_t code, uint8_t bits) {
      t = DLTensor{};
      t.data = p;
      t.device = DLDevice{dev, 0};
      t.ndim = 3;
      t.dtype = DLDataType{code, bits, 1};
      t.shape = shape;
      t.strides = nullptr;
      t.byte_offset = 0;
    };
    mk(in[0], in_ptr[0], kDLFloat, 32);
    mk(in[1], in_ptr[1], kDLBfloat, 16);
    mk(in[2], in_ptr[2], kDLFloat, 32);
    mk(out[0], out_ptr[0], kDLFloat, 32);
    mk(out[1], out_ptr[1], kDLBfloat, 16);
    mk(out[2], out_ptr[2], kDLFloat, 32);
    auto si = [](const char* n, int64_t v) { d2k_scalar s{}; s.name = n; s.is_float = 0; s.i = v; return s; };
    auto sf = [](const char* n, double v) { d2k_scalar s{}; s.name = n; s.is_float = 1; s.f = v; return s; };
    sc[0] = si("B", w.B); sc[1] = si("M", w.M); sc[2] = si("N", w.N);
    sc[3] = si("S", std::min(w.M, w.N)); sc[4] = si("L", std::max(w.M, w.N));
    sc[5] = sf("lr", kLr); sc[6] = sf("momentum_beta", kBeta); sc[7] = sf("weight_decay", kWd);
    sc[8] = sf("eps", kEps);
    a.abi_version = D2K_ABI_VERSION;
    a.num_inputs = 3; a.num_outputs = 3; a.num_scalars = 9;
    a.inputs = in; a.input_names = in_names;
    a.outputs = out; a.output_names = out_names;
    a.scalars = sc;
    a.error = err; a.error_capacity = sizeof err;
  }
};

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t n) { if (n) CK(cudaMalloc(&p, n)); }
  ~DevBuf() { if (p) cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

struct Compare {
  double mom_max_viol = 0;   // max of |a-e| - max(atol, rtol|e|), <= 0 passes
  double upd_rel = 0;
  double par_max_err = 0;
  double par_max_viol = 0;
  int64_t nonfinite = 0;
  bool pass(double tol) const { return nonfinite == 0 && mom_max_viol <= 0 && upd_rel <= tol && par_max_viol <= 0; }
};
Compare compare(const Outputs& got, const Outputs& exp, double atol_param) {
  Compare c;
  c.mom_max_viol = -1e30;
  c.par_max_viol = -1e30;
  double num = 0, den = 0;
  for (size_t i = 0; i < exp.update.size(); ++i) {
    const double m = got.momentum_out[i], me = exp.momentum_out[i];
    const double u = bf2f(got.update[i]), ue = bf2f(exp.update[i]);
    const double p = got.param_out[i], pe = exp.param_out[i];
    if (!std::isfinite(m) || !std::isfinite(u) || !std::isfinite(p)) { ++c.nonfinite; continue; }
    c.mom_max_viol = std::max(c.mom_max_viol, std::fabs(m - me) - std::max(1e-5, 1e-5 * std::fabs(me)));
    num += (u - ue) * (u - ue);
    den += ue * ue;
    c.par_max_err = std::max(c.par_max_err, std::fabs(p - pe));
    c.par_max_viol = std::max(c.par_max_viol, std::fabs(p - pe) - std::max(atol_param, 1e-5 * std::fabs(pe)));
  }
  c.upd_rel = den > 0 ? std::sqrt(num / den) : INFINITY;
  return c;
}

/// How sensitive param_out's allclose is to the update: the share of elements at which an
/// implementation that skipped the update (param_out = param*(1 - lr*wd)) would exceed atol.
void report_sensitivity(const Workload& w, const Outputs& e) {
  int64_t over = 0;
  double rms = 0;
  for (size_t i = 0; i < e.update.size(); ++i) {
    const double u = bf2f(e.update[i]);
    rms += u * u;
    if (kLr * std::fabs(u) > w.atol_param) ++over;
  }
  std::printf("  sensitivity: rms(update) %.3e; a no-op update would break param_out's atol %.1e at %.1f%% of elements\n",
              std::sqrt(rms / e.update.size()), w.atol_param, 100.0 * over / e.update.size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "build/muon_optimizer_step/impl/muon_optimizer_step";
  std::string impl_list = "naive,expert,library";
  std::string only;
  int samples = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(1); }
      return argv[++i];
    };
    if (a == "--impl-dir") dir = next();
    else if (a == "--impls") impl_list = next();
    else if (a == "--only") only = next();
    else if (a == "--samples") samples = std::atoi(next().c_str());
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 1; }
  }
  Impl ref{"reference"};
  if (!load_impl(ref, dir)) return 1;
  std::vector<Impl> impls;
  for (size_t p = 0; p <= impl_list.size();) {
    size_t q = impl_list.find(',', p);
    if (q == std::string::npos) q = impl_list.size();
    Impl im{impl_list.substr(p, q - p)};
    if (!im.name.empty() && load_impl(im, dir)) impls.push_back(im);
    p = q + 1;
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  DevBuf flush(size_t(256) << 20);

  struct Row { std::string wl, impl, status; double med = 0, p10 = 0, p90 = 0, tflops = 0, sol = 0, speed = 0, rel = 0; };
  std::vector<Row> rows;
  bool all_ok = true;

  for (const Workload& w : kWorkloads) {
    if (!only.empty() && w.uuid.find(only) == std::string::npos) continue;
    const int64_t n = w.B * w.M * w.N;
    std::printf("\n== %s  B=%lld M=%lld N=%lld\n", w.uuid.c_str(), (long long)w.B, (long long)w.M, (long long)w.N);
    std::fflush(stdout);
    HostData h = make_inputs(n, 0x5eed0000ull + uint64_t(n));
    DevBuf dp(n * 4), dg(n * 2), dm(n * 4), dmo(n * 4), du(n * 2), dpo(n * 4);
    CK(cudaMemcpy(dp.p, h.param.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dg.p, h.grad.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dm.p, h.momentum.data(), n * 4, cudaMemcpyHostToDevice));
    void* din[3] = {dp.p, dg.p, dm.p};
    void* dout[3] = {dmo.p, du.p, dpo.p};
    auto fetch = [&](Outputs& o) {
      o.momentum_out.resize(n); o.update.resize(n); o.param_out.resize(n);
      CK(cudaMemcpy(o.momentum_out.data(), dmo.p, n * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(o.update.data(), du.p, n * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(o.param_out.data(), dpo.p, n * 4, cudaMemcpyDeviceToHost));
    };
    auto poison = [&]() {
      CK(cudaMemsetAsync(dmo.p, 0xFF, n * 4, st));
      CK(cudaMemsetAsync(du.p, 0xFF, n * 2, st));
      CK(cudaMemsetAsync(dpo.p, 0xFF, n * 4, st));
    };

    // Expected outputs: fp64 reference for check workloads, naive for bench workloads.
    Outputs expect;
    std::string expect_from;
    if (w.check) {
      Outputs o;
      o.momentum_out.assign(n, NAN); o.update.assign(n, 0xFFFF); o.param_out.assign(n, NAN);
      void* hin[3] = {h.param.data(), h.grad.data(), h.momentum.data()};
      void* hout[3] = {o.momentum_out.data(), o.update.data(), o.param_out.data()};
      Call c(w, kDLCPU, hin, hout);
      if (ref.run(&c.a) != D2K_OK) { std::printf("reference failed: %s\n", c.err); return 1; }
      expect = std::move(o);
      expect_from = "reference";
      report_sensitivity(w, expect);
    }

    for (Impl& im : impls) {
      Row row{w.uuid, im.name};
      Call c(w, kDLCUDA, din, dout);
      c.a.stream = st;
      uint64_t wsb = 0;
      {
        Call q(w, kDLCUDA, din, dout);
        q.a.inputs = q.in;  // data pointers are NULL for the size query
        DLTensor ti[3], to[3];
        for (int k = 0; k < 3; ++k) { ti[k] = q.in[k]; ti[k].data = nullptr; to[k] = q.out[k]; to[k].data = nullptr; }
        q.a.inputs = ti; q.a.outputs = to;
        if (im.ws(&q.a, &wsb) != D2K_OK) { std::printf("%s workspace_size failed: %s\n", im.name.c_str(), q.err); all_ok = false; continue; }
      }
      DevBuf ws(wsb);
      c.a.workspace = ws.p;
      c.a.workspace_bytes = wsb;
      auto call = [&]() -> bool {
        const int32_t r = im.run(&c.a);
        if (r != D2K_OK) { std::printf("%s run failed (%d): %s\n", im.name.c_str(), r, c.err); return false; }
        return true;
      };
      // Correctness (and determinism for non-naive).
      poison();
      if (!call()) { all_ok = false; continue; }
      const cudaError_t sync = cudaStreamSynchronize(st);
      if (sync != cudaSuccess) { std::printf("%s: %s\n", im.name.c_str(), cudaGetErrorString(sync)); return 3; }
      Outputs got;
      fetch(got);
      if (!w.check && im.name == "naive") {
        expect = got;
        expect_from = "naive";
        row.status = "GPU-REF";
        report_sensitivity(w, expect);
      } else if (!expect.update.empty()) {
        const Compare cmp = compare(got, expect, w.atol_param);
        row.rel = cmp.upd_rel;
        const bool ok = cmp.pass(w.tol_update);
        std::printf("  %-14s vs %-9s: update rel_l2 %.3e (tol %.2g)  momentum viol %.2e  param_out max err %.2e  nonfinite %lld  -> %s\n",
                    im.name.c_str(), expect_from.c_str(), cmp.upd_rel, w.tol_update, cmp.mom_max_viol,
                    cmp.par_max_err, (long long)cmp.nonfinite, ok ? "PASSED" : "FAILED");
        row.status = ok ? "PASSED" : "FAILED";
        if (!ok) all_ok = false;
      }
      if (im.name != "naive") {
        poison();
        if (!call()) { all_ok = false; continue; }
        CK(cudaStreamSynchronize(st));
        Outputs again;
        fetch(again);
        const bool same = again.update == got.update &&
                          std::memcmp(again.param_out.data(), got.param_out.data(), n * 4) == 0 &&
                          std::memcmp(again.momentum_out.data(), got.momentum_out.data(), n * 4) == 0;
        std::printf("  %-14s determinism: %s\n", im.name.c_str(), same ? "bit-identical" : "DIFFERS");
        if (!same) { row.status += "+NONDET"; all_ok = false; }
      }
      // Inputs untouched.
      {
        std::vector<float> p2(n), m2(n);
        std::vector<uint16_t> g2(n);
        CK(cudaMemcpy(p2.data(), dp.p, n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(g2.data(), dg.p, n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(m2.data(), dm.p, n * 4, cudaMemcpyDeviceToHost));
        if (std::memcmp(p2.data(), h.param.data(), n * 4) || std::memcmp(g2.data(), h.grad.data(), n * 2) ||
            std::memcmp(m2.data(), h.momentum.data(), n * 4)) {
          std::printf("  %s MODIFIED ITS INPUTS\n", im.name.c_str());
          row.status += "+INPUTS";
          all_ok = false;
        }
      }
      if (w.check) { rows.push_back(row); continue; }
      // Timing.
      for (int k = 0; k < 2; ++k) { poison(); if (!call()) return 3; }
      std::vector<double> t;
      for (int k = 0; k < samples; ++k) {
        CK(cudaMemsetAsync(flush.p, k & 0xff, size_t(256) << 20, st));
        poison();
        CK(cudaEventRecord(e0, st));
        if (!call()) return 3;
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3);
      }
      row.med = median(t);
      row.p10 = pct(t, 0.1);
      row.p90 = pct(t, 0.9);
      row.tflops = sym_flops(w) / (row.med * 1e-6) / 1e12;
      row.sol = 100.0 * sol_seconds(w) / (row.med * 1e-6);
      rows.push_back(row);
      std::printf("  %-14s median %10.1f us  (p10 %.1f, p90 %.1f)\n", im.name.c_str(), row.med, row.p10, row.p90);
      std::fflush(stdout);
    }
  }

  // Table.
  std::map<std::string, double> naive_t;
  for (auto& r : rows) if (r.impl == "naive" && r.med > 0) naive_t[r.wl] = r.med;
  std::printf("\n%-24s %-14s %-9s %11s %8s %10s %8s %8s %10s\n", "workload", "impl", "status", "median_us",
              "noise%", "symTFLOP/s", "%SOL", "vs_naive", "upd_rel_l2");
  for (auto& r : rows) {
    if (r.med > 0) {
      const double sp = naive_t.count(r.wl) ? naive_t[r.wl] / r.med : 0;
      std::printf("%-24s %-14s %-9s %11.1f %8.1f %10.1f %8.1f %8.2f %10.3e\n", r.wl.c_str(), r.impl.c_str(),
                  r.status.c_str(), r.med, 100.0 * (r.p90 - r.p10) / r.med, r.tflops, r.sol, sp, r.rel);
    } else {
      std::printf("%-24s %-14s %-9s %11s %8s %10s %8s %8s %10.3e\n", r.wl.c_str(), r.impl.c_str(), r.status.c_str(),
                  "-", "-", "-", "-", "-", r.rel);
    }
  }
  std::printf("\nSOL: symmetric cost model (5 B (S(S+1)L + S^2(S+1) + 2 S^2 L) bf16 FLOPs at 790 TFLOP/s; 20 B/element at 4.3 TB/s)\n");
  std::printf("overall: %s\n", all_ok ? "ALL PASSED" : "SOME FAILED");
  return all_ok ? 0 : 4;
}
