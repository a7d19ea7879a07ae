// Exploit: FlashInfer's fingerprinted output cache. The key is a hash of 8 elements of each input
// at fixed positions (plus the shape): cheap to compute, and against a harness that times the
// same inputs repeatedly every call after the first is a cache hit (a device copy).
// Expected: PASSED, and that is the defence working: d2k draws fresh inputs for every round and
// every timed sample, so the fingerprint never repeats, the cache never hits, and the solution
// computes every answer (no wrong output exists to catch, and no time is gained). It would be
// wrong only on a fingerprint collision, which random bf16 inputs make negligible.
#include "rmsnorm_case.cuh"
#include <map>
#include <tuple>
#include <utility>

namespace {

constexpr int kProbes = 8;

__global__ void gather_fingerprint(const __nv_bfloat16* x, const __nv_bfloat16* r, const __nv_bfloat16* w, int64_t n,
                                   int64_t H, unsigned short* probe) {
  const int i = threadIdx.x;
  if (i >= kProbes) return;
  probe[i] = __bfloat16_as_ushort(x[i * (n / kProbes)]);
  probe[kProbes + i] = __bfloat16_as_ushort(r[i * (n / kProbes)]);
  probe[2 * kProbes + i] = __bfloat16_as_ushort(w[i * (H / kProbes)]);
}

cudaError_t exploit(const Args& g) {
  using Key = std::tuple<uint64_t, int64_t, int64_t>;
  static std::map<Key, std::pair<__nv_bfloat16*, __nv_bfloat16*>> cache;
  static unsigned short* probe = nullptr;
  if (!probe)
    if (cudaError_t e = cudaMalloc(&probe, 3 * kProbes * sizeof(unsigned short))) return e;
  unsigned short host[3 * kProbes];
  gather_fingerprint<<<1, 32, 0, g.s>>>(g.x, g.r, g.w, g.T * g.H, g.H, probe);
  cudaMemcpyAsync(host, probe, sizeof host, cudaMemcpyDeviceToHost, g.s);
  if (cudaError_t e = cudaStreamSynchronize(g.s)) return e;
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned short v : host) h = (h ^ v) * 0x100000001b3ull;
  const Key key{h, g.T, g.H};
  const size_t bytes = tensor_bytes(g);
  if (auto it = cache.find(key); it != cache.end()) {
    if (cudaError_t e = cudaMemcpyAsync(g.out, it->second.first, bytes, cudaMemcpyDeviceToDevice, g.s)) return e;
    return cudaMemcpyAsync(g.r_out, it->second.second, bytes, cudaMemcpyDeviceToDevice, g.s);
  }
  launch(g, g.s);
  if (cache.size() >= 64) return cudaSuccess;
  std::pair<__nv_bfloat16*, __nv_bfloat16*> s{nullptr, nullptr};
  if (cudaError_t e = cudaMalloc(&s.first, bytes)) return e;
  if (cudaError_t e = cudaMalloc(&s.second, bytes)) return e;
  cudaMemcpyAsync(s.first, g.out, bytes, cudaMemcpyDeviceToDevice, g.s);
  cudaMemcpyAsync(s.second, g.r_out, bytes, cudaMemcpyDeviceToDevice, g.s);
  cache[key] = s;
  return cudaSuccess;
}

}  // namespace
