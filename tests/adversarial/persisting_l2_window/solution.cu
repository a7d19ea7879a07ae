// Exploit: a persisting-L2 access window over the input keeps it cached across an ordinary flush.
#include "rmsnorm_case.cuh"

namespace {

cudaError_t exploit(const Args& g) {
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.base_ptr = const_cast<__nv_bfloat16*>(g.x);
  v.accessPolicyWindow.num_bytes = static_cast<size_t>(g.T * g.H * 2);
  v.accessPolicyWindow.hitRatio = 1.f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  if (cudaError_t e = cudaStreamSetAttribute(g.s, cudaStreamAttributeAccessPolicyWindow, &v)) return e;
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace
