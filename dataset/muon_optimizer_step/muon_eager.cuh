#pragma once
// The eager building blocks naive.cu and library.cu share: checked calls, bf16 helpers, the
// vectorised elementwise kernels of the prologue (momentum, Nesterov blend, cast) and the
// Frobenius norm. Each implementation is its own shared library, so each includes its own copy
// (an anonymous namespace: nothing is exported).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#define MUON_CUDA_CHECK(call)                                                              \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess)                                                                  \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": " + cudaGetErrorString(e_));                    \
  } while (0)
#define MUON_CUBLAS_CHECK(call)                                                            \
  do {                                                                                      \
    cublasStatus_t s_ = (call);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                        \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": cuBLAS status " + std::to_string(int(s_)));     \
  } while (0)
#define MUON_LAUNCH_CHECK() MUON_CUDA_CHECK(cudaGetLastError())

namespace {

constexpr size_t kCublasWorkspace = size_t(32) << 20;
constexpr int kReduceBlocks = 1024;

__device__ __forceinline__ float ld_bf16(const uint16_t* p) {
  return __uint_as_float(static_cast<uint32_t>(*p) << 16);
}
__device__ __forceinline__ uint16_t to_bf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

/// Grid-stride loop over n elements, V at a time (V == 4 needs n % 4 == 0).
#define GRID_STRIDE(i, n, V)                                                                      \
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * (V); i < (n);              \
       i += int64_t(gridDim.x) * blockDim.x * (V))

/// V consecutive elements as floats: 16-byte (fp32) or 8-byte (bf16) accesses when V == 4.
template <int V>
__device__ __forceinline__ void load(const float* p, float* v) {
  if constexpr (V == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
  } else {
    v[0] = *p;
  }
}
template <int V>
__device__ __forceinline__ void load(const uint16_t* p, float* v) {
  if constexpr (V == 4) {
    const uint2 t = *reinterpret_cast<const uint2*>(p);
    v[0] = __uint_as_float(t.x << 16); v[1] = __uint_as_float(t.x & 0xffff0000u);
    v[2] = __uint_as_float(t.y << 16); v[3] = __uint_as_float(t.y & 0xffff0000u);
  } else {
    v[0] = ld_bf16(p);
  }
}
template <int V>
__device__ __forceinline__ void store(float* p, const float* v) {
  if constexpr (V == 4) *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else *p = v[0];
}
template <int V>
__device__ __forceinline__ void store(uint16_t* p, const float* v) {
  if constexpr (V == 4) {
    uint2 t;
    t.x = uint32_t(to_bf16(v[0])) | (uint32_t(to_bf16(v[1])) << 16);
    t.y = uint32_t(to_bf16(v[2])) | (uint32_t(to_bf16(v[3])) << 16);
    *reinterpret_cast<uint2*>(p) = t;
  } else {
    *p = to_bf16(v[0]);
  }
}

// momentum_out = beta*momentum + grad
template <int V>
__global__ void momentum_update(const float* m, const uint16_t* g, float* mo, int64_t n, float beta) {
  GRID_STRIDE(i, n, V) {
    float a[V], b[V];
    load<V>(m + i, a);
    load<V>(g + i, b);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = fmaf(beta, a[k], b[k]);
    store<V>(mo + i, a);
  }
}
// U = grad + beta*momentum_out
template <int V>
__global__ void nesterov_blend(const uint16_t* g, const float* mo, float* u, int64_t n, float beta) {
  GRID_STRIDE(i, n, V) {
    float a[V], b[V];
    load<V>(mo + i, a);
    load<V>(g + i, b);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = fmaf(beta, a[k], b[k]);
    store<V>(u + i, a);
  }
}
// X = bf16(U)
template <int V>
__global__ void cast_to_bf16(const float* u, uint16_t* x, int64_t n) {
  GRID_STRIDE(i, n, V) {
    float a[V];
    load<V>(u + i, a);
    store<V>(x + i, a);
  }
}
// Partial sums of squares: blockIdx.y = batch entry, kReduceBlocks blocks per entry.
__global__ void sumsq_partials(const uint16_t* x, int64_t per, float* partials) {
  __shared__ float red[256];
  const uint16_t* xb = x + int64_t(blockIdx.y) * per;
  float s = 0.f;
  for (int64_t i = int64_t(blockIdx.x) * 256 + threadIdx.x; i < per; i += int64_t(gridDim.x) * 256) {
    const float v = ld_bf16(xb + i);
    s = fmaf(v, v, s);
  }
  red[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w; w >>= 1) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[int64_t(blockIdx.y) * gridDim.x + blockIdx.x] = red[0];
}
// norm[b] = sqrt(sum of partials of entry b)
__global__ void sumsq_final(const float* partials, int nblk, float* norm) {
  __shared__ float red[256];
  float s = 0.f;
  for (int i = threadIdx.x; i < nblk; i += 256) s += partials[int64_t(blockIdx.x) * nblk + i];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w; w >>= 1) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) norm[blockIdx.x] = sqrtf(red[0]);
}
// X = X / (norm[b] + eps), in place
template <int V>
__global__ void divide_by_norm(uint16_t* x, int64_t per, int64_t n, const float* norm, float eps) {
  GRID_STRIDE(i, n, V) {
    const float d = norm[i / per] + eps;  // V divides per when V == 4 (per % 4 == 0)
    float a[V];
    load<V>(x + i, a);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = a[k] / d;
    store<V>(x + i, a);
  }
}

}  // namespace
