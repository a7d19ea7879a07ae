// fused_adamw — expert: global-norm clipping and AdamW over the flat buffer, reading every byte
// once where the grads fit on chip, twice (the grads only) where they do not.
//
// Two-pass path (any P; the only path above ~15e6 params on the H200):
//   1. grad_sumsq_partials   every CTA reads its grid-stride share of the bf16 grads with 16-byte
//                            loads, squares and accumulates in fp32 (eight lane accumulators per
//                            thread, one per vector element), reduces the CTA by warp shuffles and
//                            a fixed-order shared-memory pass, and writes one partial.
//   2. adamw_update          every CTA first sums the partials in double in a fixed order (the
//                            same order in every CTA, so every CTA derives the same clipping
//                            coefficient bit for bit, and so does every run: deterministic), then
//                            streams the buffer once: read param, grad, m, v; write param_out,
//                            m_out, v_out and the bf16 copy; 8 elements per thread step, 16-byte
//                            accesses throughout, streaming cache hints (each byte is touched once).
//
// One-read path (2^19 <= P and the grads fit the grid's shared memory: P <= ~15e6 on the H200's
// 132 SMs x 227 KB): adamw_one_read, one cooperative launch of one 1024-thread CTA per SM. CTA b
// loads its contiguous slice of grad vectors into shared memory while summing their squares,
// writes its partial, waits at one grid-wide barrier (cooperative_groups grid sync), derives the
// clipping coefficient from the partials as above, and updates its slice reading the grads from
// shared memory: DRAM sees each grad once (28 B per element, the cost model's count there) and
// the call is one launch. The 1e7 x 5000 row takes it.
//
// Why the segments are not read: all G tensors share the hyperparameters and the norm is global,
// so the arithmetic of an element does not depend on its tensor. The multi-tensor chunk table of
// PyTorch's multi_tensor_apply (tensor index + chunk index per CTA, because the tensors live at
// unrelated addresses) degenerates here to a fixed tiling of one contiguous buffer: chunk c is
// [c*8*threads, ...), straddling tensor boundaries freely. 5000 tensors then cost nothing beyond
// their bytes, which is where the per-tensor paths (naive, PyTorch) lose most.
//
// The host derives the per-step constants (decay 1 - lr*wd, step size lr/(1-beta1^step), the
// square root of 1 - beta2^step) in double before the launch; the kernel's per-element work is
// two FMAs per moment, a sqrt, a division and two FMAs for the parameter.
//
// Variants considered (times: not yet measured on the H200; scripts/gpu/checks/t-adamw.sh measures
// the exposed ones with `d2k bench --targets expert,expert:ld4,expert:ctas8,expert:twopass`):
//   - the one-read path above vs two passes at P <= 15e6: `twopass` below (ADAMW_ONE_READ=0).
//     Above ~15e6 grads no grid can hold them on chip (registers would add ~33 MB more, at the cost
//     of a register-resident slice that cannot be indexed dynamically): not built.
//   - 4-byte accesses (one element per thread step): `ld4` below, kept to show what L3's vectors buy.
//   - 8 CTAs of 256 threads per SM instead of 4 for the update: `ctas8` below.
//   - atomicAdd of per-CTA partials into one global sum: non-deterministic (fp32 addition order
//     varies run to run), rejected.
// %VARIANT% ld4 -DADAMW_FORCE_SCALAR=1
// %VARIANT% ctas8 -DADAMW_UPDATE_CTAS_PER_SM=8
// %VARIANT% twopass -DADAMW_ONE_READ=0
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "adamw_args.h"
#include "d2k/solution.h"

#ifndef ADAMW_FORCE_SCALAR
#define ADAMW_FORCE_SCALAR 0
#endif
#ifndef ADAMW_UPDATE_CTAS_PER_SM
#define ADAMW_UPDATE_CTAS_PER_SM 4
#endif
#ifndef ADAMW_ONE_READ
#define ADAMW_ONE_READ 1
#endif

