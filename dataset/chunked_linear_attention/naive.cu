// chunked_linear_attention — naive baseline: the token-by-token recurrence, as a straightforward
// CUDA port of its definition writes it.
//
//   one CTA per (b, h), D threads; thread j owns column j of the state (S[:, j], D fp32 registers)
//   for t in 0..S-1:   S[:, j] = exp(a_t) * S[:, j] + k_t^T * v_t[j]     (D FMAs)
//                      o_t[j]  = q_t . S[:, j]                          (D FMAs)
//
// The state never leaves registers and q, k, v, a are read once, so the traffic is the compulsory
// one; what bounds it is the sequence: S dependent steps per head, each a barrier and a round of
// 2D FMAs per thread, and only B*H CTAs of D threads (32 CTAs of 128 threads at (2,16,8192,128)).
// Step t+1's q_t, k_t, v_t, a_t are loaded into registers while step t computes (one barrier per
// step, double-buffered shared rows). A kernel launch per step, as a PyTorch loop over t does
// (several kernels per step: mul, outer product, add, matvec), would pay a launch per step —
// 32768 sequential launches at S = 32768, slower than this kernel; so is eager PyTorch's loop.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cla_args.h"
#include "d2k/solution.h"

namespace {

template <int D>
__global__ void __launch_bounds__(D) recurrence(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                                                const __nv_bfloat16* __restrict__ v, const float* __restrict__ a,
                                                __nv_bfloat16* __restrict__ o, float* __restrict__ state, int S, int H) {
  __shared__ float qs[2][D], ks[2][D], gs[2];
  const int j = threadIdx.x;
  const int bh = blockIdx.x, b = bh / H, h = bh % H;
  const int64_t row = int64_t(H) * D;
  const int64_t base = (int64_t(b) * S * H + h) * D + j;  // element j of step 0
  const float* ah = a + int64_t(bh) * S;
  float s[D];
#pragma unroll
  for (int i = 0; i < D; ++i) s[i] = 0.f;

  qs[0][j] = __bfloat162float(q[base]);
  ks[0][j] = __bfloat162float(k[base]);
  float vj = __bfloat162float(v[base]);
  if (j == 0) gs[0] = expf(ah[0]);
  __syncthreads();
  for (int t = 0; t < S; ++t) {
    const int cur = t & 1;
    float nq = 0.f, nk = 0.f, nv = 0.f, na = 0.f;
    if (t + 1 < S) {  // next step's row, in flight while this step computes
      const int64_t off = base + int64_t(t + 1) * row;
      nq = __bfloat162float(q[off]);
      nk = __bfloat162float(k[off]);
      nv = __bfloat162float(v[off]);
      if (j == 0) na = ah[t + 1];
    }
    const float g = gs[cur];
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < D; ++i) {
      s[i] = fmaf(ks[cur][i], vj, g * s[i]);
      acc = fmaf(qs[cur][i], s[i], acc);
    }
    o[base + int64_t(t) * row] = __float2bfloat16_rn(acc);
    qs[cur ^ 1][j] = nq;
    ks[cur ^ 1][j] = nk;
    vj = nv;
    if (j == 0) gs[cur ^ 1] = expf(na);
    __syncthreads();
  }
  float* st = state + int64_t(bh) * D * D;
#pragma unroll
  for (int i = 0; i < D; ++i) st[int64_t(i) * D + j] = s[i];
}

void run(const d2k_args* args) {
  const cla::Tensors t = cla::parse(args, "naive");
  cudaStream_t st = static_cast<cudaStream_t>(args->stream);
  const unsigned grid = unsigned(t.d.B * t.d.H);
  const auto* q = static_cast<const __nv_bfloat16*>(t.q);
  const auto* k = static_cast<const __nv_bfloat16*>(t.k);
  const auto* v = static_cast<const __nv_bfloat16*>(t.v);
  auto* o = static_cast<__nv_bfloat16*>(t.o);
  if (t.d.D == 64)
    recurrence<64><<<grid, 64, 0, st>>>(q, k, v, t.a, o, t.state, int(t.d.S), int(t.d.H));
  else
    recurrence<128><<<grid, 128, 0, st>>>(q, k, v, t.a, o, t.state, int(t.d.S), int(t.d.H));
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("naive: launch: ") + cudaGetErrorString(e));
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    cla::parse_dims(args, "naive");
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    run(args);
    return D2K_OK;
  });
}
