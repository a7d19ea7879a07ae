// fp8_blockwise_gemm — expert: fp8 wgmma (e4m3 x e4m3 -> fp32) with DeepSeek-V3's fine-grained
// scaling promoted per 128 of K, on CUTLASS 3's sm90 blockwise-scaled warp-specialised mainloop
// (its producer side; the consumer side is DbPromotion below, a double-buffered promotion).
//
// Design (design.json has the levels):
//   - Operands stay in fp8 from DRAM to the tensor cores: wgmma.m64n128k32 e4m3 (SASS QGMMA) runs
//     at twice the bf16 rate and reads half the bytes; nothing is dequantised in memory.
//   - Promotion: each 128-deep k-tile is accumulated by four k32 wgmmas into a fresh fp32
//     register tile, which is then multiplied by a_scales[m, kb] · b_scales[n/128, kb] and added to
//     the running fp32 accumulator (FFMA per element). The tensor core's own accumulation, which
//     keeps about 14 bits when it adds fp8 products (DeepSeek-V3 report, section 3.3.2), is thus
//     never longer than 128 products, and every scale is applied to the block it belongs to.
//     Two such register tiles take turns (DbPromotion): k-block j's wgmmas are issued before
//     k-block j-1's FFMAs run, so the promotion overlaps the warpgroup's own tensor work.
//   - Dataflow: a producer warp issues TMA loads of 128 x 128 tiles of A and B (UTMALDG) into a
//     multi-stage shared-memory ring guarded by mbarriers; the k-tile's 128 A scales (one per row
//     of the tile) ride the same stage by TMA from a transposed, M-major copy, and the one B scale
//     of the tile by cp.async straight from b_scales. Two consumer warpgroups (cooperative schedule, 64 rows each) run
//     the wgmmas and the promotion; the epilogue converts to bf16 and stores through shared memory
//     with TMA (UTMASTG). Persistent CTAs walk the output tiles (one per SM).
//   - Partial tiles (M, N not multiples of 128) come from TMA's out-of-bounds zero fill on loads
//     and clipped stores; the scale of a partial N block is read once per tile like any other.
//
// The task's a_scales are row-major [M, K/128] (what a per-token quantiser writes); TMA wants
// them M-major with 16-byte rows, so a first small kernel writes them transposed into
// [K/128][round_up(M, 4)], zero padded (M·K/128 floats: under 0.4% of the operand bytes on every
// bench shape) — what DeepGEMM also asks of its callers ("TMA-aligned, column-major" scales).
// b_scales [NB, K/128] are read as they are (K-major; one scale per tile and k-tile).
//
// Variants considered (H200, 2026-12-02: median us and % of SOL on the bench workloads, `d2k bench
// --task fp8_blockwise_gemm --targets naive,library,expert,torch_eager --bench-rounds 1
// --max-time 0.5`, noise 0.1-1.5%; docs/results/fp8_blockwise_gemm.md has the table):
//   variant                                        | 8192x7168x2048 | 4096x24576x1536 | 128x7168x18432
//   -----------------------------------------------+----------------+-----------------+---------------
//   dequantise to bf16 + cuBLAS (naive.cu)         | 602.6  26.7%   | 804.8  25.7%    | 1254.6  2.5%
//   cuBLASLt fp8 BLK128x128 / VEC128 (library.cu)  | 205.1  78.3%   | 270.2  76.4%    |   45.2 68.1%
//   128x128x128 tile, cooperative, persistent      | 208.1  77.2%   | 271.3  76.1%    |   55.1 55.9%
//     (this file, default build)                   |                |                 |
//   same, stream-K scheduler (-DFP8_STREAMK=1)     | 225.8 (2026-12-03, 0.93x the default's 210.2 in the
//     for M = 128: 56 output tiles fill 56 of 132  | same run); the M = 128 row it was meant for not
//     SMs; stream-K splits K over idle SMs)        | reached. Retired from the sweep (the flag builds it)
//   128x256 tile                                   | rejected: 64x256 fp32 per warpgroup twice
//                                                  | (accumulator + promotion tile) = 256 registers
//                                                  | per thread, the budget of the whole thread
//   64x128 pingpong (two tiles per SM in flight)   | not built: one warpgroup at a time in the main
//                                                  | loop leaves its promotion FFMAs (below) with no
//                                                  | other warpgroup's wgmmas to hide under
//   hand-written wgmma/TMA kernel (no CUTLASS)     | not built in this round (no H200 time to debug)
// Measured: the default ties cuBLASLt on the large shapes (0.99x, 1.00x) and is 0.82x of it at
// M = 128. Against issue #16's bar (>= 1.5x bf16 cuBLAS on the same shape), 2026-12-03: 1.47x at
// 8192x7168x2048 (210.3 us; 1.5x needs <= 205.7, 2.2% less time) and 1.48x at 4096x24576x1536
// (274.05 us; needs <= 269.7, 1.6% less).
//
// Why the large rows fall short (read from the times above and the bf16 sibling's; no profile yet):
//   - L2 read-out. Every 128x128x128 k-block reads a 16 KB A tile and a 16 KB B tile out of L2 for
//     2^21 multiply-adds: 16 KB per 2^20. At 210.3 / 274.05 us that is 8.9 / 8.8 TB/s (computed).
//     In the bf16 GEMM of gemm_bias_gelu (2026-12-02), the 1x1-cluster kernel (24 KB per 2^20,
//     ~8.0 TB/s; stream-K scheduler) took 1.10x / 1.11x the time of the 2x1 multicast kernel
//     without swizzle (16 KB per 2^20, ~5.8 TB/s), and its results credit the cluster with 1.14x /
//     1.19x: about 8 TB/s is where that kernel stopped scaling. This one reads the sibling's 16 KB
//     per 2^20 at twice its multiply-add rate, so it runs at that level: the one limit a
//     configuration change can move.
//   - Tail: 3584 tiles on 132 SMs are 27.15 waves, 28 rounds (3.1%) at 8192x7168x2048; 6144
//     tiles are 46.55 waves, 47 rounds (1.0%) at 4096x24576x1536. Stream-K's fix-up cost more.
//   - Promotion: CUTLASS's mainloop waits for a k-block's four wgmmas (warpgroup_wait<0>) before
//     its 64 FFMAs a thread, so each warpgroup's tensor work pauses for its promotion and only the
//     other consumer warpgroup's wgmmas fill it.
//   - Epilogue: both consumer warpgroups convert and store the tile (bf16 through shared memory,
//     TMA) with no wgmma in flight; at 16 / 12 k-blocks a tile (K = 2048 / 1536) that is a larger
//     share of the tile's time than in the bf16 sibling (64-128 k-blocks of 64).
// Variants for the next run (not yet measured; docs/results/fp8_blockwise_gemm.md, "Variants for
// the next run"): the same 128x128x128 tile, cooperative kernel and persistent scheduler, a TMA
// multicast cluster (CUTLASS's builder picks the multicast copy for a cluster extent > 1; the A
// scales still come by plain TMA and the B scale by cp.async into each CTA).
//   c2x1       2x1 cluster: the two CTAs (neighbours along M) receive one B tile by multicast:
//              12 KB of L2 read-out per 2^20 multiply-adds (0.75x). Same rounds (1792 cluster tiles
//              on 66 clusters: 28; 3072: 47); 66 pairs fill the 132 SMs. Expected 1.02-1.08x if the
//              L2 read-out is the limit (then the promotion and the epilogue cap it), 1.00x if not;
//              the bar needs 1.022x and 1.016x.
//   c2x2       2x2 cluster: A multicast along N too, 8 KB per 2^20 (0.5x), four CTAs per stage
//              release. Grid: the clusters of 4 the GPCs hold (cudaOccupancyMaxActiveClusters;
//              CUTLASS's 18-SM-GPC estimate would launch 29). 33 keep 28 / 47 rounds; 32 keep 28 at
//              8192x7168x2048 (896 = 28 x 32) but take 48 at 4096x24576x1536 (2.1%). Expected: above
//              c2x1 only if c2x1 is still L2-bound; the bf16 sibling's ping-pong kernel took 1.016x
//              / 1.028x the time on a 2x2 cluster that it took on a 2x1.
//   c2x1_swz8  c2x1 with the persistent scheduler's raster swizzle up to 8 (host-side): a wave of
//              66 clusters covers 16 M tiles by ~8 N tiles instead of a whole row of 56 N tiles
//              and part of the next (8192x7168x2048). Both operands fit the 50 MB L2 (31.5 / 44.0
//              MB), so DRAM reads are near once per operand already: expected within 1% of c2x1
//              (the bf16 sibling's 1.04x / 1.07x came from 128 MB operands).
//
// SASS of the CUTLASS-mainloop build (now variant nodb; sm_90a, cuobjdump): the GEMM kernel has
// QGMMA.64x128x32.F32.E4M3.E4M3 x12, UTMALDG.3D x3 (A, B, A scales), LDGSTS x1 (the B scale),
// UTMASTG.3D x4, no local memory, no call; CUTLASS picks 6 pipeline stages of 32 KB. The cluster
// variants: the B load (c2x1, c2x1_swz8) or the A and B loads (c2x2) become
// UTMALDG.3D.MULTICAST, the rest as above (168 registers, no local memory, as the default).
// The default now (DbPromotion): QGMMA x16 (four issue sites of four: the first k-block, the two
// of the two-k-block loop, the even count's last), WARPGROUP.DEPBAR.LE gsb0, 0x1 x3 (wait<1>) and
// 0x0 x2 (the last k-block), FFMA x320 (five promotion sites of 64), the loads and stores as
// above; 168 registers at launch (the consumers' setmaxnreg 232 holds the accumulator and the
// two partial tiles, 3 x 64 fp32), no local memory, no wgmma serialisation warning (C7510).
//
//   c2x1 (-DFP8_CLUSTER_M=2): 0.99x / 0.99x; retired from the sweep, the flags still build them
//   (docs/results/fp8_blockwise_gemm.md, "Tenth session": the L2 read-out does not hold the kernel)
//   c2x2 (-DFP8_CLUSTER_M=2 -DFP8_CLUSTER_N=2): 0.95x / 0.93x the default (H200, tenth session)
//   c2x1_swz8 (-DFP8_CLUSTER_M=2 -DFP8_SWIZZLE=8): 0.98x / 0.98x
//
// Promotion and kernel schedule (issue #16, eleventh session; H200 2026-12-03, one d2k bench of
// every target, median us, vs the CUTLASS-mainloop build of the same call, vs bf16 cuBLAS of the
// same call; docs/results/fp8_blockwise_gemm.md, "Eleventh session"). DbPromotion (below)
// replaces the consumer side of CUTLASS's mainloop: k-block j's wgmmas are issued into one of two
// register tiles before k-block j-1's FFMAs run (wait<1>), where CUTLASS waits for all of them
// (wait<0>) and the warpgroup's tensor work stops for its own promotion.
//   variant                                      | 8192x7168x2048        | 4096x24576x1536
//   ---------------------------------------------+-----------------------+----------------------
//   CUTLASS mainloop, cooperative 128x128        | 209.6, 1.476x bf16    | 274.5, 1.477x bf16
//     (the default before; variant nodb)         |                       |
//   cooperative 128x128 + DbPromotion            | 198.9, 1.054x, 1.555x | 260.7, 1.053x, 1.555x
//     (measured as coop_db: the default now)     |                       |
//   ping-pong, 64x128 per warpgroup, DbPromotion | 279.7, 0.75x          | 289.6, 0.95x
//     (pp_db, -DFP8_PINGPONG=1: one warpgroup's  |                       |
//     epilogue under the other's main loop)      |                       |
//   pp_db on a 2x1 cluster, B by multicast       | 222.8, 0.94x          | 296.4, 0.93x
//   pp_db with the other warpgroup cued once the | 281.1, 0.75x          | 286.7, 0.96x
//     last k-block is issued (pp_dbe, at 73e765b:|                       |
//     a modified copy of CUTLASS's ping-pong      |                       |
//     kernel; removed, no copied code is kept)    |                       |
// Nsight Compute, 4096x24576x1536, clocks left alone (the SM clock ran at 1.55-1.60 GHz of 1.98):
// tensor pipe active 65.0% (CUTLASS mainloop) and 64.3% (pp_dbe) of the elapsed cycles, L2
// throughput 66.7% and 81.9%: the 64-row tiles read 1.5x the operand bytes per multiply-add out of
// L2 (24 KB per 2^20). The ping-pong variants are retired (-DFP8_PINGPONG=1 still builds pp_db).
// %VARIANT% nodb -DFP8_DB=0
//
// CuTe/CUTLASS device code carries assert()s; each is a call, and ptxas serialises the wgmma
// pipeline across calls (warning C7510). Whatever the build type, the expert is compiled without.
#ifndef NDEBUG
#define NDEBUG 1
#endif

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "d2k/solution.h"
#include "fp8_args.h"

