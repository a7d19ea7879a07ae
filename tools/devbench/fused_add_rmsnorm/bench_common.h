#pragma once
/// Small shared pieces of the fused_add_rmsnorm development bench: checked CUDA calls, RAII device
/// buffers, deterministic host inputs, bf16 helpers, allclose, an L2 flush and a cold-L2 timer.
/// A development tool only: the d2k evaluator replaces it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define DB_CUDA(call)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess)                                                                         \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + " " #call \
                               ": " + cudaGetErrorString(e_));                                     \
  } while (0)

namespace devbench {

/// Owned device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) DB_CUDA(cudaMalloc(&p_, bytes));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Owned CUDA event pair.
struct EventPair {
  cudaEvent_t start{}, stop{};
  EventPair() {
    DB_CUDA(cudaEventCreate(&start));
    DB_CUDA(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/// Uniform in (0, 1], counter-based: the same (seed, index) gives the same value on any thread.
inline double uniform01(uint64_t seed, uint64_t i) {
  return (static_cast<double>(splitmix64(seed * 0x2545F4914F6CDD1Dull + i) >> 11) + 1.0) * 0x1.0p-53;
}

inline uint16_t float_to_bf16(float f) {  // round to nearest even; inputs here are finite
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Runs body(begin, end) over [0, n) on all host cores.
inline void parallel_for(size_t n, const std::function<void(size_t, size_t)>& body) {
  const size_t workers = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  const size_t chunk = (n + workers - 1) / workers;
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) {
    const size_t b = w * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(body, b, e);
  }
  for (auto& t : pool) t.join();
}

/// bf16 normal(mean, std) values, Box-Muller on counter-based uniforms.
inline void fill_normal(std::vector<uint16_t>& v, uint64_t seed, double mean, double stddev) {
  parallel_for(v.size(), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const double u1 = uniform01(seed, 2 * i), u2 = uniform01(seed, 2 * i + 1);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      v[i] = float_to_bf16(static_cast<float>(mean + stddev * z));
    }
  });
}
/// bf16 uniform [low, high) values.
inline void fill_uniform(std::vector<uint16_t>& v, uint64_t seed, double low, double high) {
  parallel_for(v.size(), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) v[i] = float_to_bf16(static_cast<float>(low + (high - low) * uniform01(seed, i)));
  });
}

/// allclose as the task format defines it: an element fails when |a-e| > atol and |a-e| > rtol|e|.
/// Also counts poison (the 0xFFFF pattern the outputs were filled with) and non-finite values.
struct CompareResult {
  size_t n = 0, mismatches = 0, unwritten = 0, nonfinite = 0;
  double max_abs = 0, max_rel = 0;
  bool ok() const { return n > 0 && mismatches == 0 && unwritten == 0 && nonfinite == 0; }
};
inline CompareResult allclose_bf16(const uint16_t* got, const uint16_t* want, size_t n, double atol, double rtol) {
  std::vector<CompareResult> parts(64);
  std::vector<std::thread> pool;
  const size_t workers = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  const size_t chunk = (n + workers - 1) / workers;
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      CompareResult& r = parts[w];
      const size_t b = w * chunk, e = std::min(n, b + chunk);
      for (size_t i = b; i < e; ++i) {
        ++r.n;
        if (got[i] == 0xFFFFu) { ++r.unwritten; continue; }
        const double a = bf16_to_float(got[i]), x = bf16_to_float(want[i]);
        if (!std::isfinite(a)) { ++r.nonfinite; continue; }
        const double d = std::fabs(a - x);
        r.max_abs = std::max(r.max_abs, d);
        if (x != 0) r.max_rel = std::max(r.max_rel, d / std::fabs(x));
        if (d > atol && d > rtol * std::fabs(x)) ++r.mismatches;
      }
    });
  }
  for (auto& t : pool) t.join();
  CompareResult total;
  for (auto& r : parts) {
    total.n += r.n; total.mismatches += r.mismatches; total.unwritten += r.unwritten; total.nonfinite += r.nonfinite;
    total.max_abs = std::max(total.max_abs, r.max_abs); total.max_rel = std::max(total.max_rel, r.max_rel);
  }
  return total;
}

/// Cold-L2 timing: before every sample a memset over a buffer of 4x the L2 evicts what the last
/// sample left; CUDA events bracket the call on the stream. The memset also keeps the GPU busy
/// while the host enqueues the call, so host-side overhead does not leak into the GPU time.
struct Stats {
  double median_us = 0, min_us = 0, p10_us = 0, p90_us = 0, mean_us = 0, rel_noise = 0;
  int samples = 0;
};
class ColdTimer {
 public:
  explicit ColdTimer(cudaStream_t s) : stream_(s) {
    int dev = 0, l2 = 0;
    DB_CUDA(cudaGetDevice(&dev));
    DB_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    flush_ = DeviceBuffer(std::max<size_t>(static_cast<size_t>(l2) * 4, 256u << 20));
  }
  void flush() { DB_CUDA(cudaMemsetAsync(flush_.get(), flush_val_++ & 0xFF, flush_.bytes(), stream_)); }
  Stats time(const std::function<void()>& call, int warmup, int samples) {
    for (int i = 0; i < warmup; ++i) { flush(); call(); }
    DB_CUDA(cudaStreamSynchronize(stream_));
    std::vector<double> t;
    EventPair ev;
    for (int i = 0; i < samples; ++i) {
      flush();
      DB_CUDA(cudaEventRecord(ev.start, stream_));
      call();
      DB_CUDA(cudaEventRecord(ev.stop, stream_));
      DB_CUDA(cudaEventSynchronize(ev.stop));
      float ms = 0;
      DB_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
      t.push_back(ms * 1e3);
    }
    std::sort(t.begin(), t.end());
    Stats s;
    s.samples = samples;
    s.median_us = t[t.size() / 2];
    s.min_us = t.front();
    s.p10_us = t[t.size() / 10];
    s.p90_us = t[(t.size() * 9) / 10];
    double sum = 0, sq = 0;
    for (double v : t) { sum += v; sq += v * v; }
    s.mean_us = sum / t.size();
    s.rel_noise = std::sqrt(std::max(0.0, sq / t.size() - s.mean_us * s.mean_us)) / s.mean_us;
    return s;
  }

 private:
  cudaStream_t stream_;
  DeviceBuffer flush_;
  int flush_val_ = 1;
};

/// Ceilings used for % of SOL (measured on the lent H200: copy read+write, dense bf16).
constexpr double kCopyBytesPerSec = 4.3e12;

/// Compulsory bytes of the task's cost model: 2*(2TH + H) + 2*2TH.
inline double compulsory_bytes(int64_t T, int64_t H) { return 2.0 * (2.0 * T * H + H) + 4.0 * T * H; }

}  // namespace devbench
