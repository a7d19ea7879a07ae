#include "measure/calibrate.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "measure/error.h"
#include "measure/kernels.h"
#include "measure/nvml_sampler.h"
#include "measure/memory_floor.h"
#include "measure/timer.h"
#include "measure/statistics.h"

#define D2K_MEASURE_CUBLAS(call)                                                         \
  do {                                                                                   \
    cublasStatus_t d2k_s_ = (call);                                                      \
    if (d2k_s_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::d2k::measure::detail::throw_call_error(__FILE__, __LINE__, #call,                \
                                               cublasLtGetStatusString(d2k_s_));         \
  } while (0)

namespace d2k::measure {


namespace {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { D2K_CUDA_CHECK(cudaMalloc(&p_, bytes)); }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { D2K_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class EventPair {
 public:
  EventPair() {
    D2K_CUDA_CHECK(cudaEventCreate(&a_));
    D2K_CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~EventPair() {
    if (a_) cudaEventDestroy(a_);
    if (b_) cudaEventDestroy(b_);
  }
  cudaEvent_t a() const { return a_; }
  cudaEvent_t b() const { return b_; }

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

// Times `fn` `reps` times (after `warm` untimed calls) with events on `s`; returns seconds each.
std::vector<double> time_reps(cudaStream_t s, int warm, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < warm; ++i) fn();
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  EventPair ev;
  std::vector<double> out;
  for (int i = 0; i < reps; ++i) {
    D2K_CUDA_CHECK(cudaEventRecord(ev.a(), s));
    fn();
    D2K_CUDA_CHECK(cudaEventRecord(ev.b(), s));
    D2K_CUDA_CHECK(cudaEventSynchronize(ev.b()));
    float ms = 0;
    D2K_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.a(), ev.b()));
    out.push_back(ms * 1e-3);
  }
  return out;
}

double median_of(const std::vector<double>& v) { return summarize(v).median; }
double min_of(const std::vector<double>& v) { return summarize(v).min; }

int fill_grid(int sms) { return sms * 8; }

void fill(detail::FillType t, void* p, std::size_t n, unsigned seed, int sms, cudaStream_t s) {
  D2K_CUDA_CHECK(detail::launch_fill_uniform(t, p, n, seed, fill_grid(sms), s));
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---- bandwidth ----

// Sampling of the size sweeps below: at least 0.1 s per size, at most stream_time_s.
MeasureOptions sweep_options(const CalibrateOptions& o) {
  MeasureOptions mo;
  mo.stopping.min_time_s = 0.1;
  mo.stopping.max_time_s = o.stream_time_s;
  return mo;
}

// A sweep size: mib MiB, at most the n bytes allocated, in whole 16-byte words.
std::size_t sweep_bytes(std::size_t n, std::size_t mib) { return std::min(n, mib << 20) / 16 * 16; }

// The copy kernel at workload sizes, timed as the engine times a call (Timer: cold L2 before
// every sample, audit sampling): how much of its write-back lands after it ends. The fastest
// sample is kept, so that the memory floor is what the streaming kernel was seen to reach.
void measure_deferred_writes(Ceilings& c, const CalibrateOptions& o, void* src, void* dst, std::size_t n, int grid) {
  if (!(c.read_bw > 0) || !(c.stream_write_bw > 0)) return;
  Timer timer;
  Stream stream;
  const MeasureOptions mo = sweep_options(o);
  nlohmann::json rows = nlohmann::json::array();
  c.deferred_writes.clear();
  for (std::size_t mib : o.stream_sizes_mib) {
    const std::size_t bytes = sweep_bytes(n, mib);
    if (bytes == 0) continue;
    const MeasureResult r = timer.measure(
        [&](std::size_t, cudaStream_t st) {
          D2K_CUDA_CHECK(detail::launch_copy_vec16(dst, src, bytes / 16, grid, st));
        },
        stream.get(), mo);
    const double b = static_cast<double>(bytes);
    const double d = deferred_from_stream(b, b, r.time.min, c);
    c.deferred_writes.push_back({b, d});
    rows.push_back({{"bytes_each_way", bytes}, {"min_s", r.time.min}, {"median_s", r.time.median},
                    {"timer", r.timer}, {"deferred_bytes", d},
                    {"copy_model_pct_of_sol", 100.0 * 2 * b / c.copy_bw / r.time.min}});
  }
  std::sort(c.deferred_writes.begin(), c.deferred_writes.end(),
            [](const DeferredWrite& a, const DeferredWrite& b) { return a.write_bytes < b.write_bytes; });
  c.details["stream"] = {{"method", "copy_vec16 under the timer (cold L2), fastest sample; deferred = written - "
                                    "(t - read / read_bw) * stream_write_bw"},
                         {"sizes", rows}};
}

// The read kernels at workload sizes, timed as the engine times a call (cold L2 before every
// sample): the share of the read ceiling a pure read of that many bytes reaches. Below a few
// hundred MiB the launch, the first requests' round trip and the drain are not hidden, so a
// memory-bound kernel of that size cannot reach 100 % of SOL either: a task's bar above this
// row's best is not reachable by any kernel that moves the cost model's bytes.
void measure_read_sizes(Ceilings& c, const CalibrateOptions& o, const void* src, unsigned* sink, std::size_t n, int grid) {
  if (!(c.read_bw > 0)) return;
  Timer timer;
  Stream stream;
  const MeasureOptions mo = sweep_options(o);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t mib : o.read_sizes_mib) {
    const std::size_t bytes = sweep_bytes(n, mib);
    if (bytes == 0) continue;
    const std::size_t n16 = bytes / 16;
    const std::pair<const char*, std::function<void(cudaStream_t)>> kernels[] = {
        {"read_vec16", [&](cudaStream_t st) { D2K_CUDA_CHECK(detail::launch_read_vec16(src, n16, sink, 0x8BADF00Du, grid, st)); }},
        {"read_vec16_unrolled",
         [&](cudaStream_t st) { D2K_CUDA_CHECK(detail::launch_read_vec16_unrolled(src, n16, sink, 0x8BADF00Du, grid, st)); }},
        {"read_vec16_oneshot",
         [&](cudaStream_t st) { D2K_CUDA_CHECK(detail::launch_read_vec16_oneshot(src, n16, sink, 0x8BADF00Du, st)); }},
    };
    nlohmann::json per = nlohmann::json::object();
    double best = 0;
    for (const auto& [name, launch] : kernels) {
      const MeasureResult r = timer.measure([&](std::size_t, cudaStream_t st) { launch(st); }, stream.get(), mo);
      const double pct = 100.0 * static_cast<double>(bytes) / c.read_bw / r.time.min;
      per[name] = {{"min_s", r.time.min}, {"median_s", r.time.median}, {"timer", r.timer}, {"pct_of_read_sol", pct}};
      best = std::max(best, pct);
    }
    rows.push_back({{"bytes", bytes}, {"kernels", per}, {"best_pct_of_read_sol", best}});
  }
  c.details["read_sizes"] = {{"method", "read kernels under the timer (cold L2), fastest sample each; pct = "
                                        "bytes / read_bw / time"},
                             {"sizes", rows}};
}

void measure_bandwidth(Ceilings& c, const CalibrateOptions& o, int sms, cudaStream_t s) {
  std::size_t free_b = 0, total_b = 0;
  D2K_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  std::size_t n = std::min(o.copy_bytes, free_b / 4);
  n = n / 4096 * 4096;
  if (n < (std::size_t{64} << 20)) throw measure_error("calibrate: less than 256 MiB of device memory free for the copy test");
  DeviceBuffer src(n), dst(n), sink(sizeof(unsigned));
  fill(detail::FillType::u32, src.get(), n / 4, 12345u, sms, s);
  const std::size_t n16 = n / 16;
  const int grid = sms * 8;

  const auto t_memcpy = time_reps(s, 2, o.copy_reps, [&] {
    D2K_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), n, cudaMemcpyDeviceToDevice, s));
  });
  const auto t_kernel = time_reps(s, 2, o.copy_reps, [&] {
    D2K_CUDA_CHECK(detail::launch_copy_vec16(dst.get(), src.get(), n16, grid, s));
  });
  const auto t_read = time_reps(s, 2, o.copy_reps, [&] {
    D2K_CUDA_CHECK(detail::launch_read_vec16(src.get(), n16, sink.get<unsigned>(), 0x8BADF00Du, grid, s));
  });
  const auto t_read_unrolled = time_reps(s, 2, o.copy_reps, [&] {
    D2K_CUDA_CHECK(detail::launch_read_vec16_unrolled(src.get(), n16, sink.get<unsigned>(), 0x8BADF00Du, grid, s));
  });
  const auto t_read_oneshot = time_reps(s, 2, o.copy_reps, [&] {
    D2K_CUDA_CHECK(detail::launch_read_vec16_oneshot(src.get(), n16, sink.get<unsigned>(), 0x8BADF00Du, s));
  });
  unsigned salt = 0;
  const auto t_write = time_reps(s, 2, o.copy_reps, [&] {
    D2K_CUDA_CHECK(detail::launch_write_vec16(dst.get(), n16, ++salt, grid, s));
  });
  // The ceilings are upper bounds on rate: each is taken from its fastest repetition, not the
  // median, so that a kernel moving the same bytes cannot read above 100 % of SOL by the copy's
  // own noise (a median-based floor put the rmsnorm expert at 100.1 % within 0.3 % noise).
  const double bw_memcpy = 2.0 * n / min_of(t_memcpy);
  const double bw_kernel = 2.0 * n / min_of(t_kernel);
  // The read ceiling is the fastest of the three read kernels: an honest kernel's read must not
  // beat it (the one-shot form, every load issued at the start, read 1.2-1.5 % faster than the
  // loops at 256 MiB and 1 GiB on the H200, i.e. above a ceiling taken from the loops alone).
  const double bw_read_loop = 1.0 * n / min_of(t_read);
  const double bw_read_unrolled = 1.0 * n / min_of(t_read_unrolled);
  const double bw_read_oneshot = 1.0 * n / min_of(t_read_oneshot);
  const double bw_read = std::max({bw_read_loop, bw_read_unrolled, bw_read_oneshot});
  const double bw_write = 1.0 * n / min_of(t_write);
  c.copy_bw = std::max(bw_memcpy, bw_kernel);
  c.read_bw = bw_read;
  c.write_bw = bw_write;
  c.stream_write_bw = stream_write_rate(c.copy_bw, c.read_bw);
  measure_deferred_writes(c, o, src.get(), dst.get(), n, grid);
  measure_read_sizes(c, o, src.get(), sink.get<unsigned>(), n, grid);
  c.details["copy"] = {{"bytes_per_buffer", n},
                       {"reps", o.copy_reps},
                       {"memcpy_Bps", bw_memcpy},
                       {"memcpy_median_s", median_of(t_memcpy)},
                       {"kernel_vec16_Bps", bw_kernel},
                       {"kernel_vec16_median_s", median_of(t_kernel)},
                       {"read_vec16_Bps", bw_read_loop},
                       {"read_vec16_median_s", median_of(t_read)},
                       {"read_vec16_unrolled_Bps", bw_read_unrolled},
                       {"read_vec16_unrolled_median_s", median_of(t_read_unrolled)},
                       {"read_vec16_oneshot_Bps", bw_read_oneshot},
                       {"read_vec16_oneshot_median_s", median_of(t_read_oneshot)},
                       {"write_vec16_Bps", bw_write},
                       {"write_vec16_median_s", median_of(t_write)},
                       {"stream_write_Bps", c.stream_write_bw},
                       {"note", "rates from the fastest repetition; copy_bw = max(memcpy, vec16 copy kernel), counting bytes read + written"}};
}