namespace {

constexpr int kNormThreads = 512;
constexpr int kUpdateThreads = 256;
constexpr int kVec = 8;               // elements per 16-byte grad vector
constexpr int kMaxPartials = 1024;    // CTAs of the norm pass (and partials summed by every update CTA)
constexpr int kNormCtasPerSm = 4;
constexpr int kOneReadThreads = 1024;
constexpr int64_t kOneReadMinP = int64_t{1} << 19;  // below: two short launches cost about the same

/// The per-step constants, fp32 as the kernel uses them (derived in double on the host).
struct Consts {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float decay, step_size, bc2_sqrt;
  double max_norm;
};

// ---- pass 1: sum of squares -------------------------------------------------------------------

__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }

/// Block-wide fp32 sum in a fixed order: shuffle-xor within warps, then warp 0 over the warps.
template <int kThreads>
__device__ float block_sum(float x) {
  __shared__ float warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = x;
  __syncthreads();
  float s = 0.f;
  if (warp == 0) {
    s = lane < kThreads / 32 ? warp_sums[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  }
  return s;  // valid in thread 0
}

/// partials[blockIdx.x] = sum of grad^2 over this CTA's grid-stride share.
template <bool kVector>
__global__ void __launch_bounds__(kNormThreads)
    grad_sumsq_partials(const __nv_bfloat16* __restrict__ grad, int64_t P, float* __restrict__ partials) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kNormThreads + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kNormThreads;
  float acc = 0.f;
  int64_t done = 0;
  if constexpr (kVector) {
    // Eight lane accumulators: each sums one position of the vector, so a thread's terms are split
    // eight ways (shorter fp32 chains), and the loads stay independent of the adds.
    float lane[kVec] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    const uint4* g4 = reinterpret_cast<const uint4*>(grad);
    const int64_t nvec = P / kVec;
    int64_t i = tid;
    for (; i + 3 * stride < nvec; i += 4 * stride) {  // four 16-byte loads in flight per thread
      uint4 w[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) w[u] = __ldcs(g4 + i + u * stride);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t q[4] = {w[u].x, w[u].y, w[u].z, w[u].w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float a = bf16_lo(q[k]), b = bf16_hi(q[k]);
          lane[2 * k] = fmaf(a, a, lane[2 * k]);
          lane[2 * k + 1] = fmaf(b, b, lane[2 * k + 1]);
        }
      }
    }
    for (; i < nvec; i += stride) {
      const uint4 w = __ldcs(g4 + i);
      const uint32_t q[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float a = bf16_lo(q[k]), b = bf16_hi(q[k]);
        lane[2 * k] = fmaf(a, a, lane[2 * k]);
        lane[2 * k + 1] = fmaf(b, b, lane[2 * k + 1]);
      }
    }
    acc = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    done = nvec * kVec;
  }
  for (int64_t i = done + tid; i < P; i += stride) {  // the tail (or everything, scalar path)
    const float a = __bfloat162float(grad[i]);
    acc = fmaf(a, a, acc);
  }
  const float s = block_sum<kNormThreads>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// ---- pass 2: the update -----------------------------------------------------------------------

/// The clipping coefficient from the partials: warp 0 sums them in double, lane j taking
/// partials j, j+32, ... in order, then a shuffle-xor tree; the same order in every CTA.
__device__ float clip_from_partials(const float* __restrict__ partials, int n, double max_norm) {
  __shared__ float clip_s;
  if (threadIdx.x < 32) {
    double s = 0.0;
    for (int j = threadIdx.x; j < n; j += 32) s += static_cast<double>(partials[j]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) clip_s = static_cast<float>(fmin(1.0, max_norm / (sqrt(s) + adamw::kClipEps)));
  }
  __syncthreads();
  return clip_s;
}

struct Elem {
  float p, m, v;
};

/// One element of AdamW, PyTorch's fused order: moments, then p*decay - step_size*m/(sqrt(v)/bc2+eps).
__device__ __forceinline__ Elem adamw_elem(float p, float g_raw, float m, float v, float clip, const Consts& c) {
  const float g = g_raw * clip;
  Elem e;
  e.m = fmaf(c.beta1, m, c.one_minus_beta1 * g);
  e.v = fmaf(c.beta2, v, c.one_minus_beta2 * g * g);
  const float denom = __fsqrt_rn(e.v) / c.bc2_sqrt + c.eps;
  e.p = fmaf(p, c.decay, -c.step_size * __fdiv_rn(e.m, denom));
  return e;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower address)
  return *reinterpret_cast<const uint32_t*>(&b);
}