#ifndef FP8_STREAMK
#define FP8_STREAMK 0
#endif
// Cluster of CTAs that share operand tiles by TMA multicast: FP8_CLUSTER_M CTAs along M receive
// one B tile, FP8_CLUSTER_N CTAs along N one A tile (1 x 1: no multicast, the default).
#ifndef FP8_CLUSTER_M
#define FP8_CLUSTER_M 1
#endif
#ifndef FP8_CLUSTER_N
#define FP8_CLUSTER_N 1
#endif
// Largest raster swizzle the persistent scheduler may use (CUTLASS picks 1/2/4/8 up to it); 1 is
// the scheduler's own default, the raster of the default build.
#ifndef FP8_SWIZZLE
#define FP8_SWIZZLE 1
#endif
// Ping-pong kernel (FP8_PINGPONG=1): 64 x 128 tiles, the two consumer warpgroups on different tiles,
// their main loops one after the other so that one's epilogue runs under the other's wgmmas.
#ifndef FP8_PINGPONG
#define FP8_PINGPONG 0
#endif
// Double-buffered promotion (FP8_DB=1, the default; FP8_DB=0: CUTLASS's mainloop as it is, the
// default before, variant nodb): the mainloop of DbPromotion below, two register tiles for
// the k-blocks' partial sums, so a k-block's promotion FFMAs run while the next k-block's wgmmas do.
#ifndef FP8_DB
#define FP8_DB 1
#endif

