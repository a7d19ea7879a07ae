// moe_grouped_gemm — expert: one persistent CUTLASS 3 sm90 grouped GEMM over every expert's
// tiles, its problem list written on the device from the offsets (no host synchronisation).
//
// Per call (all on args->stream):
//   1. build_groups (one thread per expert): from offsets[e], offsets[e+1] the expert's problem
//      shape, operand pointers and strides, in the workspace. Offsets are clamped into [0, T]
//      and made non-decreasing, so corrupt offsets give a wrong answer, never an out-of-bounds
//      access. Empty experts get a problem with no rows (0 tiles: the scheduler skips them).
//   2. one launch of CUTLASS's KernelPtrArrayTmaWarpSpecializedCooperative kernel over the E
//      problems: a grid of one CTA per SM, each CTA walking the linear tile index through the
//      group tile scheduler (PersistentTileSchedulerSm90Group), which maps it to (expert,
//      m-tile, n-tile) by a warp-wide prefix sum over the groups' tile counts read from device
//      memory. A producer warp streams A and B tiles with TMA into a multi-stage shared-memory
//      ring (the tensor maps are patched in shared memory when the CTA moves to another expert);
//      two consumer warpgroups run wgmma (bf16 in, fp32 accumulators); the epilogue rounds to
//      bf16 and stores with TMA, clipped at the group's last row.
//
// Two tile shapes (the only two CUTLASS instantiations, for CI's compile time), chosen on the
// host from the axes alone (T / E, the mean rows per expert):
//   - rows per expert >= 64: y_e = x_e · w_e^T with 128 x 256 x 64 tiles (M = rows of the
//     expert, N = output features). Mixtral and Qwen shapes: 2048 and 512 rows per expert.
//   - rows per expert < 64 ("swap AB"): y_e^T = w_e · x_e^T with 128 x 64 x 64 tiles, the
//     weight's N rows on the 128-wide side and the expert's few tokens on the 64-wide side, so a
//     32-row group wastes half a tile instead of three quarters; y_e^T is written column-major,
//     which is y_e row-major. DeepSeek shape: 32 rows per expert, bound by the weight read.
//
// Variants considered (H200, 2026-12-02: median us and % of SOL, `d2k bench --task moe_grouped_gemm
// --targets expert,expert:noswap,expert:tile128 --bench-rounds 1 --max-time 0.3`, noise 0.7-2.8%;
// docs/results/moe_grouped_gemm.md has the tables):
//   variant                                         | build flag        | mixtral      | qwen3       | deepseek-v3
//   ------------------------------------------------+-------------------+--------------+-------------+-------------
//   128x256 tiles / swap-AB 128x64 below 64 rows    | (default)         | 2511.4 96.4% | 345.6 75.1% | 1029.9 84.0%
//   128x128 tiles on the large-group path           | -DMOE_TILE_N=128  | 2933.6 82.5% | 404.5 64.1% | 1027.3 84.2%
//   never swap AB (128x256 tiles at every shape)    | -DMOE_NO_SWAP_AB  | 2509.1 96.5% | 345.5 75.1% |  966.1 89.5%
//   cuBLAS grouped batched GEMM (library.cu)        | (same day)        | 6435.9 37.6% | 723.9 35.8% | 1138.6 76.0%
// Measured: swap-AB, chosen by design for the DeepSeek shape's 32-row groups, is 1.07x slower there
// than plain 128x256 tiles (noise 1.9-2.5%): the swap threshold should be revisited. 128x128 tiles
// lose 1.17x on the large groups.
// Not built:
//   cluster 2x1 with B multicast: rejected a priori: the group scheduler rounds each expert's
//     m-tiles up to the cluster, so a one-tile expert runs an empty CTA; with ragged groups that
//     costs more than the L2 traffic it saves.
//   a hand-written scheduler over (expert, m, n): CUTLASS's group scheduler already is one; a
//     second copy would only add code to verify.
//
// %VARIANT% tile128 -DMOE_TILE_N=128
// %VARIANT% noswap -DMOE_NO_SWAP_AB
//
// CuTe/CUTLASS device code carries assert()s; each is a call, and ptxas serialises the wgmma
// pipeline across calls (warning C7510). Whatever the build type, the expert is compiled without.
#ifndef NDEBUG
#define NDEBUG 1
#endif

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "d2k/solution.h"
#include "moe_gemm_args.h"

