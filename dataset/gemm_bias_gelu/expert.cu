// gemm_bias_gelu — expert: one CUTLASS 3 sm90 kernel, the bias and the GELU fused into its
// epilogue: out = gelu_tanh(A·B + bias) leaves the accumulators once, as bf16, and C = A·B never
// reaches memory (no second pass over M x N).
//
// Kernel: CUTLASS's warp-specialised cooperative persistent GEMM (CollectiveBuilder,
// KernelTmaWarpSpecializedCooperative): a producer warp streams A (128 x 64, K-major) and B
// (64 x 256, N-major: torch.addmm's [K,N] mat2 as stored, wgmma reads it transposed from shared
// memory) tiles with TMA into a multi-stage shared-memory ring; two consumer warpgroups issue
// wgmma (m64n256k16, fp32 accumulators) on their halves of the 128 x 256 tile. The epilogue
// loads the tile's 256 bias values once, computes gelu(acc + bias) in fp32 in registers,
// converts to bf16 and stores through shared memory with TMA (128 x 64 epilogue tiles in the
// tiled kernel). GELU is evaluated as x * sigmoid(2u) (gelu_tanh.h): the same function as
// 0.5 x (1 + tanh(u)), one ex2.approx and one reciprocal, accurate to a few fp32 ulps for every
// x (0.5 (1 + tanh(u)) with tanh.approx loses all relative accuracy below x = -3); in the tiled
// kernel every other element's reciprocal runs on the FMA pipe (Newton steps) so that the
// epilogue is not bound by the MUFU unit (the eleventh session's variants, below). The stream-K
// kernel keeps CUTLASS's LinCombPerColBiasEltAct.
//
// Two instantiations (each is minutes of nvcc), picked per shape by choose_kernel():
//   tiled    128x256x64 tile, 2x1x1 cluster (the two CTAs of a cluster share each B tile by TMA
//            multicast), persistent data-parallel scheduler with a swizzled raster: M > 128.
//            At (8192,8192,8192) 2048 tiles = 15.5 waves of 132 SMs; at (16384,14336,4096)
//            7168 tiles = 54.3 waves.
//   streamk  128x256x64 tile, no cluster, stream-K scheduler: the skinny M <= 128 (decode, small
//            prefill). At (128,28672,4096) there are only 112 output tiles for 132 SMs and the
//            call is bound by reading B once (235 MB); stream-K hands each SM an equal share of
//            the 112 x 64 k-blocks so that every SM streams B, at the price of fp32 partial
//            tiles reduced through the workspace. A 2x1 cluster would waste half the CTAs here
//            (only one M tile).
//
// Variants considered (H200, 2026-12-02: median us and % of SOL on the bench workloads, `d2k bench
// --task gemm_bias_gelu --targets expert,expert:noswizzle,expert:skinny_dp,expert:streamk_all
// --bench-rounds 1 --max-time 0.3`, noise 0.1-1.1%; docs/results/gemm_bias_gelu.md has the tables):
//   variant       what it is                                        | 8192^3        | 16384x14336x4096 | 128x28672x4096
//   default       tiled for M > 128, stream-K (decomposition forced | 1421.1 97.3%  | 2561.3 94.5%     | 77.3 71.1%
//                 to StreamK) for M <= 128                          |               |                  |
//   skinny_dp     M <= 128 on the same stream-K kernel forced       | 1421.2 97.3%  | 2561.5 94.5%     | 70.8 77.7%
//                 data-parallel (112 CTAs, no partial-tile           |               |                  |
//                 reduction; what CUTLASS's own heuristic picks)     |               |                  |
//   streamk_all   every shape on the stream-K kernel (no cluster)   | 1613.8 85.7%  | 3050.6 79.4%     | 77.1 71.3%
//   noswizzle     tiled kernel without raster swizzle               | 1471.0 94.0%  | 2744.2 88.2%     | 77.3 71.2%
//   library       cuBLASLt GELU_BIAS epilogue (another run that day)| 1377.9 98.5%  | 2478.1 95.9%     | 102.9 52.6%
// Measured: stream-K's fix-up traffic does not pay at M = 128 (skinny_dp is 1.09x faster there, and
// the better default for M <= 128); the multicast cluster with the tiled scheduler is worth
// 1.14x / 1.19x on the large shapes, the swizzle 1.04x / 1.07x. On the two large shapes the
// expert is 0.98x the library (2.3% short of the issue's expert >= library).
// The three variants above are retired from the sweep (their flags still build them:
// -DGBG_SKINNY_DATA_PARALLEL=1, -DGBG_FORCE_STREAMK=1, -DGBG_SWIZZLE=1).
//
// Why the large shapes miss the library by 2.3% (diagnosis from the numbers above, no profile):
//   - Wave quantisation. The persistent scheduler deals cluster tiles round-robin: at 8192^3 the
//     2048 tiles are 15.52 waves of 132 CTAs, so 68 CTAs run 16 tiles and 64 run 15; the last
//     round is 52% full and costs 16 / 15.52 = 3.1% (more than the whole gap). At 16384x14336x4096,
//     7168 tiles = 54.30 waves, 55 rounds: 1.3%. The per-tile rate is not the problem: 97.3% of SOL
//     x 16 / 15.52 = 100.3% of the calibrated cuBLAS rate at 8192^3.
//   - The epilogue stops the tensor cores. In the cooperative kernel both consumer warpgroups run
//     the epilogue after the tile's last wgmma: 32768 GELUs of 2 MUFU each (EX2 + RCP, 16 a clock
//     per SM) are ~4.1k cycles per tile against ~65-90k cycles of main loop at K = 4096 (64
//     k-blocks), half that share at K = 8192; the producer prefetching the next tile's stages
//     hides its loads, not this. Up to ~5% at K = 4096: why the 16384 row is short by more than
//     its 1.3% tail.
//   - Not the cause: DRAM bytes (swizzle 8 keeps the reads at 0.6-1.0 GB a call, under 10% of the
//     bandwidth over the call's time), spills (none: cuobjdump -res-usage), occupancy (one CTA per
//     SM by design, 4 stages of 48 KB beside the epilogue's shared memory), launches (one).
// Variants measured on the H200 (2026-12-02, docs/results/gemm_bias_gelu.md), M > 128 only:
//   tail_sk      the tiled kernel on the stream-K scheduler (tail waves split): 1.00x / 0.98x of the
//                default on the two large rows: the fix-up costs more than the tail it removes.
//   whole_waves  host-side, the fewest clusters with the same rounds (schedule.h): 1.01x at 8192^3
//                (twice the noise), 1.00x on the 16384 row; the library still 1.03x faster.
//   raster_m     host-side, raster along M: within noise (1.00x).
//   Retired from the sweep (their flags still build them: -DGBG_TAIL_STREAMK=1,
//   -DGBG_WHOLE_WAVES=1, -DGBG_RASTER_ALONG_M=1).
// Variants measured on the H200 (2026-12-03, eighth session; M > 128 only): the ping-pong kernel (KernelTmaWarpSpecializedPingpong), which attacks the epilogue stall. Each
// consumer warpgroup owns a whole tile and the two take turns on the main loop (an ordered
// barrier): while one runs its tile's epilogue (the GELU's MUFU work, bf16, TMA store) the other
// runs the next tile's wgmma, so the tensor cores do not wait ~2k cycles a 128x128 tile.
//   Tile per warpgroup: 128x128x64 rather than 64x256x64. Both hold 128 fp32 accumulators a thread
//   and run the same 16384 GELUs per tile; they differ in what crosses L2 per multiply-add. Per
//   k-block (64 of K), L2 read-outs per 1M multiply-adds, a multicast counted once:
//     cooperative 128x256, 2x1 (default)   16 KB
//     ping-pong   128x128, 2x1             24 KB     64x256, 2x1   24 KB
//     ping-pong   128x128, 2x2             16 KB     64x256, 2x2   20 KB
//   128x128 is never worse, and with a 2x2 cluster it matches the default's traffic (16 KB per 1M
//   multiply-adds is ~8.4 TB/s out of L2 at 2048 multiply-adds a clock per SM, 132 SMs, 1.98 GHz:
//   what the default sustains at 97% of SOL; 24 KB is ~12.6 TB/s, which no run here has shown the
//   L2 to deliver). A 128x128x64 stage is 32 KB (the builder fits 6 beside the 64x32 epilogue
//   tiles, against the default's 4 of 48 KB).
//   Rounds (a persistent CTA's tiles, one main loop each): 8192^3 is 4096 tiles = 31.03 per CTA,
//   32 rounds (the same 3.1% tail as the default's 16 for 15.52: ping-pong does not touch it);
//   16384x14336x4096 is 14336 tiles = 108.6 per CTA, 109 rounds (0.4% tail against 1.3%).
//   pingpong     128x128x64 per warpgroup, 2x1 cluster (B multicast along M, as the default): the
//                fewer CTAs a stage release waits for; 1.5x the default's L2 read-outs.
//   pingpong_c4  the same on a 2x2 cluster (A multicast along N too): the default's L2 read-outs,
//                four CTAs per stage release. The persistent grid is the clusters of 4 that the
//                GPCs hold at once (resident_clusters(): CUTLASS's own estimate would launch 29):
//                33 give the rounds above; 32 (128 CTAs, if two GPCs have 2 SMs left over) keep
//                32 rounds at 8192^3 but take 112 instead of 109 on the 16384 row (2.7%). Expected
//                the better of the two at 8192^3.
//   Expected: up to ~5% on the 16384 row (the epilogue's share at K = 4096 plus 0.9 points of
//   tail), up to ~2.5% at 8192^3 (half the epilogue share at K = 8192, the tail unchanged), less
//   whatever two m64n128k16 per k-step lose against one m64n256k16: B is read from shared memory
//   twice, 12 KB per 128x128x16 against 10 KB per 64x256x16, i.e. 96 against 80 B/clock of the
//   SM's 128 at the full tensor rate (the 64x256 tile would keep 80; it loses on L2 instead).
//   Each is one new instantiation that replaces the cooperative tiled one in its build (still two
//   kernels).
//   Measured: pingpong 0.95x / 1.01x the default (8192^3 / 16384 row), pingpong_c4 0.94x / 0.98x:
//   the hidden epilogue gains at most 0.7% at K = 4096 and the extra L2 read-outs cost 5% at
//   K = 8192. Retired from the sweep (their flags still build them: -DGBG_PINGPONG=1,
//   -DGBG_PINGPONG_CLUSTER_N=2).
// The eleventh session's variants (the tiled kernel's epilogue only, M > 128: the
// M <= 128 stream-K kernel is compiled from the same types as before, its SASS unchanged). The
// epilogue as compiled (cuobjdump -sass of the tiled kernel): ~16 instructions an element, 2 of
// them MUFU (EX2, RCP); with 2 consumer warps per SM sub-partition and a MUFU rate of 4 lanes a
// clock there (16 per SM), an element costs a warp 16 clocks of MUFU and ~16 of issue, so the
// 128 elements a thread are ~4.1k clocks per tile either way: both limits must come down. Of the
// 16, 6 are overhead: CUTLASS's LinCombPerColBias computes alpha * acc + beta * C + bias (two FFMA
// where one FADD does: with no C the compiler cannot drop 0 * beta), __expf multiplies by log2(e)
// and its non-ftz ex2 adds a range test and two predicated multiplies. Main loop per tile: 64
// k-blocks of 1024 clocks at K = 4096 (~70k at the measured 93%), 128 at K = 8192.
//   gelu_lean         the visitor tree gelu(acc + bias) without alpha and beta, log2(e) folded into
//                     the two constants of -2u, ex2.approx.ftz and rcp.approx.ftz issued directly
//                     (gelu_tanh.h gelu_tanh_lean_f32): ~10 instructions an element (the same two
//                     MUFU). MUFU-bound at 16 clocks an element as before, so it gains only what
//                     the co-issue of two saturated pipes costs today. Expected: 0-0.5%.
//   gelu_newton       gelu_lean with the reciprocal of every odd element of a fragment on the FMA
//                     pipe (rcp_newton_ge1: integer first guess, three Newton steps, six FFMA):
//                     1.5 MUFU (12 clocks) and ~13.3 issue slots an element (SASS: 1700
//                     instructions, 192 MUFU for 128 elements), ~17% off the epilogue's ~4.1k
//                     clocks a tile. Expected: ~1.0% on the 16384 row (K = 4096), ~0.5% at 8192^3.
//   gelu_newton_epi64 gelu_newton with a 128 x 64 epilogue tile instead of CUTLASS's 128 x 32: four
//                     register -> shared -> TMA store rounds a tile instead of eight, so half the
//                     named-barrier waits and pipeline drains between bursts of GELU work, and 32
//                     independent elements a thread per burst instead of 16 to hide the MUFU
//                     latency. Shared memory: 2 x 16 KB of D staging beside the main loop's 4
//                     stages of 48 KB (a static_assert keeps the 4 stages; 5 never fit). At an
//                     estimated 150-300 clocks a round: expected a further 0.9-1.7% at K = 4096,
//                     0.5-0.9% at K = 8192.
//   Together at most ~2.7% on the 16384 row (its gap to cuBLASLt: 2.7%) and ~1.4% at 8192^3 (gap
//   2.2%); the 3.1% tail of 8192^3 (16 rounds for 15.52 waves) is untouched. One new instantiation
//   each (the default's tiled kernel is not built in them).
// Not built: tanh.approx in the GELU (one MUFU instead of two) halves the epilogue but gives up the
// sigmoid form's accuracy below x = -3 (design.json L1.gelu_sigmoid_form). exp2 on the FMA pipe
// (Cody-Waite reduction and a degree-5 polynomial, FlashAttention-3's trick) for part of the
// elements: ~11 instructions for each MUFU.EX2 it saves, against ~7 for the Newton reciprocal,
// so at the same balance of MUFU and issue it saves less. A 256x128 tile with a 1x2 cluster
// (cuBLAS's other usual sm90 shape): the same 16 KB of L2 read-outs per 1M multiply-adds, the
// same 16384 GELUs per consumer warpgroup, and 96 instead of 80 B/clock of shared-memory reads
// (two m64n128k16 per k-step): nothing for it in the arithmetic. More main-loop stages: 4 x 48 KB
// + 16 KB of epilogue staging is already at the 227 KB limit. 128x128 tiles for
// M <= 128 (224 tiles at M = 128, 1.7 waves), split-K with a separate reduction (a second pass
// over an fp32 M x N): as before, not built.
//
// Measured (H200, eleventh session, suite-eleven-2026-12-03.md; one d2k bench with the library):
//   8192^3 / 16384x14336x4096, us and vs the library of the run (1388.12 / 2480.59):
//   default (form 0)   1424.28 0.97x | 2577.77 0.96x
//   gelu_lean          1414.22 0.98x | 2545.46 0.97x   (1.01x / 1.01x the default)
//   gelu_newton        1408.31 0.99x | 2524.47 0.98x   (1.01x / 1.02x)
//   gelu_newton_epi64  1413.14 0.98x | 2516.98 0.99x   (1.01x / 1.02x)
//   memcheck of the three clean on the two check workloads. The MUFU balance pays as expected on
//   the K = 4096 row (2.1% with the wider epilogue tile, 1.0% expected + 0.9-1.7%) and less at
//   8192^3 (0.8%, where gelu_newton alone reads 1.1%: the two are within the noise there).
//   gelu_newton_epi64 is the default since (GBG_GELU_FORM=2, GBG_EPI_TILE_N=64; SASS equal to the
//   timed variant's); the form before is `prev`, gelu_lean and gelu_newton retired (their flags
//   still build them). expert >= library still MISSED by 1.8% / 1.5% in that run.
// %VARIANT% prev -DGBG_GELU_FORM=0 -DGBG_EPI_TILE_N=0
// The twelfth session's variant (M > 128 only; the M <= 128 stream-K kernel unchanged), against
// the tail of 8192^3 (16 rounds for 15.52 waves: 3.1%) and of the 16384 row (55 for 54.3: 1.3%):
//   t192  the cooperative tiled kernel on a 128 x 192 x 64 tile (two consumer warpgroups of
//         64 x 192, wgmma m64n192k16), the same 2 x 1 cluster with B multicast, the same lean
//         epilogue (128 x 64 epilogue tiles, three a tile). A unit is 0.75 of the default's work,
//         so the rounds are finer; against it, 43 x 192 = 8256 columns are computed for 8192
//         (0.8%) and 75 x 192 = 14400 for 14336 (0.45%), L2 read-outs per 1M multiply-adds rise
//         from 16 KB to 18.7 KB (a cluster's k-block: 2 x 16 KB of A + 24 KB of multicast B for
//         3M multiply-adds; 1.17x), shared-memory reads per wgmma from 80 to 85 B/clock of 128
//         (2 KB of A + 6 KB of B per m64n192k16, 96 clocks), and per-tile fixed costs (pipeline
//         fill, epilogue tail) are spread over 0.75 of the work. Stage (128 + 192) x 64 x 2 B =
//         40 KB: 4 fit beside the 2 x 16 KB of D staging (the static_assert below), as for 48 KB.
//         The catch in CUTLASS's persistent scheduler: it pads the tile grid to whole swizzle
//         groups in both dimensions, and the padding tiles run whole main loops. With the default
//         swizzle cap 8 the 43 N tiles of 8192 become 48 (24 rounds of 0.75 = 18 default rounds:
//         12.5% slower) and the 75 of 14336 become 80 (78 rounds = 58.5: 6.4% slower); so the
//         variant picks the swizzle cap on the host (tiled_swizzle, schedule.h
//         fewest_rounds_swizzle): a smaller cap when it saves more than 2% of the rounds.
//         Expected (arithmetic, not measured), rounds x 0.75 against the default's rounds:
//           8192^3: cap 1 (no swizzle, no padding): 64 x 43 = 2752 tiles = 1376 cluster tiles on
//             66 clusters = 20.85 -> 21 rounds (tail 0.7%) = 15.75 default rounds: 1.6% faster,
//             minus what the lost swizzle costs (the default without it measured 3.5% slower at
//             8192^3, noswizzle above) and the extra L2 read-outs: -2% to +1.6%.
//           16384x14336x4096: cap 4 (one padding column): 128 x 76 = 9728 tiles = 4864 cluster
//             tiles = 73.7 -> 74 rounds = 55.5 default rounds: 0.9% slower (no swizzle: 73 rounds,
//             54.75, 0.45% faster, against the 7.1% the default lost without swizzle there).
//         So it is expected to tie or lose on the 16384 row and is a test of the tail at 8192^3
//         only. One new instantiation (replaces the cooperative tiled one in its build).
// %VARIANT% t192 -DGBG_TILE_N=192
//
// CuTe/CUTLASS device code carries assert()s; each is a call, and ptxas serialises the wgmma
// pipeline across calls (warning C7510, about half the GEMM rate). Whatever the build type, the
// expert is compiled without them.
#ifndef NDEBUG
#define NDEBUG 1
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "d2k/solution.h"
#include "gelu_tanh.h"
#include "gemm_args.h"
#include "schedule.h"

