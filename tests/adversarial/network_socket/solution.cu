// Exploit: opens a socket to send its inputs out or fetch answers in; evaluation must be self-contained.
#include "rmsnorm_case.cuh"
#include <sys/socket.h>
#include <unistd.h>

namespace {

cudaError_t exploit(const Args& g) {
  if (int fd = socket(AF_INET, SOCK_STREAM, 0); fd >= 0) close(fd);
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace
