// w4a16_gemv — expert: int4 weights dequantised in registers, each packed weight read from DRAM
// once, every sum in fp32. Two paths, chosen per call:
//   - B = 1 with K <= 28672 (the default since 2026-12-03, W4A16_ROWSTREAM=1): the CUDA-core row
//     stream of w4a16_rowstream.cuh. A warp owns 4 rows and all of K, each load instruction reads
//     512 contiguous bytes of one row, a register ring keeps 2-3 chunks in flight, magic-number
//     fp32 codes meet x staged in shared memory in one FFMA per weight. Measured on the H200
//     (eighth session, calibrated SOL): 14.98 / 46.85 / 40.80 us = 49.9 / 55.8 / 64.1% of SOL on
//     1x8192x8192, 1x28672x8192, 1x8192x28672; 1.05 / 1.03 / 1.17x the tensor-core path.
//   - every other shape: this file's tensor-core path (mma.sync m16n8k16, bf16 in, fp32
//     accumulate), described below. Variant hmma_b1 (W4A16_ROWSTREAM=0) runs it at B = 1 too: it
//     is the previous default, the baseline the row stream is measured against.
//
//   y[b, n] = bf16( sum_g scales[n, g] · sum_{k in group g} x[b, k] · (q[n, k] - 8) )
//
// Compulsory traffic is half a byte per weight plus the scales (1/64 byte per weight); x (at most
// 16 x 28672 bf16 = 917 KB) stays in L2/L1 and is re-read per CTA. On the tensor-core path the
// multiply-adds go to the tensor cores, which make B = 16 cost the same instructions as B = 1
// (the CUDA-core row stream pays ~3.4 lane instructions per weight and batch row, so it serves
// B = 1 only). Per weight the CUDA cores do ~1.4 instructions of dequantisation:
//   1. dequantise by magic number: (w >> 4j) & 0x000F000F | 0x43004300 is the bf16 pair
//      (128 + q_j, 128 + q_{j+4}) (0x4300 = 128.0, whose ulp is 1, so the nibble lands in the
//      mantissa as an integer); one bf16x2 FMA subtracts 136 exactly, giving (q - 8) in bf16:
//      one shift, one LOP3 and one HFMA2 per two weights. No I2F, no lookup table.
//   2. the k order inside an mma is free (a sum): thread (g, t) of a warp feeds the A fragment
//      with words 4t..4t+3 of each group of rows g and g + 8 (one 16-byte load per row and
//      group), the pairs (q_j, q_{j+4}) in the slots (2t, 2t+1) and (2t+8, 2t+9); the x (B)
//      fragment is permuted the same way with two PRMTs per word of eight values.
//   3. per group of 128: 8 mma steps accumulate an fp32 partial from zero, then one FFMA per
//      output applies the group's scale: the scale never touches bf16, so the products are exact
//      and every sum is fp32 (the spec's precision; no bf16 rounding of the weight at all).
//   4. dataflow: a CTA owns 32 rows (two m16 tiles per warp: the x fragments of a group serve
//      both) and all of K; its warps split K by groups (warp w takes groups w, w + W, ...: split-K
//      inside the CTA, so every N gets enough warps without a global reduction), reduce their
//      fp32 sums through shared memory in a fixed order, and write y once. The next group's
//      weights and scales (and for B <= 8 its x) are loaded (weights with 16-byte
//      ld.global.nc.L1::no_allocate) before the current group's arithmetic: two groups of loads
//      in flight per warp, ~2 KB, ~32 KB per SM at 16 warps (Little's law at 4.8 TB/s and
//      ~0.8 us under load asks ~29 KB per SM). ptxas: 102 registers (B <= 8), 128 (B <= 16),
//      no spills: 2 CTAs of 256 threads per SM.
// Batch: B <= 8 uses one n8 tile (rows of x beyond B are zero fragments), B <= 16 two.
//
// Variants considered:
//   a. CUDA-core GEMV, fp32 FFMA per weight after a magic-number conversion: ~3 instructions per
//      weight and 16x the FFMAs at B = 16. First rejected as issue-bound at B = 1; the estimate
//      below ("CUDA-core path") says otherwise, and built as the row stream (w4a16_rowstream.cuh)
//      it is the B = 1 default since 2026-12-03 (measured 1.03-1.17x the tensor-core path).
//   b. bf16 HFMA2 accumulation within a group (the classic fast GEMV): half the instructions but
//      bf16 sums, which the task's rule rejects (tests/unit/tasks/w4a16_gemv).
//   c. dequantise into shared memory then mma (Marlin without its offline weight shuffle): an
//      extra STS/LDS round trip per weight; the register path needs no shuffle because the k
//      order inside an mma is free. (Staging the packed words with cp.async costs no STS and one
//      LDS.128 per 16 bytes: measured as the rings cpa5 / cpa3l / cpa4c, 0.84-0.91x, below.)
//   d. (chosen for B > 1, and for B = 1 until the row stream) registers only, split-K over the
//      CTA's warps, 32 rows per CTA.
//   e. grid-level split-K with fp32 atomics: one more launch (zeroing) or a counter per tile;
//      only needed where N/32 CTAs cannot fill the GPU, which the in-CTA split covers.
//   f. x staged in shared memory: with K split over the CTA's warps a CTA needs all of x
//      (B·K·2 bytes, up to 917 KB), so only a K-slice per iteration would fit, with a barrier
//      per slice; x's 16-byte read-only loads hit L1 (every CTA on an SM reads the same x) and
//      land directly in fragment registers, so no staging and no barriers.
// Times on the H200: docs/results/w4a16_gemv.md (calibrated ceilings, B = 1 on 1x8192x8192,
// 1x28672x8192, 1x8192x28672: the row-stream default 49.9 / 55.8 / 64.1% of SOL, the tensor-core
// path 47.4 / 54.3 / 54.9%; issue #15 asks 75%, still missed).
// Measured losers of the tensor-core path (2026-12-02, every one slower than it at B = 1; the
// page keeps the table): 16 warps per CTA (W4A16_WARPS=16) and 16 rows per CTA (W4A16_MTILES=1),
// which stay as knobs; a contiguous K range per warp with copy-engine L2 prefetch
// (cp.async.bulk.prefetch.L2) and/or .L2::256B fills, the strided split with L2 prefetch 2 or 4
// CTA steps ahead, and the 128 + q "offset" A form, whose flags and code paths are gone.
// Where the time goes on the tensor-core path at B = 1 (arithmetic from the measured times and
// this code; not profiled):
//   - per warp: at 8192 x 28672 (one wave, 28 groups per warp) a warp spends 47.2 us / 28 = ~1.7
//     us (~3300 SM cycles) per 2 KB group. Its arithmetic is ~240 issue slots and one chain of 8
//     dependent HMMAs per m16 tile (the two tiles' chains interleave): ~300-400 cycles. So ~90% of
//     a warp's time is waiting for its loads, and the 8-HMMA chain is ~10% (mchain2 tests it).
//   - bytes in flight: the register double buffer issues group i + 1 at the top of iteration i,
//     so a warp has 1-2 groups (2-4 KB) in flight, 32-64 KB per SM. Little's law at the measured
//     2.53 TB/s (19 KB per us and SM) gives a round trip of 1.7-3.3 us, 2-5x an unloaded DRAM
//     latency: requests queue downstream, so depth should not be the limit (and the prefetch
//     variants, which added depth, lost; rows16, with half the depth per SM, lost only 8-17%).
//     Measured directly since: a per-warp cp.async ring 4 groups ahead (cpa5) lost 9-14%.
//   - DRAM order: one 16-byte-per-lane load touches 8 rows x 64 bytes (16 sectors, 8 half
//     lines); the two halves of each 128-byte line belong to neighbouring warps (groups w, w + 1)
//     and reach L2 at unrelated times. Across the GPU, every row is open at once at a 512-byte
//     window (4-14 KB row stride): ~4-12% of the bytes of any address window are live. Measured
//     since: whole 128-byte lines per copy (cpa3l) and 512 contiguous bytes per warp instruction
//     (cpa4c) did no better than cpa5; 256-byte L2 fills in the default order (s256) gain 2-4%.
//     DRAM order is not the gap either.
//   - fixed cost (~3 us): the first load of each warp waits a full DRAM latency with nothing in
//     flight behind it, and the tail waits one more.
//   - waves: 256 CTAs on 264 slots at N = 8192 (97%); 3.39 waves at N = 28672, which reaches the
//     same 56% as the one-wave 8192 x 28672, so quantisation is not the gap.
//   - CUDA-core path (checked): magic-number fp32 conversion with the nibble left in place
//     ((w & 0xF << 4j) | 0x4B000000 is 2^23 + 16^j q exactly for j <= 4; one shift of the word by
//     16 for the upper four), an exact FADD of the offset, an FFMA with x pre-scaled by 16^-j:
//     ~3.1 lane instructions per weight. At 75% of the calibrated SOL (6.8e12 weights/s) that is
//     ~65% of the H200's issue rate (1.05e12 warp instructions/s), 40% of the FMA and ALU pipes;
//     at 100% it is ~87%. So not issue-bound at 75% as variant a. above says, but with little
//     margin for the latency hiding the stream needs; the tensor path is ~1.9 per weight (39%).
//     Its real advantage would be free DRAM order (a warp reading 512 contiguous bytes), which
//     cpa3l / cpa4c tested inside the tensor-core path without a gain. Built since as the row
//     stream, it wins at B = 1 (1.03-1.17x; most on the one-wave 8192 x 28672): the B = 1 default.
// Variants built (`// %VARIANT%` lines; measured by scripts/gpu/checks/t-w4a16.sh):
//   %VARIANT% s256 -DW4A16_ROWSTREAM=0 -DW4A16_L2_256B=1
//   %VARIANT% mchain2 -DW4A16_ROWSTREAM=0 -DW4A16_MMA_CHAINS=2
//   %VARIANT% hmma_b1 -DW4A16_ROWSTREAM=0
//   %VARIANT% rs_ffma -DW4A16_RS_MMA=0 -DW4A16_RS_OFFSET=0
//   %VARIANT% persist -DW4A16_RS_PERSIST=1 -DW4A16_RS_OFFSET=0
//   %VARIANT% prev -DW4A16_RS_OFFSET=0
// The row stream's round two, timed on the H200 on 2026-12-03 (ninth session; results page,
// "Round two measured"), against the FFMA row stream (now rs_ffma) on 8192 x 8192 / 28672 x 8192
// / 8192 x 28672: rsmma (the chunk arithmetic on the tensor cores) 1.00 / 1.08 / 1.04x, never
// slower: the default since (W4A16_RS_MMA=1, SASS identical to the timed variant's), 51.2 / 61.8 /
// 68.0% of SOL; rsmma with persistent CTAs (now persist) 0.96 / 1.16 / 0.99x; rspersist (FFMA,
// persistent) 0.95 / 1.12 / 0.94x and rowstream3 (2 rows per warp, 3 CTAs per SM) 0.94 / 1.02 /
// 0.91x, their lines removed.
// The tenth session's sweep (issue #15; docs/results/w4a16_gemv.md, "Tenth session"): rsoff 1.06 /
// 1.06 / 1.04x the rsmma default, the default since (prev is rsmma); rsrot 1.02 / 0.97 / 0.99x and
// rsrot_off (local memory) retired, W4A16_RS_ROTATE still builds them. Where the rsmma default's
// time goes at B = 1 (arithmetic from the ninth session's medians and the SASS; not profiled):
//   - a line through the two one-wave rows (14.98 us at 1x8192x8192, 39.49 us at 1x8192x28672,
//     19.14 us of floor apart) gives a marginal stream rate of 78% of SOL plus ~5.2 us fixed. The
//     bar needs 1.46 / 1.21 / 1.10x on 8192 x 8192 / 28672 x 8192 / 8192 x 28672; at 8192 x 8192
//     even a stream at 100% would leave 7.7 + 5.2 us, so the fixed part must shrink there.
//   - bytes in flight are not short: 4-6 KB per warp, 64-96 KB per SM, 8-13 MB on the GPU, 2-3 us
//     of DRAM time queued (3-4x an unloaded latency; more depth, cpa5, lost). No split-K (a warp
//     owns all of K); scales are 1/64 of the bytes, one sector per row and chunk; one wave at
//     N = 8192 (256 CTAs on 264 slots), 3.39 at N = 28672, where persist's one ramp gave 1.08x.
//   - issue: the main loop is 748 SASS per ring turn (384 weights per lane, 1.95 per weight: 192
//     LOP3, 192 HFMA2, 144 SHF, 96 HMMA); at 8192 x 8192 ~4.0 us of one scheduler's issue against a
//     7.7 us floor, and a slot's refill waits for its chunk's 2 x 8-HMMA chain and conversion.
//   - the stripe: with a 4 KB row stride (K = 8192) the warps of a wave start at chunk 0 together
//     and step together, so the GPU's requests sit at one 1.5 KB window of every 4 KB row: a
//     4 KB-periodic address set that only the DRAM hash's higher bits spread over channels. The
//     one-wave rows differ in exactly that: 51.2% at the 4 KB stride, 68.0% at 14 KB (rows 2 KB
//     apart mod 4 KB); the 4 KB-stride multi-wave row (CTAs desynchronised by the waves) 61.8%.
//     (8192 x 8192 also has 8 chunks per row against 28: the three points cannot split stripe from
//     ramp.)
// rsoff (W4A16_RS_OFFSET): B holds 128 + q (one SHF and one LOP3 per pair, no HFMA2), the group's
// -136 · sum(x), made once per CTA while x is staged (896 B more shared memory at K = 28672: two
// CTAs still fit), is the first mma step's C: 584 SASS per turn (1.52 per weight, -22%). Expected:
// up to ~half of rsmma's gain over rs_ffma (which cut 45% of the instructions for 1.00 / 1.08 /
// 1.04x): ~1.00 / 1.03 / 1.02x; more only if the refill delay is what holds the stream.
// rsrot (W4A16_RS_ROTATE): warp gw starts at chunk chunks - 3j (j = gw mod ceil(chunks / 3)) and
// wraps; the wrap falls between two ring turns, so the loads stay pointer + immediate (757 per
// turn, +1%). At K = 8192 the three phases (chunks 0, 5, 2) put a CTA's warps' 1.5 KB windows over
// all of a 4 KB row. Expected if the stripe costs: >= 1.05x on 8192 x 8192 and 28672 x 8192 (4 KB
// stride), within 3% on 8192 x 28672 (already spread); within 3% everywhere refutes it.
// rsrot_off: both (592 per turn), the candidate for the default if both confirm. ptxas: 127 / 128 /
// 128 registers, no local memory; the SASS of the default and of the earlier variants unchanged
// (md5 of cuobjdump -sass with the addresses and the anonymous namespace's hash stripped).
// s256: the tensor-core path with .L2::256B on the weight loads. mchain2: the tensor-core path
// with two accumulators per tile and group (even and odd mma steps), summed in fp32 before the
// scale: chains of 4 instead of 8. Measured on the H200 (2026-12-03, against the tensor-core
// default of that build; docs/results/w4a16_gemv.md): s256 1.02-1.04x, mchain2 1.00-1.03x, the
// shared-memory rings cpa5 / cpa3l / cpa4c 0.84-0.91x (more bytes in flight and line-sized DRAM
// order do not lift the rate); the rings' code is removed, their design recorded there.
// hmma_b1: the tensor-core path at every B (the default before 2026-12-03).
// rowstream3: the row stream with 2 rows per warp and registers budgeted for 3 CTAs per SM (80
// registers: 24 warps per SM where x fits three times, K <= 16384; 16 at K = 28672).
// Built for the next sweep (issue #15; not yet measured; docs/results/w4a16_gemv.md, "Variants for
// the next run (2026-12-04)"), each against the row-stream default's fixed costs or issue load:
// rspersist: persistent CTAs (as many as are resident), x staged once per CTA, each warp walking
// row blocks gw, gw + W, ... with the register ring running on across them: one ramp and one tail
// per launch instead of one per wave (1 x 28672 x 8192 has 3.39 waves). rsmma: the row stream's
// chunks as diagonal mma.sync steps (w4a16_rowstream_mma.cuh): each lane's 32 weights of a row meet
// x of the same k on the tensor cores, the diagonal D[g][g] being lane group g's (= one
// quantisation group's) partial: 2.10 SASS instructions per weight instead of 3.56 (the default
// needs every issue slot at 1 x 8192 x 8192). rsmma_persist: both. ptxas: 128 registers each, no
// local memory.
// The row-stream sweep (H200, 2026-12-03, eighth session; vs the tensor-core path of that build,
// which hmma_b1 now is): the default's row stream (4 rows per warp, a ring of 3 chunks, 2 CTAs
// per SM; measured as variant rowstream) 1.05 / 1.03 / 1.17x; rowstream3 0.99 / 1.05 / 1.06x
// (0.94 / 1.02 / 0.91x the row-stream default, computed from the medians: 24 warps per SM do not
// help, half the depth per SM at K = 28672 costs); two losers, removed with their code and tests:
//   - rowstream2 (2 rows per warp, a ring of 6: the same bytes in flight in longer runs per row)
//     0.82 / 0.80 / 0.99x: longer runs per row do not help, and half the independent FFMA chains
//     per warp (and twice the CTAs) cost.
//   - rowstream_sk (the CTA's warps split each row's chunks, so a CTA's loads in flight cover
//     whole rows of a contiguous block, with a transposing warp reduction per row group) 0.91 /
//     0.93 / 0.94x: a dense address window at the CTA level does not pay for its 13-17% more
//     instructions; DRAM order is refuted at that level too.
// ptxas: the default's row stream 128 registers, rowstream3 80, no local memory; the inner loop
// issues 3.41 / 3.52 lane instructions per weight (3.125 of them the conversion and FFMA).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

