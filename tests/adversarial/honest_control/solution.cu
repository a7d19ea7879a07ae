// Exploit: none: the control. It must pass every check (no false positive).
#include "rmsnorm_case.cuh"

namespace {

cudaError_t exploit(const Args& g) {
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace
