// layernorm_backward: the comparison rules of definition.json checked both ways on the public
// check workloads and hidden draws. Host emulations of an implementation's arithmetic are compared
// with the fp64 golden (the task's reference.so, inputs from the task's generators) under the
// workload's effective rules: the expert's fp32 arithmetic in its own order (team sums, band
// partials, the fixed-order second stage) and aten's order (sequential sums) pass; cheaper variants
// (bf16 or fp16 intermediates, a truncating dx store, bf16 column accumulation or storage, a
// dropped correction term, no mean subtraction, a skipped row) fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../task_harness.h"
#include "check/compare.h"

namespace fs = std::filesystem;
using namespace d2k;
using namespace d2k::tolerance_test;

namespace {

/// How an emulated implementation computes.
enum class Variant {
  kExpert,          ///< expert.cu's fp32 arithmetic and summation order (vector or generic path)
  kSequential,      ///< fp32, every sum in index order (aten's per-row and per-column loops)
  kBf16Products,    ///< g = gamma * dy rounded to bf16 before use (bf16 arithmetic)
  kBf16Xhat,        ///< xhat rounded to bf16 before use
  kFp16Xhat,        ///< xhat and g rounded to fp16 (fp16 storage of intermediates)
  kTruncatedDx,     ///< dx stored by truncation (round toward zero) instead of to nearest
  kBf16ColumnSums,  ///< dgamma and dbeta running sums rounded to bf16 after every addition
  kBf16ParamGrads,  ///< dgamma and dbeta rounded to bf16 once (aten's dtype for a bf16 weight)
  kNoCorrection,    ///< dx = rstd * g: the (b + xhat * a) / H term dropped
  kNoMeanSubtract,  ///< xhat = x * rstd
  kSkipLastRow,     ///< the last row: dx left 0 and not added to the column sums
};

constexpr int kThreads = 256;
constexpr int kMaxVec = 4;
constexpr std::int64_t kMaxParts = 1024;
constexpr int kFallbackParts = 256;
constexpr int kResident = 264;  // the H200: 132 SMs x 2 CTAs of stage 1
constexpr int kResidentOnePerSm = 132;  // a stage 1 of one CTA per SM (knobs occ1, ring3/ring4 at long H)

struct Inputs {
  const HostTensor *dy, *x, *mean, *rstd, *gamma;
  std::int64_t T, H;
};

float rnd(Variant v, float f, Variant when, float (*round)(float)) { return v == when ? round(f) : f; }

/// The xor-butterfly of 32 lanes as warp_sum computes it; returns lane 0's value.
float warp_butterfly(std::vector<float> lanes) {
  for (int o = 16; o > 0; o >>= 1) {
    std::vector<float> next(32);
    for (int l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ o];
    lanes = next;
  }
  return lanes[0];
}

/// The expert's build knobs that change its arithmetic or summation order (expert.cu's LNB_* macros;
/// the defaults are the default build's).
struct Knobs {
  std::int64_t resident = kResident;  ///< stage 1's CTAs on the device (the number of bands)
  bool lean = false;                  ///< LNB_LEAN: xhat = fma(x, rstd, -(mean * rstd)), dx = fma(rstd, g, -fma(x, k1, k0))
  bool strided = false;               ///< LNB_STRIDED: CTA c's team j takes rows (it * G + c) * teams + j
  /// LNB_DYNAMIC: rows taken from a queue, so which team sums a row depends on timing; emulated as
  /// a pseudo-random owner per row (seeded; 0: off), each team summing its rows in row order.
  std::uint32_t dynamic_seed = 0;
  /// LNB_WHOLE_ROUNDS (strided): the fewest CTAs that take the rows in as many rounds.
  bool whole_rounds = false;
  /// LNB_CLUSTER_PAIRS (strided, one team per CTA): an even grid, CTAs 2k and 2k + 1 summed into
  /// partial row k (p_2k + p_2k+1) before stage 2.
  bool pairs = false;
};

/// Stage 1's CTAs of the strided grid (expert.cu's plan_vec): want = min(resident, kMaxParts,
/// ceil(T / teams)); a multiple of unit (CTAs per cluster) where want holds one, else 1; with
/// whole_rounds the fewest such CTAs whose rounds of teams rows are as many as want's.
std::int64_t strided_ctas(std::int64_t T, std::int64_t teams, std::int64_t resident, bool whole_rounds,
                          std::int64_t unit) {
  const std::int64_t want = std::max<std::int64_t>(1, std::min<std::int64_t>({resident, kMaxParts, (T + teams - 1) / teams}));
  const std::int64_t u = want >= unit ? unit : 1;
  std::int64_t g = want / u * u;
  if (whole_rounds) {
    const std::int64_t rounds = (T + g * teams - 1) / (g * teams);
    g = (T + rounds * teams * u - 1) / (rounds * teams * u) * u;
  }
  return g;
}

struct Emulator {
  Variant v;
  Inputs in;
  Knobs knobs{};

  float bf(const HostTensor& t, std::int64_t i) const { return bf16_at(t, i); }
  float mean(std::int64_t t) const { return in.mean->as<float>()[t]; }
  float rstd(std::int64_t t) const { return in.rstd->as<float>()[t]; }
  float gamma(std::int64_t h) const { return in.gamma->as<float>()[h]; }

