// What a predicate-ordered Q6 scan fetches from DRAM, against a full scan of the four columns:
// the evidence for tpch_q6's cost model (docs/results/tpch_q6.md, "Cost model").
//
// A kernel that evaluates l_shipdate first and loads a later column only where an earlier
// predicate kept a row of its sector skips sectors: at Q6's selectivities (shipdate keeps ~15 %,
// discount 3/11, quantity 23/50; rows independent, as the task's generator draws them) the
// least-work traffic is far below the four columns read in full. How far depends on the
// granularity DRAM is read at (32-byte sectors, or 64/128 bytes when the L2 promotes a miss).
// This program times three kernels on columns with the generator's distributions:
//   full      every column loaded for every row (the 28-byte/row model)
//   skip      shipdate, then discount, quantity and price only where the earlier predicates kept
//             a row (the short-circuit a compiler emits for `a && b && c`)
//   read      a plain read of the four columns (the streaming ceiling)
// and prints µs and the bytes per row each implies at the read kernel's bandwidth. Under
// `ncu --metrics dram__bytes_read.sum` the DRAM bytes per row of each kernel come out directly.
// Usage: q6_sectors [rows=600000000] [reps=20]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

namespace {
constexpr int kStart = 8035;  // kTpchStartDate, 1992-01-01
__host__ __device__ std::uint32_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// The generator's marginals (src/data/gen_plan.h tpch_value): order date uniform over
// order_days from 1992-01-01, ship = order + 1..121; discount 0..10; quantity 1..50;
// price quantity x retail.
__global__ void fill(std::int32_t* ship, std::int64_t* disc, std::int64_t* qty, std::int64_t* price, std::int64_t n,
                     int order_days, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t k = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(i) * 4;
    const int order = kStart + static_cast<int>(mix(k) % order_days);
    ship[i] = order + 1 + static_cast<int>(mix(k + 1) % 121);
    disc[i] = mix(k + 2) % 11;
    qty[i] = 1 + mix(k + 3) % 50;
    price[i] = qty[i] * (90000 + mix(k + 4) % 120000);
  }
}

template <bool kSkip>
__global__ void q6(const std::int32_t* __restrict__ ship, const std::int64_t* __restrict__ disc,
                   const std::int64_t* __restrict__ qty, const std::int64_t* __restrict__ price, std::int64_t n,
                   unsigned long long* out) {
  std::int64_t acc = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (kSkip) {
      const int s = __ldg(ship + i);
      if (s >= 8766 && s < 9131) {
        const std::int64_t d = __ldg(disc + i);
        if (d >= 5 && d <= 7) {
          if (__ldg(qty + i) < 24) acc += __ldg(price + i) * d;
        }
      }
    } else {
      const int s = __ldg(ship + i);
      const std::int64_t d = __ldg(disc + i), q = __ldg(qty + i), p = __ldg(price + i);
      acc += (s >= 8766 && s < 9131 && d >= 5 && d <= 7 && q < 24) ? p * d : 0;
    }
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, static_cast<unsigned long long>(acc));
}

__global__ void read_all(const int4* __restrict__ a, std::int64_t n16, unsigned* sink) {
  unsigned x = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n16;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int4 v = __ldg(a + i);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9E3779B9u) *sink = x;
}
}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 600000000LL;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  const int order_days = 10591 - 151 - 8035 + 1;  // kTpchOrderDays: kTpchEndDate (1998-12-31) - 151 - start + 1
  int dev = 0, sms = 0, gran = -1;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  size_t g = 0;
  if (cudaDeviceGetLimit(&g, cudaLimitMaxL2FetchGranularity) == cudaSuccess) gran = static_cast<int>(g);
  std::int32_t* ship;
  std::int64_t *disc, *qty, *price;
  unsigned long long* out;
  unsigned* sink;
  char* flush;
  const size_t flush_bytes = size_t(256) << 20;
  CK(cudaMalloc(&ship, n * 4));
  CK(cudaMalloc(&disc, n * 8));
  CK(cudaMalloc(&qty, n * 8));
  CK(cudaMalloc(&price, n * 8));
  CK(cudaMalloc(&out, 8));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMalloc(&flush, flush_bytes));
  fill<<<sms * 8, 256>>>(ship, disc, qty, price, n, order_days, 7);
  CK(cudaGetLastError());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto time = [&](auto launch) {
    std::vector<float> t;
    for (int r = 0; r < reps + 2; ++r) {
      CK(cudaMemsetAsync(flush, r, flush_bytes));  // cold L2
      CK(cudaEventRecord(e0));
      launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 2) t.push_back(ms * 1e3f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const int grid = sms * 8;
  const float t_full = time([&] { q6<false><<<grid, 512>>>(ship, disc, qty, price, n, out); });
  const float t_skip = time([&] { q6<true><<<grid, 512>>>(ship, disc, qty, price, n, out); });
  // The streaming ceiling: the 28 bytes/row as four plain reads.
  const float t_read = time([&] {
    read_all<<<grid, 512>>>(reinterpret_cast<const int4*>(ship), n * 4 / 16, sink);
    read_all<<<grid, 512>>>(reinterpret_cast<const int4*>(disc), n * 8 / 16, sink);
    read_all<<<grid, 512>>>(reinterpret_cast<const int4*>(qty), n * 8 / 16, sink);
    read_all<<<grid, 512>>>(reinterpret_cast<const int4*>(price), n * 8 / 16, sink);
  });
  CK(cudaGetLastError());
  const double bw = 28.0 * n / (t_read * 1e-6);
  std::printf("rows %lld, L2 fetch granularity limit %d bytes, read bandwidth %.3f TB/s\n", static_cast<long long>(n),
              gran, bw / 1e12);
  std::printf("| kernel | median us | bytes/row at the read bandwidth |\n| --- | --- | --- |\n");
  std::printf("| read (4 columns) | %.1f | 28.00 |\n", t_read);
  std::printf("| full | %.1f | %.2f |\n", t_full, t_full * 1e-6 * bw / n);
  std::printf("| skip | %.1f | %.2f |\n", t_skip, t_skip * 1e-6 * bw / n);
  return 0;
}