#ifndef W4A16_WARPS
#define W4A16_WARPS 8
#endif
#ifndef W4A16_MTILES
#define W4A16_MTILES 2
#endif
// 1: the weight loads carry .L2::256B, so each miss fills the 256-byte block around it (with the
// strided split: the CTA step's four neighbouring groups of that row).
#ifndef W4A16_L2_256B
#define W4A16_L2_256B 0
#endif
// Independent mma accumulators per m16 tile and group: 1, one chain of 8 dependent HMMAs; 2,
// even and odd steps in two chains of 4, added in fp32 before the scale.
#ifndef W4A16_MMA_CHAINS
#define W4A16_MMA_CHAINS 1
#endif
// 1 (the default since 2026-12-03, measured 1.05 / 1.03 / 1.17x the tensor-core path at B = 1):
// B = 1 (with K <= 28672) takes the CUDA-core row-stream path of w4a16_rowstream.cuh; other
// shapes keep this file's tensor-core path. 0: the tensor-core path at every B (variant hmma_b1).
#ifndef W4A16_ROWSTREAM
#define W4A16_ROWSTREAM 1
#endif
#if W4A16_ROWSTREAM
#include "w4a16_rowstream.cuh"
#endif
namespace {

constexpr int kGroup = 128;              // quantisation group along K
constexpr int kMTiles = W4A16_MTILES;    // m16 tiles (of weight rows) per warp
constexpr int kRowsPerCta = 16 * kMTiles;
constexpr int kMaxWarps = 16;
static_assert(W4A16_WARPS >= 1 && W4A16_WARPS <= kMaxWarps, "W4A16_WARPS in [1, 16]");
constexpr int kChains = W4A16_MMA_CHAINS;
static_assert(kChains == 1 || kChains == 2, "W4A16_MMA_CHAINS: 1 or 2");
// ---- register-level pieces ------------------------------------------------------------------

/// 16 bytes of streamed weights: read once, so no L1 allocation.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
#if W4A16_L2_256B
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#else
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
#endif
  return v;
}

/// The bf16 pair (q_j - 8, q_{j+4} - 8) of word w, exact: 0x4300 | q is 128 + q in bf16, and the
/// FMA (v · 1 - 136) is exact because the result is a small integer.
__device__ __forceinline__ uint32_t code_pair(uint32_t w, int j) {
  const uint32_t v = ((w >> (4 * j)) & 0x000F000Fu) | 0x43004300u;
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(v), "r"(0x3F803F80u), "r"(0xC308C308u));
  return d;
}

/// d = a · b + d on the tensor cores: A 16x16 (row), B 16x8 (col), bf16; D fp32.
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float bf16_bits_to_float(unsigned short b) { return __uint_as_float(uint32_t(b) << 16); }

/// One group's weights and scales for the warp's rows: rows g and g + 8 of each m16 tile.
struct WeightFrag {
  uint4 w[kMTiles][2];   // words 4t..4t+3 of the group
  float s[kMTiles][2];   // the group's scale of each row
};

/// x of one group for NB n8 tiles as loaded: per word u (0..3) of the thread's 4 words, eight
/// consecutive bf16 (x0 x1) (x2 x3) (x4 x5) (x6 x7) of batch row nb·8 + g.
template <int NB>
struct XRaw {
  uint4 v[NB][4];
};

/// The B registers of steps 2u and 2u+1 from word u's eight x values, pairs permuted to
/// (x_j, x_{j+4}) as the weight pairs are: slot pairs (2t, 2t+1) and (2t+8, 2t+9) of each step.
__device__ __forceinline__ void x_pairs(const uint4& v, uint32_t (&b)[4]) {
  b[0] = __byte_perm(v.x, v.z, 0x5410);  // (x0, x4)  step 2u
  b[1] = __byte_perm(v.x, v.z, 0x7632);  // (x1, x5)  step 2u
  b[2] = __byte_perm(v.y, v.w, 0x5410);  // (x2, x6)  step 2u+1
  b[3] = __byte_perm(v.y, v.w, 0x7632);  // (x3, x7)  step 2u+1
}

/// One group's arithmetic for the warp's rows: 8 mma steps per m16 tile into fp32 partials from
/// zero (W4A16_MMA_CHAINS: one chain, or even/odd steps in two added at the end), then one FFMA
/// per output applies each row's scale.
template <int NB>
__device__ __forceinline__ void group_mma(float (&acc)[kMTiles][NB][4], const WeightFrag& cur, const XRaw<NB>& xc) {
  uint32_t xb[NB][4][4];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int u = 0; u < 4; ++u) x_pairs(xc.v[nb][u], xb[nb][u]);
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
    float pc[kChains][NB][4] = {};
    const uint32_t w_lo[4] = {cur.w[mt][0].x, cur.w[mt][0].y, cur.w[mt][0].z, cur.w[mt][0].w};
    const uint32_t w_hi[4] = {cur.w[mt][1].x, cur.w[mt][1].y, cur.w[mt][1].z, cur.w[mt][1].w};
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // step 2u + half: pairs (2·half) and (2·half + 1)
        const uint32_t a0 = code_pair(w_lo[u], 2 * half), a1 = code_pair(w_hi[u], 2 * half);
        const uint32_t a2 = code_pair(w_lo[u], 2 * half + 1), a3 = code_pair(w_hi[u], 2 * half + 1);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
          mma_bf16(pc[half % kChains][nb], a0, a1, a2, a3, xb[nb][u][2 * half], xb[nb][u][2 * half + 1]);
      }
    float p[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) p[nb][i] = kChains == 2 ? pc[0][nb][i] + pc[kChains - 1][nb][i] : pc[0][nb][i];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {  // c0, c1: row g; c2, c3: row g + 8
      acc[mt][nb][0] = fmaf(cur.s[mt][0], p[nb][0], acc[mt][nb][0]);
      acc[mt][nb][1] = fmaf(cur.s[mt][0], p[nb][1], acc[mt][nb][1]);
      acc[mt][nb][2] = fmaf(cur.s[mt][1], p[nb][2], acc[mt][nb][2]);
      acc[mt][nb][3] = fmaf(cur.s[mt][1], p[nb][3], acc[mt][nb][3]);
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------------

template <int NB>
__global__ void __launch_bounds__(kMaxWarps * 32)
    w4a16_mma_splitk(const __nv_bfloat16* __restrict__ x, const uint32_t* __restrict__ qweight,
                     const __nv_bfloat16* __restrict__ scales, __nv_bfloat16* __restrict__ y, int B, int N, int K) {
  // [warps][kRowsPerCta][NB * 8] fp32 partial sums
  extern __shared__ __align__(16) float red[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;  // mma groupID and thread-in-group
  const int G = K / kGroup, words_per_row = K / 8;
  const int row0 = blockIdx.x * kRowsPerCta;

  // Row pointers, clamped to N - 1 so that loads stay in bounds (results of rows >= N are dropped).
  const uint4* wrow[kMTiles][2];
  const unsigned short* srow[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = min(row0 + mt * 16 + h * 8 + g, N - 1);
      wrow[mt][h] = reinterpret_cast<const uint4*>(qweight + static_cast<size_t>(r) * words_per_row) + t;
      srow[mt][h] = reinterpret_cast<const unsigned short*>(scales) + static_cast<size_t>(r) * G;
    }
  auto load_weights = [&](WeightFrag& f, int gi) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f.w[mt][h] = load_stream(wrow[mt][h] + gi * 4);
        f.s[mt][h] = bf16_bits_to_float(__ldg(srow[mt][h] + gi));
      }
  };
  auto load_x = [&](XRaw<NB>& xr, int gi) {
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const int bi = nb * 8 + g;
      const uint4* xp = reinterpret_cast<const uint4*>(x + static_cast<size_t>(bi) * K + gi * kGroup + 32 * t);
#pragma unroll
      for (int u = 0; u < 4; ++u) xr.v[nb][u] = bi < B ? __ldg(xp + u) : make_uint4(0, 0, 0, 0);
    }
  };

  // With one n8 tile the next group's x is prefetched with its weights (16 more registers); with
  // two, x is loaded at the top of the iteration (prefetching it would pass 128 registers).
  constexpr bool kPrefetchX = NB == 1;
  float acc[kMTiles][NB][4] = {};

  // ---- register double buffer: group gi + W loads while group gi computes ----
  WeightFrag cur, nxt;
  XRaw<NB> xc, xn;
  int gi = warp;
  if (gi < G) {
    load_weights(cur, gi);
    if constexpr (kPrefetchX) load_x(xc, gi);
  }
#pragma unroll 2  // two copies of the body let cur/nxt swap roles instead of being copied
  for (; gi < G; gi += warps) {
    const bool more = gi + warps < G;
    if (more) load_weights(nxt, gi + warps);  // the next group in flight during this one
    if constexpr (kPrefetchX) {
      if (more) load_x(xn, gi + warps);
    } else {
      load_x(xc, gi);
    }
    group_mma<NB>(acc, cur, xc);
    cur = nxt;
    if constexpr (kPrefetchX) xc = xn;
  }

  // Split-K reduction over the warps in a fixed order (deterministic), one bf16 rounding.
  constexpr int kCols = NB * 8;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = mt * 16 + g + (i >> 1) * 8, c = nb * 8 + 2 * t + (i & 1);
        red[(warp * kRowsPerCta + r) * kCols + c] = acc[mt][nb][i];
      }
  __syncthreads();
  for (int e = threadIdx.x; e < B * kRowsPerCta; e += blockDim.x) {
    const int b = e / kRowsPerCta, r = e % kRowsPerCta, n = row0 + r;
    if (n >= N) continue;
    float s = 0.f;
    for (int w = 0; w < warps; ++w) s += red[(w * kRowsPerCta + r) * kCols + b];
    y[static_cast<size_t>(b) * N + n] = __float2bfloat16_rn(s);
  }
}