  /// Whether the lean arithmetic applies: the expert's vector path built with LNB_LEAN.
  bool lean() const { return knobs.lean && v == Variant::kExpert && vector_path(); }

  float xhat(std::int64_t t, std::int64_t h) const {
    const float xv = bf(*in.x, t * in.H + h);
    if (lean()) return std::fma(xv, rstd(t), -(mean(t) * rstd(t)));
    float xh = v == Variant::kNoMeanSubtract ? xv * rstd(t) : (xv - mean(t)) * rstd(t);
    xh = rnd(v, xh, Variant::kBf16Xhat, bf16_rn);
    return rnd(v, xh, Variant::kFp16Xhat, f16_rn);
  }
  float g(std::int64_t t, std::int64_t h) const {
    float gv = gamma(h) * bf(*in.dy, t * in.H + h);
    gv = rnd(v, gv, Variant::kBf16Products, bf16_rn);
    return rnd(v, gv, Variant::kFp16Xhat, f16_rn);
  }
  bool vector_path() const { return in.H % 8 == 0 && in.H <= std::int64_t{kThreads} * kMaxVec * 8; }
  int team_width() const {
    int tw = 32;
    while (tw < kThreads && std::int64_t{tw} * kMaxVec < in.H / 8) tw *= 2;
    return tw;
  }

  /// (a, b) of row t: per-thread partials over the thread's columns, warp butterflies, then the
  /// team's warps in order (expert); or index order (sequential).
  std::pair<float, float> row_sums(std::int64_t t) const {
    const std::int64_t H = in.H;
    if (v == Variant::kSequential) {
      float a = 0.f, b = 0.f;
      for (std::int64_t h = 0; h < H; ++h) {
        a = std::fma(g(t, h), xhat(t, h), a);
        b += g(t, h);
      }
      return {a, b};
    }
    const bool vec = vector_path();
    const int tw = vec ? team_width() : kThreads;
    std::vector<float> ta(tw, 0.f), tb(tw, 0.f);
    for (int l = 0; l < tw; ++l) {
      if (vec) {
        for (int k = 0; k < kMaxVec; ++k) {
          const std::int64_t vi = l + std::int64_t{k} * tw;
          if (vi >= H / 8) continue;
          for (int j = 0; j < 8; ++j) {
            const std::int64_t h = vi * 8 + j;
            ta[l] = std::fma(g(t, h), xhat(t, h), ta[l]);
            tb[l] += g(t, h);
          }
        }
      } else {
        for (std::int64_t h = l; h < H; h += kThreads) {
          ta[l] = std::fma(g(t, h), xhat(t, h), ta[l]);
          tb[l] += g(t, h);
        }
      }
    }
    float a = 0.f, b = 0.f;
    for (int w = 0; w < tw / 32; ++w) {
      a += warp_butterfly(std::vector<float>(ta.begin() + w * 32, ta.begin() + (w + 1) * 32));
      b += warp_butterfly(std::vector<float>(tb.begin() + w * 32, tb.begin() + (w + 1) * 32));
    }
    return {a, b};
  }

  void dx_row(std::int64_t t, HostTensor& dx) const {
    const auto [a, b] = row_sums(t);
    const float rs = rstd(t), inv_h = 1.0f / static_cast<float>(in.H);
    const float ca = rs * a * inv_h, cb = rs * b * inv_h;
    const float k1 = rs * ca, k0 = std::fma(-(mean(t) * rs), ca, cb);  // lean: xhat * ca + cb = x * k1 + k0
    for (std::int64_t h = 0; h < in.H; ++h) {
      float o = v == Variant::kNoCorrection ? rs * g(t, h)
                : lean()                    ? std::fma(rs, g(t, h), -std::fma(bf(*in.x, t * in.H + h), k1, k0))
                                            : std::fma(rs, g(t, h), -std::fma(xhat(t, h), ca, cb));
      if (v == Variant::kTruncatedDx) o = bf16_rz(o);
      set_bf16(dx, t * in.H + h, o);  // exact for a truncated value
    }
  }

  /// Column partials of rows [r0, r1) (every `step`-th row from r0), by the variant's accumulation.
  void add_rows(std::int64_t r0, std::int64_t r1, std::int64_t step, std::int64_t h, float& dg, float& db) const {
    for (std::int64_t t = r0; t < r1; t += step) {
      if (v == Variant::kSkipLastRow && t == in.T - 1) continue;
      const float d = bf(*in.dy, t * in.H + h);
      dg = std::fma(d, xhat(t, h), dg);
      db += d;
      if (v == Variant::kBf16ColumnSums) {
        dg = bf16_rn(dg);
        db = bf16_rn(db);
      }
    }
  }

  /// dgamma, dbeta of column h: the expert's bands and stage 2, or one sequential sum.
  std::pair<float, float> column(std::int64_t h) const {
    const std::int64_t T = in.T;
    if (v == Variant::kSequential || v == Variant::kBf16ColumnSums) {
      float dg = 0.f, db = 0.f;
      add_rows(0, T, 1, h, dg, db);
      return {dg, db};
    }
    std::vector<float> pg, pb;
    constexpr int slices = 8;  // stage 2's partial slices per column
    if (vector_path()) {
      const std::int64_t teams = kThreads / team_width();
      std::int64_t want =
          std::max<std::int64_t>(1, std::min<std::int64_t>({knobs.resident, kMaxParts, (T + teams - 1) / teams}));
      const std::int64_t rows = (T + want - 1) / want;
      const bool pairs = knobs.strided && knobs.pairs && teams == 1 && want >= 2;
      if (knobs.strided && (knobs.whole_rounds || knobs.pairs))
        want = strided_ctas(T, teams, knobs.resident, knobs.whole_rounds, pairs ? 2 : 1);
      if (knobs.dynamic_seed != 0) {  // one partial row per CTA; row t summed by team owner(t)
        const std::int64_t owners = want * teams;
        auto owner = [&](std::int64_t t) {
          std::uint64_t z = (std::uint64_t{knobs.dynamic_seed} << 32) + static_cast<std::uint64_t>(t) + 0x9E3779B97F4A7C15ull;
          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
          z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
          return static_cast<std::int64_t>((z ^ (z >> 31)) % static_cast<std::uint64_t>(owners));
        };
        std::vector<float> tg(owners, 0.f), tb(owners, 0.f);
        for (std::int64_t t = 0; t < T; ++t) add_rows(t, t + 1, 1, h, tg[owner(t)], tb[owner(t)]);
        for (std::int64_t cta = 0; cta < want; ++cta) {
          float sg = tg[cta * teams], sb = tb[cta * teams];
          for (std::int64_t team = 1; team < teams; ++team) {
            sg += tg[cta * teams + team];
            sb += tb[cta * teams + team];
          }
          pg.push_back(sg);
          pb.push_back(sb);
        }
      }
      if (knobs.strided)  // one partial row per CTA, each team's rows a whole grid round apart
        for (std::int64_t cta = 0; cta < want; ++cta) {
          float sg = 0.f, sb = 0.f;
          for (std::int64_t team = 0; team < teams; ++team) {
            float dg = 0.f, db = 0.f;
            add_rows(cta * teams + team, T, want * teams, h, dg, db);
            sg = team == 0 ? dg : sg + dg;
            sb = team == 0 ? db : sb + db;
          }
          pg.push_back(sg);
          pb.push_back(sb);
        }
      if (pairs) {  // pair_partials: one addition per pair, rank 0's row first
        for (std::size_t k = 0; 2 * k < pg.size(); ++k) {
          pg[k] = pg[2 * k] + pg[2 * k + 1];
          pb[k] = pb[2 * k] + pb[2 * k + 1];
        }
        pg.resize(pg.size() / 2);
        pb.resize(pb.size() / 2);
      }
      for (std::int64_t r0 = 0; r0 < T && !knobs.strided && knobs.dynamic_seed == 0; r0 += rows) {
        float sg = 0.f, sb = 0.f;
        for (std::int64_t team = 0; team < teams; ++team) {  // each team's registers, then summed in team order
          float dg = 0.f, db = 0.f;
          add_rows(r0 + team, std::min(T, r0 + rows), teams, h, dg, db);
          sg = team == 0 ? dg : sg + dg;
          sb = team == 0 ? db : sb + db;
        }
        pg.push_back(sg);
        pb.push_back(sb);
      }
    } else {
      const std::int64_t bands = std::min<std::int64_t>({T, kFallbackParts, std::min<std::int64_t>(T, kMaxParts)});
      const std::int64_t rows = (T + bands - 1) / bands;
      for (std::int64_t r0 = 0; r0 < T; r0 += rows) {
        float dg = 0.f, db = 0.f;
        add_rows(r0, std::min(T, r0 + rows), 1, h, dg, db);
        pg.push_back(dg);
        pb.push_back(db);
      }
    }
    // Stage 2: slices p = s, s + S, ..., then the tree (s += s + S/2, ..., + 1).
    std::vector<float> sg(slices, 0.f), sb(slices, 0.f);
    for (std::size_t p = 0; p < pg.size(); ++p) {
      sg[p % slices] += pg[p];
      sb[p % slices] += pb[p];
    }
    for (int w = slices / 2; w > 0; w /= 2)
      for (int s = 0; s < w; ++s) {
        sg[s] += sg[s + w];
        sb[s] += sb[s + w];
      }
    return {sg[0], sb[0]};
  }