#define FP8_CUTLASS_CHECK(call)                                                                  \
  do {                                                                                           \
    cutlass::Status s_ = (call);                                                                 \
    if (s_ != cutlass::Status::kSuccess)                                                         \
      throw std::runtime_error(std::string("expert: ") + #call + ": " + cutlassGetStatusString(s_)); \
  } while (0)

namespace fp8_expert {
using namespace cute;

using E4M3 = cutlass::float_e4m3_t;
using BF16 = cutlass::bfloat16_t;
#if FP8_PINGPONG
using TileShape = Shape<_64, _128, _128>;  // one warpgroup's tile; K tile = the scale block
#else
using TileShape = Shape<_128, _128, _128>;  // K tile = the scale block: one promotion per k-tile
#endif
using ClusterShape = Shape<Int<FP8_CLUSTER_M>, Int<FP8_CLUSTER_N>, _1>;  // the builder picks multicast TMA for > 1
// Scale granularity (M, N, K) = (1, 128, 128); A's scales M-major (so TMA loads a tile's 128 in one
// box), B's K-major (the task's layout; one scale per tile, loaded by cp.async either way).
using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN,
                                                              cute::GMMA::Major::K>;
using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
using LayoutA = cutlass::layout::RowMajor;     // A [M, K], K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // B [N, K], K contiguous (CUTLASS's K x N column-major)
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignAB = 16;  // 16 bytes of e4m3: TMA's minimum
constexpr int kAlignD = 8;    // 16 bytes of bf16

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignD, BF16, LayoutD, kAlignD,
    std::conditional_t<FP8_PINGPONG != 0, cutlass::epilogue::TmaWarpSpecialized,
                       cutlass::epilogue::TmaWarpSpecializedCooperative>,
    cutlass::epilogue::fusion::LinearCombination<BF16, float, void, float>>::CollectiveOp;
using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, E4M3, cute::tuple<LayoutA, LayoutSFA>, kAlignAB, E4M3,
    cute::tuple<LayoutB, LayoutSFB>, kAlignAB, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    std::conditional_t<FP8_PINGPONG != 0, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8BlockScaledAccum,
                       cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8BlockScaledAccum>>::CollectiveOp;

/// CUTLASS's blockwise mainloop (the base) with its consumer side replaced: CUTLASS waits for a
/// k-block's four wgmmas (warpgroup_wait<0>) and only then runs the promotion FFMAs, so the
/// warpgroup's tensor work stops for them. Here two register tiles take turns: k-block j's wgmmas
/// are issued into one, then warpgroup_wait<1> waits for k-block j-1's only, whose tile is
/// scaled and added while j's wgmmas run. Registers per consumer thread: the accumulator and two
/// partial tiles, 3 x 64 fp32 for a 64 x 128 warpgroup tile (CUTLASS's: 2 x 64). The producer
/// side (TMA loads, scale loads, pipeline) is the base's. A shared-memory stage is released once
/// its wgmmas have completed (the base releases with one stage of lag as well); the last one here
/// too, so mma_tail has nothing left to do. Only the scale granularity of this task: a scale per
/// row of A (ScaleMsPerTile > 1) and one per tile of B (ScaleNsPerTile == 1).
template <class Base>
struct DbPromotion : Base {
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Base::Params;
  using typename Base::TiledMma;
  using typename Base::TileShape;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::SmemLayoutSFA;
  using typename Base::SmemLayoutSFB;
  using typename Base::ElementBlockScale;
  static_assert(Base::ScaleMsPerTile > 1 && Base::ScaleNsPerTile == 1, "DbPromotion: per-row A, per-tile B scales");
  static_assert(Base::ScalePromotionInterval == size<2>(TileShape{}) / tile_size<2>(TiledMma{}),
                "DbPromotion: one promotion per k-tile");

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors, Params const&) {
    static_assert(is_rmem<FrgTensorC>::value, "C tensor must be rmem resident.");
    // Shared-memory views and partitions as the base builds them.
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});  // (BLK_N,BLK_K,PIPE)
    Tensor sSFA = make_tensor(
        cute::make_smem_ptr(shared_tensors.smem_SFA.data()),
        make_layout(make_shape(get<0>(shape(SmemLayoutSFA{})), get<1>(TileShape{}),
                               make_shape(get<1>(shape(SmemLayoutSFA{})), get<2>(shape(SmemLayoutSFA{})))),
                    make_stride(get<0>(stride(SmemLayoutSFA{})), _0{},
                                make_stride(get<1>(stride(SmemLayoutSFA{})), get<2>(stride(SmemLayoutSFA{}))))));
    Tensor sSFB = make_tensor(
        cute::make_smem_ptr(shared_tensors.smem_SFB.data()),
        make_layout(make_shape(get<0>(TileShape{}), get<0>(shape(SmemLayoutSFB{})),
                               make_shape(get<1>(shape(SmemLayoutSFB{})), get<2>(shape(SmemLayoutSFB{})))),
                    make_stride(_0{}, get<0>(stride(SmemLayoutSFB{})),
                                make_stride(get<1>(stride(SmemLayoutSFB{})), get<2>(stride(SmemLayoutSFB{}))))));
    constexpr int MmaWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    Layout warp_group_thread_layout = make_layout(Int<MmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));
    Tensor tCsSFA = tiled_mma.get_slice(thread_idx).partition_C(sSFA);  // (MMA,MMA_M,MMA_N,(MMA_K,PIPE))
    Tensor tCsSFB = tiled_mma.get_slice(thread_idx).partition_C(sSFB);
    Tensor tCsA = thread_mma.partition_A(sA);  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCsB = thread_mma.partition_B(sB);  // (MMA,MMA_N,MMA_K,PIPE)
    Tensor tCrA = thread_mma.make_fragment_A(tCsA);
    Tensor tCrB = thread_mma.make_fragment_B(tCsB);
    CUTE_STATIC_ASSERT_V(size<1>(tCsA) == size<1>(accum));
    CUTE_STATIC_ASSERT_V(size<1>(tCsB) == size<2>(accum));

    // Two partial tiles and their scales (a_scale of the thread's rows times the tile's b_scale).
    Tensor part0 = make_fragment_like(accum);
    Tensor part1 = make_fragment_like(accum);
    Tensor sc0 = make_tensor_like<ElementBlockScale>(tCsSFA(_, _, _, _0{}));
    Tensor sc1 = make_tensor_like<ElementBlockScale>(tCsSFA(_, _, _, _0{}));
    Tensor scb = make_tensor_like<ElementBlockScale>(tCsSFB(_, _, _, _0{}));

    // Waits for the stage, reads its scales, issues its wgmmas into `part`.
    auto issue = [&](auto& part, auto& sc, PipelineState const& st) {
      pipeline.consumer_wait(st);
      const int s = st.index();
      copy(tCsSFA(_, _, _, make_coord(_0{}, s)), sc);
      copy(tCsSFB(_, _, _, make_coord(_0{}, s)), scb);
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(part);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        cute::gemm(tiled_mma, tCrA(_, _, k_block, s), tCrB(_, _, k_block, s), part);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(part);
      const ElementBlockScale b = scb(_0{});
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(filter_zeros(sc)); ++i) filter_zeros(sc)(i) = filter_zeros(sc)(i) * b;
    };
    // accum += part * scale, once part's wgmmas have completed.
    auto promote = [&](auto& part, auto& sc) {
      warpgroup_fence_operand(part);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) += part(i) * sc(i);
      warpgroup_fence_operand(accum);
    };

    clear(accum);
    warpgroup_fence_operand(accum);
    PipelineState smem_pipe_release = smem_pipe_read;
    // The next k-block's wgmmas into `part`, then the previous one's (in `prev`) once they have
    // completed: its stage released, its tile promoted.
    auto step = [&](auto& part, auto& sc, auto& prev, auto& prev_sc) {
      issue(part, sc, smem_pipe_read);
      ++smem_pipe_read;
      warpgroup_wait<1>();
      pipeline.consumer_release(smem_pipe_release);
      ++smem_pipe_release;
      promote(prev, prev_sc);
    };
    issue(part0, sc0, smem_pipe_read);
    ++smem_pipe_read;
    int k = 1;
    // Two k-blocks per trip, so that each partial tile has a fixed register home.
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k + 1 < k_tile_count; k += 2) {
      step(part1, sc1, part0, sc0);
      step(part0, sc0, part1, sc1);
    }
    if (k < k_tile_count) {  // an even count: one more k-block, into part1
      step(part1, sc1, part0, sc0);
      warpgroup_wait<0>();
      pipeline.consumer_release(smem_pipe_release);
      promote(part1, sc1);
    } else {  // an odd count: the last k-block (in part0) was issued in the loop or before it
      warpgroup_wait<0>();
      pipeline.consumer_release(smem_pipe_release);
      promote(part0, sc0);
    }
  }

  /// Every stage was released in mma().
  CUTLASS_DEVICE void mma_tail(MainloopPipeline, PipelineState, int) {}
};
#if FP8_DB
using MainloopUsed = DbPromotion<Mainloop>;
#else
using MainloopUsed = Mainloop;
#endif
#if FP8_STREAMK
using Scheduler = cutlass::gemm::StreamKScheduler;
#else
using Scheduler = cutlass::gemm::PersistentScheduler;
#endif
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, MainloopUsed, Epilogue, Scheduler>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