#ifndef GBG_SKINNY_DATA_PARALLEL
#define GBG_SKINNY_DATA_PARALLEL 0
#endif
#ifndef GBG_FORCE_STREAMK
#define GBG_FORCE_STREAMK 0
#endif
#ifndef GBG_SWIZZLE
#define GBG_SWIZZLE 8  // largest raster swizzle the tiled kernel may use (CUTLASS picks 1/2/4/8)
#endif
#ifndef GBG_TAIL_STREAMK
#define GBG_TAIL_STREAMK 0  // M > 128: the 2x1-cluster kernel on the stream-K scheduler (tail wave split)
#endif
#ifndef GBG_WHOLE_WAVES
#define GBG_WHOLE_WAVES 0  // M > 128: the fewest persistent clusters that keep the tiled kernel's wave count
#endif
#ifndef GBG_RASTER_ALONG_M
#define GBG_RASTER_ALONG_M 0  // M > 128: raster along M instead of CUTLASS's heuristic (along N here)
#endif
#ifndef GBG_PINGPONG
#define GBG_PINGPONG 0  // M > 128: the ping-pong kernel (128x128x64 per consumer warpgroup) for the tiled one
#endif
#ifndef GBG_PINGPONG_CLUSTER_N
#define GBG_PINGPONG_CLUSTER_N 1  // the ping-pong kernel's cluster: 2 x this (2: A multicast along N too)
#endif
#ifndef GBG_GELU_FORM
// M > 128: the tiled kernel's epilogue. 0: LinCombPerColBiasEltAct with gelu_tanh_f32;
// 1: lean (acc + bias without alpha/beta, gelu_tanh_lean_f32); 2: lean, every odd element of a
// fragment with the reciprocal on the FMA pipe (gelu_tanh_lean_newton_f32; the default since the
// eleventh session).
#define GBG_GELU_FORM 2
#endif
#ifndef GBG_EPI_TILE_N
#define GBG_EPI_TILE_N 64  // M > 128: the tiled kernel's epilogue tile 128 x this (0: CUTLASS's choice, 128 x 32)
#endif
#ifndef GBG_TILE_N
#define GBG_TILE_N 256  // M > 128: the cooperative tiled kernel's CTA tile 128 x this x 64 (t192: 192)
#endif
#ifndef GBG_SWIZZLE_MIN_SAVING
// M > 128, GBG_TILE_N != 256 only: a smaller raster swizzle than GBG_SWIZZLE is taken when its
// padding saves more than this share of the rounds (schedule.h fewest_rounds_swizzle).
#define GBG_SWIZZLE_MIN_SAVING 0.02
#endif

