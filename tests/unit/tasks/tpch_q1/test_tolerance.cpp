// tpch_q1: the rules of definition.json checked both ways on the public check workloads (and
// hidden draws). Host emulations of an implementation are compared with the golden (the task's
// reference.so, inputs from the task's generators) under the workload's effective rules: exact
// sums with a 64-bit low word and a carry for sum_charge, and float64 averages of them, pass;
// float32 averages, the date predicate off by one, the groups in another order than the query's
// ORDER BY, and a vector path that drops the last N mod 4 rows fail.
// The expert's `packed` variant (expert.cu -DQ1_PACKED=1) emulated per thread with its own
// arithmetic (q1_packed.h: domain test, 32-bit products, packed small fields, flushes, exact slow
// path) is bit-equal to the golden on every check workload, the hidden draws and rows outside the
// fast path's domain; with its flush limit set too high a worst case overflows a packed field.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "check/compare.h"
#include "core/diagnostics.h"
#include "core/task_loader.h"
#include "core/workload.h"
#include "engine/device_backend.h"
#include "engine/host_backend.h"
#include "engine/plan.h"
#include "exec/loader.h"
#include "q1_packed.h"
#include "unit/tasks/task_harness.h"

namespace fs = std::filesystem;
using namespace d2k;

namespace {

enum class Variant {
  kExact,           ///< int64 sums, the charge as a 64-bit low word with carries, float64 averages
  kFp32Averages,    ///< the averages as float(sum) / float(count)
  kShipdateBefore,  ///< l_shipdate < shipdate_max
  kStatusMajor,     ///< output row 3 * status + flag instead of the ORDER BY's 2 * flag + status
  kDropTail,        ///< rows past the last whole group of 4 ignored
};

constexpr int kGroups = 6;
__extension__ typedef unsigned __int128 u128;  // GCC's 128-bit integer, as the golden's sum_charge

const Task& task() {
  static const Task t = [] {
    Diagnostics diag;
    Task loaded = load_task(fs::path(D2K_SOURCE_DIR) / "dataset/tpch_q1", diag);
    if (!diag.ok()) throw std::runtime_error("tpch_q1 does not load");
    return loaded;
  }();
  return t;
}

std::int64_t scalar(const WorkloadPlan& p, const std::string& name) {
  for (const auto& s : p.scalars)
    if (s.name == name) return s.i;
  throw std::runtime_error("no scalar " + name);
}

int group(Variant v, std::int8_t flag, std::int8_t status) {
  const int f = flag == 'A' ? 0 : flag == 'N' ? 1 : 2;
  const int s = status == 'O';
  return v == Variant::kStatusMajor ? 3 * s + f : 2 * f + s;
}

/// A workload's columns in the signature's order, and its shipdate_max.
struct Columns {
  std::int64_t n;
  const std::int8_t *flag, *status;
  const std::int64_t *qty, *price, *disc, *tax;
  const std::int32_t* ship;
  std::int64_t maxd;
};
Columns columns(const WorkloadPlan& p, const std::vector<HostTensor>& in) {
  return {in.at(0).numel(),          in.at(0).as<std::int8_t>(),  in.at(1).as<std::int8_t>(),
          in.at(2).as<std::int64_t>(), in.at(3).as<std::int64_t>(), in.at(4).as<std::int64_t>(),
          in.at(5).as<std::int64_t>(), in.at(6).as<std::int32_t>(), scalar(p, "shipdate_max")};
}

std::vector<HostTensor> make_outputs(Variant v, const std::int64_t (&s)[kGroups][6], const std::uint64_t (&hi)[kGroups],
                                     const std::uint64_t (&lo)[kGroups]);

std::vector<HostTensor> emulate(Variant v, const WorkloadPlan& p, const std::vector<HostTensor>& in) {
  const auto [n, flag, status, qty, price, disc, tax, ship, maxd] = columns(p, in);
  std::int64_t s[kGroups][6] = {};
  std::uint64_t hi[kGroups] = {}, lo[kGroups] = {};
  const std::int64_t end = v == Variant::kDropTail ? n - n % 4 : n;
  for (std::int64_t i = 0; i < end; ++i) {
    if (v == Variant::kShipdateBefore ? ship[i] >= maxd : ship[i] > maxd) continue;
    const int g = group(v, flag[i], status[i]);
    const std::int64_t dp = price[i] * (100 - disc[i]);
    const std::uint64_t ch = static_cast<std::uint64_t>(dp * (100 + tax[i]));
    s[g][0] += qty[i];
    s[g][1] += price[i];
    s[g][2] += dp;
    s[g][4] += disc[i];
    s[g][5] += 1;
    const std::uint64_t old = lo[g];
    lo[g] += ch;
    hi[g] += lo[g] < old;
  }
  return make_outputs(v, s, hi, lo);
}

/// The outputs from the exact sums (s[g]: qty, base, disc price, -, discount, count) and the
/// charge's words, the averages as q1_finish and the golden compute them.
std::vector<HostTensor> make_outputs(Variant v, const std::int64_t (&s)[kGroups][6], const std::uint64_t (&hi)[kGroups],
                                     const std::uint64_t (&lo)[kGroups]) {
  std::vector<HostTensor> o;
  for (const char* name : {"sum_qty", "sum_base_price", "sum_disc_price"}) o.emplace_back(name, DType::i64, std::vector<std::int64_t>{kGroups});
  o.emplace_back("sum_charge", DType::i64, std::vector<std::int64_t>{kGroups, 2});
  for (const char* name : {"avg_qty", "avg_price", "avg_disc"}) o.emplace_back(name, DType::f64, std::vector<std::int64_t>{kGroups});
  o.emplace_back("count_order", DType::i64, std::vector<std::int64_t>{kGroups});
  for (int g = 0; g < kGroups; ++g) {
    o[0].as<std::int64_t>()[g] = s[g][0];
    o[1].as<std::int64_t>()[g] = s[g][1];
    o[2].as<std::int64_t>()[g] = s[g][2];
    o[3].as<std::int64_t>()[2 * g] = static_cast<std::int64_t>(hi[g]);
    o[3].as<std::int64_t>()[2 * g + 1] = static_cast<std::int64_t>(lo[g]);
    o[7].as<std::int64_t>()[g] = s[g][5];
    const int avg_src[3] = {0, 1, 4};
    for (int a = 0; a < 3; ++a) {
      double r = 0;
      if (s[g][5] != 0) {
        r = v == Variant::kFp32Averages
                ? static_cast<double>(static_cast<float>(s[g][avg_src[a]]) / static_cast<float>(s[g][5]))
                : static_cast<double>(s[g][avg_src[a]]) / static_cast<double>(s[g][5]);
      }
      o[4 + a].as<double>()[g] = r;
    }
  }
  return o;
}

// ---- The expert's packed variant, per thread, with the kernel's own arithmetic (q1_packed.h) ----

namespace pk = q1::packed;

/// The global sums of expert.cu (sums[group * 6 + field], the charge as hi, lo words per group),
/// added to as the kernel's atomics do: every add modulo 2^64, the charge's low word with its carry.
struct HostSink {
  std::uint64_t sums[kGroups * pk::kSums] = {};
  std::uint64_t charge[2 * kGroups] = {};
  void add(int i, std::uint64_t v) { sums[i] += v; }
  void add_charge(int k, std::uint64_t hi, std::uint64_t lo) {
    const std::uint64_t old = charge[2 * k + 1];
    charge[2 * k + 1] += lo;
    charge[2 * k] += hi + pk::carry_of(old, lo);
  }
};

/// The launch emulated: grid and block (the kernel's block is 256 threads; one thread exercises the
/// flush windows), the first aligned row (0 for the harness's allocations, n when none is), and
/// the rows between two flushes (the kernel's pk::kFlushRows; larger for the negative control).
struct PackedLaunch {
  int blocks = 0;  ///< 0: as d2k_run sizes the grid, capped at 132 SMs x 2 blocks
  int threads = 256;
  std::int64_t vec_begin = 0;
  std::int64_t flush_rows = pk::kFlushRows;
};

struct PackedRun {
  std::vector<HostTensor> out;
  std::int64_t flushes = 0, slow_rows = 0;
};

PackedRun emulate_packed(const WorkloadPlan& p, const std::vector<HostTensor>& in, PackedLaunch l) {
  const auto [n, flag, status, qty, price, disc, tax, ship, maxd] = columns(p, in);
  const std::int64_t vb = std::min(l.vec_begin, n), groups = (n - vb) / 4;
  if (l.blocks == 0) {
    const std::int64_t work = groups + (n - 4 * groups), want = (work + l.threads - 1) / l.threads;
    l.blocks = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(want, 132 * 2)));
  }
  const std::int64_t stride = static_cast<std::int64_t>(l.blocks) * l.threads, steps = l.flush_rows / 4;
  auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  auto word = [](const std::int8_t* b) {  // the 4-byte load of four flags (little-endian, as the GPU)
    std::uint32_t w = 0;
    for (int i = 0; i < 4; ++i) w |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(b[i])) << (8 * i);
    return w;
  };
  HostSink sink;
  PackedRun run;
  for (int b = 0; b < l.blocks; ++b) {
    std::uint64_t part[kGroups * pk::kSums] = {};  // the block's sums (flush_block's shuffles and shared step)
    for (int t = 0; t < l.threads; ++t) {
      const std::int64_t tid = static_cast<std::int64_t>(b) * l.threads + t;
      pk::Acc a{};
      for (std::int64_t g = tid; g < groups;) {
        const std::int64_t stop = std::min(groups, g + steps * stride);
        for (; g < stop; g += stride) {
          const std::int64_t r0 = vb + 4 * g;
          const std::uint32_t gs = pk::group4(word(flag + r0), word(status + r0));
          for (int j = 0; j < 4; ++j) {
            const std::int64_t r = r0 + j;
            const bool keep = ship[r] <= maxd, ok = pk::in_domain(qty[r], price[r], disc[r], tax[r]);
            const std::uint32_t gr = (gs >> (8 * j)) & 0xff;
            pk::add_row(a, keep && ok ? gr : pk::kNoGroup, u(qty[r]), u(price[r]), u(disc[r]), u(tax[r]));
            if (keep && !ok) {
              pk::add_slow(sink, static_cast<int>(gr), qty[r], price[r], disc[r], tax[r]);
              ++run.slow_rows;
            }
          }
        }
        if (g < groups) {
          pk::flush(a, sink);
          ++run.flushes;
        }
      }
      const std::int64_t tail = vb + 4 * groups, nscalar = vb + (n - tail);
      if (tid < nscalar && tid < groups) {
        pk::flush(a, sink);
        ++run.flushes;
      }
      for (std::int64_t i = tid; i < nscalar;) {
        const std::int64_t stop = std::min(nscalar, i + l.flush_rows * stride);
        for (; i < stop; i += stride) {
          const std::int64_t r = i < vb ? i : tail + (i - vb);
          const bool keep = ship[r] <= maxd, ok = pk::in_domain(qty[r], price[r], disc[r], tax[r]);
          const int gr = pk::group(flag[r], status[r]);
          pk::add_row(a, keep && ok ? static_cast<std::uint32_t>(gr) : pk::kNoGroup, u(qty[r]), u(price[r]),
                      u(disc[r]), u(tax[r]));
          if (keep && !ok) {
            pk::add_slow(sink, gr, qty[r], price[r], disc[r], tax[r]);
            ++run.slow_rows;
          }
        }
        if (i < nscalar) {
          pk::flush(a, sink);
          ++run.flushes;
        }
      }
      for (int k = 0; k < kGroups; ++k) {
        std::uint64_t v[pk::kSums];
        pk::sums_of(a, k, v);
        for (int j = 0; j < pk::kSums; ++j) part[k * pk::kSums + j] += v[j];
      }
    }
    for (int i = 0; i < kGroups * pk::kSums; ++i) {  // flush_block: one atomic per aggregate, the charge's carry
      if (part[i] == 0) continue;
      if (i % pk::kSums == 3) {
        const std::uint64_t old = sink.charge[2 * (i / pk::kSums) + 1];
        sink.charge[2 * (i / pk::kSums) + 1] += part[i];
        sink.charge[2 * (i / pk::kSums)] += pk::carry_of(old, part[i]);
      } else {
        sink.sums[i] += part[i];
      }
    }
  }
  std::int64_t s[kGroups][6] = {};
  std::uint64_t hi[kGroups] = {}, lo[kGroups] = {};
  for (int k = 0; k < kGroups; ++k) {
    for (int j = 0; j < 6; ++j) s[k][j] = static_cast<std::int64_t>(sink.sums[k * pk::kSums + j]);
    hi[k] = sink.charge[2 * k];
    lo[k] = sink.charge[2 * k + 1];
  }
  run.out = make_outputs(Variant::kExact, s, hi, lo);
  return run;
}

