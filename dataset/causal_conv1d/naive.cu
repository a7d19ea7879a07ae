// causal_conv1d — naive baseline: what PyTorch eager launches for Mamba's reference program
// (causal_conv1d_ref of the causal-conv1d package, fp32 weights):
//   y = F.conv1d(x.to(torch.float32), weight.unsqueeze(1), bias, padding=W-1, groups=D)[..., :L]
//   out = F.silu(y).to(torch.bfloat16)
// op by op, every intermediate materialised in fp32 (workspace 8*B*D*L bytes):
//
//   1. cast_bf16_to_f32       x32 = float(x)                                       elementwise
//   2. depthwise_causal_conv  y32[r, l] = sum_k w[d,k] * x32[r, l-(W-1)+k]         a thread per output,
//                             each output reading its W inputs from global memory (zero left padding)
//   3. bias_silu              z32 = silu(y32 + bias[d]), written over x32 (dead after the conv, as
//                             the caching allocator would reuse it)                   elementwise
//   4. cast_f32_to_bf16       out = bf16(z32)                                        elementwise
//
// Four launches. Each kernel is the plain textbook form, not slowed on purpose: coalesced accesses
// along L, fp32 arithmetic, expf and an IEEE division in SiLU as PyTorch's silu kernel.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"

namespace {

constexpr int kThreads = 256;

// Index arithmetic in 32 bits where the tensor allows it (all bench shapes), 64 bits otherwise, as
// PyTorch's TensorIterator splits to 32-bit indexing: a 64-bit division per element would make the
// conv and bias kernels instruction-bound, which eager's kernels are not.
template <typename Index>
__global__ void cast_bf16_to_f32(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, Index n) {
  const Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(in[i]);
}

template <typename Index>
__global__ void cast_f32_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, Index n) {
  const Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}

/// y[r, l] for rows r = b*D + d of length L; the channel is r % D.
template <typename Index>
__global__ void depthwise_causal_conv(const float* __restrict__ x, const float* __restrict__ w,
                                      float* __restrict__ y, Index n, Index D, Index L, int W) {
  const Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Index row = i / L, l = i - row * L;
  const float* wd = w + (row % D) * W;
  float acc = 0.f;
  for (int k = 0; k < W; ++k) {
    // src = l - (W-1) + k, kept unsigned: valid when l + k >= W - 1
    if (l + k >= static_cast<Index>(W - 1)) acc += wd[k] * x[row * L + l + k - (W - 1)];
  }
  y[i] = acc;
}

template <typename Index>
__global__ void bias_silu(const float* __restrict__ y, const float* __restrict__ bias, float* __restrict__ z,
                          Index n, Index D, Index L) {
  const Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = y[i] + bias[(i / L) % D];
  z[i] = v / (1.f + expf(-v));
}

/// The workspace: x32 (reused for z32) and y32, fp32 [B, D, L] each (one carve-up for both entry points).
struct Buffers {
  float *x32, *y32;
};
Buffers carve(d2k::Workspace& ws, int64_t n) {
  Buffers b;
  b.x32 = ws.take<float>(static_cast<uint64_t>(n));
  b.y32 = ws.take<float>(static_cast<uint64_t>(n));
  return b;
}

struct Shape {
  int64_t B, D, L, W;
};
Shape shape_of(const d2k_args* args) {
  const Shape s{d2k::scalar_i(args, "B"), d2k::scalar_i(args, "D"), d2k::scalar_i(args, "L"),
                d2k::scalar_i(args, "W")};
  if (s.B < 0 || s.D < 0 || s.L < 0 || s.W < 1 || s.W > 64)
    throw d2k::abi_error("naive: need B, D, L >= 0 and 1 <= W <= 64");
  return s;
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

/// The four launches, every index of type Index.
template <typename Index>
int32_t launch(const d2k_args* args, cudaStream_t stream, const DLTensor& x, const DLTensor& weight,
               const DLTensor& bias, const DLTensor& out, const Buffers& buf, const Shape& s) {
  const Index n = static_cast<Index>(s.B * s.D * s.L), D = static_cast<Index>(s.D), L = static_cast<Index>(s.L);
  const unsigned blocks = blocks_for(static_cast<int64_t>(n));
  if (static_cast<int64_t>(n) > int64_t{2147483647} * kThreads) throw d2k::abi_error("naive: B*D*L exceeds the 1-D grid");
  cast_bf16_to_f32<Index><<<blocks, kThreads, 0, stream>>>(d2k::data<const __nv_bfloat16>(x), buf.x32, n);
  D2K_CUDA_TRY(args, cudaGetLastError());
  depthwise_causal_conv<Index><<<blocks, kThreads, 0, stream>>>(buf.x32, d2k::data<const float>(weight), buf.y32, n,
                                                                D, L, static_cast<int>(s.W));
  D2K_CUDA_TRY(args, cudaGetLastError());
  bias_silu<Index><<<blocks, kThreads, 0, stream>>>(buf.y32, d2k::data<const float>(bias), buf.x32, n, D, L);
  D2K_CUDA_TRY(args, cudaGetLastError());
  cast_f32_to_bf16<Index><<<blocks, kThreads, 0, stream>>>(buf.x32, d2k::data<__nv_bfloat16>(out), n);
  D2K_CUDA_TRY(args, cudaGetLastError());
  return D2K_OK;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    d2k::Workspace ws;
    carve(ws, s.B * s.D * s.L);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = shape_of(args);
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {s.B, s.D, s.L});
    const DLTensor& weight = d2k::input(args, "weight", kDLCUDA, d2k::dl::f32, {s.D, s.W});
    const DLTensor& bias = d2k::input(args, "bias", kDLCUDA, d2k::dl::f32, {s.D});
    const DLTensor& out = d2k::output(args, "out", kDLCUDA, d2k::dl::bf16, {s.B, s.D, s.L});
    const int64_t n = s.B * s.D * s.L;
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, n);
    if (n == 0) return D2K_OK;

    auto stream = static_cast<cudaStream_t>(args->stream);
    if (n < (int64_t{1} << 32) - kThreads)
      return launch<uint32_t>(args, stream, x, weight, bias, out, buf, s);
    return launch<int64_t>(args, stream, x, weight, bias, out, buf, s);
  });
}
