// histogram — naive baseline: the textbook GPU histogram, one global atomic per value.
//
//   1. cudaMemsetAsync(counts, 0): the bins start at zero.
//   2. hist_global_atomic: a thread per value, atomicAdd(&counts[v], 1) when v < B.
// Nothing is slowed on purpose: the loads are coalesced and the atomics need no return value, so
// they compile to fire-and-forget reductions (RED.E.ADD) performed in the L2. Their throughput is
// what limits it: every value is one L2 atomic, and a skewed input sends most of them to a few
// addresses, where they serialise. (PyTorch's torch.bincount needs an int64 input, so its users
// also pay a cast pass; see pytorch.py.)
#include <cuda_runtime.h>

#include <cstdint>

#include "d2k/solution.h"
#include "hist_args.h"

namespace {

constexpr int kThreads = 256;

__global__ void hist_global_atomic(const uint32_t* __restrict__ values, int64_t n, uint32_t bins,
                                   uint32_t* __restrict__ counts) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t v = values[i];
  if (v < bins) atomicAdd(counts + v, 1u);
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    (void)hist::read_params(args);
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const hist::Params p = hist::read_params(args);
    const hist::Tensors t = hist::read_tensors(args, p, kDLCUDA);
    cudaStream_t st = static_cast<cudaStream_t>(args->stream);
    D2K_CUDA_TRY(args, cudaMemsetAsync(t.counts, 0, static_cast<size_t>(p.b) * sizeof(uint32_t), st));
    const unsigned blocks = static_cast<unsigned>((p.n + kThreads - 1) / kThreads);
    hist_global_atomic<<<blocks, kThreads, 0, st>>>(t.values, p.n, static_cast<uint32_t>(p.b), t.counts);
    D2K_CUDA_TRY(args, cudaGetLastError());
    return D2K_OK;
  });
}
