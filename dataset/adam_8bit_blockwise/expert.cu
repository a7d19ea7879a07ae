// adam_8bit_blockwise — expert: the whole step in one pass, one quantisation block per warp.
//
// Each warp owns a block of 256 elements per iteration (8 consecutive elements per lane) and
// walks the blocks grid-stride. A lane loads its 8 params and grads as two 16-byte vectors each
// and its 8 codes of each state as one 8-byte vector, dequantises through the maps held in shared
// memory, runs the fp32 Adam update in registers, and writes param_out at once; the block's new
// absmax of each state is a 5-step shuffle-xor max over the warp (no shared memory, no barrier),
// and the codes are requantised against it from registers and stored as one 8-byte vector per
// lane. Nothing but the compulsory 16 B per element (and 16 B per block of absmaxes) touches DRAM.
//
// Variants considered (docs/results/adam_8bit_blockwise.md has the timings once measured):
// - requantisation by binary search over the sorted map in shared memory, as bitsandbytes'
//   quantize_2D: 8 dependent probes per state per element, whose addresses diverge across the warp
//   after the first levels (bank conflicts); at 2 x 8 probes per element the shared-memory pipe
//   (one 128-byte wavefront per clock per SM) needs about as long as HBM needs for the 16 bytes, so
//   it competes with the stream. Kept as the variant `bsearch`.
// - the arithmetic kernel (`arith`, the default until 2026-12-03): the code from the map's structure
//   (adam8::nearest_code_arith): the decade by six
//   comparisons, the cell by one multiply-add and a floor, two edge corrections; ~15 ALU
//   operations and no shared-memory traffic. It agrees with the exact nearest entry except within
//   a few fp32 ulps of a midpoint (the comparison admits one code step there; spec.md).
// - 4-byte scalar loads and stores (`scalar`): what the 16-byte vectors save.
// - a CTA (cub::BlockReduce) per block, as bitsandbytes launches: a barrier per block and a grid of
//   N/256 CTAs; the warp-per-block mapping needs neither.
//
// Why the arithmetic kernel runs at 50% of SOL (752.70 us on 1e8 against 377 us; issue #18): it is
// instruction-issue bound, not bandwidth bound. Its SASS spends ~1490 warp-instructions per block
// of 256 (59 registers, 4 CTAs = 32 warps per SM, no spills): each of the 16 requantisations of a
// lane is ~65 instructions with branches (nearest_code_arith's six decade compares, each a
// FSETP+SEL+FSEL, its early returns, and an IEEE division `f / 0.9f` with its FCHK test and slow-path
// call); MUFU square root and __fdividef carry their denormal scaling (FSETP + 2 FMUL each); the
// vector and scalar paths share one body of per-element bound selects. 390625 blocks x 1490 over
// 132 SMs x 4 schedulers is ~1.1M issue cycles per scheduler, 560 us at 1.98 GHz: most of the
// measured time, with the loads of a warp's next block waiting behind its own issue. The 8
// consecutive elements per lane also make every 16-byte access of the warp a 1 KB span with half of
// each sector used (two instructions per sector) and the stores partial sectors.
// - the lean kernel (the default; `lut_occ`, `lut_pf`): the requantiser by one bucket lookup
//   (adam8::nearest_code_lut: the float's bits clamped to [2^-23, 1], bits >> 16 index a 2945-word
//   table per map in shared memory built per CTA from the maps, one integer add against the
//   bucket's midpoint; ~12 instructions and one LDS per code, exactly the binary search's code on
//   every fp32 value: tests/unit/tasks/adam_8bit_blockwise); ftz MUFU forms; full blocks on a path
//   without bound tests; a lane's elements as two groups of 4, 128 apart, so each warp access is
//   one contiguous 512 B (128 B for the codes) span. ~490 warp-instructions per block, 62
//   registers (4 CTAs per SM), 25.6 KB shared memory per CTA: ~190 us of issue per 1e8, below the
//   377 us the bytes need, so the stream should set the time.
// - `lut_occ`: the same with __launch_bounds__(256, 5) (48 registers, no spills): 40 warps per SM,
//   more loads in flight if the stream still waits on latency.
// - `lut_pf`: the next block's loads issued before the current block's arithmetic (64 registers,
//   4 CTAs per SM): a warp always has a block of reads outstanding.
//
// Measured (H200, 2026-12-03, one d2k bench on the 1e8 row, docs/results/adam_8bit_blockwise.md):
// the arithmetic kernel 753.89 us (49.0% of SOL); lut 434.11 us (85.1%, 1.74x), lut_occ 436.77 us,
// lut_pf 436.55 us (within noise of lut); bsearch 1144.07 us (32.3%). The lean kernel (lut) is the
// default since; the arithmetic kernel is the variant `arith`, and `bsearch` / `scalar` build on it.
// %VARIANT% arith -DADAM8_LEAN=0
// %VARIANT% bsearch -DADAM8_LEAN=0 -DADAM8_QUANT_BSEARCH=1
// %VARIANT% scalar -DADAM8_LEAN=0 -DADAM8_FORCE_SCALAR=1
// %VARIANT% lut_occ -DADAM8_MIN_CTAS=5
// %VARIANT% lut_pf -DADAM8_PREFETCH=1 -DADAM8_MIN_CTAS=4
#include <cuda_runtime.h>

#include <cstdint>

#include "adam8_args.h"
#include "adam8_codes.h"
#include "d2k/solution.h"

#ifndef ADAM8_QUANT_BSEARCH
#define ADAM8_QUANT_BSEARCH 0
#endif
#ifndef ADAM8_FORCE_SCALAR
#define ADAM8_FORCE_SCALAR 0
#endif
#ifndef ADAM8_LEAN
#define ADAM8_LEAN 1
#endif
#ifndef ADAM8_PREFETCH
#define ADAM8_PREFETCH 0
#endif
#ifndef ADAM8_MIN_CTAS
#define ADAM8_MIN_CTAS 1
#endif

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kPerLane = adam8::kBlock / 32;  // 8 elements per lane
static_assert(kPerLane == 8, "a lane's elements are two float4 and one 8-byte code vector");

/// Per-step constants, derived on the host in double and rounded once.
struct Consts {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, eps_hat, decay;
};

struct Tensors {
  const float* param;
  const float* grad;
  const uint8_t* mq;
  const uint8_t* vq;
  const float* ma;
  const float* va;
  float* p_out;
  uint8_t* mq_out;
  uint8_t* vq_out;
  float* ma_out;
  float* va_out;
  int64_t N, NB;
  bool vector;  ///< every pointer aligned for the 16- and 8-byte accesses
};

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

#if !ADAM8_LEAN
/// One lane's 8 elements of a block.
struct Lane {
  float p[kPerLane], g[kPerLane];
  uint8_t cm[kPerLane], cv[kPerLane];
};

__device__ __forceinline__ void unpack8(uint2 w, uint8_t* c) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    c[k] = static_cast<uint8_t>(w.x >> (8 * k));
    c[k + 4] = static_cast<uint8_t>(w.y >> (8 * k));
  }
}
__device__ __forceinline__ uint2 pack8(const uint8_t* c) {
  uint2 w{0u, 0u};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    w.x |= static_cast<uint32_t>(c[k]) << (8 * k);
    w.y |= static_cast<uint32_t>(c[k + 4]) << (8 * k);
  }
  return w;
}

/// Loads a lane's elements from `base`: vectors (evict-first: every byte is read once) for a full
/// block of aligned tensors, else element by element within N.
__device__ __forceinline__ void load_lane(const Tensors& t, int64_t base, bool vec, Lane& l) {
  if (vec) {
    const float4* p4 = reinterpret_cast<const float4*>(t.param + base);
    const float4* g4 = reinterpret_cast<const float4*>(t.grad + base);
    const float4 p0 = __ldcs(p4), p1 = __ldcs(p4 + 1), g0 = __ldcs(g4), g1 = __ldcs(g4 + 1);
    const uint2 wm = __ldcs(reinterpret_cast<const uint2*>(t.mq + base));
    const uint2 wv = __ldcs(reinterpret_cast<const uint2*>(t.vq + base));
    l.p[0] = p0.x; l.p[1] = p0.y; l.p[2] = p0.z; l.p[3] = p0.w;
    l.p[4] = p1.x; l.p[5] = p1.y; l.p[6] = p1.z; l.p[7] = p1.w;
    l.g[0] = g0.x; l.g[1] = g0.y; l.g[2] = g0.z; l.g[3] = g0.w;
    l.g[4] = g1.x; l.g[5] = g1.y; l.g[6] = g1.z; l.g[7] = g1.w;
    unpack8(wm, l.cm);
    unpack8(wv, l.cv);
    return;
  }
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const bool in = base + k < t.N;
    l.p[k] = in ? t.param[base + k] : 0.0f;
    l.g[k] = in ? t.grad[base + k] : 0.0f;
    l.cm[k] = in ? t.mq[base + k] : static_cast<uint8_t>(adam8::kSignedZero);
    l.cv[k] = in ? t.vq[base + k] : static_cast<uint8_t>(0);
  }
}

