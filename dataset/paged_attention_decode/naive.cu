// paged_attention_decode — naive baseline: what the PyTorch program launches op by op
// (pytorch.py: gather the pages by the block table, then attention with a length mask), every
// intermediate materialised:
//
//   1. gather_pages        K, V = k_cache[block_table], v_cache[block_table] as contiguous
//                          [B, Hkv, S, D] bf16, S = P * PAGE (the whole table, as index_select
//                          does; slots past a sequence's length are gathered and masked later)
//   2. cuBLAS bmm          scores[B, Hq, S] = scale * q . K^T, fp32 out (one GEMM per (b, kv
//                          head): its 4 query heads against the KV head's S rows, GQA by strides)
//   3. masked_softmax      p = softmax(scores masked to t < seq_lens[b]) in fp32, stored bf16
//                          (a block per (b, head) row, three passes: max, sum, write)
//   4. cuBLAS bmm          o[B, Hq, D] = p . V, fp32 accumulation, bf16 out
//
// Four launches; the gathered K and V (2 x 2 * B * S * Hkv * D bytes) are written and read again,
// the full capacity S rather than the sequence lengths is read, and the scores make a round trip.
// Not slowed on purpose: 16-byte gathers, cuBLAS for the GEMVs, fp32 softmax.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "d2k/solution.h"

namespace {

constexpr int kHq = 32, kHkv = 8, kGroup = kHq / kHkv, kD = 128, kPage = 16;
constexpr int kRowThreads = 256;
constexpr size_t kCublasWorkspace = size_t{4} << 20;

#define PAGED_CUBLAS_CHECK(call)                                                             \
  do {                                                                                       \
    const cublasStatus_t s_ = (call);                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                         \
      throw d2k::abi_error(std::string("naive: ") + #call + " failed: " + cublasGetStatusString(s_)); \
  } while (0)

/// dst[b, g, t, :] = cache[block_table[b, t / PAGE], t % PAGE, g, :] for every t < S; a thread per
/// 16-byte piece (8 of them per row).
__global__ void gather_pages(const uint4* __restrict__ cache, const int32_t* __restrict__ block_table,
                             uint4* __restrict__ dst, int64_t B, int64_t P) {
  constexpr int kPieces = kD / 8;
  const int64_t S = P * kPage;
  const int64_t n = B * kHkv * S * kPieces;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t piece = i % kPieces, t = (i / kPieces) % S, g = (i / kPieces / S) % kHkv, b = i / kPieces / S / kHkv;
    const int64_t page = block_table[b * P + t / kPage];
    dst[i] = cache[((page * kPage + t % kPage) * kHkv + g) * kPieces + piece];
  }
}

/// p[row, :] = softmax(scores[row, :S] over t < seq_lens[b]), 0 past the length; a block per row.
__global__ void __launch_bounds__(kRowThreads)
    masked_softmax(const float* __restrict__ scores, const int32_t* __restrict__ seq_lens,
                   __nv_bfloat16* __restrict__ p, int64_t S) {
  __shared__ float scratch[kRowThreads];
  const int64_t row = blockIdx.x;
  const int64_t len = min(max(static_cast<int64_t>(seq_lens[row / kHq]), int64_t{0}), S);
  const float* x = scores + row * S;
  auto reduce = [&](float v, bool is_max) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (int s = kRowThreads / 2; s > 0; s >>= 1) {
      if (static_cast<int>(threadIdx.x) < s)
        scratch[threadIdx.x] = is_max ? fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s])
                                      : scratch[threadIdx.x] + scratch[threadIdx.x + s];
      __syncthreads();
    }
    const float r = scratch[0];
    __syncthreads();
    return r;
  };
  float m = -INFINITY;
  for (int64_t t = threadIdx.x; t < len; t += kRowThreads) m = fmaxf(m, x[t]);
  m = reduce(m, true);
  float s = 0.f;
  for (int64_t t = threadIdx.x; t < len; t += kRowThreads) s += expf(x[t] - m);
  s = reduce(s, false);
  const float inv = s > 0.f ? 1.f / s : 0.f;
  for (int64_t t = threadIdx.x; t < S; t += kRowThreads)
    p[row * S + t] = __float2bfloat16_rn(t < len ? expf(x[t] - m) * inv : 0.f);
}

cublasHandle_t handle() {
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] { PAGED_CUBLAS_CHECK(cublasCreate(&h)); });
  return h;
}

struct Shape {
  int64_t B, P, N;
};

