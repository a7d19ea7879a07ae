// softmax_cross_entropy — naive baseline: what PyTorch eager launches for
//   loss = F.cross_entropy(logits.float(), targets, reduction="none", ignore_index=ii)
//   loss.backward(grad_scale * ones)      # dlogits = logits.grad (bf16)
// op by op, every intermediate materialised in fp32 (workspace 12*T*V bytes):
//
//   forward
//   1. cast_bf16_to_f32              x32 = float(logits)                      elementwise
//   2. log_softmax_rows              logp = x32 - lse(x32)                    a block per row, three
//                                    passes over the row (max, sum of exp, write), as aten's
//                                    cunn_SoftMaxForward does for rows too long for shared memory
//   3. nll_loss_forward              loss[t] = -logp[t, y_t] (0 if ignored)   a thread per row
//   backward
//   4. cudaMemsetAsync               grad_logp = 0                            (aten: zeros_like)
//   5. nll_loss_backward_scatter     grad_logp[t, y_t] = -grad_scale          a thread per row
//   6. log_softmax_backward_rows     g = grad_logp - exp(logp) * sum(grad_logp)  a block per row, two
//                                    passes (sum, write); g is written over x32 (its buffer is free
//                                    once the forward is done, as the caching allocator would reuse it)
//   7. cast_f32_to_bf16              dlogits = bf16(g)                        elementwise
//
// Seven launches. Each kernel is the plain textbook form, not slowed on purpose: coalesced
// accesses, fp32 arithmetic, shared-memory tree reductions.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "d2k/solution.h"

namespace {

constexpr int kElementwiseThreads = 256;
constexpr int kRowThreads = 512;

__global__ void cast_bf16_to_f32(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(in[i]);
}

__global__ void cast_f32_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}

enum class Op { kMax, kSum };

/// Block-wide reduction of one float per thread through a shared-memory tree.
template <Op op>
__device__ float block_reduce(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) {
      const float o = scratch[threadIdx.x + s];
      scratch[threadIdx.x] = op == Op::kMax ? fmaxf(scratch[threadIdx.x], o) : scratch[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const float r = scratch[0];
  __syncthreads();  // scratch is reused by the next reduction
  return r;
}

/// logp[row, :] = x[row, :] - max - log(sum exp(x - max)); a block per row.
__global__ void __launch_bounds__(kRowThreads)
    log_softmax_rows(const float* __restrict__ x, float* __restrict__ logp, int64_t V) {
  __shared__ float scratch[kRowThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, x[base + v]);
  m = block_reduce<Op::kMax>(m, scratch);
  float s = 0.f;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) s += expf(x[base + v] - m);
  s = block_reduce<Op::kSum>(s, scratch);
  const float log_s = logf(s);
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) logp[base + v] = x[base + v] - m - log_s;
}

__global__ void nll_loss_forward(const float* __restrict__ logp, const int64_t* __restrict__ targets,
                                 float* __restrict__ loss, int64_t T, int64_t V, int64_t ignore_index) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const int64_t y = targets[t];
  loss[t] = y == ignore_index ? 0.f : -logp[t * V + y];
}

__global__ void nll_loss_backward_scatter(const int64_t* __restrict__ targets, float* __restrict__ grad_logp,
                                          int64_t T, int64_t V, int64_t ignore_index, float grad_scale) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const int64_t y = targets[t];
  if (y != ignore_index) grad_logp[t * V + y] = -grad_scale;
}

/// g[row, :] = grad[row, :] - exp(logp[row, :]) * sum(grad[row, :]); a block per row.
__global__ void __launch_bounds__(kRowThreads)
    log_softmax_backward_rows(const float* __restrict__ grad, const float* __restrict__ logp,
                              float* __restrict__ g, int64_t V) {
  __shared__ float scratch[kRowThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * V;
  float s = 0.f;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) s += grad[base + v];
  s = block_reduce<Op::kSum>(s, scratch);
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) g[base + v] = grad[base + v] - expf(logp[base + v]) * s;
}

/// The workspace: three fp32 [T, V] buffers, x32 (reused for g), logp and grad_logp (one carve-up for
/// both entry points).
struct Buffers {
  float *x32, *logp, *grad_logp;
};
Buffers carve(d2k::Workspace& ws, int64_t T, int64_t V) {
  const uint64_t n = static_cast<uint64_t>(T) * static_cast<uint64_t>(V);
  Buffers b;
  b.x32 = ws.take<float>(n);
  b.logp = ws.take<float>(n);
  b.grad_logp = ws.take<float>(n);
  return b;
}

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t V = d2k::scalar_i(args, "V");
    if (T < 0 || V < 1) throw d2k::abi_error("naive: need T >= 0 and V >= 1");
    d2k::Workspace ws;
    carve(ws, T, V);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t V = d2k::scalar_i(args, "V");
    const int64_t ignore_index = d2k::scalar_i(args, "ignore_index");
    const float grad_scale = static_cast<float>(d2k::scalar_f(args, "grad_scale"));
    if (T < 0 || V < 1) throw d2k::abi_error("naive: need T >= 0 and V >= 1");
    if (T > 2147483647) throw d2k::abi_error("naive: T above 2^31-1 is not supported (one block per row)");
    const DLTensor& logits = d2k::input(args, "logits", kDLCUDA, d2k::dl::bf16, {T, V});
    const DLTensor& targets = d2k::input(args, "targets", kDLCUDA, d2k::dl::i64, {T});
    const DLTensor& loss = d2k::output(args, "loss", kDLCUDA, d2k::dl::f32, {T});
    const DLTensor& dlogits = d2k::output(args, "dlogits", kDLCUDA, d2k::dl::bf16, {T, V});
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, T, V);
    if (T == 0) return D2K_OK;

    auto stream = static_cast<cudaStream_t>(args->stream);
    const int64_t n = T * V;
    float* x32 = buf.x32;
    float* logp = buf.logp;
    float* grad_logp = buf.grad_logp;
    float* g = x32;  // x32 is dead after the forward
    const auto* yp = d2k::data<const int64_t>(targets);
    const unsigned rows = static_cast<unsigned>(T);

    cast_bf16_to_f32<<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        d2k::data<const __nv_bfloat16>(logits), x32, n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    log_softmax_rows<<<rows, kRowThreads, 0, stream>>>(x32, logp, V);
    D2K_CUDA_TRY(args, cudaGetLastError());
    nll_loss_forward<<<blocks_for(T, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        logp, yp, d2k::data<float>(loss), T, V, ignore_index);
    D2K_CUDA_TRY(args, cudaGetLastError());
    D2K_CUDA_TRY(args, cudaMemsetAsync(grad_logp, 0, static_cast<size_t>(n) * sizeof(float), stream));
    nll_loss_backward_scatter<<<blocks_for(T, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        yp, grad_logp, T, V, ignore_index, grad_scale);
    D2K_CUDA_TRY(args, cudaGetLastError());
    log_softmax_backward_rows<<<rows, kRowThreads, 0, stream>>>(grad_logp, logp, g, V);
    D2K_CUDA_TRY(args, cudaGetLastError());
    cast_f32_to_bf16<<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        g, d2k::data<__nv_bfloat16>(dlogits), n);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