#define GBG_CUDA_CHECK(call)                                                                \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess)                                                                  \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": " + cudaGetErrorString(e_));                    \
  } while (0)

#define GBG_CUTLASS_CHECK(call)                                                             \
  do {                                                                                      \
    cutlass::Status s_ = (call);                                                            \
    if (s_ != cutlass::Status::kSuccess)                                                    \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": " + cutlassGetStatusString(s_));                \
  } while (0)

namespace gbg_expert {
using namespace cute;
using bf16 = cutlass::bfloat16_t;

/// The task's GELU as a CUTLASS epilogue activation (the visitor calls Fn on fp32 fragments,
/// Array<float, N>; the scalar form is what operations.hpp names), in the form GBG_GELU_FORM
/// picks. Form 0: gelu_tanh_f32 (__expf, __fdividef), in CUTLASS's LinCombPerColBiasEltAct. The
/// lean forms (1, 2) of the visitor tree below: Form 1 evaluates every element with two MUFU
/// (ex2, rcp), Form 2 takes the reciprocal of every odd element of a fragment on the FMA pipe
/// instead (gelu_tanh.h, rcp_newton_ge1), so that the MUFU pipe and the issue slots are about
/// equally loaded: ~12 MUFU clocks and ~13 issue slots a warp per element, against 16 and ~16
/// for Form 0.
template <int Form>
struct Gelu {
  /// Element i of a fragment.
  static CUTLASS_HOST_DEVICE float at(float x, int i) {
    if constexpr (Form == 0) return gbg::gelu_tanh_f32(x);
    else if constexpr (Form == 2) return (i & 1) ? gbg::gelu_tanh_lean_newton_f32(x) : gbg::gelu_tanh_lean_f32(x);
    else return gbg::gelu_tanh_lean_f32(x);
  }
  template <class T>
  struct Fn {
    static constexpr bool kIsHeavy = true;
    CUTLASS_HOST_DEVICE float operator()(float x) const { return at(x, 0); }
  };
  template <int N>
  struct Fn<cutlass::Array<float, N>> {
    static constexpr bool kIsHeavy = true;
    CUTLASS_HOST_DEVICE cutlass::Array<float, N> operator()(cutlass::Array<float, N> const& v) const {
      cutlass::Array<float, N> y;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) y[i] = at(v[i], i);
      return y;
    }
  };
};

