// rope_qk_norm — expert: split, per-head RMSNorm and neox RoPE of q and k, and the v copy, in one
// pass over the packed qkv rows.
//
//   r = rsqrt(mean(x^2) + eps);  n = x * r * w;  out[i] = n[i] c[i] - n[i+64] s[i],  out[i+64] = n[i+64] c[i] + n[i] s[i]
//
// Compulsory traffic is 4 * T * (Hq + 2 Hkv) * D bytes (qkv read once, q, k, v written once) plus
// the gains, the positions and one fp32 cache row per token (about 2% at the Qwen3-8B shapes).
// Mapping (D = 128 is 256 bytes of bf16 = 16 lanes x 16 bytes):
//   - a token's row is 16 * (Hq + 2 Hkv) 16-byte chunks; chunk j is head j / 16, lane slot j % 16;
//   - a CTA of 256 threads takes a run of tokens; thread t handles chunks t, t + 256, t + 512, ...
//     of each token, so its lane slot c = t % 16 is the same in every head it touches and each
//     16-lane group (a half-warp) holds whole head vectors: the mean square is four xor shuffles
//     inside the group, and the neox partner of element i (i + 64) sits in lane slot c ^ 8, one xor
//     shuffle away;
//   - the thread's 8 cos and 8 sin values (cache[pos, 8 (c & 7) ..] and cache[pos, 64 + 8 (c & 7) ..])
//     are loaded once per token and reused for every head it rotates; the q and k gains once per CTA;
//   - v heads take the same loads and are stored unchanged (the split is free: only the store
//     address differs); every chunk of a token is loaded before any is used (up to kChunks in flight),
//     and before the cache loads, which wait for the position; the positions of all the CTA's tokens
//     are loaded at the start, so the position -> cache row chain costs one round trip per CTA.
// Tokens per CTA: 1 while the grid would not fill the GPU several times over, up to RQN_TPC_MAX
// (kept in registers: the gains and the loop, no shared memory) at large T.
// Designs considered:
//   a. (chosen) one pass, 16-byte chunks, a half-warp per head vector, shuffles for the mean square
//      and the rotation partner, cos/sin in registers per token: each byte read and written once.
//   b. a warp per head vector with 8-byte accesses (the usual wording of this design); twice the memory
//      instructions for the same bytes; rejected in favour of (a), which keeps 16-byte accesses.
//   c. cos/sin staged in shared memory per token (one 512-byte row load per CTA, then LDS): fewer
//      global load instructions, but a __syncthreads per token; the row comes from L1 after the
//      first half-warp anyway, so (a) loads it from global directly.
//   d. a persistent grid looping over tokens: the per-CTA work is already 24 KB per token at
//      Qwen3-8B, and fused_add_rmsnorm's sweep showed grid-stride loops losing 3-5% on this GPU.
// Variants (built as expert_<name>.so; the sweep runs in scripts/gpu/checks/t-rope.sh):
// %VARIANT% tpc1 -DRQN_TPC_MAX=1
// %VARIANT% occ3 -DRQN_MIN_BLOCKS=3
//   tpc1: one token per CTA at every T; occ3: three CTAs per SM at 79 registers (what ptxas picks
//   under a bound of 3) against the default four at 64 (1024 threads per SM, no spills either way:
//   the default keeps a third more loads in flight per SM).
// Measured on the H200: see docs/results/rope_qk_norm.md (not yet run when this was written).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

#ifndef RQN_TPC_MAX
#define RQN_TPC_MAX 2  // tokens per CTA at large T
#endif
#ifndef RQN_MIN_BLOCKS
#define RQN_MIN_BLOCKS 4  // CTAs per SM the register budget must allow: 64 registers, no spills (ptxas)
#endif

namespace rqn {

constexpr int kD = 128;            // head dimension (the task's constant)
constexpr int kLanes = kD / 8;     // 16-byte chunks per head vector: a half-warp
constexpr int kThreads = 256;      // 16 head vectors per CTA pass
constexpr int kHeadsPerPass = kThreads / kLanes;
constexpr int kChunks = 4;         // chunks per thread per pass: Hq + 2 Hkv <= 64 heads in one pass

struct Params {
  const uint4* qkv;     // [T, H * 16] chunks
  const uint4* q_gain;  // [16] chunks
  const uint4* k_gain;
  const int64_t* pos;   // [T]
  const float* cache;   // [P, 128]
  uint4* q;             // [T, Hq * 16]
  uint4* k;             // [T, Hkv * 16]
  uint4* v;
  int64_t T, P;
  int Hq, Hkv, tokens_per_cta;
  float eps;
};

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&p);
}
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = bf16_lo(w[i]);
    f[2 * i + 1] = bf16_hi(w[i]);
  }
}
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  return make_uint4(pack_bf16x2(f[0], f[1]), pack_bf16x2(f[2], f[3]), pack_bf16x2(f[4], f[5]),
                    pack_bf16x2(f[6], f[7]));
}

