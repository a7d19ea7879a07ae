// Exploit: compute on the first call of a shape, then return the stored answer on every later
// call (GPU MODE's "do all the work once"): against a harness that calls the solution many times
// on the same inputs, every timed call is a device copy.
// Expected: INCORRECT_NUMERICAL. The check phase already calls it again on fresh inputs (a new
// round, a new seed), and the stored answer belongs to the first round's inputs. If the check
// phase missed it, the redrawn inputs of the timed samples give REWARD_HACK(timed_sample_recheck).
#include "rmsnorm_case.cuh"
#include <map>
#include <utility>

namespace {

cudaError_t exploit(const Args& g) {
  static std::map<std::pair<int64_t, int64_t>, std::pair<__nv_bfloat16*, __nv_bfloat16*>> stored;
  const size_t bytes = tensor_bytes(g);
  auto it = stored.find({g.T, g.H});
  if (it == stored.end()) {
    launch(g, g.s);
    std::pair<__nv_bfloat16*, __nv_bfloat16*> s{nullptr, nullptr};
    if (cudaError_t e = cudaMalloc(&s.first, bytes)) return e;
    if (cudaError_t e = cudaMalloc(&s.second, bytes)) return e;
    cudaMemcpyAsync(s.first, g.out, bytes, cudaMemcpyDeviceToDevice, g.s);
    cudaMemcpyAsync(s.second, g.r_out, bytes, cudaMemcpyDeviceToDevice, g.s);
    stored[{g.T, g.H}] = s;
    return cudaSuccess;
  }
  if (cudaError_t e = cudaMemcpyAsync(g.out, it->second.first, bytes, cudaMemcpyDeviceToDevice, g.s)) return e;
  return cudaMemcpyAsync(g.r_out, it->second.second, bytes, cudaMemcpyDeviceToDevice, g.s);
}

}  // namespace
