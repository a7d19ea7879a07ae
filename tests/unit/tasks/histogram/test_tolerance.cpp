// histogram: the exact rule checked both ways on the public check workloads and on hidden draws.
// Host emulations are judged by the engine's judge against the golden (the task's reference.so,
// inputs from the task's generators):
//   - the expert's arithmetic (dataset/histogram/hist_core.h, the same code the kernel runs: the
//     plan, the tile / thread / chunk assignment, the trailing n % 4 values, the interleaved 32-bit
//     copies or the packed 16-bit counters with their spills, the per-CTA rows and their merge)
//     passes at several grid sizes;
//   - 16-bit per-CTA counters that wrap silently, packed counters without the take-back of the low
//     half's carry, a vector path that drops the last n % 4 values, values >= B clamped into the
//     last bin or wrapped modulo B, and counts saturated at 65535 all fail, each on a public check
//     workload, and on every workload where its counts differ.
// packed16_issue / packed16_settle's accounting is also replayed from every boundary state of a word with other
// increments interleaved between a carry and its take-back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hist_core.h"
#include "unit/tasks/task_harness.h"

using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

enum class Variant {
  kExpert,       ///< expert.cu: the plan's layout, spills, rows and merge
  kExpertOneCopy,///< expert.cu built with HIST_MAX_COPIES=1 (copies1 variant): one 32-bit copy
  kWrap16,       ///< per-CTA 16-bit counters, no spill: each CTA's count modulo 65536
  kNoTakeBack,   ///< packed 16-bit counters whose low-half carry stays in the high half
  kDropTail,     ///< the last n % 4 values never counted
  kClampHigh,    ///< values >= B counted in bin B - 1
  kModulo,       ///< values >= B counted in bin v % B
  kSaturate16,   ///< final counts saturated at 65535 (a uint16 output)
};

/// The expert's grid on an H200-like GPU for this plan: 132 SMs, occupancy bounded as plan_for
/// bounds it, at most the plan's rows.
int64_t h200_grid(const hist::Plan& p) {
  const int64_t per_sm = std::min<int64_t>(hist::kMaxBlocksPerSm, std::max<int64_t>(1, hist::kSmemPerSm / (p.smem_bytes + 1024)));
  return std::min(p.max_grid, 132 * per_sm);
}

struct Values {
  int64_t n;
  uint32_t bins;
  const uint32_t* v;
};

Values values_of(const Case& c) {
  return {c.axis("N"), static_cast<uint32_t>(c.axis("B")), c.in("values").as<uint32_t>()};
}

