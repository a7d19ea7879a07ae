// fused_adamw — naive baseline: what PyTorch launches on its foreach-free path, tensor by tensor
// and op by op, for
//   for p, g in zip(params, grads): p.grad = g.float()                       # fp32 grads
//   torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=False)
//   torch.optim.AdamW(params, ..., foreach=False, fused=False).step()       # _single_tensor_adamw
//   for p, b in zip(params, bf16_params): b.copy_(p)
// with every intermediate materialised (workspace: fp32 grads and one fp32 denominator buffer,
// 8 bytes per parameter, plus the per-tensor norms).
//
//   per tensor t (G tensors)            launches
//   1. cast_bf16_to_f32                 g32 = float(grad)                                 1
//   2. sumsq_partials + finish_norm     norm[t] = ||g32||_2 (a two-stage reduction)        2
//   once
//   3. clip_from_norms                  total = ||norm||_2; clip = min(1, max_norm/(total+1e-6))  1
//   per tensor t
//   4. scale_by_clip                    g32 *= clip                                        1
//   5. mul_scalar                       param_out = param * (1 - lr*wd)                    1
//   6. lerp                             m_out = m + (1-beta1)*(g32 - m)                    1
//   7. mul_scalar                       v_out = v * beta2                                  1
//   8. addcmul                          v_out += (1-beta2) * g32 * g32                     1
//   9. sqrt_                            denom = sqrt(v_out)                                1
//  10. div_scalar, add_scalar           denom = denom / bc2_sqrt + eps (two ops)           2
//  11. addcdiv                          param_out += -step_size * m_out / denom            1
//  12. cast_f32_to_bf16                 param_bf16_out = bf16(param_out)                   1
//
// 13 launches per tensor plus one. Each kernel is the plain form (a thread per element, coalesced,
// fp32), not slowed on purpose. The offsets are copied to the host first: PyTorch knows every
// tensor's size on the host.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "adamw_args.h"
#include "d2k/solution.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxNormBlocks = 256;  // blocks of one tensor's norm reduction (partials per tensor)

int blocks_for(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__global__ void cast_bf16_to_f32(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(in[i]);
}

__global__ void cast_f32_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}

__device__ float block_sum(float v) {
  __shared__ float scratch[kThreads];
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  return scratch[0];
}

/// partial[b] = sum of x^2 over block b's grid-stride share of one tensor.
__global__ void sumsq_partials(const float* __restrict__ x, int64_t n, float* __restrict__ partial) {
  float s = 0.f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    s += x[i] * x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/// norm = sqrt(sum of the partials); one block.
__global__ void finish_norm(const float* __restrict__ partial, int n, float* __restrict__ norm) {
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += kThreads) s += partial[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *norm = sqrtf(s);
}

/// clip = min(1, max_norm / (||norms||_2 + 1e-6)); one block.
__global__ void clip_from_norms(const float* __restrict__ norms, int64_t G, float max_norm, float* __restrict__ clip) {
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < G; i += kThreads) s += norms[i] * norms[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *clip = fminf(1.f, max_norm / (sqrtf(s) + static_cast<float>(adamw::kClipEps)));
}

__global__ void scale_by_clip(float* __restrict__ x, const float* __restrict__ clip, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= *clip;
}

__global__ void mul_scalar(const float* __restrict__ x, float a, float* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * a;
}

__global__ void div_scalar(float* __restrict__ x, float a, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] / a;
}

__global__ void add_scalar(float* __restrict__ x, float a, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + a;
}

/// out = self + w*(end - self) (aten's lerp for w < 0.5).
__global__ void lerp(const float* __restrict__ self, const float* __restrict__ end, float w, float* __restrict__ out,
                     int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = self[i] + w * (end[i] - self[i]);
}

/// x += value * a * b.
__global__ void addcmul(float* __restrict__ x, const float* __restrict__ a, const float* __restrict__ b, float value,
                        int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + value * a[i] * b[i];
}

/// x += value * a / b.
__global__ void addcdiv(float* __restrict__ x, const float* __restrict__ a, const float* __restrict__ b, float value,
                        int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + value * (a[i] / b[i]);
}

__global__ void sqrt_into(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = sqrtf(x[i]);
}

struct Buffers {
  float *g32, *denom, *partials, *norms, *clip;
};
Buffers carve(d2k::Workspace& ws, int64_t P, int64_t G) {
  Buffers b;
  b.g32 = ws.take<float>(static_cast<uint64_t>(P));
  b.denom = ws.take<float>(static_cast<uint64_t>(P));
  b.partials = ws.take<float>(kMaxNormBlocks);
  b.norms = ws.take<float>(static_cast<uint64_t>(G));
  b.clip = ws.take<float>(1);
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const adamw::Shape s = adamw::read_shape(args);
    d2k::Workspace ws;
    carve(ws, s.P, s.G);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const adamw::Shape s = adamw::read_shape(args);
    const adamw::Hyper h = adamw::read_hyper(args);
    const int64_t P = s.P, G = s.G;
    const auto* param = d2k::data<const float>(d2k::input(args, "param", kDLCUDA, d2k::dl::f32, {P}));
    const auto* grad = d2k::data<const __nv_bfloat16>(d2k::input(args, "grad", kDLCUDA, d2k::dl::bf16, {P}));
    const auto* m = d2k::data<const float>(d2k::input(args, "m", kDLCUDA, d2k::dl::f32, {P}));
    const auto* v = d2k::data<const float>(d2k::input(args, "v", kDLCUDA, d2k::dl::f32, {P}));
    const auto* offsets_d = d2k::data<const int64_t>(d2k::input(args, "offsets", kDLCUDA, d2k::dl::i64, {G + 1}));
    auto* p_out = d2k::data<float>(d2k::output(args, "param_out", kDLCUDA, d2k::dl::f32, {P}));
    auto* m_out = d2k::data<float>(d2k::output(args, "m_out", kDLCUDA, d2k::dl::f32, {P}));
    auto* v_out = d2k::data<float>(d2k::output(args, "v_out", kDLCUDA, d2k::dl::f32, {P}));
    auto* b_out = d2k::data<__nv_bfloat16>(d2k::output(args, "param_bf16_out", kDLCUDA, d2k::dl::bf16, {P}));
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, P, G);
    auto stream = static_cast<cudaStream_t>(args->stream);

    std::vector<int64_t> off(static_cast<size_t>(G + 1));
    D2K_CUDA_TRY(args, cudaMemcpyAsync(off.data(), offsets_d, off.size() * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                       stream));
    D2K_CUDA_TRY(args, cudaStreamSynchronize(stream));
    if (off[0] != 0 || off[static_cast<size_t>(G)] != P)
      throw d2k::abi_error("naive: offsets must start at 0 and end at P");
    for (int64_t t = 0; t < G; ++t)
      if (off[t + 1] < off[t]) throw d2k::abi_error("naive: offsets must not decrease");

    // Gradients to fp32 and the per-tensor norms.
    for (int64_t t = 0; t < G; ++t) {
      const int64_t o = off[t], n = off[t + 1] - off[t];
      if (n == 0) continue;
      cast_bf16_to_f32<<<blocks_for(n), kThreads, 0, stream>>>(grad + o, b.g32 + o, n);
    }
    D2K_CUDA_TRY(args, cudaMemsetAsync(b.norms, 0, static_cast<size_t>(G) * sizeof(float), stream));
    for (int64_t t = 0; t < G; ++t) {
      const int64_t o = off[t], n = off[t + 1] - off[t];
      if (n == 0) continue;
      const int nb = std::min(blocks_for(n), kMaxNormBlocks);
      sumsq_partials<<<nb, kThreads, 0, stream>>>(b.g32 + o, n, b.partials);
      finish_norm<<<1, kThreads, 0, stream>>>(b.partials, nb, b.norms + t);
    }
    clip_from_norms<<<1, kThreads, 0, stream>>>(b.norms, G, static_cast<float>(h.max_norm), b.clip);
    D2K_CUDA_TRY(args, cudaGetLastError());

    // AdamW, tensor by tensor, op by op.
    const float decay = static_cast<float>(h.decay()), step_size = static_cast<float>(h.step_size());
    const float bc2_sqrt = static_cast<float>(h.bc2_sqrt()), eps = static_cast<float>(h.eps);
    for (int64_t t = 0; t < G; ++t) {
      const int64_t o = off[t], n = off[t + 1] - off[t];
      if (n == 0) continue;
      const int nb = blocks_for(n);
      float* g = b.g32 + o;
      float* d = b.denom + o;
      scale_by_clip<<<nb, kThreads, 0, stream>>>(g, b.clip, n);
      mul_scalar<<<nb, kThreads, 0, stream>>>(param + o, decay, p_out + o, n);
      lerp<<<nb, kThreads, 0, stream>>>(m + o, g, static_cast<float>(1.0 - h.beta1), m_out + o, n);
      mul_scalar<<<nb, kThreads, 0, stream>>>(v + o, static_cast<float>(h.beta2), v_out + o, n);
      addcmul<<<nb, kThreads, 0, stream>>>(v_out + o, g, g, static_cast<float>(1.0 - h.beta2), n);
      sqrt_into<<<nb, kThreads, 0, stream>>>(v_out + o, d, n);
      div_scalar<<<nb, kThreads, 0, stream>>>(d, bc2_sqrt, n);
      add_scalar<<<nb, kThreads, 0, stream>>>(d, eps, n);
      addcdiv<<<nb, kThreads, 0, stream>>>(p_out + o, m_out + o, d, -step_size, n);
      cast_f32_to_bf16<<<nb, kThreads, 0, stream>>>(p_out + o, b_out + o, n);
    }
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