/// The fusion of the epilogue: Form 0 is CUTLASS's LinCombPerColBiasEltAct (alpha * acc + beta * C
/// + bias, then the activation: with no C operand, two FFMA an element where one FADD does);
/// the lean forms are the visitor tree gelu(acc + bias) without the scalars.
template <int Form, class TileShape, int Align>
using LeanFusion = cutlass::epilogue::fusion::Sm90EVT<
    cutlass::epilogue::fusion::Sm90Compute<Gelu<Form>::template Fn, cutlass::bfloat16_t, float,
                                           cutlass::FloatRoundStyle::round_to_nearest>,
    cutlass::epilogue::fusion::Sm90EVT<
        cutlass::epilogue::fusion::Sm90Compute<cutlass::plus, float, float, cutlass::FloatRoundStyle::round_to_nearest>,
        cutlass::epilogue::fusion::Sm90AccFetch,
        cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, cutlass::bfloat16_t, float,
                                                    cute::Stride<cute::_0, cute::_1, int64_t>, Align>>>;
template <int Form, class TileShape, int Align>
using FusionOf = std::conditional_t<
    Form == 0,
    cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Gelu<0>::template Fn, cutlass::bfloat16_t, float, cutlass::bfloat16_t,
                                                       cutlass::bfloat16_t, float>,
    LeanFusion<Form, TileShape, Align>>;

/// bf16 A (M x K, row-major) x bf16 B (K x N, row-major) -> fp32 accumulators ->
/// bf16 gelu(acc + bias[n]) (M x N, row-major). No C operand (ElementC = void): nothing but the
/// bias is read by the epilogue. The warp-specialised schedule is a parameter: cooperative (both
/// consumer warpgroups on halves of one tile, TileShape is the CTA's) or ping-pong (each consumer
/// warpgroup owns a whole tile, TileShape is one warpgroup's, their main loops take turns).
struct Cooperative {
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
};
struct Pingpong {
  using Kernel = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
};

template <class TileShape, class ClusterShape, class SchedulerTag, class Schedule = Cooperative,
          class EpilogueTile = cutlass::epilogue::collective::EpilogueTileAuto, int GeluForm = 0>
struct FusedGemm {
  static constexpr int kGeluForm = GeluForm;
  using Tile = TileShape;
  using Cluster = ClusterShape;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::RowMajor;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlign = 8;  // 16 bytes of bf16: what TMA needs (N % 8 == 0, K % 8 == 0)
  using Fusion = FusionOf<GeluForm, TileShape, kAlign>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      EpilogueTile, float, float, void, LayoutD, kAlign, bf16, LayoutD,
      kAlign, typename Schedule::Epilogue, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, bf16, LayoutA, kAlign, bf16, LayoutB, kAlign, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      typename Schedule::Kernel>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue, SchedulerTag>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

// The tail_sk variant swaps the tiled kernel's scheduler for stream-K (same tile, same cluster):
// still two instantiations per build.
using TiledScheduler =
    std::conditional_t<GBG_TAIL_STREAMK != 0, cutlass::gemm::StreamKScheduler, cutlass::gemm::PersistentScheduler>;
// The gelu_* variants change the tiled kernel's epilogue only (GBG_GELU_FORM, GBG_EPI_TILE_N).
using TiledEpilogueTile = std::conditional_t<GBG_EPI_TILE_N == 0, cutlass::epilogue::collective::EpilogueTileAuto,
                                             Shape<_128, Int<(GBG_EPI_TILE_N > 0 ? GBG_EPI_TILE_N : 32)>>>;
// The t192 variant narrows the tile to 128 x 192 (two consumer warpgroups of 64 x 192, wgmma
// m64n192k16): 0.75 of the default tile's work per unit, so finer rounds (the variant notes above).
static_assert(GBG_TILE_N == 256 || GBG_TILE_N == 192, "GBG_TILE_N: 256 (default) or 192 (t192)");
static_assert(GBG_TILE_N % (GBG_EPI_TILE_N ? GBG_EPI_TILE_N : GBG_TILE_N) == 0, "the epilogue tile must divide the CTA tile");
using CooperativeTiledGemm = FusedGemm<Shape<_128, Int<GBG_TILE_N>, _64>, Shape<_2, _1, _1>, TiledScheduler,
                                       Cooperative, TiledEpilogueTile, GBG_GELU_FORM>;
// A wider epilogue tile must leave the main loop its 4 stages (227 KB of shared memory): 4 of 48 KB
// beside 2 x 16 KB of 128 x 64 D staging for the default tile; 4 of 40 KB for t192's 128 x 192
// (5 would be 200 KB + 32 KB + the bias row, over 227 KB; only 128 x 32 staging would leave room).
static_assert(GBG_EPI_TILE_N == 0 || CooperativeTiledGemm::Mainloop::DispatchPolicy::Stages >= 4,
              "the epilogue tile takes a main-loop stage");
// The pingpong variants swap the tiled kernel for CUTLASS's ping-pong kernel: a 128x128x64 tile
// per consumer warpgroup (two m64n128k16 wgmma per k-step, 128 fp32 accumulators a thread, as the
// cooperative kernel's half tile), the same fused epilogue, on a 2x1 (pingpong) or 2x2
// (pingpong_c4) cluster. While one warpgroup runs its tile's epilogue (GELU, bf16, TMA store),
// the other runs the next tile's main loop, so the tensor cores do not wait for the MUFU work.
// Still two instantiations per build (it replaces the cooperative tiled kernel).
using PingpongTiledGemm =
    FusedGemm<Shape<_128, _128, _64>, Shape<_2, Int<GBG_PINGPONG_CLUSTER_N>, _1>, TiledScheduler, Pingpong>;
using TiledGemm = std::conditional_t<GBG_PINGPONG != 0, PingpongTiledGemm, CooperativeTiledGemm>;
using StreamKGemm = FusedGemm<Shape<_128, _256, _64>, Shape<_1, _1, _1>, cutlass::gemm::StreamKScheduler>;

enum class Choice { Tiled, StreamK };

/// Tiled (2x1 clusters) needs two M tiles to fill a cluster; one M tile (M <= 128) is the
/// skinny case, where the output tiles do not fill the SMs and stream-K spreads the K loop.
Choice choose_kernel(int64_t M) {
  if (GBG_FORCE_STREAMK) return Choice::StreamK;
  return M > 128 ? Choice::Tiled : Choice::StreamK;
}

int sm_count() {
  int dev = 0, sms = 0;
  GBG_CUDA_CHECK(cudaGetDevice(&dev));
  GBG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

/// The tiled kernel's CTA tile grid and cluster shape, as CUTLASS's persistent scheduler sees them.
using SchedulerParams = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90Params;
struct TileGrid {
  dim3 blocks;  ///< CTA tiles along M and N (before the swizzle's padding)
  cutlass::gemm::GemmCoord cluster;
};
template <class G>
TileGrid tile_grid(const gbg::Args& g) {
  using Tile = typename G::Tile;
  using Cluster = typename G::Cluster;
  const cutlass::gemm::GemmCoord tile(size<0>(Tile{}), size<1>(Tile{}), size<2>(Tile{}));
  const cutlass::gemm::GemmCoord cluster(size<0>(Cluster{}), size<1>(Cluster{}), 1);
  return {SchedulerParams::get_tiled_cta_shape_mnl({int(g.M), int(g.N), int(g.K), 1}, tile, cluster), cluster};
}

/// The whole_waves variant's persistent CTA count for the tiled kernel: the work units CUTLASS's
/// persistent scheduler walks (cluster tiles, padded to the raster swizzle), then the fewest
/// clusters that need no more rounds than all of them (schedule.h).
template <class G>
int whole_wave_ctas(const gbg::Args& g, int sms) {
  const auto [blocks, cluster] = tile_grid<G>(g);
  const int log_swizzle = SchedulerParams::get_log_swizzle_size(blocks.x, blocks.y, GBG_SWIZZLE);
  const int64_t tiles_m = gbg::round_up(blocks.x, (1 << log_swizzle) * cluster.m());
  const int64_t tiles_n = gbg::round_up(blocks.y, (1 << log_swizzle) * cluster.n());
  const int cluster_size = cluster.m() * cluster.n();
  return gbg::whole_wave_clusters(tiles_m * tiles_n / cluster_size, sms / cluster_size) * cluster_size;
}

/// The t192 variant's raster swizzle cap for the tiled kernel: CUTLASS's persistent scheduler pads
/// the CTA tile grid to whole swizzle groups (8192 / 192 = 43 N tiles become 48 at swizzle 8, 44 at
/// 4 or 2) and every padding tile runs a whole main loop; schedule.h weighs those rounds against
/// the locality a smaller swizzle gives up. The default 128 x 256 tile never pads on the bench shapes
/// and keeps GBG_SWIZZLE as before.
template <class G>
int tiled_swizzle(const gbg::Args& g, int sms) {
  const auto [blocks, cluster] = tile_grid<G>(g);
  const int cluster_size = cluster.m() * cluster.n();
  return gbg::fewest_rounds_swizzle(blocks.x, blocks.y, cluster.m(), cluster.n(), GBG_SWIZZLE, sms / cluster_size,
                                    GBG_SWIZZLE_MIN_SAVING, [&](int cap) {
                                      return SchedulerParams::get_log_swizzle_size(int(blocks.x), int(blocks.y), cap);
                                    });
}

/// Clusters of G's kernel resident at once on the current device (cudaOccupancyMaxActiveClusters
/// with the kernel's block and shared memory), cached per device; 0 where the query fails or places
/// none (CUTLASS then keeps its own estimate). Asked only for clusters of more than two CTAs: CUTLASS's
/// estimate assumes 18-SM GPCs and launches 116 CTAs (29 clusters of 4) on 132 SMs, 36 rounds
/// instead of 32 at 8192^3; the query gives what this GPU's GPCs hold.
template <class G>
int resident_clusters() {
  using Kernel = typename G::Kernel;
  using Cluster = typename G::Cluster;
  static std::array<std::atomic<int>, 64> cache{};  // per device ordinal; 0 = not asked yet
  int dev = 0;
  GBG_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < int(cache.size()) && cache[dev].load() > 0) return cache[dev].load();
  const void* fn = reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>);
  const int smem = Kernel::SharedStorageSize;
  GBG_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaLaunchAttribute cluster_dim{};
  cluster_dim.id = cudaLaunchAttributeClusterDimension;
  cluster_dim.val.clusterDim.x = size<0>(Cluster{});
  cluster_dim.val.clusterDim.y = size<1>(Cluster{});
  cluster_dim.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(size<0>(Cluster{}), size<1>(Cluster{}), 1);
  config.blockDim = dim3(Kernel::MaxThreadsPerBlock, 1, 1);
  config.dynamicSmemBytes = smem;
  config.attrs = &cluster_dim;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, fn, &config) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed query is not an error of the call: CUTLASS's estimate then
    return 0;
  }
  if (dev < int(cache.size()) && clusters > 0) cache[dev].store(clusters);
  return clusters;
}