/// Counts as variant `var` computes them with `grid` CTAs (the expert's order of work).
std::vector<uint32_t> emulate(Variant var, const Values& x, int64_t grid) {
  hist::Plan plan = hist::plan_for(x.n, x.bins);
  if (var == Variant::kExpertOneCopy && plan.layout == hist::Layout::kCopies32) {
    plan.copies = 1;
    plan.smem_bytes = int64_t{x.bins} * 4;
  }
  const bool packed = plan.layout == hist::Layout::kPacked16 || var == Variant::kWrap16 || var == Variant::kNoTakeBack;
  grid = std::max<int64_t>(1, std::min(grid, plan.max_grid));
  std::vector<uint32_t> rows(static_cast<size_t>(grid) * x.bins, 0);
  for (int64_t cta = 0; cta < grid; ++cta) {
    uint32_t* row = rows.data() + cta * x.bins;
    std::vector<uint32_t> table(packed ? (x.bins + 1) / 2 : static_cast<size_t>(x.bins) * plan.copies, 0);
    auto host_add = [](uint32_t* w, uint32_t a) {
      const uint32_t old = *w;
      *w = old + a;
      return old;
    };
    auto spill = [&](uint32_t bin, uint32_t a) { row[bin] += a; };
    // One 16-byte chunk (or the tail's partial one) as count_chunk in expert.cu: the values' bins
    // after the variant's rule, then the increments; the packed expert issues the chunk's atomics
    // first and settles their old words after.
    auto count_chunk = [&](const uint32_t* vals, int m, int lane) {
      uint32_t v[4];
      bool counted[4];
      for (int e = 0; e < m; ++e) {
        v[e] = vals[e];
        if (var == Variant::kClampHigh && v[e] >= x.bins) v[e] = x.bins - 1;
        if (var == Variant::kModulo) v[e] %= x.bins;
        counted[e] = v[e] < x.bins;
      }
      if (!packed) {
        for (int e = 0; e < m; ++e)
          if (counted[e]) ++table[hist::copies32_word(v[e], plan.copies, lane & (plan.copies - 1))];
        return;
      }
      if (var == Variant::kWrap16 || var == Variant::kNoTakeBack) {
        for (int e = 0; e < m; ++e) {
          if (!counted[e]) continue;
          const uint32_t shift = (v[e] & 1u) * 16, f = hist::packed16_field(table.data(), v[e]);
          if (var == Variant::kWrap16) {  // a 16-bit counter per bin, no carry out, no spill
            table[v[e] >> 1] = (table[v[e] >> 1] & ~(0xFFFFu << shift)) | (((f + 1) & 0xFFFFu) << shift);
          } else {  // spills, but the low half's carry stays in the high half
            host_add(table.data() + (v[e] >> 1), 1u << shift);
            if (f == 0xFFFFu) row[v[e]] += 0x10000u;
          }
        }
        return;
      }
      uint32_t old[4] = {0, 0, 0, 0};
      for (int e = 0; e < m; ++e)
        if (counted[e]) old[e] = hist::packed16_issue(table.data(), v[e], 1u, host_add);
      for (int e = 0; e < m; ++e)
        if (counted[e]) hist::packed16_settle(table.data(), v[e], 1u, old[e], x.bins, host_add, spill);
    };
    for (int64_t tile = cta; tile < plan.tiles; tile += grid)
      for (int t = 0; t < hist::kThreads; ++t)
        for (int u = 0; u < hist::kUnroll; ++u) {
          const int64_t ch = hist::chunk_of(tile, u, t);
          if (ch < plan.chunks) count_chunk(x.v + ch * 4, 4, t & 31);
        }
    if (cta == 0 && var != Variant::kDropTail && plan.tail > 0) count_chunk(x.v + plan.chunks * 4, static_cast<int>(plan.tail), 0);
    for (uint32_t b = 0; b < x.bins; ++b) {
      if (!packed) {
        uint32_t s = 0;
        for (int r = 0; r < plan.copies; ++r) s += table[hist::copies32_word(b, plan.copies, r)];
        row[b] = s;
      } else {
        row[b] += hist::packed16_field(table.data(), b);
      }
    }
  }
  std::vector<uint32_t> counts(x.bins, 0);
  for (int64_t cta = 0; cta < grid; ++cta)
    for (uint32_t b = 0; b < x.bins; ++b) counts[b] += rows[cta * x.bins + b];
  if (var == Variant::kSaturate16)
    for (uint32_t& c : counts) c = std::min<uint32_t>(c, 0xFFFFu);
  return counts;
}

std::vector<HostTensor> as_outputs(const Case& c, const std::vector<uint32_t>& counts) {
  std::vector<HostTensor> out = c.outputs();
  std::copy(counts.begin(), counts.end(), out[c.out_index("counts")].as<uint32_t>());
  return out;
}

class HistogramTolerance : public TaskSuite<HistogramTolerance> {
 public:
  static constexpr const char* kTask = "histogram";
  static constexpr std::uint64_t kSeed = 5;
  static std::vector<Workload> extra_workloads(const Task& t) { return draw_hidden_workloads(t.def, 77, 4); }

 protected:
  static const uint32_t* golden(const Case& c) { return c.expected[c.out_index("counts")].as<uint32_t>(); }
  static uint64_t total(const Case& c) {
    uint64_t s = 0;
    for (int64_t b = 0; b < c.axis("B"); ++b) s += golden(c)[b];
    return s;
  }
};

TEST_F(HistogramTolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 11u + 4u);  // every check workload of workloads.jsonl, and 4 hidden draws
  EXPECT_EQ(golden(by_suffix("check-n1-b1"))[0], 1u);
  EXPECT_EQ(golden(by_suffix("check-n1-b256-last"))[255], 1u);
  EXPECT_EQ(golden(by_suffix("check-n131071-b256-onebin0"))[0], 131071u);
  // N % 4 != 0 where the vector path leaves a tail.
  EXPECT_NE(by_suffix("check-n4099-b256").axis("N") % 4, 0);
  // Values >= B exist (about half of them) and fall in no bin.
  const Case& wide = by_suffix("check-n65537-b4096-wide");
  EXPECT_LT(total(wide), 65537u * 6 / 10);
  EXPECT_GT(total(wide), 65537u * 4 / 10);
  // Zipf: bin 0 the most frequent.
  const Case& z = by_suffix("check-n100003-b4096-zipf");
  EXPECT_EQ(std::max_element(golden(z), golden(z) + 4096) - golden(z), 0);
  // The last word: both halves of the packed table's last word wrap (once per CTA on average) over an H200 grid.
  const Case& last = by_suffix("check-n33554437-b65536-lastword");
  const hist::Plan plan = hist::plan_for(last.axis("N"), last.axis("B"));
  ASSERT_EQ(plan.layout, hist::Layout::kPacked16);
  for (int b : {65534, 65535}) EXPECT_GT(golden(last)[b], uint64_t{65536} * h200_grid(plan)) << b;
  EXPECT_EQ(total(last), 33554437u);
}

