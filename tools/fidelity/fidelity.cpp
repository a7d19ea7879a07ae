// d2k_fidelity: times reference workloads with the measurement library's Timer (default options:
// cold L2, CUPTI span, default stopping rule), so that d2k's medians can be compared with Nsight
// Compute's and with themselves across processes; and measures the timer's per-sample overhead.
//
//   d2k_fidelity [--naive-so PATH] [--only A,B] [--json FILE] [--no-cupti] [--no-flush] [--no-blocking] [--all-cupti]
//                                                                time each workload, one JSON line each
//                                                                (diagnostics: --no-cupti CUDA events only,
//                                                                 --no-flush warm L2, --no-blocking no
//                                                                 blocking kernel, --all-cupti every
//                                                                 sample under CUPTI, its span the time)
//   d2k_fidelity --ncu --only NAME [--reps N] [--naive-so PATH] launch NAME N times between
//                                                                 cudaProfilerStart/Stop (for ncu
//                                                                 --profile-from-start off)
//   d2k_fidelity --overhead [--json FILE]                        per-sample overhead of the timer in
//                                                                 several configurations
//   d2k_fidelity --list [--naive-so PATH]                        workload names, and whether ncu sees them
//
// Workloads: a 1 GiB device copy by a kernel and by cudaMemcpyAsync; bf16 and tf32 GEMMs through
// cuBLAS (8192^3); the fused_add_rmsnorm naive implementation loaded from its shared library
// through the solution ABI, as d2k loads it. Inputs are random, never zeros.
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <d2k/solution.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/loader.h"
#include "measure/error.h"
#include "measure/kernels.h"
#include "measure/timer.h"

