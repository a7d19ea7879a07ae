// topk_topp_mask — naive baseline: what PyTorch eager launches for pytorch.py's program
//
//   p64      = torch.softmax(logits.double() / temperature, -1)
//   sx, idx  = torch.sort(logits, -1, descending=True)
//   sp       = torch.gather(p64, -1, idx)
//   above    = torch.cumsum(sp, -1) - sp                 # mass before each token in sorted order
//   t_k      = sx[:, k-1];  t_p = sx[:, (above < top_p).sum(-1) - 1]
//   keep     = logits >= max(t_k, t_p)
//   probs    = where(keep, p64, 0) / sum(where(keep, p64, 0))
//
// op by op, every intermediate materialised (fp64 probabilities: the top-p decision must agree
// with exact arithmetic, spec.md, which fp32 masses do not near top_p):
//
//   1. to_f64_scaled      x64 = double(x) / temperature                 elementwise (cast + div)
//   2. softmax_rows       p64 = softmax(x64), in place                  a block per row, 3 passes
//   3. iota_rows          idx = 0..V-1 per row                          elementwise (sort's indices)
//   4. CUB DeviceSegmentedRadixSort::SortPairsDescending (sx, sidx)     as aten's sort
//   5. gather_rows        sp = p64[sidx]                                elementwise
//   6. cumsum_rows        cum = inclusive scan of sp                    a block per row
//   7. threshold_rows     n_p = count(cum - sp < top_p), tau = max(t_k, t_p)   a block per row
//   8. kept_sum_rows      s = sum(x >= tau ? p64 : 0)                   a block per row
//   9. write_rows         probs = x >= tau ? p64 / s : 0 (fp32)         elementwise
//
// Each kernel is the plain textbook form, not slowed on purpose.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace {

constexpr int kThreads = 256;
constexpr int kRowThreads = 1024;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void to_f64_scaled(const float* __restrict__ x, double* __restrict__ y, double temperature, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<double>(x[i]) / temperature;
}

/// Softmax of one row in place, as aten's cunn_SoftMaxForward for long rows: max, sum, write.
__global__ void __launch_bounds__(kRowThreads) softmax_rows(double* __restrict__ p, int64_t V) {
  using Reduce = cub::BlockReduce<double, kRowThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ double bcast;
  double* r = p + static_cast<int64_t>(blockIdx.x) * V;
  double m = -INFINITY;
  for (int64_t v = threadIdx.x; v < V; v += kRowThreads) m = fmax(m, r[v]);
  m = Reduce(tmp).Reduce(m, [](double a, double b) { return fmax(a, b); });
  if (threadIdx.x == 0) bcast = m;
  __syncthreads();
  m = bcast;
  double s = 0;
  for (int64_t v = threadIdx.x; v < V; v += kRowThreads) s += exp(r[v] - m);
  __syncthreads();
  s = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) bcast = s;
  __syncthreads();
  const double inv = 1.0 / bcast;
  for (int64_t v = threadIdx.x; v < V; v += kRowThreads) r[v] = exp(r[v] - m) * inv;
}

__global__ void iota_rows(int* __restrict__ idx, int64_t V, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) idx[i] = static_cast<int>(i % V);
}

__global__ void segment_offsets(int* __restrict__ off, int64_t V, int64_t B) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i <= B) off[i] = static_cast<int>(i * V);
}

__global__ void gather_rows(const double* __restrict__ p, const int* __restrict__ sidx, double* __restrict__ sp,
                            int64_t V, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) sp[i] = p[(i / V) * V + sidx[i]];
}

/// Inclusive scan of one row in tiles of the block, carrying the running total.
__global__ void __launch_bounds__(kRowThreads) cumsum_rows(const double* __restrict__ in, double* __restrict__ out,
                                                           int64_t V) {
  using Scan = cub::BlockScan<double, kRowThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * V;
  double carry = 0;
  for (int64_t t = 0; t < V; t += kRowThreads) {
    const int64_t v = t + threadIdx.x;
    const double a = v < V ? in[base + v] : 0.0;
    double incl, total;
    Scan(tmp).InclusiveSum(a, incl, total);
    if (v < V) out[base + v] = carry + incl;
    carry += total;
    __syncthreads();
  }
}

/// tau = max(sx[k_eff - 1], sx[n_p - 1]) with n_p the count of sorted positions whose preceding
/// mass cum - sp is below top_p (top_p >= 1: t_k only).
__global__ void __launch_bounds__(kRowThreads)
    threshold_rows(const float* __restrict__ sx, const double* __restrict__ sp, const double* __restrict__ cum,
                   float* __restrict__ tau, int64_t V, int64_t k_eff, double top_p) {
  using Reduce = cub::BlockReduce<long long, kRowThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * V;
  long long n = 0;
  if (top_p < 1.0)
    for (int64_t v = threadIdx.x; v < V; v += kRowThreads) n += (cum[base + v] - sp[base + v]) < top_p;
  n = Reduce(tmp).Sum(n);
  if (threadIdx.x == 0) {
    float t = sx[base + k_eff - 1];
    if (top_p < 1.0) t = fmaxf(t, sx[base + (n > 0 ? n : 1) - 1]);
    tau[blockIdx.x] = t;
  }
}