/// "" when every output is bit-equal to the golden's (and passes its rule), else the names that are not.
std::string not_bit_equal(const WorkloadPlan& plan, const std::vector<HostTensor>& golden,
                          const std::vector<HostTensor>& got) {
  std::string bad;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const bool same = got[k].bytes == golden.at(k).bytes && compare(plan.outputs.at(k).cmp, golden.at(k), got[k]).passed;
    if (!same) bad += (bad.empty() ? "" : ", ") + plan.outputs.at(k).name;
  }
  return bad;
}

/// The launches every packed check runs: the kernel's grid; a misaligned start (3 scalar head
/// rows); one thread (a flush every kFlushRows rows once N > 65536); no aligned start (every row
/// scalar) in one thread.
std::vector<PackedLaunch> packed_launches() {
  return {PackedLaunch{}, PackedLaunch{2, 32, 3}, PackedLaunch{1, 1, 0}, PackedLaunch{1, 1, INT64_MAX}};
}

class TpchQ1Tolerance : public tolerance_test::TaskSuite<TpchQ1Tolerance> {
 public:
  static constexpr const char* kTask = "tpch_q1";

 protected:
  using Case = tolerance_test::Case;  // plan, inputs, expected (the golden)

  /// Names of the outputs that fail their rule.
  static std::string failing(Variant v, const WorkloadPlan& plan, const std::vector<HostTensor>& in,
                             const std::vector<HostTensor>& golden) {
    const std::vector<HostTensor> got = emulate(v, plan, in);
    std::string bad;
    for (std::size_t k = 0; k < got.size(); ++k) {
      const CompareResult r = compare(plan.outputs.at(k).cmp, golden.at(k), got[k]);
      if (!r.passed) bad += (bad.empty() ? "" : ", ") + plan.outputs.at(k).name;
    }
    return bad;
  }
  static std::int64_t count(const Case& c, int g) { return c.expected.at(7).as<std::int64_t>()[g]; }
};

TEST_F(TpchQ1Tolerance, CheckWorkloadsCoverTheEdges) {
  ASSERT_EQ(cases_->size(), 6u);
  std::int64_t all = 0;
  for (int g = 0; g < kGroups; ++g) all += count(by_suffix("check-n65537-all-kept"), g);
  EXPECT_EQ(all, 65537);
  for (int g = 0; g < kGroups; ++g) EXPECT_EQ(count(by_suffix("check-n65521-none-kept"), g), 0);
  // The four groups TPC-H's rules allow are all present; (A,O) and (R,O) cannot occur.
  const Case& d = by_suffix("check-n100003-default");
  for (int g : {0, 2, 3, 4}) EXPECT_GT(count(d, g), 100) << "group " << g;
  for (int g : {1, 5}) EXPECT_EQ(count(d, g), 0) << "group " << g;
  // At the current date no row is 'O' yet.
  EXPECT_EQ(count(by_suffix("check-n30011-at-currentdate"), 3), 0);
}

TEST_F(TpchQ1Tolerance, ExactSumsAndFloat64AveragesPass) {
  for (const Case& c : *cases_) {
    const std::string bad = failing(Variant::kExact, c.plan, c.inputs, c.expected);
    std::printf("%-40s counts", c.plan.workload.uuid.c_str());
    for (int g = 0; g < kGroups; ++g) std::printf(" %lld", static_cast<long long>(count(c, g)));
    std::printf("\n");
    EXPECT_EQ(bad, "") << c.plan.workload.uuid;
  }
}

TEST_F(TpchQ1Tolerance, CheaperVariantsFail) {
  struct Expect {
    Variant v;
    const char* uuid;
    const char* fails;  ///< the outputs that must fail
  };
  const Expect cases[] = {
      {Variant::kFp32Averages, "check-n100003-default", "avg_qty, avg_price, avg_disc"},
      {Variant::kShipdateBefore, "check-n100003-default", "sum_qty, sum_base_price, sum_disc_price, sum_charge, avg_qty, avg_price, avg_disc, count_order"},
      {Variant::kStatusMajor, "check-n4099-default", "sum_qty, sum_base_price, sum_disc_price, sum_charge, avg_qty, avg_price, avg_disc, count_order"},
  };
  for (const Expect& e : cases) {
    const Case& c = by_suffix(e.uuid);
    EXPECT_EQ(failing(e.v, c.plan, c.inputs, c.expected), e.fails) << e.uuid << " variant " << static_cast<int>(e.v);
  }
  int dropped = 0;
  for (const Case& c : *cases_) dropped += failing(Variant::kDropTail, c.plan, c.inputs, c.expected) != "";
  EXPECT_GE(dropped, 3) << "a dropped tail passes too many check workloads";
  EXPECT_NE(failing(Variant::kDropTail, by_suffix("check-n1").plan, by_suffix("check-n1").inputs,
                    by_suffix("check-n1").expected), "");
}

