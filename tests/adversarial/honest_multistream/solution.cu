// Exploit: none: a second honest control. The rows are split over the harness stream and a
// stream of the solution's own, forked from and joined back to the harness stream with events,
// as a multi-stream solution must. It must pass every check (stream_join must not fire on it).
#include "rmsnorm_case.cuh"

namespace {

cudaError_t exploit(const Args& g) {
  // Created once, on the first call: the stream and events live as long as the library.
  static cudaStream_t side = nullptr;
  static cudaEvent_t forked = nullptr, joined = nullptr;
  if (!side) {
    if (cudaError_t e = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking)) return e;
    if (cudaError_t e = cudaEventCreateWithFlags(&forked, cudaEventDisableTiming)) return e;
    if (cudaError_t e = cudaEventCreateWithFlags(&joined, cudaEventDisableTiming)) return e;
  }
  const int64_t half = g.T / 2;
  // Fork: the side stream starts after everything already queued on the harness stream.
  if (cudaError_t e = cudaEventRecord(forked, g.s)) return e;
  if (cudaError_t e = cudaStreamWaitEvent(side, forked, 0)) return e;
  launch_rows(g, side, 0, half);
  launch_rows(g, g.s, half, g.T - half);
  // Join: the harness stream does not complete before the side stream's rows are done.
  if (cudaError_t e = cudaEventRecord(joined, side)) return e;
  return cudaStreamWaitEvent(g.s, joined, 0);
}

}  // namespace