// ---- host side -------------------------------------------------------------------------------

template <int NB>
void launch(const d2k_args* args, const __nv_bfloat16* x, const uint32_t* qw, const __nv_bfloat16* sc,
            __nv_bfloat16* y, int B, int N, int K, cudaStream_t st) {
  const int warps = std::max(1, std::min(W4A16_WARPS, K / kGroup));  // no idle warps when K is short
  const size_t smem = size_t(warps) * kRowsPerCta * NB * 8 * sizeof(float);
  const unsigned ctas = static_cast<unsigned>((N + kRowsPerCta - 1) / kRowsPerCta);
  w4a16_mma_splitk<NB><<<ctas, warps * 32, smem, st>>>(x, qw, sc, y, B, N, K);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw d2k::abi_error(std::string("expert: launch failed: ") + cudaGetErrorString(e));
  (void)args;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t B = d2k::scalar_i(args, "B"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    if (B < 1 || B > 16 || N < 1 || N > (int64_t{1} << 30) || K < kGroup || K % kGroup != 0 || K > (int64_t{1} << 30))
      throw d2k::abi_error("expert: need 1 <= B <= 16, N >= 1, K >= 128 a multiple of 128 (got B=" + std::to_string(B) +
                           ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ")");
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {B, K});
    const DLTensor& qweight = d2k::input(args, "qweight", kDLCUDA, d2k::dl::i32, {N, K / 8});
    const DLTensor& scales = d2k::input(args, "scales", kDLCUDA, d2k::dl::bf16, {N, K / kGroup});
    const DLTensor& y = d2k::output(args, "y", kDLCUDA, d2k::dl::bf16, {B, N});
    const auto* xp = d2k::data<const __nv_bfloat16>(x);
    const auto* qp = d2k::data<const uint32_t>(qweight);
    if (!aligned16(xp) || !aligned16(qp))
      throw d2k::abi_error("expert: x and qweight must be 16-byte aligned (16-byte vector loads)");
    const auto* sp = d2k::data<const __nv_bfloat16>(scales);
    auto* yp = d2k::data<__nv_bfloat16>(y);
    auto st = static_cast<cudaStream_t>(args->stream);
#if W4A16_ROWSTREAM
    if (rowstream::serves(B, K)) {
      rowstream::launch(xp, qp, sp, yp, int(N), int(K), st);
      return D2K_OK;
    }
#endif
    if (B <= 8)
      launch<1>(args, xp, qp, sp, yp, int(B), int(N), int(K), st);
    else
      launch<2>(args, xp, qp, sp, yp, int(B), int(N), int(K), st);
    return D2K_OK;
  });
}