/// sum_charge's 128-bit form: at scale factor 100 the charge passes 2^63, and the low word's
/// carries must reach the high word. Rows of one workload repeated to 2^32 rows' worth of sums.
TEST_F(TpchQ1Tolerance, ChargeCarriesIntoTheHighWord) {
  const Case& c = by_suffix("check-n100003-default");
  const std::vector<HostTensor> once = emulate(Variant::kExact, c.plan, c.inputs);
  const auto lo = static_cast<u128>(static_cast<std::uint64_t>(once[3].as<std::int64_t>()[7]));
  const u128 n_o = lo * 20000;  // (N,O) at 2e9 rows: about 2e19 in 1e-6 units
  EXPECT_GT(n_o, static_cast<u128>(INT64_MAX)) << "the int64 form would overflow at scale";
  std::uint64_t hi = 0, low = 0;
  for (int r = 0; r < 20000; ++r) {
    const std::uint64_t old = low;
    low += static_cast<std::uint64_t>(lo);
    hi += low < old;
  }
  EXPECT_EQ((static_cast<u128>(hi) << 64) | low, n_o);
}

/// The packed variant's arithmetic, launched as the kernel is and in the corners of its loops, is
/// bit-equal to the golden on every check workload; one thread over N = 100003 rows flushes its
/// packed words between windows.
TEST_F(TpchQ1Tolerance, PackedVariantIsBitEqual) {
  std::int64_t flushes = 0;
  for (const Case& c : *cases_)
    for (const PackedLaunch& l : packed_launches()) {
      const PackedRun r = emulate_packed(c.plan, c.inputs, l);
      EXPECT_EQ(not_bit_equal(c.plan, c.expected, r.out), "")
          << c.plan.workload.uuid << " blocks " << l.blocks << " threads " << l.threads << " vec_begin " << l.vec_begin;
      EXPECT_EQ(r.slow_rows, 0) << c.plan.workload.uuid << ": the generator's rows are all in the fast path's domain";
      flushes += r.flushes;
    }
  EXPECT_GT(flushes, 0) << "no launch flushed a window";
}