  std::vector<HostTensor> run(const Case& c) const {
    std::vector<HostTensor> out = c.outputs();
    HostTensor& dx = out[c.out_index("dx")];
    for (std::int64_t t = 0; t < in.T; ++t)
      if (!(v == Variant::kSkipLastRow && t == in.T - 1)) dx_row(t, dx);
    auto* dg = out[c.out_index("dgamma")].as<float>();
    auto* db = out[c.out_index("dbeta")].as<float>();
    for (std::int64_t h = 0; h < in.H; ++h) {
      auto [g, b] = column(h);
      if (v == Variant::kBf16ParamGrads) {
        g = bf16_rn(g);
        b = bf16_rn(b);
      }
      dg[h] = g;
      db[h] = b;
    }
    return out;
  }
};

struct Verdict {
  CompareResult dx, dgamma, dbeta;
};

Verdict judge_variant(Variant v, const Case& c, const Knobs& knobs = {}) {
  const Inputs in{&c.in("dy"), &c.in("x"), &c.in("mean"), &c.in("rstd"), &c.in("gamma"), c.axis("T"), c.axis("H")};
  const std::vector<HostTensor> out = Emulator{v, in, knobs}.run(c);
  auto cmp = [&](const std::string& name) {
    const std::size_t i = c.out_index(name);
    return compare(c.plan.outputs.at(i).cmp, c.expected.at(i), out.at(i));
  };
  return {cmp("dx"), cmp("dgamma"), cmp("dbeta")};
}

class LayerNormBackwardTolerance : public TaskSuite<LayerNormBackwardTolerance> {
 public:
  static constexpr const char* kTask = "layernorm_backward";