namespace {

namespace dm = d2k::measure;

#define FID_CUDA(call) D2K_CUDA_CHECK(call)
#define FID_CUBLAS(call)                                                                              \
  do {                                                                                                \
    cublasStatus_t fid_s_ = (call);                                                                   \
    if (fid_s_ != CUBLAS_STATUS_SUCCESS)                                                              \
      throw std::runtime_error(fmt::format("{}:{} {}: {}", __FILE__, __LINE__, #call,                 \
                                           cublasGetStatusString(fid_s_)));                          \
  } while (0)

/// Device memory, freed on destruction.
class DevBuf {
 public:
  explicit DevBuf(std::size_t bytes) : bytes_(bytes) { FID_CUDA(cudaMalloc(&p_, bytes)); }
  ~DevBuf() {
    if (p_) cudaFree(p_);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

int sm_count() {
  int d = 0, n = 0;
  FID_CUDA(cudaGetDevice(&d));
  FID_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d));
  return n;
}

void fill(dm::detail::FillType t, void* p, std::size_t n, unsigned seed) {
  FID_CUDA(dm::detail::launch_fill_uniform(t, p, n, seed, sm_count() * 8, nullptr));
}

/// One workload: owns its buffers; `launch` issues one call on a stream.
struct Workload {
  std::string name;
  std::string what;
  double bytes = 0;  ///< compulsory DRAM bytes (read + written)
  double flops = 0;
  bool ncu_visible = true;  ///< ncu profiles kernels only (a cudaMemcpyAsync is invisible to it)
  std::vector<std::shared_ptr<void>> owned;
  std::function<void(cudaStream_t)> launch;
};

Workload copy_kernel(std::size_t bytes) {
  Workload w;
  w.name = "copy_kernel_1GiB";
  w.what = "copy_vec16 kernel, 1 GiB, 16-byte loads/stores";
  w.bytes = 2.0 * bytes;
  auto src = std::make_shared<DevBuf>(bytes), dst = std::make_shared<DevBuf>(bytes);
  fill(dm::detail::FillType::u32, src->get(), bytes / 4, 11);
  fill(dm::detail::FillType::u32, dst->get(), bytes / 4, 12);
  const int grid = sm_count() * 8;
  w.launch = [src, dst, bytes, grid](cudaStream_t s) {
    FID_CUDA(dm::detail::launch_copy_vec16(dst->get(), src->get(), bytes / 16, grid, s));
  };
  w.owned = {src, dst};
  return w;
}

Workload copy_memcpy(std::size_t bytes) {
  Workload w;
  w.name = "memcpy_dtod_1GiB";
  w.what = "cudaMemcpyAsync device to device, 1 GiB";
  w.bytes = 2.0 * bytes;
  w.ncu_visible = false;
  auto src = std::make_shared<DevBuf>(bytes), dst = std::make_shared<DevBuf>(bytes);
  fill(dm::detail::FillType::u32, src->get(), bytes / 4, 13);
  fill(dm::detail::FillType::u32, dst->get(), bytes / 4, 14);
  w.launch = [src, dst, bytes](cudaStream_t s) {
    FID_CUDA(cudaMemcpyAsync(dst->get(), src->get(), bytes, cudaMemcpyDeviceToDevice, s));
  };
  w.owned = {src, dst};
  return w;
}

/// cuBLAS handle with an explicit workspace, so no call allocates.
struct Blas {
  cublasHandle_t h = nullptr;
  std::unique_ptr<DevBuf> ws;
  cudaStream_t bound = nullptr;
  bool bound_once = false;
  Blas() {
    FID_CUBLAS(cublasCreate(&h));
    ws = std::make_unique<DevBuf>(std::size_t{64} << 20);
  }
  ~Blas() {
    if (h) cublasDestroy(h);
  }
  void bind(cudaStream_t s) {
    if (bound_once && s == bound) return;
    // cublasSetStream puts the default workspace back: set ours after it.
    FID_CUBLAS(cublasSetStream(h, s));
    FID_CUBLAS(cublasSetWorkspace(h, ws->get(), ws->bytes()));
    bound = s;
    bound_once = true;
  }
};

Workload gemm(std::shared_ptr<Blas> blas, bool tf32, int n) {
  Workload w;
  w.name = tf32 ? fmt::format("gemm_tf32_{}", n) : fmt::format("gemm_bf16_{}", n);
  w.what = tf32 ? fmt::format("cublasGemmEx fp32 data, CUBLAS_COMPUTE_32F_FAST_TF32, TN, {0}x{0}x{0}", n)
                : fmt::format("cublasGemmEx bf16 in/out, fp32 accumulate, TN, {0}x{0}x{0}", n);
  const std::size_t elems = std::size_t(n) * n;
  const std::size_t esize = tf32 ? 4 : 2;
  w.flops = 2.0 * n * double(n) * n;
  w.bytes = 3.0 * elems * esize;
  auto a = std::make_shared<DevBuf>(elems * esize), b = std::make_shared<DevBuf>(elems * esize),
       c = std::make_shared<DevBuf>(elems * esize);
  const auto ft = tf32 ? dm::detail::FillType::f32 : dm::detail::FillType::bf16;
  fill(ft, a->get(), elems, 21);
  fill(ft, b->get(), elems, 22);
  fill(ft, c->get(), elems, 23);
  const cudaDataType_t dt = tf32 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasComputeType_t ct = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  w.launch = [blas, a, b, c, n, dt, ct](cudaStream_t s) {
    blas->bind(s);
    const float alpha = 1.0f, beta = 0.0f;
    FID_CUBLAS(cublasGemmEx(blas->h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a->get(), dt, n, b->get(), dt, n,
                            &beta, c->get(), dt, n, ct, CUBLAS_GEMM_DEFAULT));
  };
  w.owned = {a, b, c};
  return w;
}

/// fused_add_rmsnorm through the ABI, exactly as d2k calls an implementation library.
struct RmsnormCall {
  d2k::LoadedImpl impl;
  std::int64_t T = 0, H = 0;
  std::unique_ptr<DevBuf> x, r, wt, out, rout, ws;
  std::int64_t shape2[2] = {0, 0}, shape1[1] = {0};
  DLTensor ins[3] = {}, outs[2] = {};
  const char* in_names[3] = {"x", "residual", "weight"};
  const char* out_names[2] = {"out", "residual_out"};
  d2k_scalar sc[3] = {};
  char err[1024] = {};
  d2k_args args = {};

  static DLTensor bf16(void* data, int ndim, std::int64_t* shape) {
    DLTensor t{};
    t.data = data;
    t.device = DLDevice{kDLCUDA, 0};
    t.ndim = ndim;
    t.dtype = DLDataType{kDLBfloat, 16, 1};
    t.shape = shape;
    t.strides = nullptr;
    t.byte_offset = 0;
    return t;
  }

