// moe_topk_router — naive baseline: what PyTorch eager launches for pytorch.py's program
//
//   probs      = torch.softmax(logits, -1)                         (fp32)
//   _, order   = torch.sort(logits, -1, descending=True, stable=True)
//   ids        = order[:, :K]
//   w          = torch.gather(probs, -1, ids);  w = w / w.sum(-1, keepdim=True)
//   counts     = torch.bincount(ids.flatten(), minlength=E)
//   offsets    = cat(0, cumsum(counts))
//   perm       = torch.argsort(ids.flatten(), stable=True)
//
// op by op, every intermediate materialised:
//
//   1. softmax_rows        probs [T, E] = softmax(logits)          a warp per row (aten's warp
//                                                                   softmax for rows <= 1024)
//   2. iota_rows, segment_offsets; CUB DeviceSegmentedRadixSort::SortPairsDescending
//                          (logits, ids) sorted per row: stable, -0 == +0 (as aten's sort)
//   3. gather_topk         ids = sorted ids[:, :K], w = probs[t, ids] elementwise
//   4. sum_rows            s[t] = sum_j w[t, j]                     a thread per row
//   5. div_rows            w /= s                                   elementwise
//   6. memset + histogram  counts[e] += 1 per entry                 global atomics (bincount)
//   7. CUB DeviceScan::InclusiveSum into offsets[1..E], offsets[0] = 0 (cumsum)
//   8. iota + CUB DeviceRadixSort::SortPairs (flat ids, 0..TK-1)    stable: the argsort
//
// Each kernel is the plain textbook form, not slowed on purpose.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

/// Softmax of one row per warp (E <= 1024), three sweeps: max, sum, write.
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ p, int64_t T, int E) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= T) return;
  const float* r = x + row * E;
  float m = -INFINITY;
  for (int e = lane; e < E; e += 32) m = fmaxf(m, r[e]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  float s = 0.f;
  for (int e = lane; e < E; e += 32) s += expf(r[e] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
  for (int e = lane; e < E; e += 32) p[row * E + e] = expf(r[e] - m) / s;
}

__global__ void iota_rows(int* __restrict__ idx, int E, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) idx[i] = static_cast<int>(i % E);
}

__global__ void iota(int* __restrict__ v, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) v[i] = static_cast<int>(i);
}

__global__ void segment_offsets(int* __restrict__ off, int E, int64_t T) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i <= T) off[i] = static_cast<int>(i * E);
}

__global__ void gather_topk(const float* __restrict__ probs, const int* __restrict__ sidx, float* __restrict__ w,
                            int32_t* __restrict__ ids, int E, int K, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t t = i / K, j = i % K;
  const int id = sidx[t * E + j];
  ids[i] = id;
  w[i] = probs[t * E + id];
}

__global__ void sum_rows(const float* __restrict__ w, float* __restrict__ s, int K, int64_t T) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  float acc = 0.f;
  for (int j = 0; j < K; ++j) acc += w[t * K + j];
  s[t] = acc;
}

__global__ void div_rows(float* __restrict__ w, const float* __restrict__ s, int K, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) w[i] = w[i] / s[i / K];
}

__global__ void histogram(const int32_t* __restrict__ ids, int32_t* __restrict__ counts, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&counts[ids[i]], 1);
}

struct Sizes {
  int64_t T;
  int E, K;
};

struct Buffers {
  float* probs;    // [T, E]
  float* skeys;    // [T, E] sorted logits
  int* idx;        // [T, E] 0..E-1 per row
  int* sidx;       // [T, E] sorted ids
  int* seg;        // [T + 1]
  float* sums;     // [T]
  int* iota;       // [T * K]
  int* sorted_ids; // [T * K]
  void* cub_tmp;
  size_t cub_bytes;
};

size_t cub_bytes(const Sizes& s) {
  const int n = static_cast<int>(s.T * s.E), tk = static_cast<int>(s.T * s.K), rows = static_cast<int>(s.T);
  size_t a = 0, b = 0, c = 0;
  cub::DeviceSegmentedRadixSort::SortPairsDescending(nullptr, a, static_cast<const float*>(nullptr),
                                                     static_cast<float*>(nullptr), static_cast<const int*>(nullptr),
                                                     static_cast<int*>(nullptr), n, rows,
                                                     static_cast<const int*>(nullptr), static_cast<const int*>(nullptr));
  cub::DeviceScan::InclusiveSum(nullptr, b, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), s.E);
  cub::DeviceRadixSort::SortPairs(nullptr, c, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                  static_cast<const int*>(nullptr), static_cast<int*>(nullptr), tk);
  return std::max({a, b, c});
}