 protected:
  static void print(const char* what, const Case& c, const Verdict& r) {
    std::printf("%-14s %-44s dx mism %lld max|err| %.3g | dgamma rel_l2 %.3g | dbeta rel_l2 %.3g\n", what,
                c.plan.workload.uuid.c_str(), static_cast<long long>(r.dx.mismatches), r.dx.max_abs_error,
                r.dgamma.rel_l2, r.dbeta.rel_l2);
  }
};

TEST_F(LayerNormBackwardTolerance, CheckWorkloadsCoverBothPaths) {
  ASSERT_EQ(cases_->size(), 9u);  // every check workload of workloads.jsonl
  int vec = 0, generic = 0;
  for (const Case& c : *cases_) {
    const std::int64_t H = c.axis("H");
    (H % 8 == 0 && H <= 8192 ? vec : generic) += 1;
  }
  EXPECT_GE(vec, 4);      // team widths 32 (H <= 1024), 64, 256 among them
  EXPECT_GE(generic, 3);  // H = 1, odd H, H above 8192
}

TEST_F(LayerNormBackwardTolerance, HonestFp32PassesEveryCheckWorkload) {
  for (Variant v : {Variant::kExpert, Variant::kSequential})
    for (const Case& c : *cases_) {
      const Verdict r = judge_variant(v, c);
      print(v == Variant::kExpert ? "expert" : "sequential", c, r);
      EXPECT_TRUE(r.dx.passed) << c.plan.workload.uuid << ": " << r.dx.message;
      EXPECT_TRUE(r.dgamma.passed) << c.plan.workload.uuid << ": " << r.dgamma.message;
      EXPECT_TRUE(r.dbeta.passed) << c.plan.workload.uuid << ": " << r.dbeta.message;
    }
}

/// The bands follow the resident CTA count: one CTA of 256 threads per SM (a build whose stage 1
/// takes more shared memory or registers: occ1, ring3/ring4 at long rows) gives fewer, longer
/// bands, another summation order. It must pass too, and on the many-short-rows workload it is
/// another order indeed (some columns differ from the default's two CTAs per SM).
TEST_F(LayerNormBackwardTolerance, ExpertPassesWithOneCtaPerSm) {
  const Case& many = by_suffix("check-2053x64");
  const Inputs in{&many.in("dy"), &many.in("x"), &many.in("mean"), &many.in("rstd"), &many.in("gamma"),
                  many.axis("T"), many.axis("H")};
  for (const Case& c : *cases_) {
    const Verdict r = judge_variant(Variant::kExpert, c, Knobs{kResidentOnePerSm});
    print("expert 1/SM", c, r);
    EXPECT_TRUE(r.dx.passed) << c.plan.workload.uuid << ": " << r.dx.message;
    EXPECT_TRUE(r.dgamma.passed) << c.plan.workload.uuid << ": " << r.dgamma.message;
    EXPECT_TRUE(r.dbeta.passed) << c.plan.workload.uuid << ": " << r.dbeta.message;
  }
  const Emulator two{Variant::kExpert, in}, one{Variant::kExpert, in, Knobs{kResidentOnePerSm}};
  int differ = 0;
  for (std::int64_t h = 0; h < in.H; ++h) differ += two.column(h) != one.column(h);
  EXPECT_GT(differ, 0) << "one CTA per SM summed every column of 2053x64 as two";
}

/// The knobs of the expert's builds that change its arithmetic or order: the default since the
/// third round (lean_strided), expert.cu's `%VARIANT%` line dynamic (three of its timing-dependent
/// orders); lean (bands, its knobs kept) still judged. ring2 (Knobs{}, dynamic's row pass) is
/// judged by the tests that take the default Knobs.
const std::vector<std::pair<const char*, Knobs>>& variant_knobs() {
  static const std::vector<std::pair<const char*, Knobs>> v = {
      {"lean", Knobs{kResident, true}},
      {"lean_strided (the default)", Knobs{kResident, true, true}},
      {"dynamic (order 1)", Knobs{kResident, false, false, 1}},
      {"dynamic (order 2)", Knobs{kResident, false, false, 2}},
      {"dynamic (order 3)", Knobs{kResident, false, false, 3}},
      // The eighth round: on the check shapes at 264 resident CTAs whole rounds are the default's
      // grid (one round each) and pairs act on 64x4104 only (the one-team shape); at 4 resident
      // CTAs every vector-path check shape has several rounds.
      {"whole_rounds", Knobs{kResident, true, true, 0, true, false}},
      {"cluster_pairs", Knobs{kResident, true, true, 0, false, true}},
      {"pairs_whole", Knobs{kResident, true, true, 0, true, true}},
      {"pairs_whole at 4 resident CTAs", Knobs{4, true, true, 0, true, true}},
      {"whole_rounds at 4 resident CTAs", Knobs{4, true, true, 0, true, false}},
  };
  return v;
}

/// The lean arithmetic (xhat as one FMA, dx as two), strided rows and the queue's orders pass every
/// check workload in each variant's configuration.
TEST_F(LayerNormBackwardTolerance, LeanVariantsPassEveryCheckWorkload) {
  for (const auto& [name, knobs] : variant_knobs())
    for (const Case& c : *cases_) {
      const Verdict r = judge_variant(Variant::kExpert, c, knobs);
      print(name, c, r);
      EXPECT_TRUE(r.dx.passed) << name << " " << c.plan.workload.uuid << ": " << r.dx.message;
      EXPECT_TRUE(r.dgamma.passed) << name << " " << c.plan.workload.uuid << ": " << r.dgamma.message;
      EXPECT_TRUE(r.dbeta.passed) << name << " " << c.plan.workload.uuid << ": " << r.dbeta.message;
    }
}

/// Each knob the emulation models is another rounding or order indeed (so the test above judges
/// what the variant computes, not the default again): the lean xhat moves dgamma's last bits and
/// some dx elements, strided rows and queued rows move some column sums.
TEST_F(LayerNormBackwardTolerance, LeanKnobsAreOtherRoundings) {
  const Case& many = by_suffix("check-2053x64");
  const Case& bert = by_suffix("check-300x768");
  auto inputs = [](const Case& c) {
    return Inputs{&c.in("dy"), &c.in("x"), &c.in("mean"), &c.in("rstd"), &c.in("gamma"), c.axis("T"), c.axis("H")};
  };
  auto columns_differ = [](const Emulator& a, const Emulator& b) {
    int n = 0;
    for (std::int64_t h = 0; h < a.in.H; ++h) n += a.column(h) != b.column(h);
    return n;
  };
  const Emulator base{Variant::kExpert, inputs(bert)};
  const Emulator lean{Variant::kExpert, inputs(bert), Knobs{kResident, true}};
  EXPECT_GT(columns_differ(base, lean), 0) << "the lean xhat summed every dgamma column of 300x768 as before";
  const std::vector<HostTensor> dx0 = base.run(bert), dx1 = lean.run(bert);
  const std::size_t i = bert.out_index("dx");
  int dx_differ = 0;
  for (std::int64_t e = 0; e < bert.axis("T") * bert.axis("H"); ++e)
    dx_differ += bf16_at(dx0[i], e) != bf16_at(dx1[i], e);
  EXPECT_GT(dx_differ, 0) << "the lean dx rounded every element of 300x768 as before";

  // 100 resident CTAs: 21-row bands of 8 teams.
  const Emulator bands{Variant::kExpert, inputs(many), Knobs{100}};
  // (At 264 resident CTAs the 257 bands of 2053x64 are one round each: strided rows are the bands.)
  const Emulator strided{Variant::kExpert, inputs(many), Knobs{100, false, true}};
  EXPECT_GT(columns_differ(bands, strided), 0) << "strided rows summed every column of 2053x64 as bands";
  const Emulator queued{Variant::kExpert, inputs(many), Knobs{100, false, false, 1}};
  EXPECT_GT(columns_differ(bands, queued), 0) << "queued rows summed every column of 2053x64 as bands";
  const Verdict r = judge_variant(Variant::kExpert, many, Knobs{100, true, true});
  EXPECT_TRUE(r.dx.passed && r.dgamma.passed && r.dbeta.passed) << "2053x64 at 100 resident CTAs";

  // Whole rounds at 100 resident CTAs: 2053 rows of 8 teams in 3 rounds take 86 CTAs, not 100.
  const Emulator whole{Variant::kExpert, inputs(many), Knobs{100, false, true, 0, true, false}};
  EXPECT_GT(columns_differ(strided, whole), 0) << "whole rounds summed every column of 2053x64 as 100 CTAs";
  // Pairs on the one-team check shape (64x4104: 64 CTAs, 32 pair rows into stage 2's 8 slices).
  const Case& wide = by_suffix("check-64x4104");
  const Emulator wide_strided{Variant::kExpert, inputs(wide), Knobs{kResident, true, true}};
  const Emulator wide_pairs{Variant::kExpert, inputs(wide), Knobs{kResident, true, true, 0, false, true}};
  EXPECT_GT(columns_differ(wide_strided, wide_pairs), 0) << "pair rows summed every column of 64x4104 as CTA rows";
  // and nowhere else: several teams per CTA take no clusters.
  const Emulator many_pairs{Variant::kExpert, inputs(many), Knobs{100, false, true, 0, false, true}};
  EXPECT_EQ(columns_differ(strided, many_pairs), 0) << "pairs acted on 2053x64 (8 teams per CTA)";
}

/// plan_vec's grid with LNB_WHOLE_ROUNDS and LNB_CLUSTER_PAIRS (mirrored by strided_ctas): the
/// same number of rounds as the resident grid, with the fewest CTAs (a multiple of the cluster),
/// and the bench rows' grids the variant notes of expert.cu and the results page quote.
TEST(LayerNormBackwardVariants, WholeRoundsKeepTheRoundsWithFewestCtas) {
  auto rounds = [](std::int64_t T, std::int64_t teams, std::int64_t g) { return (T + g * teams - 1) / (g * teams); };
  for (std::int64_t resident : {1, 2, 4, 100, 132, 263, 264})
    for (std::int64_t teams : {1, 2, 4, 8})
      for (std::int64_t unit : {1, 2})
        for (std::int64_t T = 1; T <= 3000; T += (T < 300 ? 1 : 37)) {
          const std::int64_t plain = strided_ctas(T, teams, resident, false, unit);
          const std::int64_t g = strided_ctas(T, teams, resident, true, unit);
          const std::int64_t u = plain % unit == 0 ? unit : 1;
          ASSERT_LE(g, plain) << T << " " << teams << " " << resident;
          ASSERT_EQ(g % u, 0) << T << " " << teams << " " << resident;
          ASSERT_EQ(rounds(T, teams, g), rounds(T, teams, plain)) << T << " " << teams << " " << resident;
          if (g > u) ASSERT_GT(rounds(T, teams, g - u), rounds(T, teams, g)) << "not the fewest: " << T << " " << teams;
          if (unit == 2 && plain >= 2) ASSERT_EQ(plain % 2, 0) << T << " " << teams << " " << resident;
        }
  // The bench rows at 264 resident CTAs (teams 2, 1, 8, 1): 264 CTAs each in the default grid.
  EXPECT_EQ(strided_ctas(16384, 2, kResident, false, 1), 264);
  EXPECT_EQ(strided_ctas(8192, 1, kResident, false, 1), 264);
  EXPECT_EQ(rounds(8192, 1, 264), 32);  // 31 whole rounds and 8 rows: a 32nd round of 8 CTAs
  EXPECT_EQ(strided_ctas(16384, 2, kResident, true, 1), 256);
  EXPECT_EQ(strided_ctas(8192, 1, kResident, true, 1), 256);
  EXPECT_EQ(strided_ctas(65536, 8, kResident, true, 1), 256);
  EXPECT_EQ(strided_ctas(16384, 1, kResident, true, 1), 261);
  EXPECT_EQ(strided_ctas(8192, 1, kResident, false, 2), 264);  // cluster_pairs: 132 partial rows
  EXPECT_EQ(strided_ctas(8192, 1, kResident, true, 2), 256);   // pairs_whole: 128
  EXPECT_EQ(strided_ctas(16384, 1, kResident, true, 2), 262);  // 131 pairs of 63 rounds
}

/// Cheaper dx arithmetic is rejected on every workload large enough to show it (H = 1 and H = 8
/// rows are a handful of elements; the vector of 8 can be lucky).
TEST_F(LayerNormBackwardTolerance, NarrowIntermediatesFailDx) {
  for (Variant v : {Variant::kBf16Products, Variant::kFp16Xhat, Variant::kTruncatedDx})
    for (const Case& c : *cases_) {
      if (c.axis("T") * c.axis("H") < 1000) continue;
      const Verdict r = judge_variant(v, c);
      print("narrow", c, r);
      EXPECT_FALSE(r.dx.passed) << c.plan.workload.uuid << " accepted variant " << static_cast<int>(v);
    }
}

TEST_F(LayerNormBackwardTolerance, Bf16XhatFailsDgamma) {
  for (const Case& c : *cases_) {
    if (c.axis("H") < 64) continue;
    const Verdict r = judge_variant(Variant::kBf16Xhat, c);
    EXPECT_FALSE(r.dgamma.passed) << c.plan.workload.uuid << " accepted a bf16 xhat";
  }
}

TEST_F(LayerNormBackwardTolerance, Bf16ColumnSumsAndStorageFail) {
  for (Variant v : {Variant::kBf16ColumnSums, Variant::kBf16ParamGrads})
    for (const Case& c : *cases_) {
      if (c.axis("H") < 64) continue;  // a few columns can land next to bf16 values
      const Verdict r = judge_variant(v, c);
      print("bf16 columns", c, r);
      EXPECT_FALSE(r.dgamma.passed) << c.plan.workload.uuid << " accepted variant " << static_cast<int>(v);
      EXPECT_FALSE(r.dbeta.passed) << c.plan.workload.uuid << " accepted variant " << static_cast<int>(v);
    }
}

TEST_F(LayerNormBackwardTolerance, DroppedCorrectionFailsDx) {
  for (const Case& c : *cases_) {
    if (c.axis("H") < 8) continue;
    EXPECT_FALSE(judge_variant(Variant::kNoCorrection, c).dx.passed) << c.plan.workload.uuid;
  }
}

TEST_F(LayerNormBackwardTolerance, NoMeanSubtractionFailsShiftedRows) {
  const Verdict r = judge_variant(Variant::kNoMeanSubtract, by_suffix("check-16x2048-shifted"));
  EXPECT_FALSE(r.dx.passed);
  EXPECT_FALSE(r.dgamma.passed);
  EXPECT_EQ(r.dx.status, CheckStatus::incorrect_numerical);
}

/// One skipped row of 2053 (0.05% of dx, under the matched_ratio's 0.1%) is still caught: by the
/// max_error_cap in dx and by rel_l2 in the column sums.
TEST_F(LayerNormBackwardTolerance, SkippedRowFails) {
  const Verdict r = judge_variant(Variant::kSkipLastRow, by_suffix("check-2053x64"));
  EXPECT_FALSE(r.dx.passed);
  EXPECT_FALSE(r.dgamma.passed);
  EXPECT_FALSE(r.dbeta.passed);
}

/// LNB_TEAM_SLICES (variants team_slices, slices_flags): expert.cu's write_partials_slices forms a
/// CTA's partial rows from its teams' per-team slices of shared memory instead of the serial
/// per-team passes. Emulated index for index at every vector-path H (8 to 8192 columns): each
/// phase-1 store has its own float4 inside the two-stage ring (64 x vpt x 256 bytes), phase 2 reads
/// for every output float4 exactly what the teams stored for its columns, and the team-ordered
/// sums equal the serial form's bit for bit (random accumulators, so that the order shows).
TEST(LayerNormBackwardVariants, TeamSlicesAreTheSerialTeamSums) {
  std::mt19937 rng(15);
  std::uniform_real_distribution<float> val(-3.f, 3.f);
  for (int H = 8; H <= kThreads * kMaxVec * 8; H += 8) {
    const int nvec = H / 8;
    int tw = 32;
    while (tw < kThreads && tw * kMaxVec < nvec) tw *= 2;
    const int teams = kThreads / tw, vpt = (nvec + tw - 1) / tw;
    if (teams == 1) continue;  // write_partials stores a one-team CTA's registers directly
    // acc[team][lane][q][k][j]: the thread's column partials (q 0 dgamma, 1 dbeta).
    auto idx = [&](int t, int l, int q, int k, int j) { return (((t * tw + l) * 2 + q) * kMaxVec + k) * 8 + j; };
    std::vector<float> acc(static_cast<std::size_t>(teams) * tw * 2 * kMaxVec * 8);
    for (float& a : acc) a = val(rng);
    // The serial form: s_sum[v * 8 + j] = t == 0 ? add : s_sum + add, team by team.
    std::vector<float> serial(2 * static_cast<std::size_t>(H));
    for (int q = 0; q < 2; ++q)
      for (int t = 0; t < teams; ++t)
        for (int l = 0; l < tw; ++l)
          for (int k = 0; k < kMaxVec; ++k) {
            const int v = l + k * tw;
            if (v >= nvec) continue;
            for (int j = 0; j < 8; ++j) {
              float& s = serial[q * H + v * 8 + j];
              s = t == 0 ? acc[idx(t, l, q, k, j)] : s + acc[idx(t, l, q, k, j)];
            }
          }
    // Phase 1: float4 at(team, q, k, hf, lane) holds acc[team][lane][q][k][4 hf .. 4 hf + 3].
    auto at = [&](int t, int q, int k, int hf, int l) { return (((t * 2 + q) * vpt + k) * 2 + hf) * tw + l; };
    const int ring_quads = 4 * vpt * kThreads;  // the two-stage ring: 2 x 2 tensors x vpt x 256 x 16 bytes
    std::vector<float> slices(4 * static_cast<std::size_t>(ring_quads), std::nanf(""));
    std::set<int> stored;
    for (int t = 0; t < teams; ++t)
      for (int l = 0; l < tw; ++l)
        for (int k = 0; k < kMaxVec; ++k) {
          if (k >= vpt || l + k * tw >= nvec) continue;
          for (int q = 0; q < 2; ++q)
            for (int hf = 0; hf < 2; ++hf) {
              const int f4 = at(t, q, k, hf, l);
              ASSERT_GE(f4, 0);
              ASSERT_LT(f4, ring_quads) << "H " << H << ": a slice past the ring";
              ASSERT_TRUE(stored.insert(f4).second) << "H " << H << ": two stores into float4 " << f4;
              for (int c = 0; c < 4; ++c) slices[4 * f4 + c] = acc[idx(t, l, q, k, 4 * hf + c)];
            }
        }
    // Phase 2: output float4 i of array q from the teams' slices, added in team order.
    const int quads = H / 4;
    for (int o = 0; o < 2 * quads; ++o) {
      const int q = o >= quads, i = o - q * quads;
      const int v = i / 2, hf = i % 2, k = v / tw, l = v % tw;
      for (int c = 0; c < 4; ++c) {
        float sum = slices[4 * at(0, q, k, hf, l) + c];
        for (int t = 1; t < teams; ++t) sum += slices[4 * at(t, q, k, hf, l) + c];
        ASSERT_EQ(std::memcmp(&sum, &serial[q * H + 4 * i + c], sizeof(float)), 0)
            << "H " << H << " array " << q << " column " << 4 * i + c << ": " << sum << " against "
            << serial[q * H + 4 * i + c];
      }
    }
  }
}

/// LNB_FLAGS (variants flags, slices_flags): expert.cu's ln_bwd_reduce_flagged loads each partial
/// row when its CTA's flag shows this call's epoch, in whatever order the CTAs finish, and adds
/// them in the default stage 2's order. Its warp protocol emulated step by step (a warp per slice,
/// lane l polling the flags of k = l and l + 32, the ballot of the ready ones, the pending mask)
/// for every G from 1 to 8 x 36 and random finishing orders, with stale flags of other epochs
/// among them: every row of the slice is loaded exactly once, the loop ends when the last CTA has
/// published, and the sums equal the default's (slice s: rows s, s + 8, ... from zero) bit for bit.
TEST(LayerNormBackwardVariants, FlaggedStageTwoIsTheDefaultOrder) {
  constexpr int kSlices = 8, kFlagK = 36, kEpoch = 7;
  std::mt19937 rng(15);
  std::uniform_real_distribution<float> val(-3.f, 3.f);
  for (int parts = 1; parts <= kSlices * kFlagK; ++parts)
    for (int draw = 0; draw < 3; ++draw) {
      std::vector<float> part(parts);
      for (float& p : part) p = val(rng);
      // CTA p publishes at poll round finish[p]; until then its flag holds 0 or an earlier epoch.
      std::vector<int> finish(parts);
      for (int& f : finish) f = static_cast<int>(rng() % 40);
      std::vector<unsigned> stale(parts);
      for (unsigned& f : stale) f = rng() % 2 ? 0u : static_cast<unsigned>(kEpoch - 1);
      const int last = *std::max_element(finish.begin(), finish.end());
      for (int slice = 0; slice < kSlices; ++slice) {
        const int nk = parts > slice ? (parts - slice + kSlices - 1) / kSlices : 0;
        ASSERT_LE(nk, kFlagK);
        std::uint64_t pending = nk >= 64 ? ~0ull : (1ull << nk) - 1;
        std::vector<int> loads(kFlagK, 0);
        std::vector<float> held(kFlagK, 0.f);
        int round = 0;
        for (; pending != 0; ++round) {
          ASSERT_LE(round, last) << "parts " << parts << " slice " << slice << ": still polling after the last flag";
          auto flag = [&](int k) {
            const int p = slice + kSlices * k;
            return finish[p] <= round ? static_cast<unsigned>(kEpoch) : stale[p];
          };
          std::uint64_t ready = 0;
          for (int lane = 0; lane < 32; ++lane) {
            const bool r0 = (pending >> lane) & 1 ? flag(lane) == kEpoch : false;
            const bool r1 = lane + 32 < kFlagK && ((pending >> (lane + 32)) & 1) ? flag(lane + 32) == kEpoch : false;
            ready |= std::uint64_t{r0} << lane;
            ready |= std::uint64_t{r1} << (lane + 32);
          }
          for (int k = 0; k < kFlagK; ++k)
            if ((ready >> k) & 1) {
              ASSERT_LT(k, nk) << "parts " << parts << " slice " << slice << ": a row past the slice";
              held[k] = part[slice + kSlices * k];
              ++loads[k];
            }
          pending &= ~ready;
        }
        float flagged = 0.f, serial = 0.f;
        for (int k = 0; k < kFlagK; ++k) {
          EXPECT_EQ(loads[k], k < nk ? 1 : 0) << "parts " << parts << " slice " << slice << " k " << k;
          if (k < nk) flagged += held[k];
        }
        for (int p = slice; p < parts; p += kSlices) serial += part[p];
        ASSERT_EQ(std::memcmp(&flagged, &serial, sizeof(float)), 0) << "parts " << parts << " slice " << slice;
      }
    }
}

/// Hidden draws (odd and long H, up to 300 rows): the golden accepts them and the expert's
/// arithmetic passes there too.
TEST(LayerNormBackwardHidden, DrawsAreValidAndExpertPasses) {
  const Task t = load_pilot("layernorm_backward");
  LoadedImpl ref = load_reference("layernorm_backward");
  const std::vector<Workload> hidden = draw_hidden_workloads(t.def, 12345, 6);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(t, ref, w, 3);
    std::printf("%s: T %lld, H %lld\n", w.uuid.c_str(), static_cast<long long>(c.axis("T")),
                static_cast<long long>(c.axis("H")));
    std::vector<std::pair<const char*, Knobs>> configs = {{"ring2", Knobs{}}};
    for (const auto& vk : variant_knobs()) configs.push_back(vk);
    for (const auto& [name, knobs] : configs) {
      const Verdict r = judge_variant(Variant::kExpert, c, knobs);
      EXPECT_TRUE(r.dx.passed) << name << " " << w.uuid << ": " << r.dx.message;
      EXPECT_TRUE(r.dgamma.passed) << name << " " << w.uuid << ": " << r.dgamma.message;
      EXPECT_TRUE(r.dbeta.passed) << name << " " << w.uuid << ": " << r.dbeta.message;
    }
  }
}

}  // namespace