#ifndef MOE_TILE_N
#define MOE_TILE_N 256
#endif

#define MOE_CUDA_CHECK(call)                                                                \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess)                                                                  \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": " + cudaGetErrorString(e_));                    \
  } while (0)

#define MOE_CUTLASS_CHECK(call)                                                             \
  do {                                                                                      \
    cutlass::Status s_ = (call);                                                            \
    if (s_ != cutlass::Status::kSuccess)                                                    \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               " " #call ": " + cutlassGetStatusString(s_));                \
  } while (0)

namespace moe_expert {

using namespace cute;
using bf16 = cutlass::bfloat16_t;
using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;  // (M, N, K) per expert
using GroupShape = ProblemShape::UnderlyingProblemShape;

/// One grouped GEMM configuration. A and B are both K-major (x and w store K contiguously);
/// D is row-major, or column-major when the operands are swapped (D = y_e^T).
template <int TileM, int TileN, bool SwapAB>
struct GroupedGemm {
  using TileShape = Shape<Int<TileM>, Int<TileN>, _64>;
  using ClusterShape = Shape<_1, _1, _1>;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cute::conditional_t<SwapAB, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr int kAlign = 8;  // 16 bytes of bf16: K and N are multiples of 8

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD*, kAlign,  // no source C: y = acc
      bf16, LayoutD*, kAlign, cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
      cutlass::epilogue::fusion::LinearCombination<bf16, float>>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, bf16, LayoutA*, kAlign, bf16, LayoutB*, kAlign, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Kernel::InternalStrideA;  // Stride<int64_t, _1, _0>: row-major M x K
  using StrideB = typename Kernel::InternalStrideB;  // Stride<int64_t, _1, _0>: N x K, K contiguous
  using StrideD = typename Kernel::InternalStrideD;
};

using Large = GroupedGemm<128, MOE_TILE_N, false>;
using Small = GroupedGemm<128, 64, true>;

/// The device-side problem list of one call, in the workspace (one entry per expert).
template <class G>
struct Groups {
  GroupShape* shapes;
  const bf16** a;
  const bf16** b;
  bf16** d;
  typename G::StrideA* sa;
  typename G::StrideB* sb;
  typename G::StrideD* sd;
  void* cutlass;  // CUTLASS's own workspace (tensor maps per SM)
};

/// Writes expert e's problem from the offsets, one thread per expert. Normal: (rows, N, K) with
/// A = x_e, B = w_e. Swapped: (N, rows, K) with A = w_e, B = x_e, D = y_e^T column-major.
template <class G, bool SwapAB>
__global__ void build_groups(const int32_t* __restrict__ offsets, int E, int T, int N, int K, const bf16* x,
                             const bf16* w, bf16* y, Groups<G> g) {
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < E; e += gridDim.x * blockDim.x) {
    const moe_gemm::Rows r = moe_gemm::group_rows(offsets, e, T);
    const int r0 = r.begin, rows = r.count;
    const bf16* xe = x + int64_t(r0) * K;
    const bf16* we = w + int64_t(e) * N * K;
    bf16* ye = y + int64_t(r0) * N;
    if constexpr (SwapAB) {
      g.shapes[e] = GroupShape{N, rows, K};
      g.a[e] = we;
      g.b[e] = xe;
      g.sd[e] = typename G::StrideD{_1{}, int64_t(N), _0{}};  // (n, t) at t*N + n
    } else {
      g.shapes[e] = GroupShape{rows, N, K};
      g.a[e] = xe;
      g.b[e] = we;
      g.sd[e] = typename G::StrideD{int64_t(N), _1{}, _0{}};
    }
    g.d[e] = ye;
    g.sa[e] = typename G::StrideA{int64_t(K), _1{}, _0{}};
    g.sb[e] = typename G::StrideB{int64_t(K), _1{}, _0{}};
  }
}