Buffers carve(d2k::Workspace& ws, const Sizes& s, size_t cub) {
  Buffers b;
  const uint64_t n = static_cast<uint64_t>(s.T) * s.E, tk = static_cast<uint64_t>(s.T) * s.K;
  b.probs = ws.take<float>(n);
  b.skeys = ws.take<float>(n);
  b.idx = ws.take<int>(n);
  b.sidx = ws.take<int>(n);
  b.seg = ws.take<int>(static_cast<uint64_t>(s.T) + 1);
  b.sums = ws.take<float>(static_cast<uint64_t>(s.T));
  b.iota = ws.take<int>(tk);
  b.sorted_ids = ws.take<int>(tk);
  b.cub_bytes = cub;
  b.cub_tmp = ws.take_bytes(cub);
  return b;
}

Sizes sizes_of(const d2k_args* args) {
  const Sizes s{d2k::scalar_i(args, "T"), static_cast<int>(d2k::scalar_i(args, "E")),
                static_cast<int>(d2k::scalar_i(args, "K"))};
  const int64_t E = d2k::scalar_i(args, "E"), K = d2k::scalar_i(args, "K");
  if (s.T < 1 || E < 1 || E > 1024 || K < 1 || K > E)
    throw d2k::abi_error("naive: need T >= 1, 1 <= K <= E <= 1024 (a warp per softmax row)");
  if (s.T * E > INT32_MAX) throw d2k::abi_error("naive: T * E must fit the 32-bit indices of the segmented sort");
  return s;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Sizes s = sizes_of(args);
    d2k::Workspace ws;
    carve(ws, s, cub_bytes(s));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Sizes s = sizes_of(args);
    const float* x = d2k::data<const float>(d2k::input(args, "logits", kDLCUDA, d2k::dl::f32, {s.T, s.E}));
    float* w = d2k::data<float>(d2k::output(args, "topk_weights", kDLCUDA, d2k::dl::f32, {s.T, s.K}));
    int32_t* ids = d2k::data<int32_t>(d2k::output(args, "topk_ids", kDLCUDA, d2k::dl::i32, {s.T, s.K}));
    int32_t* counts = d2k::data<int32_t>(d2k::output(args, "expert_counts", kDLCUDA, d2k::dl::i32, {s.E}));
    int32_t* offsets = d2k::data<int32_t>(d2k::output(args, "expert_offsets", kDLCUDA, d2k::dl::i32, {s.E + 1}));
    int32_t* perm = d2k::data<int32_t>(d2k::output(args, "permutation", kDLCUDA, d2k::dl::i32, {s.T * s.K}));
    auto stream = static_cast<cudaStream_t>(args->stream);
    d2k::Workspace ws(args);
    Buffers b = carve(ws, s, cub_bytes(s));
    const int64_t n = s.T * s.E, tk = s.T * s.K;

    softmax_rows<<<blocks_for(s.T * 32), kThreads, 0, stream>>>(x, b.probs, s.T, s.E);
    iota_rows<<<blocks_for(n), kThreads, 0, stream>>>(b.idx, s.E, n);
    segment_offsets<<<blocks_for(s.T + 1), kThreads, 0, stream>>>(b.seg, s.E, s.T);
    D2K_CUDA_TRY(args, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                           b.cub_tmp, b.cub_bytes, x, b.skeys, b.idx, b.sidx, static_cast<int>(n),
                           static_cast<int>(s.T), b.seg, b.seg + 1, 0, 32, stream));
    gather_topk<<<blocks_for(tk), kThreads, 0, stream>>>(b.probs, b.sidx, w, ids, s.E, s.K, tk);
    sum_rows<<<blocks_for(s.T), kThreads, 0, stream>>>(w, b.sums, s.K, s.T);
    div_rows<<<blocks_for(tk), kThreads, 0, stream>>>(w, b.sums, s.K, tk);
    D2K_CUDA_TRY(args, cudaMemsetAsync(counts, 0, sizeof(int32_t) * s.E, stream));
    histogram<<<blocks_for(tk), kThreads, 0, stream>>>(ids, counts, tk);
    D2K_CUDA_TRY(args, cudaMemsetAsync(offsets, 0, sizeof(int32_t), stream));
    D2K_CUDA_TRY(args, cub::DeviceScan::InclusiveSum(b.cub_tmp, b.cub_bytes, counts, offsets + 1, s.E, stream));
    iota<<<blocks_for(tk), kThreads, 0, stream>>>(b.iota, tk);
    D2K_CUDA_TRY(args, cub::DeviceRadixSort::SortPairs(b.cub_tmp, b.cub_bytes, ids, b.sorted_ids, b.iota, perm,
                                                       static_cast<int>(tk), 0, 32, stream));
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
