// fused_add_rmsnorm — expert: one pass, each row held in registers between the add and the scale.
//
//   residual_out = bf16(x + residual);  out = bf16(r * rsqrt(mean(r^2) + eps) * weight),  r = residual_out
//
// Compulsory traffic is 8*T*H + 2*H bytes (x, residual read; out, residual_out written; weight
// once). The kernel reads each input element once with 16-byte loads, writes residual_out as soon
// as the add is done, keeps the rounded row (packed bf16) in registers through the fp32 row
// reduction (warp shuffles, then one shared-memory exchange between the warps of a row), and writes
// out from registers: one launch, no intermediate in global memory.
//
// Shape of the work: a row is split over TPR threads (a sub-warp, a warp or several warps), each
// holding VPT 16-byte vectors of x and residual; a CTA holds RPC rows. The row length is a template
// parameter (kNvec = H/8) for the public hidden sizes, so loops are fully unrolled with no bounds
// checks; every other H % 8 == 0 up to 16384 goes through bounds-checked generic instantiations
// (sub-warp or warp rows for short H, a CTA of ceil(H/32) threads rounded to whole warps above);
// 16384 < H <= 65536 stages the row in shared memory; misaligned tensors or H % 8 != 0 take a
// scalar two-pass fallback (correct, not tuned). Grid: one CTA per row group (T/RPC CTAs).
//
// Variants (H200, 2026-11-29; cold L2 via a 256 MB memset before each sample, CUDA-event median of
// 30 (run 1) / 60 (run 2) samples, timed by the former stand-alone variant driver; full tables in
// docs/results/fused_add_rmsnorm-variants.md). The losing ones are gone from this file; the one kept
// as a build variant (built as expert_<name>.so, timed with `d2k bench --targets expert:<name>`):
// %VARIANT% generic -DFAR_GENERIC_ONLY=1
// Times in us; SOL = (8TH + 2H) B / 4.3 TB/s =
// 31.2 / 249.7 / 1.71 / 312.2 us for 4096x4096 / 16384x8192 / 128x7168 / 32768x5120.
//   variant (VPT x TPR x RPC)          4096^2   16384x8192  128x7168  32768x5120  verdict
//   two memcpy D2D of the same bytes    39.7     259.6       8.8       320.3      the copy ceiling per shape
//   1 x H/8 x 1 (a vector per thread)   37.5     326.9       6.7       343.0      lost: too few loads in flight
//   2 x H/16 x 1                        38.0     262.5       6.6       326.0      won at 7168 (kept there)
//   4 x H/32 x 1                        37.5     261.1       6.8       321.2      won at 8192 and 5120 (kept)
//   8 per thread (7 at 7168), 1-2 rows  37.8     261.2       6.8       -          tie
//   warp per row (16..28 x 32 x 4)      37.3     -           13.2      326.8      tie at 4096; lost at 7168 (few CTAs)
//   4 x 128 x 4 (512-thread CTAs)       42.2     -           -         -          lost: coarser tail
//   persistent grid (grid-stride rows)  38.8     275.2       -         338.6      lost 3-5%: per-CTA row loop serialises
//   ld/st .cs (streaming) both ways     39.6     282.7       6.5       336.6      lost up to 8% at large T
//   ld .cs only / L2 evict_first policy 38.7     270.6       6.9       328.7      lost 2-4%
//   ld.nc.L1::no_allocate.L2::256B      39.3     274.0       6.9       334.1      lost 3-5%
//   generic: runtime width, 4 per thr   38.3     262.2       6.8       325.1      +0.4..2% over the specialised tiling
//   generic: power-of-two width         42.0     262.5       6.6       345.0      lost (half-empty slots): replaced
//   long-row path (row staged in smem)  67.8     355.0       6.8       549.4      only for H > 16384, where registers spill
// The chosen kernel reaches 95-97% of SOL on the two large shapes, within 1% of the memcpy ceiling.
// At 4096x4096 the event time (37.8 us, 82.6%) carries a fixed ~5 us of launch latency and of
// write-back of the flush's dirty L2 lines; Nsight Compute measures the kernel itself at 32.3 us
// (96.6%); memcpy of the same bytes is slower (39.7 us). 128x7168 (7.3 MB) is latency-bound:
// 6.6 us by events, 4.6 us kernel duration, against 1.7 us SOL; 128 CTAs on 132 SMs, one DRAM
// round trip for the loads and one for the stores.
//
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace far {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  // cvt.rn.bf16x2.f32: one instruction for two round-to-nearest-even conversions.
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

/// a + b for 8 bf16 lanes, rounded to bf16; accumulates the squares of the rounded values.
__device__ __forceinline__ uint32_t add_round_square(uint32_t a, uint32_t b, float& sum_sq) {
  const float lo = bf16_lo(a) + bf16_lo(b);
  const float hi = bf16_hi(a) + bf16_hi(b);
  const uint32_t r = pack_bf16x2(lo, hi);
  // The norm is taken over the bf16-rounded residual (the value the caller will see).
  const float rl = bf16_lo(r), rh = bf16_hi(r);
  sum_sq = fmaf(rl, rl, sum_sq);
  sum_sq = fmaf(rh, rh, sum_sq);
  return r;
}

__device__ __forceinline__ uint32_t scale_pair(uint32_t r, uint32_t w, float inv_rms) {
  return pack_bf16x2(bf16_lo(r) * inv_rms * bf16_lo(w), bf16_hi(r) * inv_rms * bf16_hi(w));
}

/// Fused add + RMSNorm with each row resident in registers.
///   VPT  16-byte vectors (8 bf16) per thread and row
///   TPR  threads per row: 8, 16 (sub-warp), 32 (warp per row) or a multiple of 32 (CTA or part);
///        0: blockDim.x threads per row (a runtime multiple of 32, RPC must be 1)
///   RPC  rows per CTA
///   kNvec  H / 8 when known at compile time (0: runtime nvec, bounds-checked)
/// Plain (default-policy) loads and stores: every cache hint tried lost (table at the top).
/// Grid-stride over row groups: one group per CTA, plus the rows beyond a 2^31-1 grid.
constexpr bool valid_row_width(int tpr) { return tpr == 0 || (tpr <= 32 ? 32 % tpr == 0 : tpr % 32 == 0); }
constexpr int kMaxRuntimeRowThreads = 512;  ///< CTA size cap of the runtime-width (TPR = 0) path
template <int VPT, int TPR, int RPC, int kNvec>
__global__ void __launch_bounds__(TPR ? TPR * RPC : kMaxRuntimeRowThreads)
    rmsnorm_rows_in_registers(const bf16* __restrict__ x, const bf16* __restrict__ residual,
                              const bf16* __restrict__ weight, bf16* __restrict__ out,
                              bf16* __restrict__ residual_out, int64_t T, int nvec_rt, float inv_h,
                              float eps) {
  static_assert(valid_row_width(TPR), "TPR must divide or be a multiple of 32");
  static_assert(TPR * RPC <= 1024, "CTA too large");
  static_assert(TPR != 0 || RPC == 1, "a runtime row width needs one row per CTA");
  constexpr bool kRuntimeTpr = TPR == 0;
  // Warps per row: compile-time, or up to 32 when the row width comes from blockDim.x.
  constexpr int kWarpSlots = kRuntimeTpr ? 32 : (TPR > 32 ? TPR / 32 : 1);
  constexpr int kShuffleWidth = (kRuntimeTpr || TPR >= 32) ? 32 : TPR;
  const int tpr = kRuntimeTpr ? static_cast<int>(blockDim.x) : TPR;
  const int warps_per_row = kRuntimeTpr ? tpr / 32 : kWarpSlots;
  // Exact tiling: every (thread, k) slot holds a vector, so no bounds checks are compiled.
  constexpr bool kExact = kNvec > 0 && VPT * TPR == kNvec;
  // Large VPT: load the weight after the reduction, to keep registers for x and residual.
  constexpr bool kPreloadWeight = VPT <= 8;

  const int nvec = kNvec > 0 ? kNvec : nvec_rt;
  const int64_t row_stride = static_cast<int64_t>(nvec);  // in 16-byte vectors
  const int local_row = kRuntimeTpr ? 0 : static_cast<int>(threadIdx.x) / TPR;
  const int lane = kRuntimeTpr ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % TPR;
  // Double-buffered by iteration parity so one barrier per row group suffices.
  __shared__ float partial[2][RPC][kWarpSlots];

  const uint4* w4 = reinterpret_cast<const uint4*>(weight);
  uint4 wv[kPreloadWeight ? VPT : 1];
  if constexpr (kPreloadWeight) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int v = lane + k * tpr;
      if (kExact || v < nvec) wv[k] = __ldg(w4 + v);  // weight is shared by all rows: keep it cached
    }
  }

  const int64_t groups = (T + RPC - 1) / RPC;
  int parity = 0;
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t row = g * RPC + local_row;
    const bool row_ok = row < T;
    const int64_t base = (row_ok ? row : 0) * row_stride;
    const uint4* x4 = reinterpret_cast<const uint4*>(x) + base;
    const uint4* r4 = reinterpret_cast<const uint4*>(residual) + base;
    uint4* ro4 = reinterpret_cast<uint4*>(residual_out) + base;
    uint4* o4 = reinterpret_cast<uint4*>(out) + base;

    // All loads of the row issued before any use: VPT*2 16-byte requests in flight per thread.
    uint4 a[VPT], b[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int v = lane + k * tpr;
      if (row_ok && (kExact || v < nvec)) {
        a[k] = x4[v];
        b[k] = r4[v];
      }
    }

    float sum_sq = 0.f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int v = lane + k * tpr;
      if (row_ok && (kExact || v < nvec)) {
        uint4 r;
        r.x = add_round_square(a[k].x, b[k].x, sum_sq);
        r.y = add_round_square(a[k].y, b[k].y, sum_sq);
        r.z = add_round_square(a[k].z, b[k].z, sum_sq);
        r.w = add_round_square(a[k].w, b[k].w, sum_sq);
        a[k] = r;  // the rounded residual stays in registers for the scale pass
        ro4[v] = r;
      }
    }

    // Row reduction: butterfly within the warp (or sub-warp), then across the row's warps.
#pragma unroll
    for (int off = kShuffleWidth / 2; off > 0; off >>= 1) sum_sq += __shfl_xor_sync(0xFFFFFFFFu, sum_sq, off);
    if constexpr (kWarpSlots > 1) {
      if ((lane & 31) == 0) partial[parity][local_row][lane >> 5] = sum_sq;
      __syncthreads();
      sum_sq = 0.f;
#pragma unroll
      for (int i = 0; i < kWarpSlots; ++i)
        if (!kRuntimeTpr || i < warps_per_row) sum_sq += partial[parity][local_row][i];
      parity ^= 1;
    }
    const float inv_rms = rsqrtf(sum_sq * inv_h + eps);

#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int v = lane + k * tpr;
      if (row_ok && (kExact || v < nvec)) {
        uint4 w;
        if constexpr (kPreloadWeight) {
          w = wv[k];
        } else {
          w = __ldg(w4 + v);
        }
        uint4 o;
        o.x = scale_pair(a[k].x, w.x, inv_rms);
        o.y = scale_pair(a[k].y, w.y, inv_rms);
        o.z = scale_pair(a[k].z, w.z, inv_rms);
        o.w = scale_pair(a[k].w, w.w, inv_rms);
        o4[v] = o;
      }
    }
  }
}

/// Fallback for tensors that are not 16-byte aligned or H % 8 != 0: a CTA per row, scalar
/// accesses, two passes over the inputs (the second recomputes x + residual). Correct, not tuned.
constexpr int kFallbackThreads = 256;
__global__ void __launch_bounds__(kFallbackThreads)
    rmsnorm_row_scalar_two_pass(const bf16* __restrict__ x, const bf16* __restrict__ residual,
                                const bf16* __restrict__ weight, bf16* __restrict__ out,
                                bf16* __restrict__ residual_out, int64_t T, int64_t H, float inv_h,
                                float eps) {
  __shared__ float warp_sums[kFallbackThreads / 32];
  for (int64_t row = blockIdx.x; row < T; row += gridDim.x) {
    const int64_t base = row * H;
    float sum_sq = 0.f;
    for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
      const bf16 r = __float2bfloat16_rn(__bfloat162float(x[base + h]) + __bfloat162float(residual[base + h]));
      residual_out[base + h] = r;
      const float rf = __bfloat162float(r);
      sum_sq = fmaf(rf, rf, sum_sq);
    }
    for (int off = 16; off > 0; off >>= 1) sum_sq += __shfl_xor_sync(0xFFFFFFFFu, sum_sq, off);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum_sq;
    __syncthreads();
    sum_sq = 0.f;
    for (int i = 0; i < kFallbackThreads / 32; ++i) sum_sq += warp_sums[i];
    __syncthreads();  // warp_sums is rewritten by the next row
    const float inv_rms = rsqrtf(sum_sq * inv_h + eps);
    for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
      const float rf =
          __bfloat162float(__float2bfloat16_rn(__bfloat162float(x[base + h]) + __bfloat162float(residual[base + h])));
      out[base + h] = __float2bfloat16_rn(rf * inv_rms * __bfloat162float(weight[h]));
    }
  }
}