__global__ void __launch_bounds__(kRowThreads)
    kept_sum_rows(const float* __restrict__ x, const double* __restrict__ p, const float* __restrict__ tau,
                  double* __restrict__ s, int64_t V) {
  using Reduce = cub::BlockReduce<double, kRowThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * V;
  const float t = tau[blockIdx.x];
  double a = 0;
  for (int64_t v = threadIdx.x; v < V; v += kRowThreads) a += x[base + v] >= t ? p[base + v] : 0.0;
  a = Reduce(tmp).Sum(a);
  if (threadIdx.x == 0) s[blockIdx.x] = a;
}

__global__ void write_rows(const float* __restrict__ x, const double* __restrict__ p, const float* __restrict__ tau,
                           const double* __restrict__ s, float* __restrict__ out, int64_t V, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t r = i / V;
  out[i] = x[i] >= tau[r] ? static_cast<float>(p[i] / s[r]) : 0.f;
}

struct Buffers {
  double *p64, *sp, *cum, *s;
  float *sx, *tau;
  int *idx, *sidx, *off;
  void* cub_tmp;
  size_t cub_bytes;
};

Buffers carve(d2k::Workspace& ws, int64_t B, int64_t V, size_t cub_bytes) {
  Buffers b;
  const int64_t n = B * V;
  b.p64 = ws.take<double>(n);
  b.sp = ws.take<double>(n);
  b.cum = ws.take<double>(n);
  b.s = ws.take<double>(B);
  b.sx = ws.take<float>(n);
  b.tau = ws.take<float>(B);
  b.idx = ws.take<int>(n);
  b.sidx = ws.take<int>(n);
  b.off = ws.take<int>(B + 1);
  b.cub_bytes = cub_bytes;
  b.cub_tmp = ws.take_bytes(cub_bytes);
  return b;
}

size_t cub_sort_bytes(int64_t B, int64_t V) {
  size_t bytes = 0;
  cub::DeviceSegmentedRadixSort::SortPairsDescending(nullptr, bytes, static_cast<const float*>(nullptr),
                                                     static_cast<float*>(nullptr), static_cast<const int*>(nullptr),
                                                     static_cast<int*>(nullptr), static_cast<int>(B * V),
                                                     static_cast<int>(B), static_cast<const int*>(nullptr),
                                                     static_cast<const int*>(nullptr));
  return bytes;
}

void check_shape(int64_t B, int64_t V) {
  if (B < 0 || V < 1) throw d2k::abi_error("naive: need B >= 0 and V >= 1");
  if (B * V > 2147483647) throw d2k::abi_error("naive: B * V must fit the 32-bit indices of the segmented sort");
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t V = d2k::scalar_i(args, "V");
    check_shape(B, V);
    d2k::Workspace ws;
    carve(ws, B, V, B > 0 ? cub_sort_bytes(B, V) : 0);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B");
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t k = d2k::scalar_i(args, "k");
    const double top_p = d2k::scalar_f(args, "top_p");
    const double temperature = d2k::scalar_f(args, "temperature");
    check_shape(B, V);
    if (k < 1) throw d2k::abi_error("naive: k must be >= 1");
    if (!(top_p > 0.0 && top_p <= 1.0)) throw d2k::abi_error("naive: top_p must be in (0, 1]");
    if (!(temperature > 0.0)) throw d2k::abi_error("naive: temperature must be > 0");
    const DLTensor& logits = d2k::input(args, "logits", kDLCUDA, d2k::dl::f32, {B, V});
    const DLTensor& probs = d2k::output(args, "probs", kDLCUDA, d2k::dl::f32, {B, V});
    if (B == 0) return D2K_OK;
    const float* x = d2k::data<const float>(logits);
    float* out = d2k::data<float>(probs);
    auto stream = static_cast<cudaStream_t>(args->stream);
    d2k::Workspace ws(args);
    Buffers b = carve(ws, B, V, cub_sort_bytes(B, V));
    const int64_t n = B * V;
    const int64_t k_eff = k < V ? k : V;
    const unsigned rows = static_cast<unsigned>(B);

    to_f64_scaled<<<blocks_for(n), kThreads, 0, stream>>>(x, b.p64, temperature, n);
    softmax_rows<<<rows, kRowThreads, 0, stream>>>(b.p64, V);
    iota_rows<<<blocks_for(n), kThreads, 0, stream>>>(b.idx, V, n);
    segment_offsets<<<blocks_for(B + 1), kThreads, 0, stream>>>(b.off, V, B);
    D2K_CUDA_TRY(args, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                           b.cub_tmp, b.cub_bytes, x, b.sx, b.idx, b.sidx, static_cast<int>(n), static_cast<int>(B),
                           b.off, b.off + 1, 0, 32, stream));
    gather_rows<<<blocks_for(n), kThreads, 0, stream>>>(b.p64, b.sidx, b.sp, V, n);
    cumsum_rows<<<rows, kRowThreads, 0, stream>>>(b.sp, b.cum, V);
    threshold_rows<<<rows, kRowThreads, 0, stream>>>(b.sx, b.sp, b.cum, b.tau, V, k_eff, top_p);
    kept_sum_rows<<<rows, kRowThreads, 0, stream>>>(x, b.p64, b.tau, b.s, V);
    write_rows<<<blocks_for(n), kThreads, 0, stream>>>(x, b.p64, b.tau, b.s, out, V, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
