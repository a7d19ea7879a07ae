// gemm_bias_gelu — wave arithmetic of a persistent GEMM schedule (plain C++, no CUDA), used by
// expert.cu's whole_waves and t192 variants and tested on the host (tests/unit/tasks/gemm_bias_gelu).
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

/// Work units (cluster tiles) of CUTLASS's sm90 persistent scheduler for a grid of blocks_m x
/// blocks_n CTA tiles: it pads both dimensions to whole swizzle groups of clusters, and a padding
/// tile is a valid work unit that runs a whole main loop (its TMA loads are out of bounds and
/// zero-filled, its stores clipped): it costs a tile's time without computing any output.
inline int64_t swizzled_units(int64_t blocks_m, int64_t blocks_n, int cluster_m, int cluster_n, int log_swizzle) {
  if (blocks_m < 0 || blocks_n < 0 || cluster_m < 1 || cluster_n < 1 || log_swizzle < 0 || log_swizzle > 30)
    throw std::invalid_argument("swizzled_units: blocks >= 0, clusters >= 1, 0 <= log_swizzle <= 30");
  const int64_t group = int64_t(1) << log_swizzle;
  return round_up(blocks_m, group * cluster_m) * round_up(blocks_n, group * cluster_n) / (int64_t(cluster_m) * cluster_n);
}

/// The raster swizzle cap for CUTLASS's persistent scheduler that trades padding against locality:
/// of the caps max_swizzle, max_swizzle / 2, ..., 1 (log_of(cap) is the scheduler's log2 swizzle for
/// that cap on this grid), a smaller cap is taken only when its schedule over `clusters` clusters
/// needs fewer rounds than the cap taken so far by more than `min_saving` (a fraction of those
/// rounds): a smaller swizzle group reads more of A and B per round from DRAM, so it must buy a
/// clear share of the call back.
template <class LogOf>
int fewest_rounds_swizzle(int64_t blocks_m, int64_t blocks_n, int cluster_m, int cluster_n, int max_swizzle,
                          int64_t clusters, double min_saving, LogOf log_of) {
  if (max_swizzle < 1) throw std::invalid_argument("fewest_rounds_swizzle: max_swizzle must be >= 1");
  int best = max_swizzle;
  int64_t best_rounds = persistent_rounds(swizzled_units(blocks_m, blocks_n, cluster_m, cluster_n, log_of(best)), clusters);
  for (int cap = max_swizzle / 2; cap >= 1; cap /= 2) {
    const int64_t rounds =
        persistent_rounds(swizzled_units(blocks_m, blocks_n, cluster_m, cluster_n, log_of(cap)), clusters);
    if (double(best_rounds - rounds) > min_saving * double(best_rounds)) {
      best = cap;
      best_rounds = rounds;
    }
  }
  return best;
}

}  // namespace gbg