constexpr int kThreads = 256;
constexpr size_t kCutlassWorkspace = size_t(16) << 20;  // stream-K partials; persistent needs ~0

int64_t round4(int64_t v) { return (v + 3) / 4 * 4; }

/// sfa[kb, m] = a_scales[m, kb] (0 for M <= m < M4).
__global__ void transpose_a_scales(const float* __restrict__ sa, float* __restrict__ sfa, int64_t M, int64_t M4,
                                   int64_t KB) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < KB * M4) {
    const int64_t kb = i / M4, m = i % M4;
    sfa[i] = m < M ? sa[m * KB + kb] : 0.f;
  }
}

struct Buffers {
  float* sfa;
  void* cutlass;
};
Buffers carve(d2k::Workspace& ws, int64_t M, int64_t K) {
  Buffers b;
  b.sfa = ws.take<float>(static_cast<uint64_t>(K / fp8gemm::kBlock * round4(M)));
  b.cutlass = ws.take_bytes(kCutlassWorkspace);
  return b;
}

constexpr int kClusterSize = FP8_CLUSTER_M * FP8_CLUSTER_N;

/// Clusters of the GEMM kernel that the device holds at once, with the kernel's shared memory and
/// block (cudaOccupancyMaxActiveClusters); 0 if the query fails, which leaves CUTLASS's estimate.
/// Only asked for clusters of more than two CTAs: CUTLASS's estimate assumes 18-SM GPCs and would
/// launch 29 clusters of 4 (116 CTAs) on the H200's 132 SMs, while pairs fill every SM.
int resident_clusters() {
  const void* fn = reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>);
  constexpr int smem = Kernel::SharedStorageSize;
  // The query counts clusters at the shared memory the launch will ask for, which needs the opt-in
  // above 48 KB first (the adapter sets the same attribute again before the launch).
  if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
    (void)cudaGetLastError();  // not an error of the call: CUTLASS's estimate stands
    return 0;
  }
  cudaLaunchAttribute dims{};
  dims.id = cudaLaunchAttributeClusterDimension;
  dims.val.clusterDim.x = FP8_CLUSTER_M;
  dims.val.clusterDim.y = FP8_CLUSTER_N;
  dims.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(FP8_CLUSTER_M, FP8_CLUSTER_N, 1);
  cfg.blockDim = dim3(Kernel::MaxThreadsPerBlock, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = &dims;
  cfg.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, fn, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();  // as above
    return 0;
  }
  return clusters;
}

