// flash_attention_forward — the Hopper step of the expert, its default kernel (FA_WGMMA=1): the same
// tiled online softmax as the mma.sync kernel of expert.cu, with
//   - wgmma.mma_async m64n128k16 for S = Q K^T (Q and K from shared-memory descriptors) and
//     m64n64k16 for O += P V (P from registers, V from an MN-major descriptor);
//   - TMA tile loads (cp.async.bulk.tensor.4d, 128-byte swizzle, rows past S zero-filled by the
//     tensor map's bounds) into a kStages-deep K/V ring guarded by full/empty mbarriers;
//   - warp specialisation: warpgroup 0 is the producer (one thread issues every TMA), warpgroups
//     1 and 2 are consumers, 64 query rows each (a 128-row query tile per CTA), 128-key tiles.
// Included by expert.cu after its PTX helpers (smem_u32, ex2, pack_bf16); host side there too.
//
// Shared-memory layout (every region 1024-byte aligned, as the 128-byte swizzle atom requires): a
// [rows][128] bf16 tile is two regions of [rows][64] (128-byte rows), columns 0-63 then 64-127;
// within a region the 16-byte chunk c of row r sits at chunk c ^ (r % 8) (what TMA's
// CU_TENSOR_MAP_SWIZZLE_128B writes and what the wgmma descriptor's 128-byte swizzle mode reads).
//   Q: 2 regions x 128 rows (32 KB); per stage: K 2 x 128 rows, V 2 x 128 rows (64 KB).
#pragma once

#include <cuda.h>

namespace fa_hopper {

constexpr int kD = 128;
constexpr int kBM = 128;  // query rows per CTA: two consumer warpgroups of 64
constexpr int kBN = 128;  // keys per tile
constexpr int kStages = 2;
constexpr int kThreads = 384;
constexpr int kRegion = 64 * 2;                  // bytes per row of a swizzled region
constexpr int kQRegionBytes = kBM * kRegion;     // 16 KB
constexpr int kKVRegionBytes = kBN * kRegion;    // 16 KB
constexpr int kStageBytes = 4 * kKVRegionBytes;  // K and V, two halves each: 64 KB
constexpr int kTileTxBytes = kStageBytes;        // bytes TMA delivers per stage
constexpr int kBarrierBytes = 64;
constexpr int kSmemBytes = 1024 /* alignment slack */ + 2 * kQRegionBytes + kStages * kStageBytes + kBarrierBytes;
constexpr int kConsumerWarps = 8;

struct Params {
  __nv_bfloat16* o;
  float* lse;
  int S, Hq, Hkv;
  float c;  // scale * log2(e)
};

// ---- mbarrier and TMA (PTX) ----
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
/// Blocks until the barrier's phase of parity `parity` has completed (parity 1 before the first
/// completion returns at once: the "previous" phase counts as done).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
/// One box of a 4-d tensor map (coordinates innermost first) into shared memory, completing on bar.
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// ---- wgmma (PTX) ----
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

/// Shared-memory matrix descriptor, 128-byte swizzle: start address, leading and stride byte
/// offsets (16-byte units, bits 0-13, 16-29, 32-45), layout type 1 (128B) in bits 62-63. The base
/// offset stays 0: every region starts on a 1024-byte boundary, and advancing the start by 32
/// bytes steps K by 16 inside the swizzle atom.
__device__ __forceinline__ uint64_t make_desc(const void* p, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  const uint64_t addr = smem_u32(p);
  return ((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32) | (static_cast<uint64_t>(1) << 62);
}

/// d (+)= A B^T, m64n128k16, A and B from shared-memory descriptors (both K-major), fp32
/// accumulators; scale_d = 0 overwrites d.
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/// d += A B, m64n64k16, A (packed bf16 pairs, the mma.sync A-fragment layout per warp) from
/// registers, B from an MN-major shared-memory descriptor (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

/// Consumer state of one thread: rows 16w + lane/4 and +8 of its warpgroup's 64.
struct Acc {
  float m[2], l[2];
  float o[2][32];  // O columns half*64 + 8nb + 2(lane%4) + {0,1}: o[half][4nb + {0,1}] row r0, {2,3} row r0+8
};

__device__ __forceinline__ void mask_scores(float (&s)[64], int row0, int key0, int S) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int nb = 0; nb < 16; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = row0 + lane / 4 + (e >= 2 ? 8 : 0);
      const int key = key0 + nb * 8 + (lane % 4) * 2 + (e & 1);
      if (key > row || key >= S) s[4 * nb + e] = -INFINITY;
    }
}

/// The online-softmax step of expert.cu's kernel on the m64n128 accumulator layout.
__device__ __forceinline__ void online_softmax(float (&s)[64], Acc& a, float c) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < 16; ++nb) mx = fmaxf(mx, fmaxf(s[4 * nb + 2 * r], s[4 * nb + 2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(a.m[r], mx);  // finite: the first tile holds key 0
    const float corr = ex2((a.m[r] - m_new) * c);
    const float mc = m_new * c;
    float sum = 0.f;
#pragma unroll
    for (int nb = 0; nb < 16; ++nb) {
      s[4 * nb + 2 * r] = ex2(fmaf(s[4 * nb + 2 * r], c, -mc));
      s[4 * nb + 2 * r + 1] = ex2(fmaf(s[4 * nb + 2 * r + 1], c, -mc));
      sum += s[4 * nb + 2 * r] + s[4 * nb + 2 * r + 1];
    }
    a.l[r] = a.l[r] * corr + sum;
    a.m[r] = m_new;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nb = 0; nb < 8; ++nb) {
        a.o[h][4 * nb + 2 * r] *= corr;
        a.o[h][4 * nb + 2 * r + 1] *= corr;
      }
  }
}

__device__ __forceinline__ void write_rows(const Params& p, Acc& a, int b, int h, int row0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = a.l[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = row0 + lane / 4 + 8 * r;
    if (row >= p.S) continue;
    const float inv = 1.f / l;
    __nv_bfloat16* orow = p.o + ((static_cast<int64_t>(b) * p.S + row) * p.Hq + h) * kD;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf)
#pragma unroll
      for (int nb = 0; nb < 8; ++nb)
        *reinterpret_cast<__nv_bfloat162*>(orow + hf * 64 + nb * 8 + (lane % 4) * 2) =
            __floats2bfloat162_rn(a.o[hf][4 * nb + 2 * r] * inv, a.o[hf][4 * nb + 2 * r + 1] * inv);
    if (lane % 4 == 0)
      p.lse[(static_cast<int64_t>(b) * p.Hq + h) * p.S + row] = (a.m[r] * p.c + log2f(l)) * 0.6931471805599453f;
  }
}

/// grid (Hq, query tiles last-first, B), 384 threads: warpgroup 0 produces, 1 and 2 consume.
__global__ void __launch_bounds__(kThreads, 1)
    flash_fwd_causal_wgmma(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                           const __grid_constant__ CUtensorMap tm_v, const Params p) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = base;                           // 2 regions of kQRegionBytes
  unsigned char* sKV = base + 2 * kQRegionBytes;      // stage s: K halves, then V halves
  auto* bars = reinterpret_cast<uint64_t*>(sKV + kStages * kStageBytes);
  uint64_t* q_full = bars;
  uint64_t* full = bars + 1;              // [kStages]
  uint64_t* empty = bars + 1 + kStages;   // [kStages]

  const int h = blockIdx.x, b = blockIdx.z;
  const int m0 = (gridDim.y - 1 - blockIdx.y) * kBM;
  const int g = h / (p.Hq / p.Hkv);
  const int key_end = min(p.S, m0 + kBM);
  const int n_tiles = (key_end + kBN - 1) / kBN;

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {  // producer: one thread issues every load
    if (threadIdx.x == 0) {
      mbar_expect_tx(q_full, 2 * kQRegionBytes);
      tma_load_4d(sQ, &tm_q, q_full, 0, h, m0, b);
      tma_load_4d(sQ + kQRegionBytes, &tm_q, q_full, 64, h, m0, b);
      for (int j = 0; j < n_tiles; ++j) {
        const int st = j % kStages;
        mbar_wait(&empty[st], ((j / kStages) & 1) ^ 1);  // the consumers released tile j - kStages
        unsigned char* sK = sKV + st * kStageBytes;
        unsigned char* sV = sK + 2 * kKVRegionBytes;
        mbar_expect_tx(&full[st], kTileTxBytes);
        tma_load_4d(sK, &tm_k, &full[st], 0, g, j * kBN, b);
        tma_load_4d(sK + kKVRegionBytes, &tm_k, &full[st], 64, g, j * kBN, b);
        tma_load_4d(sV, &tm_v, &full[st], 0, g, j * kBN, b);
        tma_load_4d(sV + kKVRegionBytes, &tm_v, &full[st], 64, g, j * kBN, b);
      }
    }
    return;
  }

  // consumers: warpgroup c = wg - 1 owns query rows m0 + 64c .. m0 + 64c + 63
  const int c = wg - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int wg_row0 = m0 + 64 * c;
  Acc a;
  a.m[0] = a.m[1] = -INFINITY;
  a.l[0] = a.l[1] = 0.f;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf)
#pragma unroll
    for (int i = 0; i < 32; ++i) a.o[hf][i] = 0.f;
  mbar_wait(q_full, 0);

  for (int j = 0; j < n_tiles; ++j) {
    const int st = j % kStages;
    mbar_wait(&full[st], (j / kStages) & 1);
    const unsigned char* sK = sKV + st * kStageBytes;
    const unsigned char* sV = sK + 2 * kKVRegionBytes;

    float s[64];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {  // K-major A (this warpgroup's 64 Q rows) and B (K rows)
      const uint64_t da = make_desc(sQ + (kk / 4) * kQRegionBytes + c * 64 * kRegion + (kk % 4) * 32, 16, 1024);
      const uint64_t db = make_desc(sK + (kk / 4) * kKVRegionBytes + (kk % 4) * 32, 16, 1024);
      wgmma_m64n128k16_ss(s, da, db, kk > 0);
    }
    wgmma_commit();
    wgmma_wait_all();

    const int key0 = j * kBN;
    if (key0 + kBN > wg_row0 || key0 + kBN > p.S) mask_scores(s, wg_row0 + warp * 16, key0, p.S);
    online_softmax(s, a, p.c);

    uint32_t pa[kBN / 16][4];  // P as wgmma A fragments (the accumulator layout, paired), all before
#pragma unroll                // the fence so no register is written between the 16 PV wgmmas
    for (int kk = 0; kk < kBN / 16; ++kk) {
      pa[kk][0] = pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
    }
    wgmma_fence();  // O was rescaled and P written in registers
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {  // MN-major V: 16 keys = two 1024-byte atoms along K
        const uint64_t dv = make_desc(sV + hf * kKVRegionBytes + kk * 2048, kKVRegionBytes, 1024);
        wgmma_m64n64k16_rs(a.o[hf], pa[kk], dv);
      }
    wgmma_commit();
    wgmma_wait_all();
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[st]);  // this warp no longer reads the stage
  }
  write_rows(p, a, b, h, wg_row0 + warp * 16);
}

}  // namespace fa_hopper
