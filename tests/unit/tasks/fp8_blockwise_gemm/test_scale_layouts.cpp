// fp8_blockwise_gemm expert: the scale layouts it hands CUTLASS's blockwise mainloop, checked on the
// host with the same CuTe layout functions the kernel indexes through. The expert writes a_scales
// transposed to [K/128][M4] (M4 = round_up(M, 4)) and passes b_scales [ceil(N/128), K/128] as
// they are; the mainloop reads the scale of (m, k) at layout_SFA(m, k, 0) and of (n, k) at
// layout_SFB(n, k, 0). A wrong major-ness, a stride of M instead of M4 or a floor instead of a
// ceil for the partial N block would read another block's scale: these tests fail then.
#include <gtest/gtest.h>

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/detail/blockwise_scale_layout.hpp"

namespace {

// As in dataset/fp8_blockwise_gemm/expert.cu.
using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128, cute::GMMA::Major::MN,
                                                              cute::GMMA::Major::K>;

struct Shape3 {
  int M, N, K;
};
constexpr Shape3 kShapes[] = {{1, 8, 128}, {77, 200, 256}, {130, 136, 128}, {5, 264, 7168}, {8192, 7168, 2048},
                              {128, 7168, 18432}};

int round4(int v) { return (v + 3) / 4 * 4; }

TEST(Fp8ScaleLayouts, AScalesAreReadWhereTheTransposeWroteThem) {
  for (const Shape3& s : kShapes) {
    const int M4 = round4(s.M), KB = s.K / 128;
    const auto layout = ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(M4, s.N, s.K, 1));
    for (int m = 0; m < s.M; m += (s.M > 300 ? 37 : 1))
      for (int k = 0; k < s.K; k += 61) {
        const int64_t at = layout(m, k, 0);
        EXPECT_EQ(at, int64_t{k / 128} * M4 + m) << "M " << s.M << " m " << m << " k " << k;
      }
    EXPECT_EQ(cute::size(cute::filter_zeros(layout)), int64_t{KB} * M4) << "M " << s.M;
  }
}

TEST(Fp8ScaleLayouts, BScalesAreTheTasksRowMajorBlockGrid) {
  for (const Shape3& s : kShapes) {
    const int KB = s.K / 128, NB = (s.N + 127) / 128;
    const auto layout = ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(s.M, s.N, s.K, 1));
    for (int n = 0; n < s.N; n += (s.N > 300 ? 41 : 1))
      for (int k = 0; k < s.K; k += 61) {
        const int64_t at = layout(n, k, 0);
        EXPECT_EQ(at, int64_t{n / 128} * KB + k / 128) << "N " << s.N << " n " << n << " k " << k;
      }
    // the partial last block row has its own scale row (ceil, not floor)
    EXPECT_EQ(cute::size(cute::filter_zeros(layout)), int64_t{NB} * KB) << "N " << s.N;
  }
}

}  // namespace
