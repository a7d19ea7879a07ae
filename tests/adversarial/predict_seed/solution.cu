// Exploit: predict the inputs instead of reading them. The generators are public (Philox4x32-10,
// documented stream layout, Box-Muller normals), and so is how the harness derives each round's
// seed from its secret seed, the workload uuid and the round. Guess the secret (42, the usual
// pinned seed), rebuild the uuid from the shape, count calls to know the round, regenerate
// x, residual and weight in memory of its own and compute from those: never touching the inputs
// (a harness with a fixed seed would be fooled, and reading no inputs halves the traffic).
// Expected: INCORRECT_NUMERICAL: the secret seed comes from the OS per run and never reaches the
// worker, so the regenerated inputs are not the real ones from the first check round on.
#include "rmsnorm_case.cuh"
#include <map>
#include <string>
#include <utility>

namespace {

__host__ __device__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ uint4 philox10(uint4 c, uint32_t k0, uint32_t k1) {
  for (int i = 0; i < 10; ++i) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c.x, p1 = uint64_t(0xCD9E8D57u) * c.z;
    c = make_uint4(uint32_t(p1 >> 32) ^ c.y ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c.w ^ k1, uint32_t(p0));
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

uint64_t stream_id(const char* name, uint32_t position) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001B3ull;
  for (int b = 0; b < 4; ++b) h = (h ^ ((position >> (8 * b)) & 0xFFu)) * 0x100000001B3ull;
  return h;
}

// kind 0: normal(0, 1); kind 1: uniform(0.5, 1.5).
__global__ void regenerate(__nv_bfloat16* dst, int64_t n, uint64_t key, int kind) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 w = philox10(make_uint4(uint32_t(i), uint32_t(i >> 32), 0, 0), uint32_t(key), uint32_t(key >> 32));
    const double a = double(((uint64_t(w.x) << 32 | w.y) >> 11)) * 0x1p-53;
    const double v = kind == 1 ? 0.5 + a
                               : sqrt(-2.0 * log(a + 0x1p-53)) * cos(2.0 * 3.141592653589793 *
                                                                    (double((uint64_t(w.z) << 32 | w.w) >> 11) * 0x1p-53));
    dst[i] = __double2bfloat16(v);
  }
}

// The harness's per-round seed, with the guessed secret.
uint64_t round_seed(uint64_t secret, const std::string& uuid, int round) {
  uint64_t h = secret ^ 0x9e3779b97f4a7c15ull;
  for (char c : uuid) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  h ^= static_cast<uint64_t>(round) * 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

cudaError_t exploit(const Args& g) {
  static std::map<std::pair<int64_t, int64_t>, int> calls;
  static __nv_bfloat16* own = nullptr;
  static size_t own_bytes = 0;
  const size_t bytes = 2 * tensor_bytes(g) + g.H * sizeof(__nv_bfloat16);
  if (bytes > own_bytes) {
    if (own) cudaFree(own);
    if (cudaError_t e = cudaMalloc(&own, bytes)) return e;
    own_bytes = bytes;
  }
  // Public workloads: bench shapes get rounds 100 + r, check shapes r; two calls per round.
  const bool bench = (g.T == 4096 && g.H == 4096) || (g.T == 16384 && g.H == 8192) || (g.T == 128 && g.H == 7168) ||
                     (g.T == 32768 && g.H == 5120);
  const int call = calls[{g.T, g.H}]++;
  const std::string uuid = "fused_add_rmsnorm-" + std::string(bench ? "bench-" : "check-") + std::to_string(g.T) + "x" +
                           std::to_string(g.H);
  const uint64_t seed = round_seed(42, uuid, (bench ? 100 : 0) + call / 2);
  const char* names[3] = {"x", "residual", "weight"};
  const int64_t n[3] = {g.T * g.H, g.T * g.H, g.H};
  __nv_bfloat16* dst[3] = {own, own + g.T * g.H, own + 2 * g.T * g.H};
  for (uint32_t k = 0; k < 3; ++k) {
    const uint64_t key = mix64(seed ^ mix64(stream_id(names[k], k) + 0x9E3779B97F4A7C15ull));
    regenerate<<<264, 256, 0, g.s>>>(dst[k], n[k], key, k == 2 ? 1 : 0);
  }
  Args fake = g;
  fake.x = dst[0];
  fake.r = dst[1];
  fake.w = dst[2];
  launch(fake, g.s);
  return cudaSuccess;
}

}  // namespace