/// Rows outside the fast path's domain (never generated) take the slow path and the result is
/// still the golden's, bit for bit: negative quantity, price >= 2^24, huge and negative tax,
/// discount 200, a 128-bit charge of a negative product, in the vector body and the scalar rows.
TEST_F(TpchQ1Tolerance, PackedSlowPathIsExact) {
  const Case& c = by_suffix("check-n4099-default");
  std::vector<HostTensor> in = c.inputs;
  const std::int64_t n = in.at(0).numel();
  auto* flag = in.at(0).as<std::int8_t>();
  auto* status = in.at(1).as<std::int8_t>();
  auto* qty = in.at(2).as<std::int64_t>();
  auto* price = in.at(3).as<std::int64_t>();
  auto* disc = in.at(4).as<std::int64_t>();
  auto* tax = in.at(5).as<std::int64_t>();
  auto* ship = in.at(6).as<std::int32_t>();
  const auto maxd = static_cast<std::int32_t>(scalar(c.plan, "shipdate_max"));
  struct Bad {
    std::int64_t row, qty, price, disc, tax;
  };
  const Bad bad[] = {
      {1, 20, 5'000'000, 5, 3},                    // in domain: the misaligned launch's head row (kept below)
      {5, -7, 700'000, 4, 2},                       // negative quantity
      {17, 30, std::int64_t{1} << 24, 6, 1},         // price at 2^24
      {100, 12, 1'500'000, 3, 1'000'000'000'000'000},  // huge tax: charge past 2^64
      {101, 12, 1'500'000, 3, -9'000},               // negative tax: negative charge
      {200, 40, 4'000'000, 200, 5},                 // discount 200: negative disc price
      {300, 1, INT64_MAX / 3, 0, 7},                // price near int64's end: 128-bit product
      {301, std::int64_t{1} << 40, 900'000, 2, 4},  // quantity's high word
      {302, 64, 900'000, 2, 4},                     // quantity 64
      {303, 10, 900'000, 101, 4},                   // discount 101
      {304, 10, 900'000, 2, 101},                   // tax 101
      {n - 1, -3, -(std::int64_t{1} << 50), 150, -200},  // a tail row (scalar path)
  };
  std::int64_t out_of_domain = 0;
  for (const Bad& b : bad) {
    qty[b.row] = b.qty;
    price[b.row] = b.price;
    disc[b.row] = b.disc;
    tax[b.row] = b.tax;
    ship[b.row] = maxd;  // kept
    out_of_domain += !pk::in_domain(b.qty, b.price, b.disc, b.tax);
  }
  ASSERT_EQ(out_of_domain, 11);
  flag[5] = 'R';
  status[5] = 'F';
  std::vector<HostTensor> golden = c.outputs();
  run_host(*ref_, c.plan, in, golden);
  ASSERT_NE(not_bit_equal(c.plan, c.expected, golden), "") << "the changed rows changed nothing";
  for (const PackedLaunch& l : packed_launches()) {
    const PackedRun r = emulate_packed(c.plan, in, l);
    EXPECT_EQ(not_bit_equal(c.plan, golden, r.out), "") << "blocks " << l.blocks << " vec_begin " << l.vec_begin;
    EXPECT_EQ(r.slow_rows, out_of_domain);
  }
  EXPECT_NE(not_bit_equal(c.plan, golden, emulate(Variant::kExact, c.plan, in)), "")
      << "the 64-bit charge of the default emulation would already be exact: the test does not reach 128 bits";
}

/// Negative control: with the flush limit too high, a worst case of one thread's rows (quantity 63
/// and discount 100 in every row of one group) overflows the packed quantity and discount fields;
/// at kFlushRows it is exact.
TEST_F(TpchQ1Tolerance, PackedFieldsOverflowWithoutTheFlush) {
  const Case& c = by_suffix("check-n100003-default");
  std::vector<HostTensor> in = c.inputs;
  const std::int64_t n = in.at(0).numel();
  const auto maxd = static_cast<std::int32_t>(scalar(c.plan, "shipdate_max"));
  for (std::int64_t r = 0; r < n; ++r) {
    in.at(0).as<std::int8_t>()[r] = 'N';
    in.at(1).as<std::int8_t>()[r] = 'O';
    in.at(2).as<std::int64_t>()[r] = 63;
    in.at(3).as<std::int64_t>()[r] = (std::int64_t{1} << 24) - 1;
    in.at(4).as<std::int64_t>()[r] = 100;
    in.at(5).as<std::int64_t>()[r] = 100;
    in.at(6).as<std::int32_t>()[r] = maxd;
  }
  ASSERT_TRUE(pk::in_domain(63, (std::int64_t{1} << 24) - 1, 100, 100)) << "the worst case is in the domain";
  std::vector<HostTensor> golden = c.outputs();
  run_host(*ref_, c.plan, in, golden);
  const PackedRun ok = emulate_packed(c.plan, in, PackedLaunch{1, 1, 0, pk::kFlushRows});
  EXPECT_EQ(not_bit_equal(c.plan, golden, ok.out), "");
  EXPECT_GE(ok.flushes, 6);
  const PackedRun late = emulate_packed(c.plan, in, PackedLaunch{1, 1, 0, std::int64_t{1} << 20});
  EXPECT_EQ(late.flushes, 1);  // only the one before the 3 scalar tail rows, after 100000 vector rows
  EXPECT_EQ(not_bit_equal(c.plan, golden, late.out), "sum_qty, avg_qty, avg_price, avg_disc, count_order");
  // One window's worth of worst-case rows is the most the fields hold.
  EXPECT_LE(static_cast<std::uint64_t>(pk::kFlushRows) * 100, pk::kFieldMask);
  EXPECT_GT(static_cast<std::uint64_t>(pk::kFlushRows) * 2 * 100, pk::kFieldMask);
}

/// group4 (four rows' groups from the 4-byte flag words) is group() of every byte, for every pair
/// of byte values in every position; in_domain is the stated bounds.
TEST(TpchQ1Packed, GroupsAndDomainTest) {
  for (int f = 0; f < 256; ++f)
    for (int s = 0; s < 256; ++s)
      for (int pos = 0; pos < 4; ++pos) {
        const std::uint32_t fw = 0x4e52414eu ^ (0xffu << (8 * pos)), sw = 0x4f464f46u ^ (0xffu << (8 * pos));
        const std::uint32_t fx = (fw & ~(0xffu << (8 * pos))) | (static_cast<std::uint32_t>(f) << (8 * pos));
        const std::uint32_t sx = (sw & ~(0xffu << (8 * pos))) | (static_cast<std::uint32_t>(s) << (8 * pos));
        const std::uint32_t gs = pk::group4(fx, sx);
        for (int j = 0; j < 4; ++j)
          ASSERT_EQ(static_cast<int>((gs >> (8 * j)) & 0xff),
                    pk::group(static_cast<std::int8_t>(fx >> (8 * j)), static_cast<std::int8_t>(sx >> (8 * j))))
              << f << " " << s << " " << pos << " " << j;
      }
  const std::int64_t q[] = {-1, 0, 1, 50, 63, 64, INT64_MIN, std::int64_t{1} << 32};
  const std::int64_t p[] = {-1, 0, 209900 * 50, (1 << 24) - 1, 1 << 24, std::int64_t{1} << 32, INT64_MAX};
  const std::int64_t x[] = {-1, 0, 10, 100, 101, std::int64_t{100} + (std::int64_t{1} << 32), INT64_MIN};
  for (std::int64_t a : q)
    for (std::int64_t b : p)
      for (std::int64_t d : x)
        for (std::int64_t t : x) {
          const bool want = a >= 0 && a < 64 && b >= 0 && b < (1 << 24) && d >= 0 && d <= 100 && t >= 0 && t <= 100;
          ASSERT_EQ(pk::in_domain(a, b, d, t), want) << a << " " << b << " " << d << " " << t;
        }
  // The fast path's products equal the exact ones on the domain's corners.
  for (std::uint32_t b : {0u, (1u << 24) - 1})
    for (std::uint32_t d : {0u, 100u})
      for (std::uint32_t t : {0u, 100u}) {
        const pk::Exact e = pk::exact_row(1, b, d, t);
        const std::uint32_t dp = pk::disc_price(b, d);
        EXPECT_EQ(dp, e.dp);
        EXPECT_EQ(pk::charge(dp, t), e.charge_lo);
        EXPECT_EQ(e.charge_hi, 0u);
      }
  const std::uint64_t w = pk::pack(63, 100);
  EXPECT_EQ(pk::unpack_qty(w), 63u);
  EXPECT_EQ(pk::unpack_disc(w), 100u);
  EXPECT_EQ(pk::unpack_count(w), 1u);
}

}  // namespace

TEST(TpchQ1Hidden, DrawsAreValidAndExactAndPackedPass) {
  const LoadedImpl ref = tolerance_test::load_reference("tpch_q1");
  const std::vector<Workload> hidden = draw_hidden_workloads(task().def, 12345, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const tolerance_test::Case c = tolerance_test::make_case(task(), ref, w, 3);
    const std::vector<HostTensor> got = emulate(Variant::kExact, c.plan, c.inputs);
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(compare(c.plan.outputs.at(k).cmp, c.expected.at(k), got[k]).passed) << w.uuid << " " << got[k].name;
    for (const PackedLaunch& l : packed_launches())
      EXPECT_EQ(not_bit_equal(c.plan, c.expected, emulate_packed(c.plan, c.inputs, l).out), "")
          << w.uuid << " packed, blocks " << l.blocks << " vec_begin " << l.vec_begin;
  }
}

// The parent sizes its input sets beside the workspace naive_outputs() allocates while they are
// held (engine/evaluate.cpp, free_beside_naive): workspace_bytes() reads it from the naive at the
// plan's shapes without allocating (no GPU here). The H200 reported the same request when it did
// not fit at SF100: "cudaMalloc of 32400000768 bytes" (docs/results/engine-faults-2026-12-01.md).
TEST(TpchQ1Memory, NaiveWorkspaceIsReadWithoutAllocating) {
  LoadedImpl naive = load_impl(fs::path(D2K_BINARY_DIR) / "impl/tpch_q1/naive.so");
  for (const Workload& w : task().workloads) {
    if (w.uuid != "tpch_q1-bench-sf100") continue;
    const WorkloadPlan plan = make_plan(task(), w);
    EXPECT_EQ(workspace_bytes(naive, plan), 32400000768u);
    return;
  }
  FAIL() << "no tpch_q1-bench-sf100 workload";
}
