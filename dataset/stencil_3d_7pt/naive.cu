// stencil_3d_7pt — naive baseline: one kernel launch per Jacobi step, a thread per cell, each
// interior cell reading its seven inputs from global memory (the cache hierarchy serves the reuse):
//
//   step t:  dst[z,y,x] = interior ? fmaf(c0, src[z,y,x], c1 * (((((zm + zp) + ym) + yp) + xm) + xp))
//                                  : src[z,y,x]                 (the fixed boundary, copied)
//
// T launches ping-ponging between `out` and one grid-sized workspace buffer, ordered so that the
// last step lands in `out` (T odd: u -> out -> ws -> out ...; T even: u -> ws -> out -> ...). This
// is the textbook GPU stencil the task's cost model measures a pass-per-step kernel by: 8ZYX bytes
// of DRAM traffic per step. Plain, not slowed on purpose: coalesced along X, fp32 arithmetic.
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

namespace {

constexpr int kBlockX = 32, kBlockY = 8;

__global__ void __launch_bounds__(kBlockX * kBlockY) jacobi_step(const float* __restrict__ src, float* __restrict__ dst,
                                                                 int Z, int Y, int X, float c0, float c1) {
  const int x = blockIdx.x * kBlockX + threadIdx.x;
  const int y = blockIdx.y * kBlockY + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= X || y >= Y) return;
  const int64_t sz = static_cast<int64_t>(Y) * X;
  const int64_t i = z * sz + static_cast<int64_t>(y) * X + x;
  const float c = src[i];
  if (z == 0 || z == Z - 1 || y == 0 || y == Y - 1 || x == 0 || x == X - 1) {
    dst[i] = c;
    return;
  }
  const float s = ((((src[i - sz] + src[i + sz]) + src[i - X]) + src[i + X]) + src[i - 1]) + src[i + 1];
  dst[i] = fmaf(c0, c, c1 * s);
}

struct Shape {
  int64_t Z, Y, X, T;
};

Shape shape_of(const d2k_args* args) {
  const Shape s{d2k::scalar_i(args, "Z"), d2k::scalar_i(args, "Y"), d2k::scalar_i(args, "X"), d2k::scalar_i(args, "T")};
  if (s.Z < 1 || s.Y < 1 || s.X < 1 || s.T < 1) throw d2k::abi_error("naive: need Z, Y, X, T >= 1");
  if (s.Z > 65535 || s.Y > int64_t{65535} * kBlockY || s.Z * s.Y * s.X > (int64_t{1} << 31))
    throw d2k::abi_error("naive: Z above 65535, Y above 65535 * 8 or more than 2^31 cells exceed its launch grid");
  return s;
}

/// The ping-pong buffer: one grid, needed once there are two steps or more.
float* carve(d2k::Workspace& ws, const Shape& s) {
  return s.T >= 2 ? ws.take<float>(static_cast<uint64_t>(s.Z * s.Y * s.X)) : nullptr;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    d2k::Workspace ws;
    carve(ws, s);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    const DLTensor& u = d2k::input(args, "u", kDLCUDA, d2k::dl::f32, {s.Z, s.Y, s.X});
    const DLTensor& out = d2k::output(args, "out", kDLCUDA, d2k::dl::f32, {s.Z, s.Y, s.X});
    d2k::Workspace ws(args);
    float* tmp = carve(ws, s);
    const float c0 = static_cast<float>(d2k::scalar_f(args, "c0"));
    const float c1 = static_cast<float>(d2k::scalar_f(args, "c1"));

    auto stream = static_cast<cudaStream_t>(args->stream);
    const dim3 block(kBlockX, kBlockY);
    const dim3 grid(static_cast<unsigned>((s.X + kBlockX - 1) / kBlockX),
                    static_cast<unsigned>((s.Y + kBlockY - 1) / kBlockY), static_cast<unsigned>(s.Z));
    const float* src = d2k::data<const float>(u);
    float* dst_out = d2k::data<float>(out);
    for (int64_t t = 0; t < s.T; ++t) {
      // Step t writes `out` when T - 1 - t is even, so that the last step (t = T - 1) does.
      float* dst = (s.T - 1 - t) % 2 == 0 ? dst_out : tmp;
      jacobi_step<<<grid, block, 0, stream>>>(src, dst, static_cast<int>(s.Z), static_cast<int>(s.Y),
                                              static_cast<int>(s.X), c0, c1);
      D2K_CUDA_TRY(args, cudaGetLastError());
      src = dst;
    }
    return D2K_OK;
  });
}
