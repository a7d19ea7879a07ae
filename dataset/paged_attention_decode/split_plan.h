#pragma once
// paged_attention_decode — how the expert cuts each sequence's context into KV splits. Plain C++
// (no CUDA), so that expert.cu and the CPU emulation of its arithmetic
// (tests/unit/tasks/paged_attention_decode) use one rule.
//
// A split is a fixed run of `split_tokens` token positions of one sequence (a multiple of the
// CTA's step of 32 tokens), so CTA (split, kv head, sequence) handles positions
// [split * split_tokens, min((split + 1) * split_tokens, seq_len)); a split past the sequence's end
// is empty and merges with weight 0. The split count is decided from shapes only (the lengths are
// on the device; reading them would cost a synchronisation): enough CTAs for about kWavesTarget
// waves of the resident CTAs, but no split shorter than kMinSplitTokens (below that the partial
// (o, m, l) write and the merge cost more than the split saves).
#include <algorithm>
#include <cstdint>

namespace paged_decode {

inline constexpr int kStepTokens = 32;       ///< tokens a CTA consumes per step (8 streams x 4)
inline constexpr int kMinSplitTokens = 256;  ///< shortest split worth its partial and merge
inline constexpr int kMaxSplits = 64;        ///< bounds the workspace of partials
inline constexpr int kWavesTarget = 4;       ///< CTAs per resident CTA slot

/// The most splits a sequence of P pages of `page` tokens gets (workspace bound, shapes only).
inline int max_splits(std::int64_t P, std::int64_t page) {
  const std::int64_t cap = (P * page + kMinSplitTokens - 1) / kMinSplitTokens;
  return static_cast<int>(std::clamp<std::int64_t>(cap, 1, kMaxSplits));
}

/// Splits per (sequence, kv head): `fixed` > 0 forces that many (capped by max_splits).
inline int choose_splits(std::int64_t B, std::int64_t Hkv, std::int64_t P, std::int64_t page, std::int64_t resident_ctas,
                         int fixed = 0) {
  const int cap = max_splits(P, page);
  if (fixed > 0) return std::min(fixed, cap);
  const std::int64_t work = std::max<std::int64_t>(B * Hkv, 1);
  const std::int64_t want = (kWavesTarget * resident_ctas + work - 1) / work;
  return static_cast<int>(std::clamp<std::int64_t>(want, 1, cap));
}

/// Token positions per split: the capacity P * page cut in `splits`, rounded up to whole CTA steps.
inline std::int64_t split_tokens(std::int64_t P, std::int64_t page, int splits) {
  const std::int64_t per = (P * page + splits - 1) / splits;
  return (per + kStepTokens - 1) / kStepTokens * kStepTokens;
}

}  // namespace paged_decode
