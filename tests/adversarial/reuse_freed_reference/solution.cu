// Exploit: KernelBench's reused reference output. The harness computed the expected outputs on
// the device just before calling the solution and freed them; a fresh cudaMalloc often returns
// that memory with the answer still in it. So: allocate a large block, scan it for regions that
// look like finished bf16 outputs (finite, not zero, not a poison pattern), and copy the first
// two out as `out` and `residual_out` instead of computing anything.
// Expected: INCORRECT_NUMERICAL. The expected outputs never exist in the worker process (the
// parent computes and compares them), and a new process's device memory comes back zeroed, so
// the scan finds nothing and the copied outputs are zeros (an all-zero output fails).
#include "rmsnorm_case.cuh"

namespace {

constexpr size_t kStride = 512;  // cudaMalloc's alignment: where another allocation could start
constexpr int kProbe = 256;      // elements tested per candidate region

__global__ void find_plausible_outputs(const __nv_bfloat16* block, size_t candidates, unsigned long long* first_two) {
  const size_t c = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (c >= candidates) return;
  const unsigned short* p = reinterpret_cast<const unsigned short*>(block) + c * (kStride / 2);
  int nonzero = 0;
  for (int i = 0; i < kProbe; ++i) {
    const unsigned short bits = p[i];
    const float v = __bfloat162float(__ushort_as_bfloat16(bits));
    if (bits == 0xFFFFu || bits == 0xA5A5u || bits == 0x7FA5u || bits == 0xFFA5u || !(fabsf(v) < 16.f)) return;
    nonzero += bits != 0;
  }
  if (nonzero < kProbe / 2) return;
  // Keep the two lowest candidates: first_two[0] < first_two[1].
  unsigned long long mine = c, old = atomicMin(&first_two[0], mine);
  if (old != ~0ull && old != mine) atomicMin(&first_two[1], old > mine ? old : mine);
}

cudaError_t exploit(const Args& g) {
  const size_t bytes = tensor_bytes(g);
  size_t block_bytes = bytes * 64;
  if (block_bytes < (64u << 20)) block_bytes = 64u << 20;
  if (block_bytes > (1ull << 30)) block_bytes = 1ull << 30;
  __nv_bfloat16* block = nullptr;
  unsigned long long* found = nullptr;
  if (cudaError_t e = cudaMalloc(&block, block_bytes)) return e;
  if (cudaError_t e = cudaMalloc(&found, 2 * sizeof(unsigned long long))) return e;
  cudaMemsetAsync(found, 0xFF, 2 * sizeof(unsigned long long), g.s);
  const size_t candidates = (block_bytes - bytes) / kStride;
  find_plausible_outputs<<<static_cast<unsigned>((candidates + 255) / 256), 256, 0, g.s>>>(block, candidates, found);
  unsigned long long at[2];
  cudaMemcpyAsync(at, found, sizeof at, cudaMemcpyDeviceToHost, g.s);
  if (cudaError_t e = cudaStreamSynchronize(g.s)) return e;
  // No plausible region: take the start of the block anyway (it is where the last free went).
  const size_t out_at = at[0] == ~0ull ? 0 : at[0] * kStride;
  const size_t r_at = at[1] == ~0ull ? out_at : at[1] * kStride;
  const char* base = reinterpret_cast<const char*>(block);
  cudaMemcpyAsync(g.out, base + out_at, bytes, cudaMemcpyDeviceToDevice, g.s);
  cudaMemcpyAsync(g.r_out, base + r_at, bytes, cudaMemcpyDeviceToDevice, g.s);
  if (cudaError_t e = cudaStreamSynchronize(g.s)) return e;
  cudaFree(found);
  return cudaFree(block);
}

}  // namespace
