// moe_topk_router — golden reference on host tensors (fp64 weights, exact selection and sort).
//
//   for every token t, with x = logits[t, :] (fp32, compared exactly):
//     order    = expert ids sorted by (x descending, id ascending)    -0 == +0 (they compare equal)
//     ids[j]   = order[j], j < K
//     p[e]     = exp(x[e] - max x) / sum_e' exp(x[e'] - max x)     (double: the full softmax)
//     w[j]     = fp32(p[ids[j]] / sum_{j' < K} p[ids[j']])
//   counts[e]  = #{(t, j) : ids[t, j] == e};  offsets = exclusive prefix sum (E + 1 entries)
//   permutation: a stable counting sort of the flat ids: for i = t*K + j in ascending order,
//                permutation[next[ids_flat[i]]++] = i, next starting at offsets.
//
// Selection is on the logits themselves (softmax is monotone), so it is exact; the weights are
// the literal softmax-then-renormalise in double, rounded once. Plain C++: built by the host
// compiler, no CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "d2k/solution.h"

namespace {

struct Sizes {
  int64_t T, E, K;
};

/// One token: writes its K weights and ids.
void route_token(const float* x, const Sizes& s, float* w, int32_t* ids) {
  std::vector<int32_t> order(static_cast<std::size_t>(s.E));
  std::iota(order.begin(), order.end(), 0);
  // stable_sort keeps ascending ids among equal logits; double compare makes -0 == +0.
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return static_cast<double>(x[a]) > static_cast<double>(x[b]); });
  const double m = x[order[0]];
  double z = 0.0;
  for (int64_t e = 0; e < s.E; ++e) z += std::exp(static_cast<double>(x[e]) - m);
  std::vector<double> p(static_cast<std::size_t>(s.K));
  double sel = 0.0;
  for (int64_t j = 0; j < s.K; ++j) {
    p[static_cast<std::size_t>(j)] = std::exp(static_cast<double>(x[order[static_cast<std::size_t>(j)]]) - m) / z;
    sel += p[static_cast<std::size_t>(j)];
  }
  for (int64_t j = 0; j < s.K; ++j) {
    ids[j] = order[static_cast<std::size_t>(j)];
    w[j] = static_cast<float>(p[static_cast<std::size_t>(j)] / sel);
  }
}

/// Counts, offsets and the stable counting sort of the flat ids.
void group_by_expert(const int32_t* ids, const Sizes& s, int32_t* counts, int32_t* offsets, int32_t* perm) {
  std::vector<int64_t> c(static_cast<std::size_t>(s.E), 0);
  for (int64_t i = 0; i < s.T * s.K; ++i) ++c[static_cast<std::size_t>(ids[i])];
  std::vector<int64_t> next(static_cast<std::size_t>(s.E));
  int64_t run = 0;
  for (int64_t e = 0; e < s.E; ++e) {
    counts[e] = static_cast<int32_t>(c[static_cast<std::size_t>(e)]);
    offsets[e] = static_cast<int32_t>(run);
    next[static_cast<std::size_t>(e)] = run;
    run += c[static_cast<std::size_t>(e)];
  }
  offsets[s.E] = static_cast<int32_t>(run);
  for (int64_t i = 0; i < s.T * s.K; ++i) perm[next[static_cast<std::size_t>(ids[i])]++] = static_cast<int32_t>(i);
}

}  // namespace

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    *bytes = 0;
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    const Sizes s{d2k::scalar_i(args, "T"), d2k::scalar_i(args, "E"), d2k::scalar_i(args, "K")};
    if (s.T < 0 || s.E < 1 || s.K < 1 || s.K > s.E)
      throw d2k::abi_error("reference: need T >= 0 and 1 <= K <= E");
    if (s.T * s.K > INT32_MAX) throw d2k::abi_error("reference: T * K must fit int32 (the permutation's entries)");
    const DLTensor& logits = d2k::input(args, "logits", kDLCPU, d2k::dl::f32, {s.T, s.E});
    float* w = d2k::data<float>(d2k::output(args, "topk_weights", kDLCPU, d2k::dl::f32, {s.T, s.K}));
    int32_t* ids = d2k::data<int32_t>(d2k::output(args, "topk_ids", kDLCPU, d2k::dl::i32, {s.T, s.K}));
    int32_t* counts = d2k::data<int32_t>(d2k::output(args, "expert_counts", kDLCPU, d2k::dl::i32, {s.E}));
    int32_t* offsets = d2k::data<int32_t>(d2k::output(args, "expert_offsets", kDLCPU, d2k::dl::i32, {s.E + 1}));
    int32_t* perm = d2k::data<int32_t>(d2k::output(args, "permutation", kDLCPU, d2k::dl::i32, {s.T * s.K}));
    const float* x = d2k::data<const float>(logits);
    for (int64_t t = 0; t < s.T; ++t) {
      for (int64_t e = 0; e < s.E; ++e)
        if (!std::isfinite(x[t * s.E + e]))
          throw d2k::abi_error("reference: logits[" + std::to_string(t) + ", " + std::to_string(e) + "] is not finite");
      route_token(x + t * s.E, s, w + t * s.K, ids + t * s.K);
    }
    group_by_expert(ids, s, counts, offsets, perm);
    return D2K_OK;
  });
}
