// fused_adamw — library composition: what a practitioner reaches with CUB alone over the flat
// buffer. cub::DeviceReduce::TransformReduce sums the squared bf16 grads in fp32 into one float of
// the workspace (CUB's tiling, loads and two-stage deterministic reduction), then
// cub::DeviceFor::Bulk runs one functor per element that derives the clipping coefficient from that
// sum and writes param_out, m_out, v_out and the bf16 copy. Every tensor at once (the segments are
// not read), two passes over the grads, but element-wise scalar accesses (the functor sees one index
// at a time) and no control over the grid.
// CUB brackets its calls with NVTX ranges, whose injection hook imports dlopen: a symbol the
// sandbox refuses. The ranges are only a profiler aid, so they are compiled out.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_for.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "adamw_args.h"
#include "d2k/solution.h"

namespace {

struct SquareBf16 {
  __device__ float operator()(__nv_bfloat16 x) const {
    const float f = __bfloat162float(x);
    return f * f;
  }
};

/// One element of the clipped AdamW step (PyTorch's fused order, as expert.cu).
struct AdamwElement {
  const float* param;
  const __nv_bfloat16* grad;
  const float* m;
  const float* v;
  float* param_out;
  float* m_out;
  float* v_out;
  __nv_bfloat16* bf16_out;
  const float* sumsq;
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, decay, step_size, bc2_sqrt;
  double max_norm;
  __device__ void operator()(int64_t i) const {
    const float clip = static_cast<float>(fmin(1.0, max_norm / (sqrt(static_cast<double>(*sumsq)) + adamw::kClipEps)));
    const float g = __bfloat162float(grad[i]) * clip;
    const float mi = fmaf(beta1, m[i], one_minus_beta1 * g);
    const float vi = fmaf(beta2, v[i], one_minus_beta2 * g * g);
    const float p = fmaf(param[i], decay, -step_size * (mi / (sqrtf(vi) / bc2_sqrt + eps)));
    m_out[i] = mi;
    v_out[i] = vi;
    param_out[i] = p;
    bf16_out[i] = __float2bfloat16_rn(p);
  }
};

struct Buffers {
  float* sumsq;
  void* temp;
  size_t temp_bytes;
};
Buffers carve(d2k::Workspace& ws, int64_t P) {
  size_t bytes = 0;
  cub::DeviceReduce::TransformReduce(nullptr, bytes, static_cast<const __nv_bfloat16*>(nullptr),
                                     static_cast<float*>(nullptr), P, cuda::std::plus<>{}, SquareBf16{}, 0.0f);
  Buffers b;
  b.sumsq = ws.take<float>(1);
  b.temp = ws.take<unsigned char>(bytes);
  b.temp_bytes = bytes;
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, adamw::read_shape(args).P);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const adamw::Shape s = adamw::read_shape(args);
    const adamw::Hyper h = adamw::read_hyper(args);
    const int64_t P = s.P, G = s.G;
    AdamwElement op;
    op.param = d2k::data<const float>(d2k::input(args, "param", kDLCUDA, d2k::dl::f32, {P}));
    op.grad = d2k::data<const __nv_bfloat16>(d2k::input(args, "grad", kDLCUDA, d2k::dl::bf16, {P}));
    op.m = d2k::data<const float>(d2k::input(args, "m", kDLCUDA, d2k::dl::f32, {P}));
    op.v = d2k::data<const float>(d2k::input(args, "v", kDLCUDA, d2k::dl::f32, {P}));
    d2k::input(args, "offsets", kDLCUDA, d2k::dl::i64, {G + 1});  // checked, not read
    op.param_out = d2k::data<float>(d2k::output(args, "param_out", kDLCUDA, d2k::dl::f32, {P}));
    op.m_out = d2k::data<float>(d2k::output(args, "m_out", kDLCUDA, d2k::dl::f32, {P}));
    op.v_out = d2k::data<float>(d2k::output(args, "v_out", kDLCUDA, d2k::dl::f32, {P}));
    op.bf16_out = d2k::data<__nv_bfloat16>(d2k::output(args, "param_bf16_out", kDLCUDA, d2k::dl::bf16, {P}));
    op.beta1 = static_cast<float>(h.beta1);
    op.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
    op.beta2 = static_cast<float>(h.beta2);
    op.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
    op.eps = static_cast<float>(h.eps);
    op.decay = static_cast<float>(h.decay());
    op.step_size = static_cast<float>(h.step_size());
    op.bc2_sqrt = static_cast<float>(h.bc2_sqrt());
    op.max_norm = h.max_norm;
    d2k::Workspace ws(args);
    Buffers b = carve(ws, P);
    op.sumsq = b.sumsq;
    auto stream = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cub::DeviceReduce::TransformReduce(b.temp, b.temp_bytes, op.grad, b.sumsq, P,
                                                          cuda::std::plus<>{}, SquareBf16{}, 0.0f, stream));
    D2K_CUDA_TRY(args, cub::DeviceFor::Bulk(P, op, stream));
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