/// MUFU square root (about 1 ulp): with __fdividef (2 ulps) the update is within a few ulps, which
/// param_out's rtol 3e-6 admits; the IEEE sequences cost ~20 instructions per
/// element in a kernel whose instruction issue is close to its memory time.
__device__ __forceinline__ float sqrt_approx(float x) {
  float r;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ int quantise(const float* code, float x, bool is_signed) {
#if ADAM8_QUANT_BSEARCH
  (void)is_signed;
  return adam8::nearest_code_bsearch(code, x);
#else
  (void)code;
  return adam8::nearest_code_arith(x, is_signed);
#endif
}

__global__ void __launch_bounds__(kThreads) adam8_blockwise(const __grid_constant__ adam8::CodeMaps maps,
                                                            const Tensors t, const Consts c) {
  __shared__ float code_m[adam8::kCodes], code_v[adam8::kCodes];
  for (int k = threadIdx.x; k < adam8::kCodes; k += kThreads) {
    code_m[k] = maps.m[k];
    code_v[k] = maps.v[k];
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); b < t.NB; b += stride) {
    const int64_t base = b * adam8::kBlock + lane * kPerLane;
    const bool vec = !ADAM8_FORCE_SCALAR && t.vector && (b + 1) * adam8::kBlock <= t.N;  // warp-uniform
    Lane l;
    load_lane(t, base, vec, l);
    const float am = __ldg(t.ma + b), av = __ldg(t.va + b);

    // Dequantise, update the moments and the param; the lane's share of the new absmaxes.
    float m1[kPerLane], v1[kPerLane], mx = 0.0f, vx = 0.0f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const bool in = vec || base + k < t.N;
      const float g = l.g[k];
      const float mn = fmaf(c.beta1, code_m[l.cm[k]] * am, c.one_minus_beta1 * g);
      const float vn = fmaf(c.beta2, code_v[l.cv[k]] * av, c.one_minus_beta2 * g * g);
      m1[k] = in ? mn : 0.0f;
      v1[k] = in ? vn : 0.0f;
      mx = fmaxf(mx, fabsf(m1[k]));
      vx = fmaxf(vx, v1[k]);
      l.p[k] = (l.p[k] + c.step_size * __fdividef(mn, sqrt_approx(vn) + c.eps_hat)) * c.decay;
    }
    if (vec) {
      float4* o4 = reinterpret_cast<float4*>(t.p_out + base);
      __stcs(o4, make_float4(l.p[0], l.p[1], l.p[2], l.p[3]));
      __stcs(o4 + 1, make_float4(l.p[4], l.p[5], l.p[6], l.p[7]));
    } else {
#pragma unroll
      for (int k = 0; k < kPerLane; ++k)
        if (base + k < t.N) t.p_out[base + k] = l.p[k];
    }

    // The block's absmaxes, then the codes against them.
    mx = warp_max(mx);
    vx = warp_max(vx);
    const float inv_m = mx > 0.0f ? __frcp_rn(mx) : 0.0f, inv_v = vx > 0.0f ? __frcp_rn(vx) : 0.0f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      l.cm[k] = static_cast<uint8_t>(mx > 0.0f ? quantise(code_m, m1[k] * inv_m, true) : adam8::kSignedZero);
      l.cv[k] = static_cast<uint8_t>(vx > 0.0f ? quantise(code_v, v1[k] * inv_v, false) : 0);
    }
    if (vec) {
      __stcs(reinterpret_cast<uint2*>(t.mq_out + base), pack8(l.cm));
      __stcs(reinterpret_cast<uint2*>(t.vq_out + base), pack8(l.cv));
    } else {
#pragma unroll
      for (int k = 0; k < kPerLane; ++k)
        if (base + k < t.N) {
          t.mq_out[base + k] = l.cm[k];
          t.vq_out[base + k] = l.cv[k];
        }
    }
    if (lane == 0) {
      t.ma_out[b] = mx;
      t.va_out[b] = vx;
    }
  }
}