struct UpdateArgs {
  const float* param;
  const __nv_bfloat16* grad;
  const float* m;
  const float* v;
  float* param_out;
  float* m_out;
  float* v_out;
  __nv_bfloat16* bf16_out;
  const float* partials;
  int npartials;
  int64_t P;
  Consts c;
};

/// Elements 8i .. 8i+7: the update from the grad vector `gw` (read by the caller from global or
/// shared memory). Six independent 16-byte loads in flight before any arithmetic, seven stores.
__device__ __forceinline__ void update_vec(const UpdateArgs& a, int64_t i, uint4 gw, float clip) {
  const float4* p4 = reinterpret_cast<const float4*>(a.param);
  const float4* m4 = reinterpret_cast<const float4*>(a.m);
  const float4* v4 = reinterpret_cast<const float4*>(a.v);
  float4 pv[2] = {__ldcs(p4 + 2 * i), __ldcs(p4 + 2 * i + 1)};
  float4 mv[2] = {__ldcs(m4 + 2 * i), __ldcs(m4 + 2 * i + 1)};
  float4 vv[2] = {__ldcs(v4 + 2 * i), __ldcs(v4 + 2 * i + 1)};
  const uint32_t gq[4] = {gw.x, gw.y, gw.z, gw.w};
  float* pf = reinterpret_cast<float*>(pv);
  float* mf = reinterpret_cast<float*>(mv);
  float* vf = reinterpret_cast<float*>(vv);
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const float g = (k & 1) ? bf16_hi(gq[k / 2]) : bf16_lo(gq[k / 2]);
    const Elem e = adamw_elem(pf[k], g, mf[k], vf[k], clip, a.c);
    pf[k] = e.p;
    mf[k] = e.m;
    vf[k] = e.v;
  }
  float4* po4 = reinterpret_cast<float4*>(a.param_out);
  float4* mo4 = reinterpret_cast<float4*>(a.m_out);
  float4* vo4 = reinterpret_cast<float4*>(a.v_out);
  __stcs(po4 + 2 * i, pv[0]);
  __stcs(po4 + 2 * i + 1, pv[1]);
  __stcs(mo4 + 2 * i, mv[0]);
  __stcs(mo4 + 2 * i + 1, mv[1]);
  __stcs(vo4 + 2 * i, vv[0]);
  __stcs(vo4 + 2 * i + 1, vv[1]);
  uint4 bw;
  bw.x = pack_bf16x2(pf[0], pf[1]);
  bw.y = pack_bf16x2(pf[2], pf[3]);
  bw.z = pack_bf16x2(pf[4], pf[5]);
  bw.w = pack_bf16x2(pf[6], pf[7]);
  __stcs(reinterpret_cast<uint4*>(a.bf16_out) + i, bw);
}

/// Elements first, first + stride, ... below P, one at a time (the tail, or the scalar path).
__device__ __forceinline__ void update_scalar(const UpdateArgs& a, int64_t first, int64_t stride, float clip) {
  for (int64_t i = first; i < a.P; i += stride) {
    const Elem e = adamw_elem(a.param[i], __bfloat162float(a.grad[i]), a.m[i], a.v[i], clip, a.c);
    a.param_out[i] = e.p;
    a.m_out[i] = e.m;
    a.v_out[i] = e.v;
    a.bf16_out[i] = __float2bfloat16_rn(e.p);
  }
}

template <bool kVector>
__global__ void __launch_bounds__(kUpdateThreads) adamw_update(UpdateArgs a) {
  const float clip = clip_from_partials(a.partials, a.npartials, a.c.max_norm);
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kUpdateThreads + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kUpdateThreads;
  int64_t done = 0;
  if constexpr (kVector) {
    const int64_t nvec = a.P / kVec;
    const uint4* g4 = reinterpret_cast<const uint4*>(a.grad);
    for (int64_t i = tid; i < nvec; i += stride) update_vec(a, i, __ldcs(g4 + i), clip);
    done = nvec * kVec;
  }
  update_scalar(a, done + tid, stride, clip);
}

// ---- the one-read path ------------------------------------------------------------------------

