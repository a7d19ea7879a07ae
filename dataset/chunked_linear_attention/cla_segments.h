// chunked_linear_attention — the chunk-parallel variant's segment plan (expert.cu with
// CLA_CHUNK_PARALLEL=1), in one place for the kernels' launch and for the CPU test that emulates
// them (tests/unit/tasks/chunked_linear_attention: test_tolerance.cpp).
//
// The sequence of each head is cut into segments of seg_chunks chunks of 64 steps; the last
// segment may be shorter (and may end in a partial chunk). Every segment but the last gets a
// materialised D x D fp32 state (its local contribution, then the state entering the next one), so
// the plan trades parallelism (segments per head) against that traffic: the fewest segments that
// still give about kTargetCtas CTAs (four waves of three CTAs on 132 SMs), never more states than
// kMaxStateBytes of workspace.
#pragma once
#include <cstdint>

namespace cla_segments {

constexpr std::int64_t kChunk = 64;
constexpr std::int64_t kTargetCtas = 4 * 3 * 132;
constexpr std::int64_t kMaxStateBytes = std::int64_t(1) << 31;

struct Plan {
  std::int64_t seg_chunks;  // chunks of 64 steps per segment
  std::int64_t nseg;        // segments per head (the last may be shorter)
  /// fp32 elements of the materialised states: (nseg - 1) per head, D x D each.
  std::int64_t state_floats(std::int64_t heads, std::int64_t D) const { return heads * (nseg - 1) * D * D; }
  /// fp32 log2 decays of the segments: (nseg - 1) per head.
  std::int64_t decay_floats(std::int64_t heads) const { return heads * (nseg - 1); }
};

constexpr std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

/// heads = B * H, slices = CTAs per head and segment (D / DV), forced_chunks > 0 fixes seg_chunks
/// (a variant that measures one point of the trade-off).
inline Plan plan(std::int64_t heads, std::int64_t S, std::int64_t D, std::int64_t slices, std::int64_t forced_chunks) {
  const std::int64_t nc = ceil_div(S, kChunk);
  std::int64_t g = forced_chunks > 0 ? forced_chunks : ceil_div(nc, ceil_div(kTargetCtas, heads * slices));
  const std::int64_t max_states = kMaxStateBytes / (heads * D * D * 4);  // (nseg - 1) at most
  g = g > ceil_div(nc, max_states + 1) ? g : ceil_div(nc, max_states + 1);
  g = g < 1 ? 1 : (g > nc ? nc : g);
  return {g, ceil_div(nc, g)};
}

}  // namespace cla_segments
