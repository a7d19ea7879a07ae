// softmax_cross_entropy — the expert's design against its alternatives on the bench shapes, for
// the variant table at the top of expert.cu. Standalone: nvcc -O3 -arch=sm_90a -std=c++20
// -I include -I <dlpack include> variants.cu -o sce_variants (the expert's kernels are included).
//
//   copy        cudaMemcpyAsync D2D of the logits into dlogits: 4TV bytes moved, the ceiling
//   two_pass    a CTA per row: online (m, s) over global memory, then the gradient re-reading the
//               row from global (6TV bytes unless the re-read hits L2)
//   expert      the cluster-staged kernel of expert.cu (4TV bytes)
// Timing: cold L2 (256 MB zeroed before each sample), CUDA events, median of N samples.
// Correctness: two_pass is compared with the expert (max |difference| of loss and dlogits).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../../../dataset/softmax_cross_entropy/expert.cu"

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

namespace {

using bf16 = __nv_bfloat16;

/// A CTA per row; the row is read from global memory twice.
__global__ void __launch_bounds__(sce::kThreads) two_pass_row(const bf16* __restrict__ logits, const int64_t* __restrict__ targets,
                                                   float* __restrict__ loss, bf16* __restrict__ dlogits, int64_t V,
                                                   float g) {
  __shared__ sce::MaxSum warp_partials[sce::kWarps];
  __shared__ float row_m, row_neg_log2_s;
  const int64_t row = blockIdx.x;
  const uint4* src = reinterpret_cast<const uint4*>(logits + row * V);
  const int nvec = static_cast<int>(V / 8);
  sce::MaxSum st{-INFINITY, 0.f};
  for (int i = threadIdx.x; i < nvec; i += sce::kThreads) {
    const uint4 v = __ldg(src + i);
    st.s += sce::vec_sum_exp(v, sce::raise_max(st, sce::vec_max(v)));
  }
  st = sce::reduce_cta(st, warp_partials);
  const int64_t y = targets[row];
  if (threadIdx.x == 0) {
    row_m = st.m;
    row_neg_log2_s = -log2f(st.s);
    loss[row] = (st.m - __bfloat162float(logits[row * V + y])) + logf(st.s);
  }
  __syncthreads();
  sce::write_grad_vec(src, reinterpret_cast<uint4*>(dlogits + row * V), nvec, row_m, row_neg_log2_s, g,
                      static_cast<int>(y));
}

struct Shape {
  const char* name;
  int64_t T, V;
};

template <class F>
float median_cold_us(F&& fn, void* flush, int samples) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < samples + 2; ++i) {
    CHECK(cudaMemsetAsync(flush, 0, 256u << 20));
    CHECK(cudaEventRecord(a));
    fn();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 2) t.push_back(ms * 1e3f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

__global__ void fill_inputs(bf16* x, int64_t* y, int64_t T, int64_t V) {
  const int64_t n = T * V;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i * 2654435761u) ^ static_cast<uint32_t>(i >> 32);
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2bfloat16_rn((static_cast<float>(h & 0xFFFF) / 65536.f - 0.5f) * 12.f);
    if (i < T) y[i] = (i * 7919) % V;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 20;
  const Shape shapes[] = {{"llama3", 4096, 128256}, {"qwen2.5", 8192, 151936}, {"gemma", 1024, 262144}};
  void* flush;
  CHECK(cudaMalloc(&flush, 256u << 20));
  std::printf("| shape | variant | median us | %%SOL (4TV+12T at 4.26 TB/s) | max|dloss| | max|ddlogits| |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const Shape& s : shapes) {
    const int64_t n = s.T * s.V;
    bf16 *x, *dx, *dx2;
    int64_t* y;
    float *l, *l2;
    CHECK(cudaMalloc(&x, n * 2));
    CHECK(cudaMalloc(&dx, n * 2));
    CHECK(cudaMalloc(&dx2, n * 2));
    CHECK(cudaMalloc(&y, s.T * 8));
    CHECK(cudaMalloc(&l, s.T * 4));
    CHECK(cudaMalloc(&l2, s.T * 4));
    fill_inputs<<<1024, 256>>>(x, y, s.T, s.V);
    CHECK(cudaGetLastError());
    const float g = 1.f / static_cast<float>(s.T);
    sce::Plan plan{};
    if (!sce::plan_for(s.V, &plan)) return 1;
    const double sol_us = (4.0 * n + 12.0 * s.T) / 4.26e12 * 1e6;
    auto row = [&](const char* v, float us, double dl, double dd) {
      std::printf("| %s %lldx%lld | %s | %.1f | %.1f | %.3g | %.3g |\n", s.name, static_cast<long long>(s.T),
                  static_cast<long long>(s.V), v, us, 100.0 * sol_us / us, dl, dd);
    };
    row("copy (memcpy 2TV B)", median_cold_us([&] { CHECK(cudaMemcpyAsync(dx2, x, n * 2, cudaMemcpyDeviceToDevice)); }, flush, samples), 0, 0);
    const float t_exp = median_cold_us(
        [&] { CHECK(sce::launch<true>(plan, s.T, x, y, l, dx, s.V, -100, g, nullptr)); }, flush, samples);
    const float t_two = median_cold_us(
        [&] { two_pass_row<<<static_cast<unsigned>(s.T), sce::kThreads>>>(x, y, l2, dx2, s.V, g); CHECK(cudaGetLastError()); },
        flush, samples);
    CHECK(cudaDeviceSynchronize());
    std::vector<float> hl(s.T), hl2(s.T);
    std::vector<bf16> hd(n), hd2(n);
    CHECK(cudaMemcpy(hl.data(), l, s.T * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hl2.data(), l2, s.T * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hd.data(), dx, n * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hd2.data(), dx2, n * 2, cudaMemcpyDeviceToHost));
    double dl = 0, dd = 0;
    for (int64_t i = 0; i < s.T; ++i) dl = std::max(dl, static_cast<double>(std::fabs(hl[i] - hl2[i])));
    for (int64_t i = 0; i < n; ++i)
      dd = std::max(dd, static_cast<double>(std::fabs(__bfloat162float(hd[i]) - __bfloat162float(hd2[i]))));
    const std::string expert_label = "expert (cluster-staged, C=" + std::to_string(plan.cluster) + ")";
    row(expert_label.c_str(), t_exp, 0, 0);
    row("two_pass (CTA per row, re-read)", t_two, dl, dd);
    CHECK(cudaFree(x));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dx2));
    CHECK(cudaFree(y));
    CHECK(cudaFree(l));
    CHECK(cudaFree(l2));
  }
  return 0;
}