/// Long rows (H > 16384, up to 65536): a CTA per row, the rounded row staged in shared memory
/// (2*H bytes) instead of registers, which cannot hold it at 1024 threads without spilling.
/// Loads go out kBatch vectors at a time per thread so several 16-byte requests stay in flight.
constexpr int kStagedThreads = 1024;
template <int kBatch>
__global__ void __launch_bounds__(kStagedThreads)
    rmsnorm_row_staged_in_smem(const bf16* __restrict__ x, const bf16* __restrict__ residual,
                               const bf16* __restrict__ weight, bf16* __restrict__ out,
                               bf16* __restrict__ residual_out, int64_t T, int nvec, float inv_h, float eps) {
  extern __shared__ uint4 row_smem[];  // nvec vectors
  __shared__ float warp_sums[2][kStagedThreads / 32];
  const uint4* w4 = reinterpret_cast<const uint4*>(weight);
  int parity = 0;
  for (int64_t row = blockIdx.x; row < T; row += gridDim.x) {
    const int64_t base = row * nvec;
    const uint4* x4 = reinterpret_cast<const uint4*>(x) + base;
    const uint4* r4 = reinterpret_cast<const uint4*>(residual) + base;
    uint4* ro4 = reinterpret_cast<uint4*>(residual_out) + base;
    uint4* o4 = reinterpret_cast<uint4*>(out) + base;
    float sum_sq = 0.f;
    for (int v0 = threadIdx.x; v0 < nvec; v0 += kStagedThreads * kBatch) {
      uint4 a[kBatch], b[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int v = v0 + k * kStagedThreads;
        if (v < nvec) {
          a[k] = __ldcs(x4 + v);
          b[k] = __ldcs(r4 + v);
        }
      }
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int v = v0 + k * kStagedThreads;
        if (v < nvec) {
          uint4 r;
          r.x = add_round_square(a[k].x, b[k].x, sum_sq);
          r.y = add_round_square(a[k].y, b[k].y, sum_sq);
          r.z = add_round_square(a[k].z, b[k].z, sum_sq);
          r.w = add_round_square(a[k].w, b[k].w, sum_sq);
          row_smem[v] = r;  // each thread re-reads only its own vectors: no barrier needed for these
          __stcs(ro4 + v, r);
        }
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum_sq += __shfl_xor_sync(0xFFFFFFFFu, sum_sq, off);
    if ((threadIdx.x & 31) == 0) warp_sums[parity][threadIdx.x >> 5] = sum_sq;
    __syncthreads();
    sum_sq = 0.f;
#pragma unroll
    for (int i = 0; i < kStagedThreads / 32; ++i) sum_sq += warp_sums[parity][i];
    parity ^= 1;
    const float inv_rms = rsqrtf(sum_sq * inv_h + eps);
    for (int v = threadIdx.x; v < nvec; v += kStagedThreads) {
      const uint4 r = row_smem[v];
      const uint4 w = __ldg(w4 + v);
      uint4 o;
      o.x = scale_pair(r.x, w.x, inv_rms);
      o.y = scale_pair(r.y, w.y, inv_rms);
      o.z = scale_pair(r.z, w.z, inv_rms);
      o.w = scale_pair(r.w, w.w, inv_rms);
      __stcs(o4 + v, o);
    }
  }
}

using RowKernel = void (*)(const bf16*, const bf16*, const bf16*, bf16*, bf16*, int64_t, int, float, float);

/// One instantiation of rmsnorm_rows_in_registers and its shape.
struct RowConfig {
  RowKernel kernel;
  int vpt, tpr, rpc, nvec;  ///< tpr 0: runtime row width (runtime_tpr); nvec 0: generic (bounds-checked)
  int runtime_tpr = 0;      ///< threads per row (a multiple of 32) when tpr == 0
  int threads_per_row() const { return tpr ? tpr : runtime_tpr; }
};

template <int VPT, int TPR, int RPC, int kNvec>
constexpr RowConfig row_config(int runtime_tpr = 0) {
  return RowConfig{&rmsnorm_rows_in_registers<VPT, TPR, RPC, kNvec>, VPT, TPR, RPC, kNvec, runtime_tpr};
}

/// Variant `generic` (-DFAR_GENERIC_ONLY=1): every H through the generic configurations, to time
/// what the compile-time row length of the specialised ones is worth (table: +0.4..2%).
#ifndef FAR_GENERIC_ONLY
#define FAR_GENERIC_ONLY 0
#endif
constexpr bool kGenericOnly = FAR_GENERIC_ONLY != 0;

/// Configurations tuned for the public hidden sizes (exact tiling, compile-time row length).
inline bool specialised_config(int64_t H, RowConfig* cfg) {
  switch (H) {
    case 4096: *cfg = row_config<4, 128, 1, 512>(); return true;
    case 5120: *cfg = row_config<4, 160, 1, 640>(); return true;
    case 7168: *cfg = row_config<2, 448, 1, 896>(); return true;
    case 8192: *cfg = row_config<4, 256, 1, 1024>(); return true;
    default: return false;
  }
}

/// Generic register-path configuration for any nvec = H/8 in [1, kMaxRegisterNvec], four vectors
/// per thread: short rows share a warp (8 or 16 threads per row) or take a warp each, several rows
/// per CTA; longer rows take a CTA of ceil(nvec/4) threads rounded up to whole warps, so at most 31
/// threads' slots of a row go unused (a power-of-two width wasted up to half: measured 345 vs
/// 322 us at H=5120).
constexpr int64_t kMaxRegisterNvec = 4 * 512;  // H <= 16384
inline RowConfig generic_config(int64_t nvec) {
  if (nvec <= 4 * 8) return row_config<4, 8, 32, 0>();
  if (nvec <= 4 * 16) return row_config<4, 16, 16, 0>();
  if (nvec <= 4 * 32) return row_config<4, 32, 8, 0>();
  const int threads = static_cast<int>(((nvec + 3) / 4 + 31) / 32 * 32);  // 64..kMaxRuntimeRowThreads
  return row_config<4, 0, 1, 0>(threads);
}

constexpr int64_t kMaxNvec = 8 * 1024;  // H <= 65536 (definition.json's axis maximum)
constexpr int kStagedBatch = 4;

/// Launches the shared-memory-staged kernel for long rows (one CTA per row, grid-stride).
inline cudaError_t launch_staged(const bf16* x, const bf16* residual, const bf16* weight, bf16* out,
                                 bf16* residual_out, int64_t T, int64_t H, float eps, cudaStream_t stream) {
  const int nvec = static_cast<int>(H / 8);
  const size_t smem = static_cast<size_t>(nvec) * sizeof(uint4);
  auto kernel = &rmsnorm_row_staged_in_smem<kStagedBatch>;
  // Above 48 KB of dynamic shared memory needs an explicit opt-in per kernel.
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(T, 2147483647));
  kernel<<<grid, kStagedThreads, smem, stream>>>(x, residual, weight, out, residual_out, T, nvec,
                                                 1.0f / static_cast<float>(H), eps);
  return cudaGetLastError();
}