#endif  // !ADAM8_LEAN

#if ADAM8_LEAN
// The lean form (variants `lut`, `lut_occ`, `lut_pf`; the header says why): the same one-pass
// warp-per-block algorithm with what the issue-bound default spends per element taken out.
namespace lean {

constexpr int kHalf = adam8::kBlock / 2;  // a lane's two groups of 4 elements lie 128 apart

/// The maps for the dequantising gathers and the requantiser's buckets (adam8::lut_word).
struct Tables {
  float code_m[adam8::kCodes], code_v[adam8::kCodes];
  uint32_t lut_m[adam8::kLutEntries], lut_v[adam8::kLutEntries];
};

/// ftz forms: one MUFU each, without the denormal scaling around it. A flushed v' is below 1e-38,
/// far under bc2 * eps in the divisor (3e-10 at the first step with eps 1e-8).
__device__ __forceinline__ float sqrt_ftz(float x) {
  float r;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float rcp_ftz(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ int quantise(const Tables& tb, float x, bool is_signed) {
  return adam8::nearest_code_lut(is_signed ? tb.lut_m : tb.lut_v, x, is_signed);
}

/// A lane's inputs of one block: elements base + k (k < 4) and base + 128 + k - 4 (k >= 4), so
/// every 16-byte param/grad access and every 4-byte code access of the warp is one contiguous
/// 512 B / 128 B span.
struct Raw {
  float p[8], g[8];
  uint32_t wm[2], wv[2];  ///< the codes, 4 per word
  float am, av;
};

__device__ __forceinline__ int64_t lane_base(int64_t b, int lane) { return b * adam8::kBlock + lane * 4; }

/// A whole block of aligned tensors: vectors, evict-first (every byte is read once).
__device__ __forceinline__ void load_full(const Tensors& t, int64_t b, int lane, Raw& r) {
  const int64_t base = lane_base(b, lane);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t i = base + h * kHalf;
    const float4 pv = __ldcs(reinterpret_cast<const float4*>(t.param + i));
    const float4 gv = __ldcs(reinterpret_cast<const float4*>(t.grad + i));
    r.p[4 * h] = pv.x; r.p[4 * h + 1] = pv.y; r.p[4 * h + 2] = pv.z; r.p[4 * h + 3] = pv.w;
    r.g[4 * h] = gv.x; r.g[4 * h + 1] = gv.y; r.g[4 * h + 2] = gv.z; r.g[4 * h + 3] = gv.w;
    r.wm[h] = __ldcs(reinterpret_cast<const unsigned int*>(t.mq + i));
    r.wv[h] = __ldcs(reinterpret_cast<const unsigned int*>(t.vq + i));
  }
  r.am = __ldg(t.ma + b);
  r.av = __ldg(t.va + b);
}

/// The last partial block, or unaligned tensors: element by element within N. Out-of-range
/// elements load as zero grads and zero codes, whose m' and v' are 0: they move neither absmax.
__device__ __forceinline__ void load_partial(const Tensors& t, int64_t b, int lane, Raw& r) {
  const int64_t base = lane_base(b, lane);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    r.wm[h] = r.wv[h] = 0u;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t i = base + h * kHalf + k;
      const bool in = i < t.N;
      r.p[4 * h + k] = in ? t.param[i] : 0.0f;
      r.g[4 * h + k] = in ? t.grad[i] : 0.0f;
      r.wm[h] |= static_cast<uint32_t>(in ? t.mq[i] : adam8::kSignedZero) << (8 * k);
      r.wv[h] |= static_cast<uint32_t>(in ? t.vq[i] : 0) << (8 * k);
    }
  }
  r.am = __ldg(t.ma + b);
  r.av = __ldg(t.va + b);
}

