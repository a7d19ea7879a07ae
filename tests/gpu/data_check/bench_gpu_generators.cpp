// Throughput of generate_device: median of 5 timed calls (CUDA events) per generator, after a
// warm-up call. Usage: bench_gpu_generators [log2 elements = 28]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "data/cuda_check.h"
#include "data/dtype_bits.h"
#include "data/generators.h"

using namespace d2k;

int main(int argc, char** argv) {
  const int lg = argc > 1 ? std::atoi(argv[1]) : 28;
  const std::int64_t n = std::int64_t{1} << lg;
  struct Item {
    const char* kind;
    ordered_json params;
    DType dtype;
  };
  const std::vector<Item> items = {
      {"normal", {}, DType::bf16},
      {"normal", {}, DType::f32},
      {"uniform", {}, DType::f32},
      {"randint", {{"low", 0}, {"high", 1000}}, DType::i32},
      {"unique_keys", {{"low", 0}, {"high", 2 * n}}, DType::i32},
      {"zipf", {{"n", 65536}, {"s", 1.1}}, DType::u32},
      {"tpch_lineitem", {{"column", "l_extendedprice"}}, DType::i64},
  };
  data::DeviceBuffer buf(static_cast<std::size_t>(n) * 8);
  cudaEvent_t a, b;
  D2K_DATA_CUDA_CHECK(cudaEventCreate(&a));
  D2K_DATA_CUDA_CHECK(cudaEventCreate(&b));
  cudaDeviceProp prop{};
  D2K_DATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, elements: 2^%d = %lld\n", prop.name, lg, static_cast<long long>(n));
  std::printf("%-14s %-10s %10s %12s %10s\n", "kind", "dtype", "median_ms", "Gelem/s", "GB/s");
  for (const Item& it : items) {
    GenRequest r;
    r.spec.kind = it.kind;
    r.spec.params = it.params;
    r.dtype = it.dtype;
    r.count = n;
    r.seed = 1;
    r.stream = stream_id(it.kind, 0);
    generate_device(r, buf.get(), nullptr);  // warm-up
    std::vector<float> ms;
    for (int rep = 0; rep < 5; ++rep) {
      D2K_DATA_CUDA_CHECK(cudaEventRecord(a));
      generate_device(r, buf.get(), nullptr);
      D2K_DATA_CUDA_CHECK(cudaEventRecord(b));
      D2K_DATA_CUDA_CHECK(cudaEventSynchronize(b));
      float t = 0;
      D2K_DATA_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[2];
    std::printf("%-14s %-10s %10.3f %12.2f %10.1f\n", it.kind, std::string(dtype_name(it.dtype)).c_str(), med,
                n / (med * 1e6), n * data::elem_bytes(it.dtype) / (med * 1e6));
  }
  D2K_DATA_CUDA_CHECK(cudaEventDestroy(a));
  D2K_DATA_CUDA_CHECK(cudaEventDestroy(b));
  return 0;
}