int sm_count() {
  int device = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&device));
  int sms = 0;
  MOE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

template <class G>
typename G::Gemm::Arguments arguments(const Groups<G>& g, int E, int sms) {
  typename G::Gemm::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = {E, g.shapes, nullptr};  // no host copy of the shapes: they stay on the device
  args.mainloop.ptr_A = g.a;
  args.mainloop.dA = g.sa;
  args.mainloop.ptr_B = g.b;
  args.mainloop.dB = g.sb;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = nullptr;
  args.epilogue.ptr_D = g.d;
  args.epilogue.dD = g.sd;
  auto& t = args.epilogue.thread;
  t.alpha = 1.f;
  t.beta = 0.f;
  t.dAlpha = {_0{}, _0{}, 0};
  t.dBeta = {_0{}, _0{}, 0};
  int device = 0;
  MOE_CUDA_CHECK(cudaGetDevice(&device));
  args.hw_info.device_id = device;
  args.hw_info.sm_count = sms;
  return args;
}

/// The workspace carve-up, one function for both entry points.
template <class G>
Groups<G> carve(d2k::Workspace& ws, int E, int sms) {
  Groups<G> g{};
  g.shapes = ws.take<GroupShape>(uint64_t(E));
  g.a = ws.take<const bf16*>(uint64_t(E));
  g.b = ws.take<const bf16*>(uint64_t(E));
  g.d = ws.take<bf16*>(uint64_t(E));
  g.sa = ws.take<typename G::StrideA>(uint64_t(E));
  g.sb = ws.take<typename G::StrideB>(uint64_t(E));
  g.sd = ws.take<typename G::StrideD>(uint64_t(E));
  // Its size depends on the group count and the SM count only, never on the data.
  g.cutlass = ws.take_bytes(G::Gemm::get_workspace_size(arguments<G>(g, E, sms)));
  return g;
}

bool use_swap_ab(const moe_gemm::Args& a) {
#ifdef MOE_NO_SWAP_AB
  (void)a;
  return false;
#else
  return moe_gemm::small_groups(a.E, a.T);
#endif
}

template <class G, bool SwapAB>
void run_grouped(const moe_gemm::Args& a, const d2k_args* args) {
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  const int sms = sm_count();
  const int E = int(a.E);
  d2k::Workspace ws(args);
  const Groups<G> g = carve<G>(ws, E, sms);
  const int threads = std::min(E, 256);
  build_groups<G, SwapAB><<<(E + threads - 1) / threads, threads, 0, st>>>(
      a.offsets, E, int(a.T), int(a.N), int(a.K), static_cast<const bf16*>(a.x), static_cast<const bf16*>(a.w),
      static_cast<bf16*>(a.y), g);
  MOE_CUDA_CHECK(cudaGetLastError());
  typename G::Gemm gemm;
  const auto gargs = arguments<G>(g, E, sms);
  MOE_CUTLASS_CHECK(gemm.can_implement(gargs));
  MOE_CUTLASS_CHECK(gemm.initialize(gargs, g.cutlass, st));
  MOE_CUTLASS_CHECK(gemm.run(st));
  MOE_CUDA_CHECK(cudaGetLastError());
}

void run(const d2k_args* args) {
  const moe_gemm::Args a = moe_gemm::bind(args, kDLCUDA);
  if (use_swap_ab(a)) run_grouped<Small, true>(a, args);
  else run_grouped<Large, false>(a, args);
}

uint64_t workspace_bytes(const moe_gemm::Args& a) {
  const int sms = sm_count();
  d2k::Workspace ws;
  if (use_swap_ab(a)) carve<Small>(ws, int(a.E), sms);
  else carve<Large>(ws, int(a.E), sms);
  return ws.bytes();
}

}  // namespace moe_expert

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = moe_expert::workspace_bytes(moe_gemm::axes(args));
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    moe_expert::run(args);
    return D2K_OK;
  });
}
