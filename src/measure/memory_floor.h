#pragma once
/// The memory floor: the time a streaming kernel needs to read and write a workload's compulsory
/// bytes on this device, under the timer's cold-L2 protocol (docs/measurement.md, "Memory
/// floor"). Reads stream at read_bw; writes at the write rate inside a read + write stream; the
/// write-back that lands after the kernel ends (dirty lines still in the L2) is not charged, by
/// the amount calibrate() measured for a copy of that size. A calibrated copy kernel then reads
/// exactly 100 %, and a kernel that moves the same bytes cannot do better than the copy kernel.
#include <string>

#include "measure/ceilings.h"

namespace d2k::measure {

/// The memory term of T_SOL: the time a streaming kernel moving the same bytes takes.
struct MemoryFloor {
  double t_s = 0;
  /// "stream": read bytes at read_bw + written bytes not deferred at stream_write_bw;
  /// "copy": every byte at copy_bw (no read/write split, or ceilings without stream rates).
  std::string model;
  double deferred_bytes = 0;  ///< written bytes whose write-back lands after the kernel ends
};

/// Deferred write-back for `write_bytes` of writes, from the ceilings' measured table:
/// interpolated linearly between measured sizes, proportional below the smallest, the largest's
/// value above it; at most min(write_bytes, l2_bytes). 0 without a table.
double deferred_write_bytes(double write_bytes, const Ceilings& ceilings);

/// Write rate inside a read + write stream: a copy of N bytes each way takes 2N / copy_bw; with
/// its reads at read_bw, its writes move at 1 / (2 / copy_bw - 1 / read_bw). 0 when either rate
/// is missing or the copy takes no longer than its reads alone (no write cost can be attributed).
double stream_write_rate(double copy_bw, double read_bw);

/// Deferred write-back that makes the stream model reproduce a streaming kernel's measured time
/// `t_s` for `read_bytes` read and `write_bytes` written: write_bytes - (t_s - read_bytes / read_bw)
/// * stream_write_bw, within [0, min(write_bytes, l2_bytes)]. Calibration stores it per size.
double deferred_from_stream(double read_bytes, double write_bytes, double t_s, const Ceilings& ceilings);

/// The memory floor of `read_bytes` read and `write_bytes` written (docs/measurement.md, "Memory
/// floor"): read_bytes / read_bw + (write_bytes - deferred) / stream_write_bw where the ceilings
/// have the stream rates, else (read_bytes + write_bytes) / copy_bw.
MemoryFloor memory_floor(double read_bytes, double write_bytes, const Ceilings& ceilings);

}  // namespace d2k::measure