/// Dequantise, update, reduce the absmaxes over the warp, requantise, store (kFull: vectors; else
/// within N). `r` is consumed: its params become param_out, its code words the new codes.
template <bool kFull>
__device__ __forceinline__ void compute_block(const Tensors& t, const Consts& c, const Tables& tb, int64_t b,
                                              int lane, Raw& r) {
  const int64_t base = lane_base(b, lane);
  float m1[8], v1[8], mx = 0.0f, vx = 0.0f;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const uint32_t qm = (r.wm[k >> 2] >> (8 * (k & 3))) & 0xffu, qv = (r.wv[k >> 2] >> (8 * (k & 3))) & 0xffu;
    m1[k] = fmaf(c.beta1, tb.code_m[qm] * r.am, c.one_minus_beta1 * r.g[k]);
    v1[k] = fmaf(c.beta2, tb.code_v[qv] * r.av, c.one_minus_beta2 * r.g[k] * r.g[k]);
    mx = fmaxf(mx, fabsf(m1[k]));
    vx = fmaxf(vx, v1[k]);
    r.p[k] = (r.p[k] + c.step_size * (m1[k] * rcp_ftz(sqrt_ftz(v1[k]) + c.eps_hat))) * c.decay;
  }
  if (kFull) {
    __stcs(reinterpret_cast<float4*>(t.p_out + base), make_float4(r.p[0], r.p[1], r.p[2], r.p[3]));
    __stcs(reinterpret_cast<float4*>(t.p_out + base + kHalf), make_float4(r.p[4], r.p[5], r.p[6], r.p[7]));
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int64_t i = base + (k >> 2) * kHalf + (k & 3);
      if (i < t.N) t.p_out[i] = r.p[k];
    }
  }

  // The block's absmaxes, then the codes against them (a zero absmax gives x = 0: the zero code).
  mx = warp_max(mx);
  vx = warp_max(vx);
  const float inv_m = mx > 0.0f ? __frcp_rn(mx) : 0.0f, inv_v = vx > 0.0f ? __frcp_rn(vx) : 0.0f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    r.wm[h] = r.wv[h] = 0u;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      r.wm[h] |= static_cast<uint32_t>(quantise(tb, m1[4 * h + k] * inv_m, true)) << (8 * k);
      r.wv[h] |= static_cast<uint32_t>(quantise(tb, v1[4 * h + k] * inv_v, false)) << (8 * k);
    }
  }
  if (kFull) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      __stcs(reinterpret_cast<unsigned int*>(t.mq_out + base + h * kHalf), r.wm[h]);
      __stcs(reinterpret_cast<unsigned int*>(t.vq_out + base + h * kHalf), r.wv[h]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int64_t i = base + (k >> 2) * kHalf + (k & 3);
      if (i < t.N) {
        t.mq_out[i] = static_cast<uint8_t>(r.wm[k >> 2] >> (8 * (k & 3)));
        t.vq_out[i] = static_cast<uint8_t>(r.wv[k >> 2] >> (8 * (k & 3)));
      }
    }
  }
  if (lane == 0) {
    t.ma_out[b] = mx;
    t.va_out[b] = vx;
  }
}

}  // namespace lean