/// The kernel's arguments for one call (pointers may be null when only sizing the workspace).
template <class G>
typename G::Gemm::Arguments make_arguments(const gbg::Args& g, int sms) {
  using Kernel = typename G::Kernel;
  const int M = int(g.M), N = int(g.N), K = int(g.K);
  typename G::Gemm::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {M, N, K, 1};
  args.mainloop.ptr_A = reinterpret_cast<const bf16*>(g.A);
  // CUTLASS strides are (M|N, K, L): A row-major M x K, B row-major K x N seen as N x K with
  // unit N stride, out row-major M x N.
  args.mainloop.dA = typename Kernel::StrideA{int64_t(K), _1{}, int64_t(M) * K};
  args.mainloop.ptr_B = reinterpret_cast<const bf16*>(g.B);
  args.mainloop.dB = typename Kernel::StrideB{_1{}, int64_t(N), int64_t(K) * N};
  args.epilogue.ptr_C = nullptr;
  args.epilogue.ptr_D = reinterpret_cast<bf16*>(g.out);
  args.epilogue.dD = typename Kernel::StrideD{int64_t(N), _1{}, int64_t(M) * N};
  auto& t = args.epilogue.thread;
  if constexpr (G::kGeluForm == 0) {
    t.alpha = 1.f;
    t.beta = 0.f;
    t.bias_ptr = reinterpret_cast<const bf16*>(g.bias);
  } else {
    // The lean visitor tree's arguments: op_0 = (op_0 acc, op_1 bias row, op_2 plus), op_1 = gelu.
    t.op_0.op_1.ptr_row = reinterpret_cast<const bf16*>(g.bias);
  }
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = sms;
  using Decomposition = cutlass::gemm::kernel::detail::DecompositionMode;
  if constexpr (std::is_same_v<G, StreamKGemm>) {
    // Stream-K explicitly: CUTLASS's heuristic picks data-parallel whenever the last wave is at
    // least half full, i.e. for 112 tiles on 132 SMs, the very case stream-K is here for. Problems
    // with at most 8 k-blocks per tile stay data-parallel (nothing worth splitting).
    args.scheduler.decomposition_mode =
        GBG_SKINNY_DATA_PARALLEL ? Decomposition::DataParallel : Decomposition::StreamK;
  } else {
    args.scheduler.max_swizzle_size = GBG_SWIZZLE;
    if constexpr (GBG_TILE_N != 256 && std::is_same_v<G, CooperativeTiledGemm>)
      args.scheduler.max_swizzle_size = tiled_swizzle<G>(g, sms);
    if (GBG_RASTER_ALONG_M) args.scheduler.raster_order = cutlass::gemm::kernel::detail::RasterOrderOptions::AlongM;
    if constexpr (GBG_TAIL_STREAMK != 0) {
      // Forced, as for the skinny kernel: the heuristic keeps data-parallel when the last wave is
      // at least half full (8192^3: 2048 tiles = 15.5 waves), the very tail this variant splits.
      // CUTLASS then runs all but the last 1 + fraction waves data-parallel and shares the rest's
      // k-blocks evenly among the 66 clusters. Deterministic reduction (spec.md: results must be
      // deterministic) is the scheduler's default.
      args.scheduler.decomposition_mode = Decomposition::StreamK;
    }
    if (GBG_WHOLE_WAVES) args.hw_info.sm_count = whole_wave_ctas<G>(g, sms);
    if constexpr (decltype(size(typename G::Cluster{}))::value > 2)
      args.hw_info.max_active_clusters = resident_clusters<G>();
  }
  return args;
}