/// Sum over the 16 lanes of this thread's half-warp (every lane of the warp calls it).
__device__ __forceinline__ float half_warp_sum(float s) {
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

/// One chunk (8 values of one head vector) normalised and rotated in place. Every lane of the warp
/// calls this (the shuffles need the whole warp); lanes of v heads or past the row pass zeros and
/// ignore the result. `sign` is -1 in the first half of the head (lane slots 0-7), +1 in the second.
__device__ __forceinline__ void norm_rope_chunk(float (&x)[8], const float (&w)[8], const float (&c)[8],
                                                const float (&s)[8], float sign, float eps) {
  float ss = 0.f;
#pragma unroll
  for (int e = 0; e < 8; ++e) ss = fmaf(x[e], x[e], ss);
  const float r = rsqrtf(half_warp_sum(ss) * (1.f / kD) + eps);
#pragma unroll
  for (int e = 0; e < 8; ++e) x[e] = x[e] * r * w[e];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float partner = __shfl_xor_sync(0xffffffffu, x[e], kLanes / 2);  // element i +- 64
    x[e] = fmaf(sign * partner, s[e], x[e] * c[e]);
  }
}

/// Issues the loads of one pass: chunk m of this thread is head base + group + 16 m (zeros past the row).
__device__ __forceinline__ void load_pass(const uint4* src, int base, int group, int slot, int H,
                                          uint4 (&raw)[kChunks]) {
#pragma unroll
  for (int m = 0; m < kChunks; ++m) {
    const int head = base + group + m * kHeadsPerPass;
    raw[m] = head < H ? __ldg(src + head * kLanes + slot) : make_uint4(0, 0, 0, 0);
  }
}

/// This thread's 8 cosines and 8 sines of the cache row at pos (NaN for a position outside [0, P):
/// an invalid position writes NaN, never reads outside the cache).
__device__ __forceinline__ void load_cos_sin(const Params& p, int64_t pos, int rot, float (&c)[8], float (&s)[8]) {
  if (pos >= 0 && pos < p.P) {
    const float4* row = reinterpret_cast<const float4*>(p.cache + pos * kD + rot);
    const float4 c0 = __ldg(row), c1 = __ldg(row + 1), s0 = __ldg(row + kD / 8), s1 = __ldg(row + kD / 8 + 1);
    c[0] = c0.x; c[1] = c0.y; c[2] = c0.z; c[3] = c0.w; c[4] = c1.x; c[5] = c1.y; c[6] = c1.z; c[7] = c1.w;
    s[0] = s0.x; s[1] = s0.y; s[2] = s0.z; s[3] = s0.w; s[4] = s1.x; s[5] = s1.y; s[6] = s1.z; s[7] = s1.w;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) c[e] = s[e] = __int_as_float(0x7FC00000);
  }
}

__global__ void __launch_bounds__(kThreads, RQN_MIN_BLOCKS) rope_qk_norm_fused(const Params p) {
  const int slot = threadIdx.x % kLanes;  // lane slot: elements 8 slot .. 8 slot + 7 of every head
  const int group = threadIdx.x / kLanes;
  const int H = p.Hq + 2 * p.Hkv;
  const float sign = slot < kLanes / 2 ? -1.f : 1.f;
  const int rot = 8 * (slot % (kLanes / 2));  // index into the cos and sin halves of a cache row
  const int64_t first = static_cast<int64_t>(blockIdx.x) * p.tokens_per_cta;
  const int64_t last = min(first + p.tokens_per_cta, p.T);
  // The positions of all this CTA's tokens at once: the cache loads depend on them, so they must
  // not wait a DRAM round trip per token.
  int64_t pos[RQN_TPC_MAX];
#pragma unroll
  for (int i = 0; i < RQN_TPC_MAX; ++i) pos[i] = first + i < last ? __ldg(p.pos + first + i) : 0;
  const uint4 q_gain = __ldg(p.q_gain + slot), k_gain = __ldg(p.k_gain + slot);  // packed: 8 registers, not 16

#pragma unroll
  for (int i = 0; i < RQN_TPC_MAX; ++i) {
    const int64_t t = first + i;
    if (t >= last) break;  // uniform over the CTA
    // The row's chunks are issued before the cache loads, which wait for the position.
    const uint4* src = p.qkv + t * H * kLanes;
    uint4 raw[kChunks];
    load_pass(src, 0, group, slot, H, raw);
    float c[8], s[8];
    load_cos_sin(p, pos[i], rot, c, s);
    for (int base = 0; base < H; base += kHeadsPerPass * kChunks) {  // one pass at H <= 64
      if (base > 0) load_pass(src, base, group, slot, H, raw);
#pragma unroll
      for (int m = 0; m < kChunks; ++m) {
        const int head = base + group + m * kHeadsPerPass;
        if (base + m * kHeadsPerPass >= H) break;  // uniform over the CTA: no head of this m exists
        float x[8];
        unpack8(raw[m], x);
        float w[8];
        unpack8(head >= p.Hq ? k_gain : q_gain, w);
        norm_rope_chunk(x, w, c, s, sign, p.eps);  // every lane: the shuffles need the whole warp
        if (head < p.Hq) {
          p.q[(t * p.Hq + head) * kLanes + slot] = pack8(x);
        } else if (head < p.Hq + p.Hkv) {
          p.k[(t * p.Hkv + head - p.Hq) * kLanes + slot] = pack8(x);
        } else if (head < H) {
          p.v[(t * p.Hkv + head - p.Hq - p.Hkv) * kLanes + slot] = raw[m];
        }
      }
    }
  }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

/// Tokens per CTA: 1 until the grid holds about eight waves of CTAs (8 x 132 SMs x RQN_MIN_BLOCKS
/// resident CTAs), then up to RQN_TPC_MAX, amortising the gains' loads and the CTA start.
int tokens_per_cta(int64_t T) {
  constexpr int64_t kWaveTokens = 8 * 132 * RQN_MIN_BLOCKS;
  return static_cast<int>(std::clamp<int64_t>(T / kWaveTokens, 1, RQN_TPC_MAX));
}

}  // namespace rqn

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t Hq = d2k::scalar_i(args, "Hq");
    const int64_t Hkv = d2k::scalar_i(args, "Hkv");
    const int64_t D = d2k::scalar_i(args, "D");
    const int64_t P = d2k::scalar_i(args, "P");
    if (D != rqn::kD) throw d2k::abi_error("expert: D must be 128, got " + std::to_string(D));
    if (T < 0 || Hq < 1 || Hkv < 1 || Hq + 2 * Hkv > 4096 || P < 1)
      throw d2k::abi_error("expert: need T >= 0, Hq >= 1, Hkv >= 1, Hq + 2 Hkv <= 4096 and P >= 1");
    const int64_t H = Hq + 2 * Hkv;
    const DLTensor& qkv = d2k::input(args, "qkv", kDLCUDA, d2k::dl::bf16, {T, H * D});
    const DLTensor& qw = d2k::input(args, "q_norm_weight", kDLCUDA, d2k::dl::bf16, {D});
    const DLTensor& kw = d2k::input(args, "k_norm_weight", kDLCUDA, d2k::dl::bf16, {D});
    const DLTensor& pos = d2k::input(args, "positions", kDLCUDA, d2k::dl::i64, {T});
    const DLTensor& cache = d2k::input(args, "cos_sin_cache", kDLCUDA, d2k::dl::f32, {P, D});
    const DLTensor& q = d2k::output(args, "q", kDLCUDA, d2k::dl::bf16, {T, Hq, D});
    const DLTensor& k = d2k::output(args, "k", kDLCUDA, d2k::dl::bf16, {T, Hkv, D});
    const DLTensor& v = d2k::output(args, "v", kDLCUDA, d2k::dl::bf16, {T, Hkv, D});
    if (T == 0) return D2K_OK;

    rqn::Params p{};
    p.qkv = d2k::data<const uint4>(qkv);
    p.q_gain = d2k::data<const uint4>(qw);
    p.k_gain = d2k::data<const uint4>(kw);
    p.pos = d2k::data<const int64_t>(pos);
    p.cache = d2k::data<const float>(cache);
    p.q = d2k::data<uint4>(q);
    p.k = d2k::data<uint4>(k);
    p.v = d2k::data<uint4>(v);
    for (const void* ptr : {static_cast<const void*>(p.qkv), static_cast<const void*>(p.q_gain),
                            static_cast<const void*>(p.k_gain), static_cast<const void*>(p.cache),
                            static_cast<const void*>(p.q), static_cast<const void*>(p.k), static_cast<const void*>(p.v)})
      if (!rqn::aligned16(ptr)) throw d2k::abi_error("expert: every bf16/fp32 tensor must be 16-byte aligned");
    p.T = T;
    p.P = P;
    p.Hq = static_cast<int>(Hq);
    p.Hkv = static_cast<int>(Hkv);
    p.tokens_per_cta = rqn::tokens_per_cta(T);
    p.eps = static_cast<float>(d2k::scalar_f(args, "eps"));
    const int64_t grid = (T + p.tokens_per_cta - 1) / p.tokens_per_cta;
    if (grid > 2147483647) throw d2k::abi_error("expert: T too large for the grid");
    auto stream = static_cast<cudaStream_t>(args->stream);
    rqn::rope_qk_norm_fused<<<static_cast<unsigned>(grid), rqn::kThreads, 0, stream>>>(p);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