Shape read_shape(const d2k_args* a) {
  Shape s{d2k::scalar_i(a, "B"), d2k::scalar_i(a, "P"), d2k::scalar_i(a, "N")};
  if (d2k::scalar_i(a, "Hq") != kHq || d2k::scalar_i(a, "Hkv") != kHkv || d2k::scalar_i(a, "D") != kD ||
      d2k::scalar_i(a, "PAGE") != kPage)
    throw d2k::abi_error("naive: built for Hq = 32, Hkv = 8, D = 128, PAGE = 16");
  if (s.B < 1 || s.P < 1 || s.P * kPage > (int64_t{1} << 30))
    throw d2k::abi_error("naive: need B >= 1 and 1 <= P * PAGE <= 2^30");
  return s;
}

/// Workspace: gathered K and V (bf16), the scores (fp32), p (bf16), cuBLAS's own scratch.
struct Buffers {
  __nv_bfloat16 *k, *v, *p;
  float* scores;
  void* cublas;
};
Buffers carve(d2k::Workspace& ws, const Shape& s) {
  const uint64_t kv = static_cast<uint64_t>(s.B) * kHkv * s.P * kPage * kD;
  const uint64_t rows = static_cast<uint64_t>(s.B) * kHq * s.P * kPage;
  Buffers b;
  b.k = ws.take<__nv_bfloat16>(kv);
  b.v = ws.take<__nv_bfloat16>(kv);
  b.scores = ws.take<float>(rows);
  b.p = ws.take<__nv_bfloat16>(rows);
  b.cublas = ws.take_bytes(kCublasWorkspace);
  return b;
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    d2k::Workspace ws;
    carve(ws, read_shape(args));
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Shape s = read_shape(args);
    const int64_t S = s.P * kPage;
    const auto* q = d2k::data<const __nv_bfloat16>(d2k::input(args, "q", kDLCUDA, d2k::dl::bf16, {s.B, kHq, kD}));
    const auto* kc = d2k::data<const uint4>(d2k::input(args, "k_cache", kDLCUDA, d2k::dl::bf16, {s.N, kPage, kHkv, kD}));
    const auto* vc = d2k::data<const uint4>(d2k::input(args, "v_cache", kDLCUDA, d2k::dl::bf16, {s.N, kPage, kHkv, kD}));
    const auto* bt = d2k::data<const int32_t>(d2k::input(args, "block_table", kDLCUDA, d2k::dl::i32, {s.B, s.P}));
    const auto* lens = d2k::data<const int32_t>(d2k::input(args, "seq_lens", kDLCUDA, d2k::dl::i32, {s.B}));
    auto* o = d2k::data<__nv_bfloat16>(d2k::output(args, "o", kDLCUDA, d2k::dl::bf16, {s.B, kHq, kD}));
    const float scale = static_cast<float>(d2k::scalar_f(args, "scale"));
    d2k::Workspace ws(args);
    const Buffers w = carve(ws, s);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);

    // 1. gather (grid-stride, a few waves of CTAs)
    const unsigned gather_blocks = 132 * 16;
    gather_pages<<<gather_blocks, 256, 0, st>>>(kc, bt, reinterpret_cast<uint4*>(w.k), s.B, s.P);
    D2K_CUDA_TRY(args, cudaGetLastError());
    gather_pages<<<gather_blocks, 256, 0, st>>>(vc, bt, reinterpret_cast<uint4*>(w.v), s.B, s.P);
    D2K_CUDA_TRY(args, cudaGetLastError());

    cublasHandle_t h = handle();
    PAGED_CUBLAS_CHECK(cublasSetStream(h, st));
    PAGED_CUBLAS_CHECK(cublasSetWorkspace(h, w.cublas, kCublasWorkspace));
    const int batch = static_cast<int>(s.B * kHkv);
    // 2. scores: column-major C[S, 4] = K[S, D] (row-major K read as D x S, transposed) x q[D, 4]
    const float zero = 0.f, one = 1.f;
    PAGED_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(S), kGroup, kD, &scale, w.k, CUDA_R_16BF, kD, S * kD, q,
        CUDA_R_16BF, kD, int64_t{kGroup} * kD, &zero, w.scores, CUDA_R_32F, static_cast<int>(S), kGroup * S, batch,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // 3. masked softmax, a block per (b, query head)
    masked_softmax<<<static_cast<unsigned>(s.B * kHq), kRowThreads, 0, st>>>(w.scores, lens, w.p, S);
    D2K_CUDA_TRY(args, cudaGetLastError());
    // 4. o: column-major C[D, 4] = V[D, S] (row-major V read as D x S) x p[S, 4]
    PAGED_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, CUBLAS_OP_N, CUBLAS_OP_N, kD, kGroup, static_cast<int>(S), &one, w.v, CUDA_R_16BF, kD, S * kD, w.p,
        CUDA_R_16BF, static_cast<int>(S), kGroup * S, &zero, o, CUDA_R_16BF, kD, int64_t{kGroup} * kD, batch,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return D2K_OK;
  });
}