__global__ void __launch_bounds__(kThreads, ADAM8_MIN_CTAS)
    adam8_lean(const __grid_constant__ adam8::CodeMaps maps, const Tensors t, const Consts c) {
  __shared__ lean::Tables tb;
  for (int k = threadIdx.x; k < adam8::kCodes; k += kThreads) {
    tb.code_m[k] = maps.m[k];
    tb.code_v[k] = maps.v[k];
  }
  // The buckets from the maps (host/device code of adam8_codes.h, which the CPU tests check
  // against the binary search over every bucket): 12 entries of each map per thread, once per
  // CTA; each is a chain of 8 dependent shared-memory probes, so the loop is unrolled for several
  // chains in flight (about a microsecond at the kernel's start).
  __syncthreads();
#pragma unroll 4
  for (int k = threadIdx.x; k < adam8::kLutEntries; k += kThreads) {
    tb.lut_m[k] = adam8::lut_word(tb.code_m, k);
    tb.lut_v[k] = adam8::lut_word(tb.code_v, k);
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarps;
  int64_t b = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  lean::Raw r;
  if (t.vector) {
    const int64_t full = t.N / adam8::kBlock;  // every block but a partial last one
#if ADAM8_PREFETCH
    // One block's loads in flight while the warp computes the one before: a warp is never
    // without outstanding reads between its first and its last block.
    if (b < full) lean::load_full(t, b, lane, r);
    for (; b < full; b += stride) {
      lean::Raw next;
      if (b + stride < full) lean::load_full(t, b + stride, lane, next);
      lean::compute_block<true>(t, c, tb, b, lane, r);
      r = next;
    }
#else
    for (; b < full; b += stride) {
      lean::load_full(t, b, lane, r);
      lean::compute_block<true>(t, c, tb, b, lane, r);
    }
#endif
  }
  for (; b < t.NB; b += stride) {  // the partial last block; every block of unaligned tensors
    lean::load_partial(t, b, lane, r);
    lean::compute_block<false>(t, c, tb, b, lane, r);
  }
}
#endif  // ADAM8_LEAN

bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)adam8::read_shape(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const adam8::Shape s = adam8::read_shape(args);
    const adam8::Hyper h = adam8::read_hyper(args);
    const int64_t N = s.N, NB = s.NB;
    Tensors t{};
    t.param = d2k::data<const float>(d2k::input(args, "param", kDLCUDA, d2k::dl::f32, {N}));
    t.grad = d2k::data<const float>(d2k::input(args, "grad", kDLCUDA, d2k::dl::f32, {N}));
    t.mq = d2k::data<const uint8_t>(d2k::input(args, "m_q", kDLCUDA, d2k::dl::u8, {N}));
    t.vq = d2k::data<const uint8_t>(d2k::input(args, "v_q", kDLCUDA, d2k::dl::u8, {N}));
    t.ma = d2k::data<const float>(d2k::input(args, "m_absmax", kDLCUDA, d2k::dl::f32, {NB}));
    t.va = d2k::data<const float>(d2k::input(args, "v_absmax", kDLCUDA, d2k::dl::f32, {NB}));
    t.p_out = d2k::data<float>(d2k::output(args, "param_out", kDLCUDA, d2k::dl::f32, {N}));
    t.mq_out = d2k::data<uint8_t>(d2k::output(args, "m_q_out", kDLCUDA, d2k::dl::u8, {N}));
    t.vq_out = d2k::data<uint8_t>(d2k::output(args, "v_q_out", kDLCUDA, d2k::dl::u8, {N}));
    t.ma_out = d2k::data<float>(d2k::output(args, "m_absmax_out", kDLCUDA, d2k::dl::f32, {NB}));
    t.va_out = d2k::data<float>(d2k::output(args, "v_absmax_out", kDLCUDA, d2k::dl::f32, {NB}));
    t.N = N;
    t.NB = NB;
    t.vector = aligned(t.param, 16) && aligned(t.grad, 16) && aligned(t.p_out, 16) && aligned(t.mq, 8) &&
               aligned(t.vq, 8) && aligned(t.mq_out, 8) && aligned(t.vq_out, 8);
    const Consts c{static_cast<float>(h.beta1),       static_cast<float>(1.0 - h.beta1),
                   static_cast<float>(h.beta2),       static_cast<float>(1.0 - h.beta2),
                   static_cast<float>(h.step_size()), static_cast<float>(h.eps_hat()),
                   static_cast<float>(h.decay())};
    const adam8::CodeMaps maps = adam8::make_code_maps();

    // A grid the machine holds at once (as many CTAs as fit per SM), walking the blocks.
    int dev = 0, sms = 0, per_sm = 0;
    D2K_CUDA_TRY(args, cudaGetDevice(&dev));
    D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
#if ADAM8_LEAN
    const auto kernel = adam8_lean;
#else
    const auto kernel = adam8_blockwise;
#endif
    D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
    const int64_t need = (NB + kWarps - 1) / kWarps;
    const int64_t cap = static_cast<int64_t>(sms) * (per_sm > 0 ? per_sm : 1);
    const auto grid = static_cast<unsigned>(need < cap ? need : cap);
    kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(args->stream)>>>(maps, t, c);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
