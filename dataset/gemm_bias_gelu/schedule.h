// gemm_bias_gelu — wave arithmetic of a persistent GEMM schedule (plain C++, no CUDA), used by
// expert.cu's whole_waves variant and tested on the host (tests/unit/tasks/gemm_bias_gelu).
//
// A persistent kernel launches C clusters that take work units (cluster tiles) u, u + C, u + 2C...:
// its time is ceil(units / C) rounds of one unit each. Every C that needs the same number of rounds
// is as fast on an idle machine; the smallest such C leaves SMs idle for the whole call instead of
// for the last round only (less power drawn under the H200's power cap) and, when it divides the
// units, makes every round a whole block of the swizzled raster.
#pragma once
#include <cstdint>
#include <stdexcept>

namespace gbg {

inline int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

/// Rounds of a persistent schedule: `units` work units over `clusters` persistent clusters.
inline int64_t persistent_rounds(int64_t units, int64_t clusters) {
  if (units < 0 || clusters < 1) throw std::invalid_argument("persistent_rounds: units >= 0 and clusters >= 1");
  return (units + clusters - 1) / clusters;
}

/// The fewest clusters (at most `max_clusters`) whose schedule of `units` has as few rounds as
/// `max_clusters` gives: ceil(units / ceil(units / max_clusters)). At least 1.
inline int whole_wave_clusters(int64_t units, int max_clusters) {
  if (max_clusters < 1) throw std::invalid_argument("whole_wave_clusters: max_clusters must be >= 1");
  if (units <= 0) return 1;
  const int64_t rounds = persistent_rounds(units, max_clusters);
  return static_cast<int>((units + rounds - 1) / rounds);
}

}  // namespace gbg
