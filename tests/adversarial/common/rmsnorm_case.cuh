// The part every case of the corpus shares: a correct fused add + RMSNorm (one CTA per row) and
// the three ABI entry points. d2k_run calls exploit(), which each case's solution.cu defines.
// CMake copies this header into each case's folder in the build tree (a solution folder must be
// self-contained), so the cases here hold only their cheat.
#pragma once
#include <cuda_bf16.h>
#include <d2k/solution.h>

namespace {

// A correct fused add + RMSNorm of one row per CTA: the exploit is what surrounds it. The body is
// a device function so that a case can wrap it in a kernel of another name; kAccumulateOut adds
// to `out` instead of storing (a case that assumes zeroed outputs).
template <bool kAccumulateOut = false>
__device__ void add_rmsnorm_row(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w,
                                __nv_bfloat16* out, __nv_bfloat16* r_out, int H, float eps) {
  const long row = blockIdx.x;
  __shared__ float partial[32];
  float ss = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const __nv_bfloat16 s = __float2bfloat16(__bfloat162float(x[row * H + j]) + __bfloat162float(r[row * H + j]));
    r_out[row * H + j] = s;
    ss += __bfloat162float(s) * __bfloat162float(s);
  }
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    ss = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x == 0) partial[0] = rsqrtf(ss / H + eps);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const float v = __bfloat162float(r_out[row * H + j]) * partial[0] * __bfloat162float(w[j]);
    if constexpr (kAccumulateOut)
      out[row * H + j] = __float2bfloat16(__bfloat162float(out[row * H + j]) + v);
    else
      out[row * H + j] = __float2bfloat16(v);
  }
}

__global__ void add_rmsnorm_cta_per_row(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w,
                                        __nv_bfloat16* out, __nv_bfloat16* r_out, int H, float eps) {
  add_rmsnorm_row(x, r, w, out, r_out, H, eps);
}

struct Args {
  const __nv_bfloat16 *x, *r, *w;
  __nv_bfloat16 *out, *r_out;
  int64_t T, H;
  float eps;
  cudaStream_t s;
};

Args unpack(const d2k_args* a) {
  return {d2k::data<const __nv_bfloat16>(d2k::input(a, "x")), d2k::data<const __nv_bfloat16>(d2k::input(a, "residual")),
          d2k::data<const __nv_bfloat16>(d2k::input(a, "weight")), d2k::data<__nv_bfloat16>(d2k::output(a, "out")),
          d2k::data<__nv_bfloat16>(d2k::output(a, "residual_out")), d2k::scalar_i(a, "T"), d2k::scalar_i(a, "H"),
          static_cast<float>(d2k::scalar_f(a, "eps")), static_cast<cudaStream_t>(a->stream)};
}

void launch(const Args& g, cudaStream_t s) {
  add_rmsnorm_cta_per_row<<<static_cast<unsigned>(g.T), 256, 0, s>>>(g.x, g.r, g.w, g.out, g.r_out, static_cast<int>(g.H), g.eps);
}

/// Rows [row0, row0 + rows) only: for cases that split the work (streams, partial calls).
[[maybe_unused]] void launch_rows(const Args& g, cudaStream_t s, int64_t row0, int64_t rows) {
  if (rows <= 0) return;
  const int64_t at = row0 * g.H;
  add_rmsnorm_cta_per_row<<<static_cast<unsigned>(rows), 256, 0, s>>>(g.x + at, g.r + at, g.w, g.out + at, g.r_out + at,
                                                                      static_cast<int>(g.H), g.eps);
}

/// Bytes of one [T, H] bf16 tensor.
[[maybe_unused]] size_t tensor_bytes(const Args& g) { return static_cast<size_t>(g.T * g.H) * sizeof(__nv_bfloat16); }

/// What each case does around (or instead of) a plain launch; defined in its solution.cu.
cudaError_t exploit(const Args& g);

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args*, uint64_t* bytes) {
  *bytes = 0;
  return D2K_OK;
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* a) {
  D2K_ENTRY(a, {
    const Args g = unpack(a);
    D2K_CUDA_TRY(a, exploit(g));
    D2K_CUDA_TRY(a, cudaGetLastError());
  });
  return D2K_OK;
}