/// Device id and SM count, read once per process (the persistent grid is one CTA per SM), and for
/// clusters of more than two CTAs how many of them the device holds at once.
cutlass::KernelHardwareInfo hardware() {
  static const cutlass::KernelHardwareInfo hw = [] {
    cutlass::KernelHardwareInfo h;
    cudaGetDevice(&h.device_id);
    h.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(h.device_id);
    if constexpr (kClusterSize > 2) h.max_active_clusters = resident_clusters();
    return h;
  }();
  return hw;
}

void run_gemm(const fp8gemm::Operands& o, const Buffers& b, cudaStream_t st) {
  const int M = static_cast<int>(o.M), N = static_cast<int>(o.N), K = static_cast<int>(o.K);
  typename Gemm::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {M, N, K, 1};
  args.mainloop.ptr_A = d2k::data<const E4M3>(*o.a);
  args.mainloop.dA = {int64_t{K}, _1{}, int64_t{M} * K};  // (M, K, L) strides of row-major A
  args.mainloop.ptr_B = d2k::data<const E4M3>(*o.b);
  args.mainloop.dB = {int64_t{K}, _1{}, int64_t{N} * K};  // (N, K, L) strides of B [N, K]
  args.mainloop.ptr_SFA = b.sfa;
  // M padded to a multiple of 4: the transposed scale rows are 16-byte multiples, as TMA needs.
  args.mainloop.layout_SFA =
      ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(static_cast<int>(round4(o.M)), N, K, 1));
  args.mainloop.ptr_SFB = d2k::data<const float>(*o.b_scales);
  args.mainloop.layout_SFB = ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(M, N, K, 1));
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.ptr_D = d2k::data<BF16>(*o.c);
  args.epilogue.dD = {int64_t{N}, _1{}, int64_t{M} * N};  // (M, N, L) strides of row-major C
  args.hw_info = hardware();
  if constexpr (FP8_SWIZZLE != 1) args.scheduler.max_swizzle_size = FP8_SWIZZLE;

  Gemm gemm;
  if (Gemm::get_workspace_size(args) > kCutlassWorkspace)
    throw std::runtime_error("expert: CUTLASS workspace larger than the bound of " +
                             std::to_string(kCutlassWorkspace) + " bytes");
  FP8_CUTLASS_CHECK(gemm.can_implement(args));
  FP8_CUTLASS_CHECK(gemm.initialize(args, b.cutlass, st));
  FP8_CUTLASS_CHECK(gemm.run(st));
}

}  // namespace fp8_expert

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t M = d2k::scalar_i(args, "M"), N = d2k::scalar_i(args, "N"), K = d2k::scalar_i(args, "K");
    fp8gemm::check_shape("expert", M, N, K);
    d2k::Workspace ws;
    fp8_expert::carve(ws, M, K);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const fp8gemm::Operands o = fp8gemm::operands(args, kDLCUDA, "expert");
    d2k::Workspace ws(args);
    const fp8_expert::Buffers b = fp8_expert::carve(ws, o.M, o.K);
    auto st = static_cast<cudaStream_t>(args->stream);
    const int64_t M4 = fp8_expert::round4(o.M), n = o.KB * M4;
    fp8_expert::transpose_a_scales<<<static_cast<unsigned>((n + fp8_expert::kThreads - 1) / fp8_expert::kThreads),
                                     fp8_expert::kThreads, 0, st>>>(d2k::data<const float>(*o.a_scales), b.sfa, o.M,
                                                                    M4, o.KB);
    D2K_CUDA_TRY(args, cudaGetLastError());
    fp8_expert::run_gemm(o, b, st);
    return D2K_OK;
  });
}
