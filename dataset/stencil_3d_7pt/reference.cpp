// stencil_3d_7pt — fp64 golden reference on host tensors.
//
//   T times:  v[z,y,x] = c0 * u[z,y,x] + c1 * (u[z-1,y,x] + u[z+1,y,x] + u[z,y-1,x] + u[z,y+1,x]
//                                              + u[z,y,x-1] + u[z,y,x+1])   for interior cells,
//             v = u on the boundary (an index 0 or N-1 on some axis), then u = v (Jacobi);
//   out = fp32(u).
//
// Every step in double, from the double values of c0 and c1 (not their fp32 roundings), the output
// rounded once to fp32. Plain C++: built by the host compiler, no CUDA.
#include <cstdint>
#include <utility>
#include <vector>

#include "d2k/solution.h"

namespace {

struct Grid {
  int64_t Z, Y, X;
  int64_t at(int64_t z, int64_t y, int64_t x) const { return (z * Y + y) * X + x; }
  bool interior(int64_t z, int64_t y, int64_t x) const {
    return z > 0 && z < Z - 1 && y > 0 && y < Y - 1 && x > 0 && x < X - 1;
  }
};

/// One Jacobi step from `u` into `v` (boundary cells copied).
void jacobi_step(const Grid& g, double c0, double c1, const std::vector<double>& u, std::vector<double>& v) {
  const int64_t sz = g.Y * g.X, sy = g.X;
  for (int64_t z = 0; z < g.Z; ++z)
    for (int64_t y = 0; y < g.Y; ++y)
      for (int64_t x = 0; x < g.X; ++x) {
        const int64_t i = g.at(z, y, x);
        if (!g.interior(z, y, x)) {
          v[i] = u[i];
          continue;
        }
        const double nb = u[i - sz] + u[i + sz] + u[i - sy] + u[i + sy] + u[i - 1] + u[i + 1];
        v[i] = c0 * u[i] + c1 * nb;
      }
}

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
    const Grid g{d2k::scalar_i(args, "Z"), d2k::scalar_i(args, "Y"), d2k::scalar_i(args, "X")};
    const int64_t T = d2k::scalar_i(args, "T");
    const double c0 = d2k::scalar_f(args, "c0"), c1 = d2k::scalar_f(args, "c1");
    if (g.Z < 1 || g.Y < 1 || g.X < 1 || T < 1) throw d2k::abi_error("reference: need Z, Y, X, T >= 1");
    const DLTensor& u = d2k::input(args, "u", kDLCPU, d2k::dl::f32, {g.Z, g.Y, g.X});
    const DLTensor& out = d2k::output(args, "out", kDLCPU, d2k::dl::f32, {g.Z, g.Y, g.X});

    const int64_t n = g.Z * g.Y * g.X;
    const auto* up = d2k::data<const float>(u);
    std::vector<double> cur(up, up + n), next(static_cast<std::size_t>(n));
    for (int64_t t = 0; t < T; ++t) {
      jacobi_step(g, c0, c1, cur, next);
      std::swap(cur, next);
    }
    auto* op = d2k::data<float>(out);
    for (int64_t i = 0; i < n; ++i) op[i] = static_cast<float>(cur[i]);
    return D2K_OK;
  });
}