// ---- tensor rates through cuBLASLt ----

struct GemmType {
  const char* unit;
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  std::size_t ab_size, cd_size;
  detail::FillType fill;
};

template <typename Fn>
struct Finally {
  Fn fn;
  ~Finally() { fn(); }
};
template <typename Fn>
Finally(Fn) -> Finally<Fn>;

// Returns the rate and fills `detail`. The rate is the fastest median seen (screening or final):
// sustained GEMMs run into the power cap (SM 1665-1980 MHz seen on an H200), and a ceiling
// must not sit below what a kernel can reach.
double measure_gemm(nlohmann::json& detail, const GemmType& t, const CalibrateOptions& o, int sms,
                    cudaStream_t s, cublasLtHandle_t lt, bool fast_accum) {
  const int m = o.gemm_size, n = o.gemm_size, k = o.gemm_size;
  DeviceBuffer A(std::size_t(k) * m * t.ab_size), B(std::size_t(k) * n * t.ab_size),
      D(std::size_t(m) * n * t.cd_size), ws(o.gemm_workspace);
  const std::size_t na = std::size_t(k) * m, nb = std::size_t(k) * n;
  fill(t.fill, A.get(), na, 1, sms, s);
  fill(t.fill, B.get(), nb, 2, sms, s);

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Finally cleanup{[&] {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }};
  D2K_MEASURE_CUBLAS(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F));
  // "TN" (A transposed, column-major): the layout FP8 requires, and a fast one for every type.
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  D2K_MEASURE_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  D2K_MEASURE_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (fast_accum) {
    const std::int8_t on = 1;
    D2K_MEASURE_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on));
  }
  D2K_MEASURE_CUBLAS(cublasLtMatrixLayoutCreate(&la, t.ab, k, m, k));
  D2K_MEASURE_CUBLAS(cublasLtMatrixLayoutCreate(&lb, t.ab, k, n, k));
  D2K_MEASURE_CUBLAS(cublasLtMatrixLayoutCreate(&ld, t.cd, m, n, m));
  D2K_MEASURE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const std::size_t wsb = o.gemm_workspace;
  D2K_MEASURE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &wsb, sizeof wsb));
  std::vector<cublasLtMatmulHeuristicResult_t> cand(std::max(1, o.gemm_algos));
  int returned = 0;
  D2K_MEASURE_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, int(cand.size()),
                                                    cand.data(), &returned));
  if (returned <= 0) throw measure_error(fmt::format("calibrate: cuBLASLt offers no algorithm for {}", t.unit));

  const float alpha = 1.f, beta = 0.f;
  auto run = [&](const cublasLtMatmulAlgo_t* algo) {
    D2K_MEASURE_CUBLAS(cublasLtMatmul(lt, op, &alpha, A.get(), la, B.get(), lb, &beta, D.get(), ld, D.get(), ld,
                                      algo, ws.get(), wsb, s));
  };
  const double flops = 2.0 * m * n * k;
  int best = -1;
  double best_t = 0;
  nlohmann::json tried = nlohmann::json::array();
  for (int i = 0; i < returned; ++i) {
    if (cand[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const double t_med = median_of(time_reps(s, 2, 5, [&] { run(&cand[i].algo); }));
    tried.push_back({{"candidate", i}, {"median_s", t_med}, {"ops_per_s", flops / t_med}});
    if (best < 0 || t_med < best_t) {
      best = i;
      best_t = t_med;
    }
  }
  if (best < 0) throw measure_error(fmt::format("calibrate: no usable cuBLASLt algorithm for {}", t.unit));
  const auto times = time_reps(s, 2, o.gemm_reps, [&] { run(&cand[best].algo); });
  const double t_med = median_of(times);
  const double rate = flops / std::min(t_med, best_t);
  detail = {{"method", fast_accum ? "cublasLtMatmul TN, fast accumulation, random uniform[-1,1) inputs"
                                  : "cublasLtMatmul TN, random uniform[-1,1) inputs"},
            {"m", m}, {"n", n}, {"k", k},
            {"candidates", tried},
            {"chosen", best},
            {"reps", o.gemm_reps},
            {"median_s", t_med},
            {"screening_median_s", best_t},
            {"ops_per_s", rate}};
  return rate;
}

// ---- FMA loops ----

template <typename T, typename Launch>
void measure_fma(Ceilings& c, const char* unit, T a, T b, int iters, int sms, cudaStream_t s, Launch launch) {
  DeviceBuffer sink(sizeof(T));
  const int block = 256, grid = sms * 8;  // 2048 threads per SM: full occupancy on sm_90
  auto t = time_reps(s, 1, 3, [&] { D2K_CUDA_CHECK(launch(sink.get<T>(), a, b, iters, grid, block, s)); });
  const double ops = 2.0 * detail::kFmaChains * double(iters) * double(grid) * block;
  const double t_med = median_of(t);
  c.peak[unit] = ops / t_med;
  c.details[unit] = {{"method", "register-resident multiply-add loop, 16 chains per thread, FMA = 2 ops"},
                     {"grid", grid}, {"block", block}, {"iters", iters},
                     {"median_s", t_med}, {"ops_per_s", ops / t_med}};
}

}  // namespace