TEST_F(HistogramTolerance, PlanPicksTheTableFromB) {
  const hist::Plan p256 = hist::plan_for(1000000000, 256), p4096 = hist::plan_for(1000000000, 4096),
                   p64k = hist::plan_for(1000000000, 65536);
  EXPECT_EQ(p256.layout, hist::Layout::kCopies32);
  EXPECT_EQ(p256.copies, HIST_MAX_COPIES);
  EXPECT_EQ(p4096.layout, hist::Layout::kCopies32);
  EXPECT_EQ(p4096.copies, 8);
  EXPECT_EQ(p64k.layout, hist::Layout::kPacked16);
  EXPECT_EQ(p64k.smem_bytes, 131072);
  for (int64_t b : {int64_t{1}, int64_t{2}, int64_t{255}, int64_t{999}, int64_t{28160}, int64_t{28161}, int64_t{56320},
                    int64_t{56321}, int64_t{65535}, int64_t{65536}}) {
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{12289}, int64_t{1000000000}, int64_t{4294967295}}) {
      const hist::Plan p = hist::plan_for(n, b);
      EXPECT_LE(p.smem_bytes, hist::kSmemBudget) << b;
      EXPECT_GE(p.copies, 1);
      EXPECT_EQ(p.copies & (p.copies - 1), 0) << "copies must be a power of two (lane % R)";
      if (p.layout == hist::Layout::kCopies32) {
        EXPECT_EQ(p.smem_bytes, b * 4 * p.copies);
      }
      EXPECT_GE(p.max_grid, 1);
      EXPECT_EQ(p.chunks * 4 + p.tail, n);
      EXPECT_GE(p.tiles * hist::kTileChunks, p.chunks);
      EXPECT_LT((p.tiles - 1) * hist::kTileChunks, std::max<int64_t>(p.chunks, 1));
    }
  }
  EXPECT_EQ(hist::plan_for(1, 56320).layout, hist::Layout::kCopies32);
  EXPECT_EQ(hist::plan_for(1, 56321).layout, hist::Layout::kPacked16);
}

TEST_F(HistogramTolerance, ExpertEmulationPasses) {
  for (const Case& c : *cases_) {
    const Values x = values_of(c);
    const hist::Plan plan = hist::plan_for(x.n, x.bins);
    for (int64_t grid : {int64_t{1}, int64_t{7}, h200_grid(plan)})
      for (Variant v : {Variant::kExpert, Variant::kExpertOneCopy}) {
        const OutputsVerdict verdict = judge(c, as_outputs(c, emulate(v, x, grid)));
        EXPECT_EQ(verdict.status, Status::PASSED)
            << c.plan.workload.uuid << " grid " << grid << " variant " << static_cast<int>(v) << ": " << verdict.message;
      }
  }
}

// Hidden draws reach every layout: B from 1 to 65536 (32-bit copies, R from 32 down to 1, and
// packed 16-bit counters above 56320 bins), N up to 100000 with its tail.
TEST_F(HistogramTolerance, ExpertEmulationPassesOnHiddenDraws) {
  static const LoadedImpl ref = load_reference("histogram");
  int packed = 0, copies32 = 0;
  for (const Workload& w : draw_hidden_workloads(task().def, 2026, 48)) {
    const Case c = make_case(task(), ref, w, kSeed);
    const Values x = values_of(c);
    const hist::Plan plan = hist::plan_for(x.n, x.bins);
    (plan.layout == hist::Layout::kPacked16 ? packed : copies32) += 1;
    const OutputsVerdict verdict = judge(c, as_outputs(c, emulate(Variant::kExpert, x, h200_grid(plan))));
    EXPECT_EQ(verdict.status, Status::PASSED) << w.uuid << " N=" << x.n << " B=" << x.bins << ": " << verdict.message;
  }
  std::printf("hidden draws: %d with packed 16-bit counters, %d with 32-bit copies\n", packed, copies32);
  EXPECT_GT(packed + copies32, 24);
  EXPECT_GT(copies32, 0);
}

