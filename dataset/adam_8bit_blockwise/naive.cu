// adam_8bit_blockwise — naive: the reference flow of an 8-bit optimizer written op by op, as
// PyTorch eager runs it (pytorch.py) and as bitsandbytes' Python fallback reads: every
// intermediate materialised in global memory, one kernel per step.
//   1. dequantise m and v into fp32 buffers (two kernels: code gather times the block's absmax)
//   2. fp32 Adam on the flat buffers (one kernel: m', v' in place, param_out)
//   3. the new absmax of each block (two kernels: one CTA per block, a shared-memory max tree)
//   4. requantise (two kernels: the nearest entry by binary search over the map in shared memory)
// Workspace: the two fp32 state buffers (8 B per element).
#include <cuda_runtime.h>

#include <cstdint>

#include "adam8_args.h"
#include "adam8_codes.h"
#include "d2k/solution.h"

namespace {

constexpr int kThreads = 256;  // = adam8::kBlock: one CTA per quantisation block in steps 3 and 4

struct Buffers {
  float* m;
  float* v;
};
Buffers carve(d2k::Workspace& ws, int64_t N) { return {ws.take<float>(N), ws.take<float>(N)}; }

/// One code map (signed or unsigned) passed by value.
struct Map {
  float code[adam8::kCodes];
};
Map pick(const adam8::CodeMaps& c, bool is_signed) {
  Map m{};
  for (int k = 0; k < adam8::kCodes; ++k) m.code[k] = is_signed ? c.m[k] : c.v[k];
  return m;
}

__global__ void dequantise(const uint8_t* __restrict__ q, const float* __restrict__ absmax, const __grid_constant__ Map map,
                           float* __restrict__ out, int64_t N) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N) out[i] = map.code[q[i]] * absmax[i / adam8::kBlock];
}

__global__ void adam_fp32(const float* __restrict__ param, const float* __restrict__ grad, float* __restrict__ m,
                          float* __restrict__ v, float* __restrict__ param_out, int64_t N, float beta1,
                          float one_minus_beta1, float beta2, float one_minus_beta2, float step_size, float eps_hat,
                          float decay) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const float g = grad[i];
  const float mn = m[i] * beta1 + one_minus_beta1 * g;
  const float vn = v[i] * beta2 + one_minus_beta2 * g * g;
  m[i] = mn;
  v[i] = vn;
  param_out[i] = (param[i] + step_size * (mn / (sqrtf(vn) + eps_hat))) * decay;
}

__global__ void block_absmax(const float* __restrict__ x, float* __restrict__ absmax, int64_t N) {
  __shared__ float s[kThreads];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * adam8::kBlock + threadIdx.x;
  s[threadIdx.x] = i < N ? fabsf(x[i]) : 0.0f;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (static_cast<int>(threadIdx.x) < w) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) absmax[blockIdx.x] = s[0];
}

__global__ void requantise(const float* __restrict__ x, const float* __restrict__ absmax, const __grid_constant__ Map map,
                           uint8_t zero_code, uint8_t* __restrict__ q, int64_t N) {
  __shared__ float code[adam8::kCodes];
  code[threadIdx.x] = map.code[threadIdx.x];
  __syncthreads();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * adam8::kBlock + threadIdx.x;
  if (i >= N) return;
  const float a = absmax[blockIdx.x];
  q[i] = a > 0.0f ? static_cast<uint8_t>(adam8::nearest_code_bsearch(code, x[i] / a)) : zero_code;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, adam8::read_shape(args).N);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const adam8::Shape s = adam8::read_shape(args);
    const adam8::Hyper h = adam8::read_hyper(args);
    const int64_t N = s.N, NB = s.NB;
    const auto* param = d2k::data<const float>(d2k::input(args, "param", kDLCUDA, d2k::dl::f32, {N}));
    const auto* grad = d2k::data<const float>(d2k::input(args, "grad", kDLCUDA, d2k::dl::f32, {N}));
    const auto* mq = d2k::data<const uint8_t>(d2k::input(args, "m_q", kDLCUDA, d2k::dl::u8, {N}));
    const auto* vq = d2k::data<const uint8_t>(d2k::input(args, "v_q", kDLCUDA, d2k::dl::u8, {N}));
    const auto* ma = d2k::data<const float>(d2k::input(args, "m_absmax", kDLCUDA, d2k::dl::f32, {NB}));
    const auto* va = d2k::data<const float>(d2k::input(args, "v_absmax", kDLCUDA, d2k::dl::f32, {NB}));
    auto* p_out = d2k::data<float>(d2k::output(args, "param_out", kDLCUDA, d2k::dl::f32, {N}));
    auto* mq_out = d2k::data<uint8_t>(d2k::output(args, "m_q_out", kDLCUDA, d2k::dl::u8, {N}));
    auto* vq_out = d2k::data<uint8_t>(d2k::output(args, "v_q_out", kDLCUDA, d2k::dl::u8, {N}));
    auto* ma_out = d2k::data<float>(d2k::output(args, "m_absmax_out", kDLCUDA, d2k::dl::f32, {NB}));
    auto* va_out = d2k::data<float>(d2k::output(args, "v_absmax_out", kDLCUDA, d2k::dl::f32, {NB}));
    d2k::Workspace ws(args);
    const Buffers b = carve(ws, N);
    auto stream = static_cast<cudaStream_t>(args->stream);

    const adam8::CodeMaps maps = adam8::make_code_maps();
    const Map sm = pick(maps, true), um = pick(maps, false);
    const auto grid = static_cast<unsigned>((N + kThreads - 1) / kThreads);  // = NB
    dequantise<<<grid, kThreads, 0, stream>>>(mq, ma, sm, b.m, N);
    dequantise<<<grid, kThreads, 0, stream>>>(vq, va, um, b.v, N);
    // 1 - beta in double, then rounded: 1.0f - 0.999f is 1.3e-5 away from 0.001f, and v' (and the
    // new absmax) would carry that error on every element.
    adam_fp32<<<grid, kThreads, 0, stream>>>(param, grad, b.m, b.v, p_out, N, static_cast<float>(h.beta1),
                                             static_cast<float>(1.0 - h.beta1), static_cast<float>(h.beta2),
                                             static_cast<float>(1.0 - h.beta2), static_cast<float>(h.step_size()),
                                             static_cast<float>(h.eps_hat()), static_cast<float>(h.decay()));
    block_absmax<<<grid, kThreads, 0, stream>>>(b.m, ma_out, N);
    block_absmax<<<grid, kThreads, 0, stream>>>(b.v, va_out, N);
    requantise<<<grid, kThreads, 0, stream>>>(b.m, ma_out, sm, adam8::kSignedZero, mq_out, N);
    requantise<<<grid, kThreads, 0, stream>>>(b.v, va_out, um, 0, vq_out, N);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