  RmsnormCall(const std::string& so, std::int64_t T_, std::int64_t H_) : impl(d2k::load_impl(so)), T(T_), H(H_) {
    const std::size_t n = std::size_t(T) * H;
    x = std::make_unique<DevBuf>(2 * n);
    r = std::make_unique<DevBuf>(2 * n);
    wt = std::make_unique<DevBuf>(2 * std::size_t(H));
    out = std::make_unique<DevBuf>(2 * n);
    rout = std::make_unique<DevBuf>(2 * n);
    fill(dm::detail::FillType::bf16, x->get(), n, 31);
    fill(dm::detail::FillType::bf16, r->get(), n, 32);
    fill(dm::detail::FillType::bf16, wt->get(), std::size_t(H), 33);
    shape2[0] = T;
    shape2[1] = H;
    shape1[0] = H;
    sc[0] = d2k_scalar{"T", 0, 0, T, 0.0};
    sc[1] = d2k_scalar{"H", 0, 0, H, 0.0};
    sc[2] = d2k_scalar{"eps", 1, 0, 0, 1e-6};
    // Shapes only for the workspace query, as the ABI says.
    ins[0] = bf16(nullptr, 2, shape2);
    ins[1] = bf16(nullptr, 2, shape2);
    ins[2] = bf16(nullptr, 1, shape1);
    outs[0] = bf16(nullptr, 2, shape2);
    outs[1] = bf16(nullptr, 2, shape2);
    args.abi_version = D2K_ABI_VERSION;
    args.num_inputs = 3;
    args.num_outputs = 2;
    args.num_scalars = 3;
    args.inputs = ins;
    args.input_names = in_names;
    args.outputs = outs;
    args.output_names = out_names;
    args.scalars = sc;
    args.error = err;
    args.error_capacity = sizeof err;
    std::uint64_t ws_bytes = 0;
    if (const int32_t rc = impl.workspace_size(&args, &ws_bytes); rc != D2K_OK)
      throw std::runtime_error(fmt::format("{}: d2k_workspace_size returned {}: {}", so, rc, err));
    ws = std::make_unique<DevBuf>(std::max<std::uint64_t>(ws_bytes, 256));
    ins[0].data = x->get();
    ins[1].data = r->get();
    ins[2].data = wt->get();
    outs[0].data = out->get();
    outs[1].data = rout->get();
    args.workspace = ws->get();
    args.workspace_bytes = ws->bytes();
  }
  void run(cudaStream_t s) {
    args.stream = s;
    if (const int32_t rc = impl.run(&args); rc != D2K_OK)
      throw std::runtime_error(fmt::format("d2k_run returned {}: {}", rc, err));
  }
};

Workload rmsnorm(const std::string& so, std::int64_t T, std::int64_t H) {
  Workload w;
  w.name = fmt::format("rmsnorm_naive_{}x{}", T, H);
  w.what = fmt::format("fused_add_rmsnorm naive.so through the ABI, T={} H={}, bf16", T, H);
  w.bytes = 2.0 * (2.0 * T * H + H) + 2.0 * 2.0 * T * H;
  w.flops = 5.0 * T * H;
  auto call = std::make_shared<RmsnormCall>(so, T, H);
  w.launch = [call](cudaStream_t s) { call->run(s); };
  w.owned = {call};
  return w;
}

struct Names {
  std::string name;
  bool ncu_visible;
};

std::vector<Names> all_names(const std::string& so) {
  // The GEMMs last: they run into the power cap, and whatever ran right after them would start
  // throttled (the timer waits for that to pass, but no longer than MeasureOptions::settle_max_s).
  std::vector<Names> v = {{"copy_kernel_1GiB", true}, {"memcpy_dtod_1GiB", false}};
  if (!so.empty())
    for (const char* s : {"rmsnorm_naive_128x7168", "rmsnorm_naive_4096x4096", "rmsnorm_naive_16384x8192"})
      v.push_back({s, true});
  v.push_back({"gemm_bf16_8192", true});
  v.push_back({"gemm_tf32_8192", true});
  return v;
}

Workload make(const std::string& name, const std::string& so, std::shared_ptr<Blas>& blas) {
  const std::size_t gib = std::size_t{1} << 30;
  auto need_blas = [&] {
    if (!blas) blas = std::make_shared<Blas>();
    return blas;
  };
  if (name == "copy_kernel_1GiB") return copy_kernel(gib);
  if (name == "memcpy_dtod_1GiB") return copy_memcpy(gib);
  if (name == "gemm_bf16_8192") return gemm(need_blas(), false, 8192);
  if (name == "gemm_tf32_8192") return gemm(need_blas(), true, 8192);
  if (name.rfind("rmsnorm_naive_", 0) == 0) {
    if (so.empty()) throw std::invalid_argument("--naive-so PATH is required for " + name);
    std::int64_t T = 0, H = 0;
    if (std::sscanf(name.c_str(), "rmsnorm_naive_%ldx%ld", &T, &H) != 2 || T < 1 || H < 8)
      throw std::invalid_argument("bad rmsnorm workload name '" + name + "' (rmsnorm_naive_<T>x<H>)");
    return rmsnorm(so, T, H);
  }
  throw std::invalid_argument("unknown workload '" + name + "' (see --list)");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { FID_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

nlohmann::json result_json(const Workload& w, const dm::MeasureResult& r) {
  const double t = r.time.median;
  nlohmann::json j = {{"workload", w.name},
                      {"what", w.what},
                      {"timer", r.timer},
                      {"timer_note", r.timer_note},
                      {"audit_samples", r.audit_samples},
                      {"empty_samples", r.empty_samples},
                      {"launch_offset_us", r.launch_offset_s * 1e6},
                      {"cupti_median_us", r.cupti.median * 1e6},
                      {"median_us", t * 1e6},
                      {"min_us", r.time.min * 1e6},
                      {"p10_us", r.time.p10 * 1e6},
                      {"p90_us", r.time.p90 * 1e6},
                      {"rel_noise", r.time.rel_noise},
                      {"n", r.time.n},
                      {"events_median_us", r.events.median * 1e6},
                      {"stop", std::string(dm::to_string(r.stop_reason))},
                      {"stop_detail", r.stop_detail},
                      {"wall_s", r.wall_s},
                      {"warmup_calls", r.warmup_calls},
                      {"kernels", r.kernel_names},
                      {"unjoined_samples", r.unjoined_samples},
                      {"join_late_max_us", r.join_late_max_s * 1e6},
                      {"blocking_kernel", r.blocking_kernel},
                      {"blocking_disabled", r.blocking_disabled},
                      {"cupti_drains", r.cupti_drains},
                      {"overhead", r.overhead},
                      {"sm_mhz_median", r.clocks.sm_mhz_median},
                      {"sm_mhz_min", r.clocks.sm_mhz_min},
                      {"throttled", r.clocks.throttled},
                      {"low_clock_samples", r.low_clock_samples},
                      {"settle_s", r.settle_s},
                      {"settle_reasons", r.settle_reasons},
                      {"l2_flushed", r.l2_flushed},
                      {"bytes", w.bytes},
                      {"flops", w.flops}};
  nlohmann::json kt = nlohmann::json::array();
  for (const auto& k : r.kernel_times)
    kt.push_back({{"name", k.name}, {"n", k.time.n}, {"median_us", k.time.median * 1e6}, {"min_us", k.time.min * 1e6}});
  j["kernel_times"] = kt;
  // Device busy time per call (sum of kernel/copy durations, mean over audit samples): what ncu's
  // per-kernel durations add up to, without the gaps between a call's launches.
  double busy = 0;
  for (const auto& [origin, o] : r.attribution) busy += o.busy_s;
  j["busy_mean_us"] = r.audit_samples ? busy / double(r.audit_samples) * 1e6 : 0.0;  // audit samples only
  if (t > 0 && w.bytes > 0) j["tb_per_s"] = w.bytes / t * 1e-12;
  if (t > 0 && w.flops > 0) j["tflop_per_s"] = w.flops / t * 1e-12;
  return j;
}

void emit(const nlohmann::json& j, const std::string& json_path) {
  std::cout << j.dump() << std::endl;
  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::app);
    if (!f) throw std::runtime_error("cannot write --json file " + json_path);
    f << j.dump() << "\n";
  }
}

/// Diagnostic switches of the timing run; the defaults are d2k's.
struct Variant {
  bool use_cupti = true, flush_l2 = true, blocking_kernel = true;
  double cupti_audit_share = dm::MeasureOptions{}.cupti_audit_share;
};

int time_workloads(const std::vector<std::string>& names, const std::string& so, const std::string& json_path,
                   const Variant& variant) {
  dm::Timer timer;
  if (!timer.cupti_available()) std::fprintf(stderr, "warning: CUPTI unavailable (%s): events only\n",
                                             timer.cupti_status().c_str());
  Stream st;
  std::shared_ptr<Blas> blas;
  for (const std::string& n : names) {
    Workload w = make(n, so, blas);
    FID_CUDA(cudaDeviceSynchronize());
    dm::MeasureOptions o;  // the defaults d2k times with
    o.use_cupti = variant.use_cupti;
    o.flush_l2 = variant.flush_l2;
    o.blocking_kernel = variant.blocking_kernel;
    o.cupti_audit_share = variant.cupti_audit_share;
    const dm::MeasureResult r = timer.measure([&](std::size_t, cudaStream_t s) { w.launch(s); }, st.s, o);
    emit(result_json(w, r), json_path);
  }
  return 0;
}

int ncu_mode(const std::vector<std::string>& names, const std::string& so, int reps) {
  // No Timer here: CUPTI activity tracing and the profiler would compete for the same hooks.
  Stream st;
  std::shared_ptr<Blas> blas;
  std::vector<Workload> ws;
  for (const std::string& n : names) ws.push_back(make(n, so, blas));
  // One call each before profiling: module loading and library heuristics stay out of it.
  for (auto& w : ws) w.launch(st.s);
  FID_CUDA(cudaStreamSynchronize(st.s));
  FID_CUDA(cudaProfilerStart());
  for (auto& w : ws)
    for (int r = 0; r < reps; ++r) {
      w.launch(st.s);
      FID_CUDA(cudaStreamSynchronize(st.s));
    }
  FID_CUDA(cudaProfilerStop());
  for (auto& w : ws) std::printf("{\"workload\": \"%s\", \"reps\": %d}\n", w.name.c_str(), reps);
  return 0;
}

int overhead_mode(const std::string& json_path) {
  // A short call (a 4 MiB copy, a few microseconds) so that the timer's own cost dominates.
  dm::Timer timer;
  Stream st;
  const std::size_t bytes = std::size_t{4} << 20;
  Workload w = copy_kernel(bytes);
  w.name = "copy_kernel_4MiB";
  w.what = "copy_vec16 kernel, 4 MiB";
  struct Config {
    const char* name;
    std::size_t batch;
    bool blocking;
  };
  for (const Config& c : {Config{"per_sample_flush_no_blocking", 1, false}, Config{"per_sample_flush_blocking", 1, true},
                          Config{"batched_no_blocking", 64, false}, Config{"batched_blocking_default", 64, true}}) {
    dm::MeasureOptions o;
    o.cupti_batch = c.batch;
    o.blocking_kernel = c.blocking;
    // Same sampling budget for every configuration: 1 s of wall time, noise target out of reach.
    o.stopping.min_time_s = 1.0;
    o.stopping.max_time_s = 1.0;
    o.stopping.max_noise = 1e-9;
    o.stopping.max_samples = 1000000;
    o.stopping.stable_rel_spread = 1e-12;
    const dm::MeasureResult r = timer.measure([&](std::size_t, cudaStream_t s) { w.launch(s); }, st.s, o);
    nlohmann::json j = result_json(w, r);
    j["config"] = c.name;
    j["cupti_batch"] = c.batch;
    emit(j, json_path);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string so, json_path, only;
  bool ncu = false, overhead = false, list = false;
  Variant variant;
  int reps = 5;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&](const char* opt) -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(std::string(opt) + " needs a value");
        return argv[++i];
      };
      if (a == "--naive-so") so = value("--naive-so");
      else if (a == "--json") json_path = value("--json");
      else if (a == "--only") only = value("--only");
      else if (a == "--reps") reps = std::stoi(value("--reps"));
      else if (a == "--ncu") ncu = true;
      else if (a == "--overhead") overhead = true;
      else if (a == "--no-cupti") variant.use_cupti = false;
      else if (a == "--no-flush") variant.flush_l2 = false;
      else if (a == "--no-blocking") variant.blocking_kernel = false;
      else if (a == "--all-cupti") variant.cupti_audit_share = 1;
      else if (a == "--list") list = true;
      else throw std::invalid_argument("unknown argument '" + a + "'");
    }
    if (reps < 1) throw std::invalid_argument("--reps must be >= 1");
    if (list) {
      for (const auto& n : all_names(so)) std::printf("%s %s\n", n.name.c_str(), n.ncu_visible ? "ncu" : "no-ncu");
      return 0;
    }
    if (overhead) return overhead_mode(json_path);
    std::vector<std::string> names;
    if (only.empty())
      for (const auto& n : all_names(so)) names.push_back(n.name);
    else
      names = split(only);
    if (ncu) return ncu_mode(names, so, reps);
    return time_workloads(names, so, json_path, variant);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "d2k_fidelity: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "d2k_fidelity: %s\n", e.what());
    return 1;
  }
}
