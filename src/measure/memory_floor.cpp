#include "measure/memory_floor.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "measure/error.h"

namespace d2k::measure {

double deferred_write_bytes(double w, const Ceilings& c) {
  const auto& t = c.deferred_writes;
  if (t.empty() || !(w > 0)) return 0;
  double d = 0;
  if (w <= t.front().write_bytes) {
    d = t.front().write_bytes > 0 ? t.front().deferred_bytes * w / t.front().write_bytes : 0;
  } else if (w >= t.back().write_bytes) {
    d = t.back().deferred_bytes;
  } else {
    for (std::size_t i = 1; i < t.size(); ++i)
      if (w <= t[i].write_bytes) {
        const double f = (w - t[i - 1].write_bytes) / (t[i].write_bytes - t[i - 1].write_bytes);
        d = t[i - 1].deferred_bytes + f * (t[i].deferred_bytes - t[i - 1].deferred_bytes);
        break;
      }
  }
  double cap = w;
  if (c.l2_bytes > 0) cap = std::min(cap, static_cast<double>(c.l2_bytes));
  return std::clamp(d, 0.0, cap);
}

double stream_write_rate(double copy_bw, double read_bw) {
  if (!(copy_bw > 0) || !(read_bw > 0)) return 0;
  const double inv = 2.0 / copy_bw - 1.0 / read_bw;
  return inv > 0 ? 1.0 / inv : 0;
}

double deferred_from_stream(double r, double w, double t, const Ceilings& c) {
  if (!(c.read_bw > 0) || !(c.stream_write_bw > 0) || !(w > 0)) return 0;
  const double d = w - (t - r / c.read_bw) * c.stream_write_bw;
  double cap = w;
  if (c.l2_bytes > 0) cap = std::min(cap, static_cast<double>(c.l2_bytes));
  return std::clamp(d, 0.0, cap);
}

MemoryFloor memory_floor(double r, double w, const Ceilings& c) {
  if (!std::isfinite(r) || r < 0 || !std::isfinite(w) || w < 0)
    throw measure_error(fmt::format("read and write bytes must be finite and >= 0 (got {}, {})", r, w));
  MemoryFloor f;
  if (c.read_bw > 0 && c.stream_write_bw > 0) {
    f.model = "stream";
    f.deferred_bytes = deferred_write_bytes(w, c);
    f.t_s = r / c.read_bw + (w - f.deferred_bytes) / c.stream_write_bw;
    return f;
  }
  if (r + w > 0 && !(c.copy_bw > 0))
    throw measure_error(fmt::format("ceilings for '{}' ({}) have no copy bandwidth", c.device.name, c.source));
  f.model = "copy";
  f.t_s = r + w > 0 ? (r + w) / c.copy_bw : 0;
  return f;
}

}  // namespace d2k::measure