DeviceIdentity identify_device(int device) {
  if (device < 0) D2K_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  D2K_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceIdentity id;
  id.name = p.name;
  const auto* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  id.uuid = fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                        u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                        u[14], u[15]);
  char pci[64] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, device) == cudaSuccess) id.pci_bus_id = pci;
  NvmlSampler nvml(device);
  id.driver = nvml.driver_version();
  if (id.driver.empty()) {
    int v = 0;
    D2K_CUDA_CHECK(cudaDriverGetVersion(&v));
    id.driver = fmt::format("cuda-driver-{}", v);
  }
  return id;
}

GpuEnvironment gpu_environment(int device) {
  if (device < 0) D2K_CUDA_CHECK(cudaGetDevice(&device));
  GpuEnvironment g;
  g.device = identify_device(device);
  NvmlSampler nvml(device);
  g.nvml_status = nvml.status();
  g.max_sm_mhz = nvml.max_sm_mhz();
  if (auto r = nvml.read_now()) {
    g.sm_mhz = r->sm_mhz;
    g.mem_mhz = r->mem_mhz;
  }
  return g;
}

void to_json(nlohmann::json& j, const GpuEnvironment& g) {
  j = nlohmann::json{{"name", g.device.name},       {"uuid", g.device.uuid},   {"pci_bus_id", g.device.pci_bus_id},
                     {"driver", g.device.driver},   {"nvml", g.nvml_status},   {"sm_mhz", g.sm_mhz},
                     {"mem_mhz", g.mem_mhz},        {"max_sm_mhz", g.max_sm_mhz}};
}

Ceilings calibrate(int device, const CalibrateOptions& o) {
  if (device < 0) D2K_CUDA_CHECK(cudaGetDevice(&device));
  D2K_CUDA_CHECK(cudaSetDevice(device));
  if (o.gemm_size <= 0 || o.gemm_size % 16 != 0) throw measure_error("calibrate: gemm_size must be a positive multiple of 16");
  if (o.copy_reps <= 0 || o.gemm_reps <= 0 || o.fma_iters <= 0) throw measure_error("calibrate: reps and iters must be positive");
  cudaDeviceProp p{};
  D2K_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  Ceilings c;
  c.device = identify_device(device);
  c.source = "calibrated";
  c.created = utc_now();
  c.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  c.sm_count = p.multiProcessorCount;
  c.details = nlohmann::json::object();
  c.details["compute_capability"] = fmt::format("{}.{}", p.major, p.minor);

  Stream stream;
  const cudaStream_t s = stream.get();
  NvmlSampler nvml(device);
  nvml.start();

  measure_bandwidth(c, o, p.multiProcessorCount, s);

  cublasLtHandle_t lt = nullptr;
  D2K_MEASURE_CUBLAS(cublasLtCreate(&lt));
  Finally lt_guard{[&] { cublasLtDestroy(lt); }};
  const GemmType types[] = {
      {"bf16_tensor", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, detail::FillType::bf16},
      {"fp16_tensor", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, detail::FillType::f16},
      {"fp8_tensor", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, detail::FillType::e4m3},
      {"tf32_tensor", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, detail::FillType::f32},
  };
  for (const auto& t : types) {
    // fp8 also with fast accumulation (what fp8 GEMMs commonly run with); the faster counts.
    const bool fp8 = t.ab == CUDA_R_8F_E4M3;
    for (bool fast : fp8 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
      const std::string key = fast ? std::string(t.unit) + "_fast_accum" : std::string(t.unit);
      try {
        nlohmann::json d;
        const double rate = measure_gemm(d, t, o, p.multiProcessorCount, s, lt, fast);
        c.details[key] = d;
        c.peak[t.unit] = std::max(c.peak.count(t.unit) ? c.peak[t.unit] : 0.0, rate);
      } catch (const measure_error& e) {
        // A type this device or library cannot run is left out, with the reason. A broken
        // context cannot be worked around: the synchronisation below throws for it.
        D2K_CUDA_CHECK(cudaDeviceSynchronize());
        c.details[key] = {{"error", e.what()}};
      } catch (const CudaError& e) {
        if (e.sticky) throw;
        D2K_CUDA_CHECK(cudaDeviceSynchronize());
        c.details[key] = {{"error", e.what()}};
      }
    }
  }

  measure_fma<float>(c, "fp32", 0.999999f, 1e-6f, o.fma_iters, p.multiProcessorCount, s,
                     detail::launch_fma_loop_f32);
  measure_fma<double>(c, "fp64", 0.999999, 1e-6, std::max(8, o.fma_iters / 2), p.multiProcessorCount, s,
                      detail::launch_fma_loop_f64);
  measure_fma<unsigned>(c, "int32", 1664525u, 1013904223u, o.fma_iters, p.multiProcessorCount, s,
                        detail::launch_fma_loop_u32);

  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  const ClockSummary clocks = nvml.stop();
  c.sm_clock_mhz = clocks.sm_mhz_median;
  nlohmann::json cj;
  to_json(cj, clocks);
  c.details["clocks"] = cj;
  c.notes = "measured by calibrate(); copy_bw counts bytes read + written; the memory floor uses read_bw, stream_write_bw and deferred_writes";
  return c;
}

Ceilings ceilings_for_device(int device, const std::filesystem::path& file) {
  if (device < 0) D2K_CUDA_CHECK(cudaGetDevice(&device));
  Ceilings c = ceilings_for(identify_device(device), file);
  if (c.source == "datasheet") {
    cudaDeviceProp p{};
    D2K_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    c.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
    c.sm_count = p.multiProcessorCount;
  }
  return c;
}

}  // namespace d2k::measure