/// Launches `cfg` on the tensors; returns the first CUDA error.
inline cudaError_t launch_rows(const RowConfig& cfg, const bf16* x, const bf16* residual, const bf16* weight,
                               bf16* out, bf16* residual_out, int64_t T, int64_t H, float eps,
                               cudaStream_t stream) {
  const int threads = cfg.threads_per_row() * cfg.rpc;
  // The row must fit the configuration's register slots.
  if (static_cast<int64_t>(cfg.vpt) * cfg.threads_per_row() < H / 8 || threads <= 0 || threads > 1024 ||
      (cfg.tpr == 0 && (threads % 32 != 0 || threads > kMaxRuntimeRowThreads || cfg.rpc != 1)))
    return cudaErrorInvalidValue;
  const int64_t groups = (T + cfg.rpc - 1) / cfg.rpc;
  const int64_t grid = std::min<int64_t>(groups, 2147483647);
  cfg.kernel<<<static_cast<unsigned>(grid), threads, 0, stream>>>(x, residual, weight, out, residual_out, T,
                                                                   static_cast<int>(H / 8),
                                                                   1.0f / static_cast<float>(H), eps);
  return cudaGetLastError();
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace far

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    using far::bf16;
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    const float eps = static_cast<float>(d2k::scalar_f(args, "eps"));
    if (T < 0 || H < 1) throw d2k::abi_error("expert: need T >= 0 and H >= 1");
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& res = d2k::input(args, "residual", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& w = d2k::input(args, "weight", kDLCUDA, d2k::dl::bf16, {H});
    const DLTensor& out = d2k::output(args, "out", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& res_out = d2k::output(args, "residual_out", kDLCUDA, d2k::dl::bf16, {T, H});
    if (T == 0) return D2K_OK;

    const bf16* xp = d2k::data<const bf16>(x);
    const bf16* rp = d2k::data<const bf16>(res);
    const bf16* wp = d2k::data<const bf16>(w);
    bf16* op = d2k::data<bf16>(out);
    bf16* rop = d2k::data<bf16>(res_out);
    auto stream = static_cast<cudaStream_t>(args->stream);

    const bool vectorisable = H % 8 == 0 && H / 8 <= far::kMaxNvec && far::aligned16(xp) && far::aligned16(rp) &&
                              far::aligned16(wp) && far::aligned16(op) && far::aligned16(rop);
    if (vectorisable && H / 8 > far::kMaxRegisterNvec) {
      D2K_CUDA_TRY(args, far::launch_staged(xp, rp, wp, op, rop, T, H, eps, stream));
    } else if (vectorisable) {
      far::RowConfig cfg;
      if (far::kGenericOnly || !far::specialised_config(H, &cfg)) cfg = far::generic_config(H / 8);
      D2K_CUDA_TRY(args, far::launch_rows(cfg, xp, rp, wp, op, rop, T, H, eps, stream));
    } else {
      const unsigned grid = static_cast<unsigned>(std::min<int64_t>(T, 65535 * 16));
      far::rmsnorm_row_scalar_two_pass<<<grid, far::kFallbackThreads, 0, stream>>>(
          xp, rp, wp, op, rop, T, H, 1.0f / static_cast<float>(H), eps);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    return D2K_OK;
  });
}