/// One CTA per SM, co-resident (cooperative launch). CTA b owns grad vectors [b*slice, ...) and
/// keeps them in dynamic shared memory from the norm to the update; CTA 0 also owns the tail
/// (P mod 8 elements, read from global in both phases: at most 7 elements).
__global__ void __launch_bounds__(kOneReadThreads, 1) adamw_one_read(UpdateArgs a, float* partials, int64_t slice) {
  extern __shared__ uint4 staged[];
  const int64_t nvec = a.P / kVec;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * slice;
  const int64_t end = begin + slice < nvec ? begin + slice : nvec;
  const int64_t n = end > begin ? end - begin : 0;
  const uint4* g4 = reinterpret_cast<const uint4*>(a.grad) + begin;

  // Phase 1: stage the slice and sum its squares (four vectors in flight per thread).
  float lane[kVec] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  auto square_into = [&](uint4 w) {
    const uint32_t q[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float x = bf16_lo(q[k]), y = bf16_hi(q[k]);
      lane[2 * k] = fmaf(x, x, lane[2 * k]);
      lane[2 * k + 1] = fmaf(y, y, lane[2 * k + 1]);
    }
  };
  int64_t t = threadIdx.x;
  for (; t + 3 * kOneReadThreads < n; t += 4 * kOneReadThreads) {
    uint4 w[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) w[u] = __ldcs(g4 + t + u * kOneReadThreads);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      staged[t + u * kOneReadThreads] = w[u];
      square_into(w[u]);
    }
  }
  for (; t < n; t += kOneReadThreads) {
    const uint4 w = __ldcs(g4 + t);
    staged[t] = w;
    square_into(w);
  }
  float acc = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  if (blockIdx.x == 0 && threadIdx.x < a.P - nvec * kVec) {
    const float x = __bfloat162float(a.grad[nvec * kVec + threadIdx.x]);
    acc = fmaf(x, x, acc);
  }
  const float s = block_sum<kOneReadThreads>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;

  // The grid-wide barrier: every partial written (and visible) before any CTA reads them. It
  // also orders this CTA's shared-memory stores before the reads below.
  cooperative_groups::this_grid().sync();

  // Phase 2: the clipping coefficient (the same fixed order in every CTA), then the update.
  const float clip = clip_from_partials(partials, gridDim.x, a.c.max_norm);
  for (int64_t j = threadIdx.x; j < n; j += kOneReadThreads) update_vec(a, begin + j, staged[j], clip);
  if (blockIdx.x == 0) update_scalar(a, nvec * kVec + threadIdx.x, kOneReadThreads, clip);
}

Consts make_consts(const adamw::Hyper& h) {
  Consts c;
  c.beta1 = static_cast<float>(h.beta1);
  c.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  c.beta2 = static_cast<float>(h.beta2);
  c.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  c.eps = static_cast<float>(h.eps);
  c.decay = static_cast<float>(h.decay());
  c.step_size = static_cast<float>(h.step_size());
  c.bc2_sqrt = static_cast<float>(h.bc2_sqrt());
  c.max_norm = h.max_norm;
  return c;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

float* carve(d2k::Workspace& ws) { return ws.take<float>(kMaxPartials); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The one-read path when its slice of grads fits one CTA's shared memory on every SM and a
/// 1024-thread CTA with that much shared memory fits an SM; *launched says whether it ran.
cudaError_t launch_one_read(const UpdateArgs& a, float* partials, int sms, int dev, cudaStream_t stream,
                            bool* launched) {
  *launched = false;
  const int64_t nvec = a.P / kVec;
  if (nvec < 1 || sms < 1) return cudaSuccess;
  const int64_t slice = ceil_div(nvec, sms);
  int optin = 0;
  cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return e;
  cudaFuncAttributes attr{};
  if ((e = cudaFuncGetAttributes(&attr, adamw_one_read)) != cudaSuccess) return e;
  const int64_t bytes = slice * static_cast<int64_t>(sizeof(uint4));
  if (bytes + static_cast<int64_t>(attr.sharedSizeBytes) > optin) return cudaSuccess;  // does not fit: two passes
  if ((e = cudaFuncSetAttribute(adamw_one_read, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(bytes))) != cudaSuccess)
    return e;
  int per_sm = 0;
  if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, adamw_one_read, kOneReadThreads,
                                                         static_cast<size_t>(bytes))) != cudaSuccess)
    return e;
  if (per_sm < 1) return cudaSuccess;
  const int grid = static_cast<int>(ceil_div(nvec, slice));  // <= sms: every CTA co-resident
  UpdateArgs args_copy = a;
  float* partials_arg = partials;
  int64_t slice_arg = slice;
  void* params[] = {&args_copy, &partials_arg, &slice_arg};
  e = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(adamw_one_read), dim3(grid), dim3(kOneReadThreads),
                                  params, static_cast<size_t>(bytes), stream);
  if (e == cudaErrorCooperativeLaunchTooLarge) {  // not co-resident after all (e.g. a shared GPU): two passes
    (void)cudaGetLastError();
    return cudaSuccess;
  }
  *launched = e == cudaSuccess;
  return e;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const adamw::Shape s = adamw::read_shape(args);
    const adamw::Hyper h = adamw::read_hyper(args);
    const int64_t P = s.P, G = s.G;
    UpdateArgs a{};
    a.param = d2k::data<const float>(d2k::input(args, "param", kDLCUDA, d2k::dl::f32, {P}));
    a.grad = d2k::data<const __nv_bfloat16>(d2k::input(args, "grad", kDLCUDA, d2k::dl::bf16, {P}));
    a.m = d2k::data<const float>(d2k::input(args, "m", kDLCUDA, d2k::dl::f32, {P}));
    a.v = d2k::data<const float>(d2k::input(args, "v", kDLCUDA, d2k::dl::f32, {P}));
    d2k::input(args, "offsets", kDLCUDA, d2k::dl::i64, {G + 1});  // checked, not read (see the top)
    a.param_out = d2k::data<float>(d2k::output(args, "param_out", kDLCUDA, d2k::dl::f32, {P}));
    a.m_out = d2k::data<float>(d2k::output(args, "m_out", kDLCUDA, d2k::dl::f32, {P}));
    a.v_out = d2k::data<float>(d2k::output(args, "v_out", kDLCUDA, d2k::dl::f32, {P}));
    a.bf16_out = d2k::data<__nv_bfloat16>(d2k::output(args, "param_bf16_out", kDLCUDA, d2k::dl::bf16, {P}));
    a.P = P;
    a.c = make_consts(h);
    d2k::Workspace ws(args);
    float* partials = carve(ws);
    a.partials = partials;

    const bool vec = !ADAMW_FORCE_SCALAR && aligned16(a.param) && aligned16(a.grad) && aligned16(a.m) &&
                     aligned16(a.v) && aligned16(a.param_out) && aligned16(a.m_out) && aligned16(a.v_out) &&
                     aligned16(a.bf16_out);
    int dev = 0, sms = 0;
    D2K_CUDA_TRY(args, cudaGetDevice(&dev));
    D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    auto stream = static_cast<cudaStream_t>(args->stream);

    if (ADAMW_ONE_READ && vec && P >= kOneReadMinP) {
      bool launched = false;
      D2K_CUDA_TRY(args, launch_one_read(a, partials, sms, dev, stream, &launched));
      if (launched) return D2K_OK;
    }

    const int64_t units = vec ? ceil_div(P, kVec) : P;  // per-thread steps of either path
    const int norm_grid = static_cast<int>(
        std::min<int64_t>({ceil_div(units, kNormThreads), static_cast<int64_t>(sms) * kNormCtasPerSm, kMaxPartials}));
    a.npartials = norm_grid;
    const int update_grid = static_cast<int>(
        std::min<int64_t>(ceil_div(units, kUpdateThreads), static_cast<int64_t>(sms) * ADAMW_UPDATE_CTAS_PER_SM));
    if (vec) {
      grad_sumsq_partials<true><<<norm_grid, kNormThreads, 0, stream>>>(a.grad, P, partials);
      D2K_CUDA_TRY(args, cudaGetLastError());
      adamw_update<true><<<update_grid, kUpdateThreads, 0, stream>>>(a);
    } else {
      grad_sumsq_partials<false><<<norm_grid, kNormThreads, 0, stream>>>(a.grad, P, partials);
      D2K_CUDA_TRY(args, cudaGetLastError());
      adamw_update<false><<<update_grid, kUpdateThreads, 0, stream>>>(a);
    }
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
