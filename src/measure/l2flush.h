#pragma once
/// Cold-L2 flushing: before each timed sample the L2 is filled with the lines of a buffer twice
/// its size, after persisting lines are released, so no input of the timed call is still cached.
#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

namespace d2k::measure {

/// Owns a device buffer of 2x the L2 size of one device and flushes the L2 with it.
///
/// A flush is two kernels: a write pass over the whole buffer (values change every flush, read
/// from a device counter, so that a graph replay of the flush writes new values too) and then a
/// read pass over it. The read pass leaves the L2 holding clean lines: after a write pass alone
/// the L2 would be full of dirty lines, and the timed call would pay for writing them back.
class L2Flusher {
 public:
  /// Allocates the buffer on `device` (-1: the current device). Makes `device` current.
  explicit L2Flusher(int device = -1);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;

  /// Host-side part, not capturable in a graph: releases every persisting L2 line
  /// (cudaCtxResetPersistingL2Cache), sets the persisting-L2 limit back to 0 when something raised
  /// it, and clears `stream`'s access-policy window. A persisting window survives an ordinary flush.
  void reset_persisting(cudaStream_t stream);
  /// Device-side part: enqueues the write and read passes on `stream` (capturable in a graph).
  void enqueue(cudaStream_t stream);
  /// reset_persisting then enqueue.
  void flush(cudaStream_t stream) {
    reset_persisting(stream);
    enqueue(stream);
  }

  std::size_t buffer_bytes() const { return bytes_; }
  std::size_t l2_bytes() const { return l2_bytes_; }
  int device() const { return device_; }

  /// Mangled names of the two flush kernels as CUPTI reports them (for excluding them from a
  /// span when the flush runs inside a captured graph).
  static const std::string& write_kernel_name();
  static const std::string& read_kernel_name();

 private:
  int device_ = 0;
  std::size_t l2_bytes_ = 0, bytes_ = 0;
  void* buffer_ = nullptr;
  unsigned* counter_ = nullptr;  ///< device word: the flush generation
  int grid_ = 0;
};

}  // namespace d2k::measure
