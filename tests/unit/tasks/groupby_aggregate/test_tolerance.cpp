// groupby_aggregate, rules checked both ways: the group rows are an exact multiset with their
// count; the sum wraps modulo 2^64. Any row order passes, and so does a host emulation of
// expert.cu's algorithm with its constants (sequential, so it checks the arithmetic and the
// table logic, not the concurrency: compute-sanitizer runs on the GPU do that). Variants that
// sum in fp64, compare min/max as unsigned, lose the key -1 (the empty marker), forget a CTA's
// shared-memory groups, or keep the abandoned small table after it overflowed fail.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {
namespace {

using u64 = std::uint64_t;
using i64 = std::int64_t;
constexpr u64 kEmpty = ~0ull;
constexpr u64 kSign = 1ull << 63;

u64 fmix64(u64 k) {  // expert.cu's hash
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

struct Row {
  i64 key, count, sum, min, max;
  bool operator<(const Row& o) const { return key < o.key; }
};

/// The knobs of the emulated expert and the faults a wrong variant injects.
struct Model {
  int ctas = 528;           ///< 132 SMs x kCtasPerSm
  int smem_slots = 1024;    ///< GB_SMEM_SLOTS (0: the global_only variant)
  u64 small_cap = 1ull << 22;
  bool flip_sign = true;    ///< false: min/max compared as raw uint64 (wrong)
  bool minus_one_slot = true;  ///< false: the key -1 is taken for an empty slot and lost (wrong)
  bool flush_smem = true;   ///< false: a CTA's shared-memory groups never reach the table (wrong)
  bool rerun = true;        ///< false: emit from the abandoned small table (wrong)
};

struct Agg {
  u64 count = 0, sum = 0, min_u = kEmpty, max_u = 0;
  void fold(const Agg& a) {
    count += a.count;
    sum += a.sum;
    min_u = std::min(min_u, a.min_u);
    max_u = std::max(max_u, a.max_u);
  }
};

/// expert.cu's GTable: linear probing, cap + 1 slots (the last for key -1), abandoned at `limit`.
struct Table {
  u64 cap, limit, claimed = 0;
  bool overflow = false;
  std::vector<u64> keys;
  std::vector<Agg> agg;
  Table(u64 c, u64 l) : cap(c), limit(l), keys(c + 1, kEmpty), agg(c + 1) {}
  bool slot(u64 k, u64* s, const Model& m) {
    if (k == kEmpty) {
      if (!m.minus_one_slot) return false;
      *s = cap;
      return true;
    }
    u64 h = fmix64(k) & (cap - 1);
    for (u64 p = 0; p < cap; ++p, h = (h + 1) & (cap - 1)) {
      if (keys[h] == k) { *s = h; return true; }
      if (keys[h] == kEmpty) {
        keys[h] = k;
        if (claimed++ >= limit) { overflow = true; return false; }
        *s = h;
        return true;
      }
    }
    overflow = true;
    return false;
  }
  void add(u64 k, const Agg& a, const Model& m) {
    u64 s;
    if (slot(k, &s, m)) agg[s].fold(a);
  }
};

/// One CTA's shared-memory table: claims stop at 3/4 full, lookups give up after 32 probes.
struct Smem {
  int slots;
  int fill = 0;
  std::vector<u64> keys;
  std::vector<Agg> agg;
  explicit Smem(int n) : slots(n), keys(static_cast<std::size_t>(n), kEmpty), agg(static_cast<std::size_t>(n)) {}
  int slot(u64 k) {
    if (slots == 0) return -1;
    const bool may_claim = fill < slots * 3 / 4;
    int h = static_cast<int>(fmix64(k) & static_cast<u64>(slots - 1));
    for (int p = 0; p < 32; ++p, h = (h + 1) & (slots - 1)) {
      if (keys[h] == k) return h;
      if (keys[h] == kEmpty) {
        if (!may_claim) return -1;
        keys[h] = k;
        ++fill;
        return h;
      }
    }
    return -1;
  }
};

/// gb_aggregate over table t: CTAs in turn, tiles of 256 rows grid-strided, warps of 32 lanes
/// folded per distinct key (what __match_any_sync and fold_peers do), then the CTA's flush.
void aggregate_pass(const i64* keys, const i64* vals, i64 n, Table& t, const Model& m) {
  for (int cta = 0; cta < m.ctas; ++cta) {
    Smem st(m.smem_slots);
    for (i64 base = static_cast<i64>(cta) * 256; base < n && !t.overflow; base += static_cast<i64>(m.ctas) * 256) {
      for (i64 w = base; w < std::min(base + 256, n); w += 32) {
        const i64 end = std::min(w + 32, n);
        std::vector<bool> done(static_cast<std::size_t>(end - w), false);
        for (i64 lead = w; lead < end; ++lead) {
          if (done[static_cast<std::size_t>(lead - w)]) continue;
          const u64 k = static_cast<u64>(keys[lead]);
          Agg a;
          for (i64 j = lead; j < end; ++j) {
            if (static_cast<u64>(keys[j]) != k) continue;
            done[static_cast<std::size_t>(j - w)] = true;
            const u64 u = static_cast<u64>(vals[j]);
            const u64 o = m.flip_sign ? u ^ kSign : u;
            a.fold(Agg{1, u, o, o});
          }
          const int s = k == kEmpty ? -1 : st.slot(k);
          if (s >= 0) st.agg[static_cast<std::size_t>(s)].fold(a);
          else t.add(k, a, m);
        }
      }
    }
    if (!m.flush_smem || t.overflow) continue;
    for (int s = 0; s < st.slots; ++s)
      if (st.keys[static_cast<std::size_t>(s)] != kEmpty) t.add(st.keys[static_cast<std::size_t>(s)], st.agg[static_cast<std::size_t>(s)], m);
  }
}

std::vector<Row> emit(const Table& t, const Model& m) {
  std::vector<Row> rows;
  for (u64 i = 0; i <= t.cap; ++i) {
    const bool used = i < t.cap ? t.keys[i] != kEmpty : t.agg[i].count != 0;
    if (!used) continue;
    const Agg& a = t.agg[i];
    const u64 flip = m.flip_sign ? kSign : 0;
    rows.push_back(Row{i < t.cap ? static_cast<i64>(t.keys[i]) : -1, static_cast<i64>(a.count),
                       static_cast<i64>(a.sum), static_cast<i64>(a.min_u ^ flip), static_cast<i64>(a.max_u ^ flip)});
  }
  return rows;
}

/// expert.cu's d2k_run: the small table, then (if it overflowed) the rerun into the full one.
std::vector<Row> expert_emulation(const i64* keys, const i64* vals, i64 n, const Model& m) {
  u64 full = 2;
  while (full < static_cast<u64>(n) + static_cast<u64>(n) / 4) full <<= 1;
  const bool two = full > m.small_cap;
  Table small(two ? m.small_cap : full, two ? m.small_cap / 2 : ~0ull);
  aggregate_pass(keys, vals, n, small, m);
  if (!small.overflow || !m.rerun) return emit(small, m);
  Table big(full, ~0ull);
  aggregate_pass(keys, vals, n, big, m);
  return emit(big, m);
}

/// A straightforward map-based group-by whose sum is accumulated in fp64 (wrong past 2^53).
std::vector<Row> fp64_sum(const i64* keys, const i64* vals, i64 n) {
  std::map<i64, std::pair<Row, double>> g;
  for (i64 i = 0; i < n; ++i) {
    auto [it, fresh] = g.try_emplace(keys[i], Row{keys[i], 0, 0, std::numeric_limits<i64>::max(), std::numeric_limits<i64>::min()}, 0.0);
    Row& r = it->second.first;
    ++r.count;
    it->second.second += static_cast<double>(vals[i]);
    r.min = std::min(r.min, vals[i]);
    r.max = std::max(r.max, vals[i]);
  }
  std::vector<Row> rows;
  for (auto& [k, rv] : g) {
    Row r = rv.first;
    const double s = rv.second;  // saturating conversion: what a float sum cast back gives at best
    r.sum = s >= 9.2233720368547758e18 ? std::numeric_limits<i64>::max()
            : s <= -9.2233720368547758e18 ? std::numeric_limits<i64>::min() : static_cast<i64>(s);
    rows.push_back(r);
  }
  std::reverse(rows.begin(), rows.end());  // any order passes
  return rows;
}

std::vector<HostTensor> to_outputs(const Case& c, const std::vector<Row>& rows) {
  std::vector<HostTensor> outs = c.outputs();
  const char* names[] = {"out_keys", "out_count", "out_sum", "out_min", "out_max"};
  for (int f = 0; f < 5; ++f) {
    auto* p = static_cast<i64*>(outs[c.out_index(names[f])].data());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      p[i] = f == 0 ? r.key : f == 1 ? r.count : f == 2 ? r.sum : f == 3 ? r.min : r.max;
    }
  }
  *static_cast<i64*>(outs[c.out_index("num_groups")].data()) = static_cast<i64>(rows.size());
  return outs;
}

struct Inputs {
  const i64* keys;
  const i64* vals;
  i64 n;
};
Inputs inputs_of(const Case& c) {
  return Inputs{static_cast<const i64*>(c.in("keys").data()), static_cast<const i64*>(c.in("values").data()), c.axis("N")};
}

bool has(const std::string& uuid, const char* part) { return uuid.find(part) != std::string::npos; }

class GroupbyRules : public TaskSuite<GroupbyRules> {
 public:
  static constexpr const char* kTask = "groupby_aggregate";
  static constexpr std::uint64_t kSeed = 0x5EED;
};

TEST_F(GroupbyRules, ExpertEmulationPassesOnEveryCheckWorkloadWithAndWithoutTheRerun) {
  Model plain, spill_early, global_only;
  spill_early.small_cap = 64;  // forces the overflow and the rerun on every workload with > 32 groups
  global_only.smem_slots = 0;  // the global_only variant
  for (const Case& c : *cases_) {
    const Workload& w = c.plan.workload;
    const Inputs in = inputs_of(c);
    for (const Model* m : {&plain, &spill_early, &global_only}) {
      const OutputsVerdict v = judge(c, to_outputs(c, expert_emulation(in.keys, in.vals, in.n, *m)));
      EXPECT_EQ(v.status, Status::PASSED) << w.uuid << " small_cap " << m->small_cap << " smem " << m->smem_slots << ": " << v.message;
    }
  }
}

TEST_F(GroupbyRules, WrongVariantsFailWhereTheirFaultShows) {
  Model no_flip, lose_minus_one, no_flush, no_rerun;
  no_flip.flip_sign = false;
  lose_minus_one.minus_one_slot = false;
  no_flush.flush_smem = false;
  no_rerun.small_cap = 64;
  no_rerun.rerun = false;
  int wraps = 0, mixed_signs = 0;
  for (const Case& c : *cases_) {
    const Workload& w = c.plan.workload;
    const Inputs in = inputs_of(c);
    const auto verdict = [&](const std::vector<Row>& rows) { return judge(c, to_outputs(c, rows)).status; };
    // Groups holding values of both signs (not N = 1, the negative-only values, one row per group).
    if (in.n > 1 && !has(w.uuid, "negative") && !has(w.uuid, "distinct")) {
      ++mixed_signs;
      EXPECT_EQ(verdict(expert_emulation(in.keys, in.vals, in.n, no_flip)), Status::INCORRECT_NUMERICAL) << "unsigned min/max passes at " << w.uuid;
    }
    // Full-range int64 values: sums pass 2^53 and wrap.
    if (has(w.uuid, "wrap") || has(w.uuid, "extreme") || has(w.uuid, "one-group")) {
      ++wraps;
      EXPECT_EQ(verdict(fp64_sum(in.keys, in.vals, in.n)), Status::INCORRECT_NUMERICAL) << "fp64 sum passes at " << w.uuid;
    }
    if (has(w.uuid, "one-group")) {  // the single key is -1
      EXPECT_EQ(verdict(expert_emulation(in.keys, in.vals, in.n, lose_minus_one)), Status::INCORRECT_NUMERICAL) << w.uuid;
    }
    if (in.n >= 1000 && !has(w.uuid, "one-group")) {  // some CTA keeps groups in shared memory
      EXPECT_EQ(verdict(expert_emulation(in.keys, in.vals, in.n, no_flush)), Status::INCORRECT_NUMERICAL) << "unflushed CTA tables pass at " << w.uuid;
    }
    if (has(w.uuid, "g1000") || has(w.uuid, "g1m") || has(w.uuid, "distinct") || has(w.uuid, "g100k")) {
      EXPECT_EQ(verdict(expert_emulation(in.keys, in.vals, in.n, no_rerun)), Status::INCORRECT_NUMERICAL) << "abandoned table passes at " << w.uuid;
    }
  }
  EXPECT_GE(wraps, 3);  // the workloads that exercise the wrap exist
  EXPECT_GE(mixed_signs, 4);
}

}  // namespace
}  // namespace d2k::tolerance_test