/// CUTLASS workspace (stream-K partial tiles and their flags; none for the tiled kernel).
size_t cutlass_workspace(const gbg::Args& g, int sms) {
  if (choose_kernel(g.M) == Choice::Tiled) return TiledGemm::Gemm::get_workspace_size(make_arguments<TiledGemm>(g, sms));
  return StreamKGemm::Gemm::get_workspace_size(make_arguments<StreamKGemm>(g, sms));
}

template <class G>
void launch(const gbg::Args& g, int sms, void* ws, size_t ws_bytes, cudaStream_t stream) {
  typename G::Gemm::Arguments args = make_arguments<G>(g, sms);
  GBG_CUDA_CHECK(cudaGetDevice(&args.hw_info.device_id));
  if (G::Gemm::get_workspace_size(args) > ws_bytes)
    throw std::runtime_error("expert: CUTLASS workspace larger than the slice reserved for it");
  GBG_CUTLASS_CHECK(G::Gemm::can_implement(args));
  typename G::Gemm gemm;
  GBG_CUTLASS_CHECK(gemm.initialize(args, ws, stream));
  GBG_CUTLASS_CHECK(gemm.run(stream));
  GBG_CUDA_CHECK(cudaGetLastError());
}

/// Workspace slices, carved by one function for both entry points.
struct Buffers {
  void* cutlass = nullptr;
  size_t cutlass_bytes = 0;
};
Buffers carve(d2k::Workspace& ws, const gbg::Args& g, int sms) {
  Buffers b;
  b.cutlass_bytes = cutlass_workspace(g, sms);
  b.cutlass = b.cutlass_bytes ? ws.take_bytes(b.cutlass_bytes) : nullptr;
  return b;
}