TEST_F(HistogramTolerance, EveryWrongVariantFails) {
  for (Variant v : {Variant::kWrap16, Variant::kNoTakeBack, Variant::kDropTail, Variant::kClampHigh, Variant::kModulo,
                    Variant::kSaturate16}) {
    int differs = 0, failed = 0, public_failed = 0;
    for (const Case& c : *cases_) {
      const Values x = values_of(c);
      const std::vector<uint32_t> run = emulate(v, x, h200_grid(hist::plan_for(x.n, x.bins)));
      if (std::equal(run.begin(), run.end(), golden(c))) continue;
      ++differs;
      const OutputsVerdict verdict = judge(c, as_outputs(c, run));
      if (verdict.status == Status::INCORRECT_NUMERICAL) {
        ++failed;
        public_failed += c.plan.workload.uuid.rfind("hidden-", 0) != 0;
      }
    }
    EXPECT_EQ(failed, differs) << "variant " << static_cast<int>(v) << " passed a workload where its counts differ";
    EXPECT_GT(public_failed, 0) << "variant " << static_cast<int>(v) << ": no public check workload tells it apart";
  }
}

// packed16_issue / packed16_settle from any state of a word: field + spilled - initial field =
// increments (mod 2^32) for both bins, with chunks of up to 4 increments issued before they are
// settled (as count_chunk does) and other chunks run between a carry and its take-back (any
// interleaving of whole atomics is a possible order on the device), from states at and next to 0
// and 0xFFFF.
TEST(HistogramPacked16, SpillsAreExactUnderInterleavings) {
  std::mt19937_64 rng(11);
  const uint32_t edges[] = {0x0000u, 0x0001u, 0xFFFEu, 0xFFFFu, 0x7FFFu, 0x8000u};
  int carries = 0, down_crossings = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const uint32_t bins = trial % 3 == 2 ? 1u : 2u;  // bins = 1: a word whose high bin does not exist
    uint32_t word = edges[rng() % 6] | (edges[rng() % 6] << 16);
    const uint32_t init[2] = {word & 0xFFFFu, word >> 16};
    uint32_t spilled[2] = {0, 0};
    uint64_t done[2] = {0, 0};
    std::vector<std::pair<uint32_t, uint32_t>> queue;  // (bin, c) increments still to run
    const int ops = 1 + static_cast<int>(rng() % 64);
    for (int i = 0; i < ops; ++i) queue.emplace_back(static_cast<uint32_t>(rng() % bins), 1u + static_cast<uint32_t>(rng() % 32));
    std::function<void()> run_next;
    auto add = [&](uint32_t* w, uint32_t a) {
      if (a == 0xFFFF0000u) {  // a take-back: let other increments land first
        ++carries;
        for (int k = static_cast<int>(rng() % 4); k > 0 && !queue.empty(); --k) run_next();
        down_crossings += (*w >> 16) == 0;
      }
      const uint32_t old = *w;
      *w = old + a;
      return old;
    };
    auto spill = [&](uint32_t b, uint32_t a) { spilled[b] += a; };
    run_next = [&] {  // a thread's chunk: up to 4 increments issued, then settled (count_chunk)
      std::pair<uint32_t, uint32_t> mine[4];
      uint32_t old[4];
      int m = 0;
      for (int k = 1 + static_cast<int>(rng() % 4); k > 0 && !queue.empty(); --k) {
        mine[m] = queue.back();
        queue.pop_back();
        done[mine[m].first] += mine[m].second;
        old[m] = hist::packed16_issue(&word, mine[m].first, mine[m].second, add);
        ++m;
      }
      for (int e = 0; e < m; ++e) hist::packed16_settle(&word, mine[e].first, mine[e].second, old[e], bins, add, spill);
    };
    while (!queue.empty()) run_next();
    for (uint32_t b = 0; b < bins; ++b) {
      const uint32_t field = hist::packed16_field(&word, b);
      EXPECT_EQ(static_cast<uint32_t>(field + spilled[b] - init[b]), static_cast<uint32_t>(done[b]))
          << "trial " << trial << " bin " << b;
    }
    if (bins == 1) {
      EXPECT_EQ(spilled[1], 0u);  // nothing is spilled to a bin that does not exist
    }
  }
  std::printf("carries taken back: %d, of which across the high field's 0: %d\n", carries, down_crossings);
  EXPECT_GT(carries, 100);
  EXPECT_GT(down_crossings, 10);
}

}  // namespace
