// rope_qk_norm — naive baseline: what PyTorch eager launches for the program of pytorch.py,
//
//   qs, ks, vs = qkv.split([Hq*D, Hkv*D, Hkv*D], -1)
//   cs = cos_sin_cache.index_select(0, positions);  cos, sin = cs[:, None, :D/2], cs[:, None, D/2:]
//   per x in (q heads, k heads):
//     n = F.rms_norm(x.view(T, H, D).float(), (D,), w.float(), eps)
//     x1, x2 = n[..., :D/2], n[..., D/2:]
//     out.copy_(torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1))
//   v.copy_(vs)
//
// op by op, every intermediate materialised in fp32:
//   1. gather_rows            cs = cache[positions]                       [T, D]         once
//   per q and k:
//   2. cast_heads_to_f32      x32 = float(qkv[:, heads])                  [T, H, D]      strided read
//   3. rms_norm_rows          n = x32 * rsqrt(mean(x32^2) + eps) * w      a warp per head vector
//   4-6. half_mul x2, sub     r1 = n1 * cos - n2 * sin                    [T, H, D/2] each
//   7-9. half_mul x2, add     r2 = n2 * cos + n1 * sin
//   10. cat_halves            y = cat(r1, r2)                             [T, H, D]
//   11. cast_f32_to_bf16      out = bf16(y)
//   12. copy_heads            v = qkv[:, v heads]                          bf16 strided copy
// Twenty-two launches (steps 2-11 twice). Each kernel is the plain textbook form, not slowed on purpose: coalesced
// accesses, fp32 arithmetic, warp-shuffle reductions. The workspace (fp32) holds cs, x32 (reused
// for y: dead once n exists, as the caching allocator would reuse it), n and the four halves,
// sized for the larger of Hq and Hkv and reused between q and k.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

__global__ void gather_rows(const float* __restrict__ cache, const int64_t* __restrict__ pos,
                            float* __restrict__ out, int64_t T, int64_t D) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T * D) return;
  const int64_t t = i / D, d = i % D;
  out[i] = cache[pos[t] * D + d];
}

/// out[t, j] = float(qkv[t, offset + j]) for j < width (a strided slice of the packed row).
__global__ void cast_heads_to_f32(const __nv_bfloat16* __restrict__ qkv, int64_t row_stride, int64_t offset,
                                  int64_t width, float* __restrict__ out, int64_t T) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T * width) return;
  out[i] = __bfloat162float(qkv[(i / width) * row_stride + offset + i % width]);
}

__global__ void copy_heads(const __nv_bfloat16* __restrict__ qkv, int64_t row_stride, int64_t offset, int64_t width,
                           __nv_bfloat16* __restrict__ out, int64_t T) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T * width) return;
  out[i] = qkv[(i / width) * row_stride + offset + i % width];
}

/// A warp per row of D: out = x * rsqrt(mean(x^2) + eps) * w.
__global__ void rms_norm_rows(const float* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                              float* __restrict__ out, int64_t rows, int64_t D, float eps) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together
  const float* xr = x + row * D;
  float s = 0.f;
  for (int64_t d = lane; d < D; d += 32) s += xr[d] * xr[d];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float r = rsqrtf(s / static_cast<float>(D) + eps);
  for (int64_t d = lane; d < D; d += 32) out[row * D + d] = xr[d] * r * __bfloat162float(w[d]);
}

/// out[t, h, i] = x[t, h, x_half * D/2 + i] * cs[t, cs_half * D/2 + i]: a half of each head times the
/// cos or sin row of its token, broadcast over the heads (eager's x1 * cos).
__global__ void half_mul(const float* __restrict__ x, int x_half, const float* __restrict__ cs, int cs_half,
                         float* __restrict__ out, int64_t T, int64_t H, int64_t D) {
  const int64_t half = D / 2;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T * H * half) return;
  const int64_t row = i / half, j = i % half, t = row / H;
  out[i] = x[row * D + x_half * half + j] * cs[t * D + cs_half * half + j];
}

template <bool kAdd>
__global__ void binary(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kAdd ? a[i] + b[i] : a[i] - b[i];
}

__global__ void cat_halves(const float* __restrict__ r1, const float* __restrict__ r2, float* __restrict__ out,
                           int64_t rows, int64_t half) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * 2 * half) return;
  const int64_t row = i / (2 * half), j = i % (2 * half);
  out[i] = j < half ? r1[row * half + j] : r2[row * half + j - half];
}

__global__ void cast_f32_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}

/// The fp32 workspace, one carve-up for both entry points.
struct Buffers {
  float *cs, *x32, *n, *a, *b, *r1, *r2;
};
Buffers carve(d2k::Workspace& ws, int64_t T, int64_t Hmax, int64_t D) {
  const uint64_t full = static_cast<uint64_t>(T * Hmax * D), half = full / 2;
  Buffers b;
  b.cs = ws.take<float>(static_cast<uint64_t>(T * D));
  b.x32 = ws.take<float>(full);
  b.n = ws.take<float>(full);
  b.a = ws.take<float>(half);
  b.b = ws.take<float>(half);
  b.r1 = ws.take<float>(half);
  b.r2 = ws.take<float>(half);
  return b;
}

struct Shape {
  int64_t T, Hq, Hkv, D;
};
Shape shape_of(const d2k_args* args) {
  const Shape s{d2k::scalar_i(args, "T"), d2k::scalar_i(args, "Hq"), d2k::scalar_i(args, "Hkv"),
                d2k::scalar_i(args, "D")};
  if (s.T < 0 || s.Hq < 1 || s.Hkv < 1 || s.D < 2 || s.D % 2 != 0 || s.D > 1024)
    throw d2k::abi_error("naive: need T >= 0, Hq >= 1, Hkv >= 1 and an even D in [2, 1024]");
  return s;
}