/// Shapes only (the workspace-size call has null data pointers).
gbg::Args shape_args(const d2k_args* a) {
  gbg::Args g;
  g.M = d2k::scalar_i(a, "M");
  g.N = d2k::scalar_i(a, "N");
  g.K = d2k::scalar_i(a, "K");
  if (g.M < 1 || g.N < 1 || g.K < 1 || g.M > INT32_MAX || g.N > INT32_MAX || g.K > INT32_MAX)
    throw d2k::abi_error("axes M, N, K must be in [1, 2^31)");
  return g;
}

void run(const d2k_args* a) {
  const gbg::Args g = gbg::parse(a, kDLCUDA);
  const int sms = sm_count();
  d2k::Workspace ws(a);
  const Buffers b = carve(ws, g, sms);
  cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
  if (choose_kernel(g.M) == Choice::Tiled) launch<TiledGemm>(g, sms, b.cutlass, b.cutlass_bytes, stream);
  else launch<StreamKGemm>(g, sms, b.cutlass, b.cutlass_bytes, stream);
}

}  // namespace gbg_expert

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const gbg::Args g = gbg_expert::shape_args(args);
    d2k::Workspace ws;
    gbg_expert::carve(ws, g, gbg_expert::sm_count());
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    gbg_expert::run(args);
    return D2K_OK;
  });
}