/// Steps 2-11 for one group of heads (the q heads or the k heads).
int32_t norm_rope_heads(const d2k_args* args, const Shape& s, const __nv_bfloat16* qkv, int64_t head_offset,
                        int64_t H, const __nv_bfloat16* w, float eps, const Buffers& buf, __nv_bfloat16* out,
                        cudaStream_t stream) {
  const int64_t row_stride = (s.Hq + 2 * s.Hkv) * s.D, full = s.T * H * s.D, half = full / 2;
  cast_heads_to_f32<<<blocks_for(full, kThreads), kThreads, 0, stream>>>(qkv, row_stride, head_offset * s.D,
                                                                          H * s.D, buf.x32, s.T);
  D2K_CUDA_TRY(args, cudaGetLastError());
  rms_norm_rows<<<blocks_for(s.T * H * 32, kThreads), kThreads, 0, stream>>>(buf.x32, w, buf.n, s.T * H, s.D, eps);
  D2K_CUDA_TRY(args, cudaGetLastError());
  const unsigned hb = blocks_for(half, kThreads);
  half_mul<<<hb, kThreads, 0, stream>>>(buf.n, 0, buf.cs, 0, buf.a, s.T, H, s.D);  // x1 * cos
  D2K_CUDA_TRY(args, cudaGetLastError());
  half_mul<<<hb, kThreads, 0, stream>>>(buf.n, 1, buf.cs, 1, buf.b, s.T, H, s.D);  // x2 * sin
  D2K_CUDA_TRY(args, cudaGetLastError());
  binary<false><<<hb, kThreads, 0, stream>>>(buf.a, buf.b, buf.r1, half);
  D2K_CUDA_TRY(args, cudaGetLastError());
  half_mul<<<hb, kThreads, 0, stream>>>(buf.n, 1, buf.cs, 0, buf.a, s.T, H, s.D);  // x2 * cos
  D2K_CUDA_TRY(args, cudaGetLastError());
  half_mul<<<hb, kThreads, 0, stream>>>(buf.n, 0, buf.cs, 1, buf.b, s.T, H, s.D);  // x1 * sin
  D2K_CUDA_TRY(args, cudaGetLastError());
  binary<true><<<hb, kThreads, 0, stream>>>(buf.a, buf.b, buf.r2, half);
  D2K_CUDA_TRY(args, cudaGetLastError());
  float* y = buf.x32;  // x32 is dead once n exists
  cat_halves<<<blocks_for(full, kThreads), kThreads, 0, stream>>>(buf.r1, buf.r2, y, s.T * H, s.D / 2);
  D2K_CUDA_TRY(args, cudaGetLastError());
  cast_f32_to_bf16<<<blocks_for(full, kThreads), kThreads, 0, stream>>>(y, out, full);
  D2K_CUDA_TRY(args, cudaGetLastError());
  return D2K_OK;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    d2k::Workspace ws;
    carve(ws, s.T, std::max(s.Hq, s.Hkv), s.D);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    const int64_t P = d2k::scalar_i(args, "P");
    const float eps = static_cast<float>(d2k::scalar_f(args, "eps"));
    const int64_t H = s.Hq + 2 * s.Hkv;
    const DLTensor& qkv = d2k::input(args, "qkv", kDLCUDA, d2k::dl::bf16, {s.T, H * s.D});
    const DLTensor& qw = d2k::input(args, "q_norm_weight", kDLCUDA, d2k::dl::bf16, {s.D});
    const DLTensor& kw = d2k::input(args, "k_norm_weight", kDLCUDA, d2k::dl::bf16, {s.D});
    const DLTensor& pos = d2k::input(args, "positions", kDLCUDA, d2k::dl::i64, {s.T});
    const DLTensor& cache = d2k::input(args, "cos_sin_cache", kDLCUDA, d2k::dl::f32, {P, s.D});
    const DLTensor& q = d2k::output(args, "q", kDLCUDA, d2k::dl::bf16, {s.T, s.Hq, s.D});
    const DLTensor& k = d2k::output(args, "k", kDLCUDA, d2k::dl::bf16, {s.T, s.Hkv, s.D});
    const DLTensor& v = d2k::output(args, "v", kDLCUDA, d2k::dl::bf16, {s.T, s.Hkv, s.D});
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, s.T, std::max(s.Hq, s.Hkv), s.D);
    if (s.T == 0) return D2K_OK;

    auto stream = static_cast<cudaStream_t>(args->stream);
    const auto* x = d2k::data<const __nv_bfloat16>(qkv);
    gather_rows<<<blocks_for(s.T * s.D, kThreads), kThreads, 0, stream>>>(
        d2k::data<const float>(cache), d2k::data<const int64_t>(pos), buf.cs, s.T, s.D);
    D2K_CUDA_TRY(args, cudaGetLastError());
    int32_t rc = norm_rope_heads(args, s, x, 0, s.Hq, d2k::data<const __nv_bfloat16>(qw), eps, buf,
                                 d2k::data<__nv_bfloat16>(q), stream);
    if (rc != D2K_OK) return rc;
    rc = norm_rope_heads(args, s, x, s.Hq, s.Hkv, d2k::data<const __nv_bfloat16>(kw), eps, buf,
                         d2k::data<__nv_bfloat16>(k), stream);
    if (rc != D2K_OK) return rc;
    copy_heads<<<blocks_for(s.T * s.Hkv * s.D, kThreads), kThreads, 0, stream>>>(
        x, H * s.D, (s.Hq + s.Hkv) * s.D, s.Hkv * s.D, d2k::data<__nv_bfloat16>(v), s.T);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
