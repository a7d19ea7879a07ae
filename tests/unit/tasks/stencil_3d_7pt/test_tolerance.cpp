// stencil_3d_7pt, tolerance checked both ways: variants of the computation emulated on the host as a
// GPU computes them, judged against the fp64 golden under the task's own rule on every check
// workload and on hidden draws. Honest fp32 arithmetic passes: naive.cu's step (a launch per step,
// the six neighbours summed z, y, x, then fmaf(c0, u, c1 * sum)) and a replay of expert.cu's passes
// (overlapped 64 x OY tiles, the Z march in chunks with K warm-up planes, the prefetch ring of input
// planes, register queues, per-thread y columns, parity-buffered shared planes, garbage outside the
// grid), at each pass depth and in
// each variant's configuration; the replay must equal naive bit for bit (the same operations in the
// same order), which pins its indexing. Cheaper or wrong variants fail: fp16 or bf16 intermediate
// grids, bf16 arithmetic, a step too few, a boundary that moves (zero ghost cells), and temporal
// blocking with a halo or a Z warm-up one cell too narrow.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "unit/tasks/task_harness.h"

namespace d2k::tolerance_test {
namespace {

struct Dims {
  std::int64_t Z, Y, X;
  std::int64_t at(std::int64_t z, std::int64_t y, std::int64_t x) const { return (z * Y + y) * X + x; }
  bool interior(std::int64_t z, std::int64_t y, std::int64_t x) const {
    return z > 0 && z < Z - 1 && y > 0 && y < Y - 1 && x > 0 && x < X - 1;
  }
  bool has_interior() const { return Z >= 3 && Y >= 3 && X >= 3; }
};

Dims dims(const Case& c) { return {c.axis("Z"), c.axis("Y"), c.axis("X")}; }

double scalar(const Case& c, const std::string& name) {
  for (const auto& s : c.plan.scalars)
    if (s.name == name) return s.is_float ? s.f : static_cast<double>(s.i);
  throw std::runtime_error("no scalar " + name);
}

std::vector<float> input_grid(const Case& c) {
  const HostTensor& u = c.in("u");
  const auto* p = u.as<float>();
  return std::vector<float>(p, p + u.numel());
}

std::vector<HostTensor> as_outputs(const Case& c, const std::vector<float>& grid) {
  std::vector<HostTensor> outs = c.outputs();
  std::copy(grid.begin(), grid.end(), outs[c.out_index("out")].as<float>());
  return outs;
}

// ---------------------------------------------------------------------------------------------
// Step by step over the whole grid: naive.cu's arithmetic, and the cheaper or wrong variants.

struct Arith {
  enum class Store { kF32, kF16, kBf16 } store = Store::kF32;  ///< the intermediate grids' type
  bool bf16_ops = false;         ///< every operation rounded to bf16
  bool moving_boundary = false;  ///< every cell updated, zero outside the grid (ghost cells)
  std::int64_t missing_steps = 0;
};

std::vector<float> run_steps(const Case& c, const Arith& a) {
  const Dims d = dims(c);
  const float c0 = static_cast<float>(scalar(c, "c0")), c1 = static_cast<float>(scalar(c, "c1"));
  const std::int64_t steps = c.axis("T") - a.missing_steps;
  auto r = [&](float v) { return a.bf16_ops ? bf16_rn(v) : v; };
  std::vector<float> v = input_grid(c), w(v.size());
  for (std::int64_t t = 0; t < steps; ++t) {
    for (std::int64_t z = 0; z < d.Z; ++z)
      for (std::int64_t y = 0; y < d.Y; ++y)
        for (std::int64_t x = 0; x < d.X; ++x) {
          const std::int64_t i = d.at(z, y, x);
          if (!d.interior(z, y, x) && !a.moving_boundary) {
            w[i] = v[i];
            continue;
          }
          auto nb = [&](std::int64_t zz, std::int64_t yy, std::int64_t xx) {
            const bool in = zz >= 0 && zz < d.Z && yy >= 0 && yy < d.Y && xx >= 0 && xx < d.X;
            return in ? v[d.at(zz, yy, xx)] : 0.f;
          };
          float s = r(nb(z - 1, y, x) + nb(z + 1, y, x));
          s = r(s + nb(z, y - 1, x));
          s = r(s + nb(z, y + 1, x));
          s = r(s + nb(z, y, x - 1));
          s = r(s + nb(z, y, x + 1));
          w[i] = a.bf16_ops ? r(r(c0 * v[i]) + r(c1 * s)) : std::fma(c0, v[i], c1 * s);
        }
    if (t + 1 < steps) {
      for (float& e : w) {
        if (a.store == Arith::Store::kF16) e = f16_rn(e);
        if (a.store == Arith::Store::kBf16) e = bf16_rn(e);
      }
    }
    std::swap(v, w);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// expert.cu replayed: jacobi_block<K> CTA by CTA, its threads phase by phase between barriers
// (within a phase no thread reads what another writes, so running them in turn is exact).

/// STENCIL_STREAM: single-step passes as jacobi_stream's warp strips.
struct Strip {
  bool on = false;
  int rows = 4;              ///< STENCIL_STREAM_ROWS
  int ahead = 1;             ///< STENCIL_STREAM_AHEAD
  int zchunk = 64;           ///< planes per chunk (strip_zchunk picks it from the device: any value is replayed)
  bool skip_warmup = false;  ///< wrong: a chunk's first step sees zeros for plane z_begin - 1
};

struct Blocking {
  int max_k = 4;           ///< STENCIL_MAX_K
  int zchunk = 64;         ///< STENCIL_ZCHUNK
  int halo_deficit = 0;    ///< > 0: the written region that many cells wider on each side (halo too narrow)
  int warmup_deficit = 0;  ///< > 0: the march starts that many planes late (Z halo too narrow)
  Strip strip = {};
  int bufs = 2;            ///< STENCIL_BLOCK_BUFS: shared planes per level (2: two barriers per step, 3: one)
  bool drop_barrier = false;  ///< wrong: 2 buffers without a step's first barrier, 3 without the one after the zero fill
};

constexpr int kOX = 64;

/// Shared-memory hazards of a CTA's replay: a word written by one thread and read or written by
/// another between the same two barriers (what racecheck reports on the GPU).
struct Hazards {
  std::vector<int> w_at, w_by, r_at, r_by;  ///< interval and thread of the last write / read (-2: several readers)
  int interval = 0;
  std::int64_t count = 0;
  explicit Hazards(std::size_t words) : w_at(words, -1), w_by(words, -1), r_at(words, -1), r_by(words, -1) {}
  void read(std::size_t i, int t) {
    if (w_at[i] == interval && w_by[i] != t) ++count;
    if (r_at[i] == interval && r_by[i] != t)
      r_by[i] = -2;
    else
      r_at[i] = interval, r_by[i] = t;
  }
  void write(std::size_t i, int t) {
    if ((w_at[i] == interval && w_by[i] != t) || (r_at[i] == interval && r_by[i] != t)) ++count;
    w_at[i] = interval, w_by[i] = t;
  }
  void barrier() { ++interval; }
};

void replay_pass(int K, const Blocking& b, const Dims& d, float c0, float c1, const std::vector<float>& src,
                 std::vector<float>& dst, std::int64_t& hazards) {
  const int OY = K == 1 ? 16 : 32, P = K == 1 ? 4 : 8, IX = kOX - 2 * K, IY = OY - 2 * K;
  const int A = K == 1 ? 3 : K == 2 ? 2 : 1;  // input planes in flight (kAhead)
  // (ReplayFollowsTheExpertsGeometry checks these against expert.cu's lines)
  const int rows = OY / P, threads = kOX * rows, plane_floats = kOX * OY;
  const int Z = static_cast<int>(d.Z), Y = static_cast<int>(d.Y), X = static_cast<int>(d.X);
  const std::int64_t plane = d.Y * d.X;
  const int bxs = (X + IX - 1) / IX, bys = (Y + IY - 1) / IY, bzs = (Z + b.zchunk - 1) / b.zchunk;
  for (int bz = 0; bz < bzs; ++bz)
    for (int by = 0; by < bys; ++by)
      for (int bx = 0; bx < bxs; ++bx) {
        const int z_begin = bz * b.zchunk, z_end = std::min(Z, z_begin + b.zchunk);
        const std::size_t smem_words = static_cast<std::size_t>(b.bufs * K * plane_floats);
        std::vector<float> smem(smem_words, 0.f);
        Hazards hz(smem_words);
        for (int t = 0; t < threads; ++t)  // the zero fill
          for (std::size_t i = static_cast<std::size_t>(t); i < smem_words; i += static_cast<std::size_t>(threads)) hz.write(i, t);
        if (b.bufs == 3 && !b.drop_barrier) hz.barrier();
        // per thread: masks, column offset, queues [K][P], prefetch [P]
        std::vector<unsigned> in_grid(threads), fixed(threads), owned(threads);
        std::vector<std::int64_t> col(threads);
        std::vector<float> q_prev(static_cast<std::size_t>(threads * K * P), 0.f), q_cur(q_prev), ahead(threads * A * P);
        auto Q = [&](std::vector<float>& q, int t, int j, int i) -> float& { return q[(t * K + j) * P + i]; };
        for (int t = 0; t < threads; ++t) {
          const int tx = t % kOX, ly0 = (t / kOX) * P;
          const int gx = bx * IX - K + tx, gy0 = by * IY - K + ly0;
          col[t] = static_cast<std::int64_t>(gy0) * X + gx;
          const int lo = K - b.halo_deficit, hi_x = kOX - K + b.halo_deficit, hi_y = OY - K + b.halo_deficit;
          const bool x_in = gx >= 0 && gx < X, x_fixed = gx <= 0 || gx >= X - 1, x_owned = tx >= lo && tx < hi_x;
          in_grid[t] = fixed[t] = owned[t] = 0;
          for (int i = 0; i < P; ++i) {
            const int gy = gy0 + i, ly = ly0 + i;
            if (x_in && gy >= 0 && gy < Y) in_grid[t] |= 1u << i;
            if (x_fixed || gy <= 0 || gy >= Y - 1) fixed[t] |= 1u << i;
            if (x_owned && ly >= lo && ly < hi_y) owned[t] |= 1u << i;
          }
          owned[t] &= in_grid[t];
        }
        auto load = [&](int t, int z, float* v) {
          for (int i = 0; i < P; ++i)
            v[i] = (z >= 0 && z < Z && ((in_grid[t] >> i) & 1u)) ? src[z * plane + col[t] + static_cast<std::int64_t>(i) * X]
                                                                   : 0.f;
        };
        const int s_first = z_begin - K + b.warmup_deficit, s_last = z_end - 1 + K;
        // The prefetch ring: slot k of a thread holds plane s_first + k + m * A.
        for (int t = 0; t < threads; ++t)
          for (int k = 0; k < A; ++k)
            if (s_first + k <= s_last) load(t, s_first + k, &ahead[(t * A + k) * P]);
        std::vector<float> up(static_cast<std::size_t>(threads * P));
        for (int s = s_first; s <= s_last; ++s) {
          const int k = (s - s_first) % A;
          const int wbuf = b.bufs == 2 ? (s & 1) : (s - s_first) % b.bufs;
          const int rbuf = b.bufs == 2 ? (wbuf ^ 1) : (wbuf + b.bufs - 1) % b.bufs;
          if (b.bufs == 2 && !b.drop_barrier) hz.barrier();
          for (int t = 0; t < threads; ++t) {  // between the two barriers
            const int tx = t % kOX, ly0 = (t / kOX) * P;
            for (int i = 0; i < P; ++i) up[t * P + i] = ahead[(t * A + k) * P + i];
            if (s + A <= s_last) load(t, s + A, &ahead[(t * A + k) * P]);
            for (int i = 0; i < P; ++i) {
              const std::size_t w = static_cast<std::size_t>(wbuf * plane_floats + (ly0 + i) * kOX + tx);
              smem[w] = up[t * P + i];
              hz.write(w, t);
            }
          }
          hz.barrier();
          for (int t = 0; t < threads; ++t) {  // after the second barrier: every level
            const int tx = t % kOX, ly0 = (t / kOX) * P;
            const int xm = std::max(tx - 1, 0), xp = std::min(tx + 1, kOX - 1);
            const int row_m = std::max(ly0 - 1, 0), row_p = std::min(ly0 + P, OY - 1);
            float* u = &up[t * P];
            for (int j = 1; j <= K; ++j) {
              const int cbase = ((j - 1) * b.bufs + rbuf) * plane_floats;
              const float* cpl = &smem[static_cast<std::size_t>(cbase)];
              auto touch = [&](int word) { hz.read(static_cast<std::size_t>(cbase + word), t); };
              touch(row_m * kOX + tx), touch(row_p * kOX + tx);
              for (int i = 0; i < P; ++i) touch((ly0 + i) * kOX + xm), touch((ly0 + i) * kOX + xp);
              const int z = s - j;
              const bool z_fixed = z <= 0 || z >= Z - 1;
              std::vector<float> res(P);
              for (int i = 0; i < P; ++i) {
                const float ctr = Q(q_cur, t, j - 1, i);
                const float ym = i == 0 ? cpl[row_m * kOX + tx] : Q(q_cur, t, j - 1, i - 1);
                const float yp = i == P - 1 ? cpl[row_p * kOX + tx] : Q(q_cur, t, j - 1, i + 1);
                const float* row = cpl + (ly0 + i) * kOX;
                const float sum = ((((Q(q_prev, t, j - 1, i) + u[i]) + ym) + yp) + row[xm]) + row[xp];
                res[i] = (z_fixed || ((fixed[t] >> i) & 1u)) ? ctr : std::fma(c0, ctr, c1 * sum);
              }
              for (int i = 0; i < P; ++i) {
                Q(q_prev, t, j - 1, i) = Q(q_cur, t, j - 1, i);
                Q(q_cur, t, j - 1, i) = u[i];
                u[i] = res[i];
              }
              if (j < K) {
                for (int i = 0; i < P; ++i) {
                  const std::size_t w = static_cast<std::size_t>((j * b.bufs + wbuf) * plane_floats + (ly0 + i) * kOX + tx);
                  smem[w] = res[i];
                  hz.write(w, t);
                }
              } else if (z >= z_begin && z < z_end) {
                for (int i = 0; i < P; ++i)
                  if ((owned[t] >> i) & 1u) dst[z * plane + col[t] + static_cast<std::int64_t>(i) * X] = res[i];
              }
            }
          }
        }
        hazards += hz.count;
      }
}

// jacobi_stream replayed warp by warp (warps share nothing; the lanes of a warp exchange values
// only through the shuffles of a step, replayed as reads of the neighbouring lane's registers).
struct StripPlane {
  std::vector<float> c;  ///< [rows][4]
  float hm[4], hp[4], xh;
};

void replay_strip_pass(const Strip& g, const Dims& d, float c0, float c1, const std::vector<float>& src,
                       std::vector<float>& dst) {
  constexpr int kSX = 128, kWarps = 8, kLanes = 32;
  const int P = g.rows, A = g.ahead;
  const int Z = static_cast<int>(d.Z), Y = static_cast<int>(d.Y), X = static_cast<int>(d.X);
  auto at = [&](int z, int y, int x) {
    return z >= 0 && z < Z && y >= 0 && y < Y && x >= 0 && x < X ? src[d.at(z, y, x)] : 0.f;
  };
  const int bxs = (X + kSX - 1) / kSX, warps_y = (Y + kWarps * P - 1) / (kWarps * P) * kWarps;
  const int bzs = (Z + g.zchunk - 1) / g.zchunk;
  for (int bz = 0; bz < bzs; ++bz)
    for (int wy = 0; wy < warps_y; ++wy)
      for (int bx = 0; bx < bxs; ++bx) {
        const int x0 = bx * kSX, y0 = wy * P, z_begin = bz * g.zchunk, z_end = std::min(Z, z_begin + g.zchunk);
        auto load = [&](int lane, int z, StripPlane& p) {
          const int x = x0 + 4 * lane;
          p.c.assign(static_cast<std::size_t>(4 * P), 0.f);
          for (int i = 0; i < P; ++i)
            for (int e = 0; e < 4; ++e) p.c[4 * i + e] = at(z, y0 + i, x + e);
          for (int e = 0; e < 4; ++e) p.hm[e] = at(z, y0 - 1, x + e), p.hp[e] = at(z, y0 + P, x + e);
          const int r = lane & 15;
          p.xh = r < P ? at(z, y0 + r, lane < 16 ? x0 - 1 : x0 + kSX) : 0.f;
        };
        std::vector<StripPlane> cur(kLanes), ring(static_cast<std::size_t>(kLanes * A));
        std::vector<std::vector<float>> prev(kLanes);
        for (int lane = 0; lane < kLanes; ++lane) {
          load(lane, g.skip_warmup ? -1 : z_begin - 1, cur[lane]);
          prev[lane] = cur[lane].c;
          load(lane, z_begin, cur[lane]);
          for (int k = 0; k < A; ++k)
            if (z_begin + 1 + k <= z_end) load(lane, z_begin + 1 + k, ring[lane * A + k]);
        }
        for (int s = z_begin; s < z_end; ++s) {
          const int k = (s - z_begin) % A;
          const bool z_fixed = s == 0 || s == Z - 1;
          std::vector<std::vector<float>> res(kLanes, std::vector<float>(static_cast<std::size_t>(4 * P)));
          for (int lane = 0; lane < kLanes; ++lane) {
            const StripPlane& cu = cur[lane];
            const std::vector<float>& next = ring[lane * A + k].c;
            const int x = x0 + 4 * lane;
            for (int i = 0; i < P; ++i) {
              const float left = lane == 0 ? cur[i].xh : cur[lane - 1].c[4 * i + 3];
              const float right = lane == kLanes - 1 ? cur[16 + i].xh : cur[lane + 1].c[4 * i];
              for (int e = 0; e < 4; ++e) {
                const float ctr = cu.c[4 * i + e];
                const float xm = e == 0 ? left : cu.c[4 * i + e - 1];
                const float xp = e == 3 ? right : cu.c[4 * i + e + 1];
                const float ym = i == 0 ? cu.hm[e] : cu.c[4 * (i - 1) + e];
                const float yp = i == P - 1 ? cu.hp[e] : cu.c[4 * (i + 1) + e];
                const float sum = ((((prev[lane][4 * i + e] + next[4 * i + e]) + ym) + yp) + xm) + xp;
                const int gx = x + e, gy = y0 + i;
                const bool fixed = gx < X && gy < Y && (gx == 0 || gx == X - 1 || gy == 0 || gy == Y - 1);
                res[lane][4 * i + e] = z_fixed || fixed ? ctr : std::fma(c0, ctr, c1 * sum);
              }
            }
          }
          for (int lane = 0; lane < kLanes; ++lane) {
            const int x = x0 + 4 * lane;
            for (int i = 0; i < P && y0 + i < Y; ++i)
              for (int e = 0; e < 4; ++e)
                if (x + e < X) dst[d.at(s, y0 + i, x + e)] = res[lane][4 * i + e];
            prev[lane] = cur[lane].c;
            cur[lane] = ring[lane * A + k];
            if (s + 1 + A <= z_end) load(lane, s + 1 + A, ring[lane * A + k]);
          }
        }
      }
}

/// expert.cu's passes_for: as many passes of max_k as fit, then 2 and 1.
std::vector<int> passes_for(std::int64_t T, int max_k) {
  std::vector<int> p;
  for (int k = max_k; k >= 1; k /= 2)
    for (; T >= k; T -= k) p.push_back(k);
  return p;
}

std::vector<float> run_expert(const Case& c, const Blocking& b, std::int64_t* hazards = nullptr) {
  std::int64_t hz = 0;
  const Dims d = dims(c);
  const float c0 = static_cast<float>(scalar(c, "c0")), c1 = static_cast<float>(scalar(c, "c1"));
  std::vector<float> src = input_grid(c);
  // Every cell of dst is written by some CTA; poison first, so an unwritten cell shows as NaN.
  std::vector<float> dst(src.size());
  for (int k : passes_for(c.axis("T"), b.max_k)) {
    std::fill(dst.begin(), dst.end(), std::nanf(""));
    if (k == 1 && b.strip.on)
      replay_strip_pass(b.strip, d, c0, c1, src, dst);
    else
      replay_pass(k, b, d, c0, c1, src, dst, hz);
    std::swap(src, dst);
  }
  if (hazards != nullptr) *hazards = hz;
  return src;
}

// ---------------------------------------------------------------------------------------------

const Task& task() {
  static const Task t = load_pilot("stencil_3d_7pt");
  return t;
}

struct Honest {
  const char* name;
  Blocking blocking;
};
const std::vector<Honest>& expert_configs() {
  static const std::vector<Honest> v = {
      {"expert:block (passes of 4, 2, 1; single steps in the block kernel)", {}},
      {"passes of 1 in the block kernel", {1}},
      {"passes of 2, 1 in the block kernel", {2}},
      {"block kernel, chunk 128", {4, 128}},
      {"expert:block_1bar (3 shared planes per level, one barrier per step)", {4, 64, 0, 0, {}, 3}},
      {"3 shared planes per level, passes of 2 and 1, chunk 5", {2, 5, 0, 0, {}, 3}},
      // STENCIL_STREAM: the strip kernel for single steps, at the chunk lengths strip_zchunk can pick
      // (one wave on the H200: 128 planes at 512^3; 4 or fewer on small grids) and the variants' depths
      {"expert (passes of 4, 2, 1; single steps as strips: P 4, ring 1, chunk 64)", {4, 64, 0, 0, {true, 4, 1, 64}}},
      {"expert:single (passes of 1 as strips)", {1, 64, 0, 0, {true, 4, 1, 64}}},
      {"expert:k2 (passes of 2, 1)", {2, 64, 0, 0, {true, 4, 1, 64}}},
      {"expert:zchunk128", {4, 128, 0, 0, {true, 4, 1, 64}}},
      {"strip P 4, ring 2, chunk 5", {4, 64, 0, 0, {true, 4, 2, 5}}},
      {"expert:strip_p8 (P 8, ring 1, chunk 64)", {4, 64, 0, 0, {true, 8, 1, 64}}},
      {"expert:strip_single (passes of 1, chunk 4)", {1, 64, 0, 0, {true, 4, 1, 4}}},
      {"strip P 8, ring 3, chunk 1", {1, 64, 0, 0, {true, 8, 3, 1}}},
  };
  return v;
}

// The replay hard-codes expert.cu's geometry (tile, cells per thread, planes in flight, Z chunk,
// pass depths, variants): if expert.cu changes one, this names the line the replay must follow.
TEST(ToleranceStencil3d7pt, ReplayFollowsTheExpertsGeometry) {
  std::ifstream f(std::filesystem::path(D2K_SOURCE_DIR) / "dataset/stencil_3d_7pt/expert.cu");
  ASSERT_TRUE(f.good());
  std::stringstream text;
  text << f.rdbuf();
  for (const char* line : {"constexpr int kOX = 64;", "static constexpr int kOY = K == 1 ? 16 : 32;",
                           "static constexpr int kPPT = K == 1 ? 4 : 8;",
                           "static constexpr int kAhead = K == 1 ? 3 : K == 2 ? 2 : 1;", "#define STENCIL_MAX_K 4",
                           "#define STENCIL_ZCHUNK 64", "%VARIANT% single -DSTENCIL_MAX_K=1",
                           "%VARIANT% k2 -DSTENCIL_MAX_K=2", "%VARIANT% zchunk128 -DSTENCIL_ZCHUNK=128",
                           "const int s_first = z_begin - K, s_last = z_end - 1 + K;",
                           "for (int k = STENCIL_MAX_K; k >= 1; k /= 2)", "constexpr int kSX = 128;",
                           "constexpr int kWarps = 8;", "#define STENCIL_STREAM_ROWS 4", "#define STENCIL_BLOCK_BUFS 2",
                           "const int wbuf = kBufs == 2 ? (s & 1) : (s - s_first) % kBufs;",
                           "if constexpr (kBufs == 3) __syncthreads();", "#define STENCIL_STREAM_AHEAD 1",
                           "%VARIANT% block -DSTENCIL_STREAM=0", "#define STENCIL_STREAM 1", "%VARIANT% strip_p8 -DSTENCIL_STREAM=1 -DSTENCIL_STREAM_ROWS=8",
                           "layers = std::min<int64_t>({layers, (s.Z + 3) / 4, 65535});",
                           "if (s + 1 + kAhead <= z_end) load_plane<kVec>(src, s + 1 + kAhead, Z, Y, X, plane, l, ring[k]);"})
    EXPECT_NE(text.str().find(line), std::string::npos) << "expert.cu no longer has: " << line;
}

TEST(ToleranceStencil3d7pt, CheckWorkloadsCoverTheEdges) {
  const std::vector<Workload> checks = check_workloads(task());
  ASSERT_EQ(checks.size(), 12u);
  bool single_cell = false, no_interior = false, x_one = false, odd_multi_tile = false, z_chunks = false, deep = false;
  for (const Workload& w : checks) {
    const std::int64_t Z = w.axes.at("Z"), Y = w.axes.at("Y"), X = w.axes.at("X"), T = w.axes.at("T");
    single_cell |= Z * Y * X == 1;
    no_interior |= Z >= 2 && Y >= 2 && X >= 2 && std::min({Z, Y, X}) < 3;
    x_one |= X == 1 && Y > 1;
    odd_multi_tile |= X % 2 == 1 && X > 64 && Y > 24;
    z_chunks |= Z > 64;
    deep |= T >= 8;
  }
  EXPECT_TRUE(single_cell && no_interior && x_one && odd_multi_tile && z_chunks && deep);
}

// The expert's replay performs naive's operations in naive's order at every cell it writes, so the
// two agree bit for bit; any indexing slip (a wrong neighbour, a stale plane, an unwritten cell)
// breaks that long before it breaks the tolerance.
TEST(ToleranceStencil3d7pt, ExpertReplayEqualsNaiveBitForBit) {
  const LoadedImpl ref = load_reference("stencil_3d_7pt");
  for (const Workload& w : check_workloads(task(), {shape("tiles-70x50x200-T7", {{"Z", 70}, {"Y", 50}, {"X", 200}, {"T", 7}})})) {
    const Case c = make_case(task(), ref, w, 0x5EED);
    const std::vector<float> naive = run_steps(c, {});
    for (const Honest& h : expert_configs()) {
      const std::vector<float> e = run_expert(c, h.blocking);
      std::int64_t differ = 0;
      for (std::size_t i = 0; i < e.size(); ++i) differ += std::memcmp(&e[i], &naive[i], sizeof(float)) != 0;
      EXPECT_EQ(differ, 0) << h.name << " at " << w.uuid;
    }
  }
}

// The replay tracks shared-memory hazards between barriers (a word one thread writes and another
// reads or writes in the same interval): none with two planes per level and two barriers per step
// or three planes and one barrier, at passes of 4, 2 and 1; a barrier left out shows up.
TEST(ToleranceStencil3d7pt, SharedPlanesHaveNoHazards) {
  const LoadedImpl ref = load_reference("stencil_3d_7pt");
  const Case c = make_case(task(), ref, shape("tiles-30x40x140-T7", {{"Z", 30}, {"Y", 40}, {"X", 140}, {"T", 7}}), 9);
  for (int bufs : {2, 3}) {
    Blocking b;
    b.bufs = bufs;
    std::int64_t hazards = -1;
    run_expert(c, b, &hazards);
    EXPECT_EQ(hazards, 0) << bufs << " planes per level";
    b.drop_barrier = true;
    run_expert(c, b, &hazards);
    EXPECT_GT(hazards, 0) << bufs << " planes per level, a barrier left out";
  }
}

TEST(ToleranceStencil3d7pt, HonestPassAndCheaperOrWrongFail) {
  const LoadedImpl ref = load_reference("stencil_3d_7pt");
  for (std::uint64_t seed : {0x5EEDull, 0xC0FFEEull}) {
    for (const Workload& w : check_workloads(task())) {
      const Case c = make_case(task(), ref, w, seed);
      const Dims d = dims(c);
      const std::int64_t T = c.axis("T");
      const double atol = c.plan.outputs.at(0).cmp.atol;
      // honest
      const OutputsVerdict naive = judge(c, as_outputs(c, run_steps(c, {})));
      EXPECT_EQ(naive.status, Status::PASSED) << "naive at " << w.uuid << ": " << naive.message;
      if (seed == 0x5EED)
        std::printf("%-46s naive max|err| %.3g = %.3f atol\n", w.uuid.c_str(), naive.checks.at(0).max_abs_error,
                    naive.checks.at(0).max_abs_error / atol);
      for (const Honest& h : expert_configs()) {
        const OutputsVerdict e = judge(c, as_outputs(c, run_expert(c, h.blocking)));
        EXPECT_EQ(e.status, Status::PASSED) << h.name << " at " << w.uuid << ": " << e.message;
      }
      // cheaper or wrong
      struct Wrong {
        const char* name;
        std::vector<float> grid;
        bool can_show;
      };
      Arith f16, bf16s, bf16o, boundary, short_by_one;
      f16.store = Arith::Store::kF16;
      bf16s.store = Arith::Store::kBf16;
      bf16o.bf16_ops = true;
      boundary.moving_boundary = true;
      short_by_one.missing_steps = 1;
      const bool tiles_inside = d.has_interior() && d.X > 66;
      const std::vector<Wrong> wrong = {
          {"fp16 intermediate grids", run_steps(c, f16), d.has_interior() && T >= 2},
          {"bf16 intermediate grids", run_steps(c, bf16s), d.has_interior() && T >= 2},
          {"bf16 arithmetic", run_steps(c, bf16o), d.has_interior()},
          {"moving boundary (zero ghost cells)", run_steps(c, boundary), true},
          {"a step too few", run_steps(c, short_by_one), d.has_interior()},
          {"halo one cell too narrow", run_expert(c, {4, 64, 1}), tiles_inside},
          {"Z warm-up one plane short", run_expert(c, {4, 64, 0, 1}), d.has_interior() && d.Z > 65},
          {"strip chunks without the plane below", run_expert(c, {1, 64, 0, 0, {true, 4, 1, 4, true}}),
           d.has_interior() && d.Z > 5},
      };
      for (const Wrong& x : wrong) {
        if (!x.can_show) continue;
        const OutputsVerdict v = judge(c, as_outputs(c, x.grid));
        EXPECT_EQ(v.status, Status::INCORRECT_NUMERICAL) << x.name << " passes at " << w.uuid;
      }
    }
  }
}

// Bench workloads are judged against naive's outputs under the workload's atol (T * 2^-19): the
// expert must pass there, fp16 intermediate grids must not, at a bench-like size and depth.
TEST(ToleranceStencil3d7pt, AgainstNaiveUnderTheBenchRule) {
  const LoadedImpl ref = load_reference("stencil_3d_7pt");
  Workload w = shape("bench-like-40x96x150-T8", {{"Z", 40}, {"Y", 96}, {"X", 150}, {"T", 8}});
  w.scalars = {{"c0", 1.0 / 7}, {"c1", 1.0 / 7}};
  Case c = make_case(task(), ref, w, 11);
  c.plan.outputs.at(0).cmp.atol = 8 * std::ldexp(1.0, -19);
  const OutputsVerdict vs_golden = judge(c, as_outputs(c, run_steps(c, {})));
  EXPECT_EQ(vs_golden.status, Status::PASSED) << vs_golden.message;
  c.expected = as_outputs(c, run_steps(c, {}));
  EXPECT_EQ(judge(c, as_outputs(c, run_expert(c, {}))).status, Status::PASSED);
  Arith f16;
  f16.store = Arith::Store::kF16;
  EXPECT_EQ(judge(c, as_outputs(c, run_steps(c, f16))).status, Status::INCORRECT_NUMERICAL);
}

// The error analysis in numbers: over T = 1..16 the honest fp32 error stays under T * 2^-21 (a
// quarter of the rule) and the fp16-staged error above the rule at every T >= 2.
TEST(ToleranceStencil3d7pt, ErrorGrowsAtMostLinearlyInT) {
  const LoadedImpl ref = load_reference("stencil_3d_7pt");
  for (std::int64_t T : {1, 2, 4, 8, 16}) {
    const Case c = make_case(task(), ref, shape("depth", {{"Z", 20}, {"Y", 24}, {"X", 40}, {"T", T}}), 5);
    const double atol = static_cast<double>(T) * std::ldexp(1.0, -19);
    const OutputsVerdict honest = judge(c, as_outputs(c, run_steps(c, {})));
    const double err = honest.checks.at(0).max_abs_error;
    std::printf("T %2lld: honest max|err| %.3g (%.3f of T * 2^-19)\n", static_cast<long long>(T), err, err / atol);
    EXPECT_LT(err, atol / 4) << "T = " << T;
    if (T >= 2) {
      Arith f16;
      f16.store = Arith::Store::kF16;
      const OutputsVerdict cheap = judge(c, as_outputs(c, run_steps(c, f16)));
      EXPECT_GT(cheap.checks.at(0).max_abs_error, atol) << "T = " << T;
    }
  }
}

// Hidden draws (awkward Z, Y, X within hidden_max, sizes below 3 included; T up to 6): the golden
// accepts them and naive and every expert configuration pass there, bit for bit with each other.
TEST(ToleranceStencil3d7pt, HiddenDrawsPassHonestArithmetic) {
  const LoadedImpl ref = load_reference("stencil_3d_7pt");
  const std::vector<Workload> hidden = draw_hidden_workloads(task().def, 424242, 8);
  ASSERT_FALSE(hidden.empty());
  for (const Workload& w : hidden) {
    const Case c = make_case(task(), ref, w, 3);
    std::printf("%s: Z %lld Y %lld X %lld T %lld\n", w.uuid.c_str(), static_cast<long long>(c.axis("Z")),
                static_cast<long long>(c.axis("Y")), static_cast<long long>(c.axis("X")),
                static_cast<long long>(c.axis("T")));
    const std::vector<float> naive = run_steps(c, {});
    EXPECT_EQ(judge(c, as_outputs(c, naive)).status, Status::PASSED) << "naive at " << w.uuid;
    for (const Honest& h : expert_configs()) {
      const std::vector<float> e = run_expert(c, h.blocking);
      EXPECT_EQ(judge(c, as_outputs(c, e)).status, Status::PASSED) << h.name << " at " << w.uuid;
      EXPECT_EQ(std::memcmp(e.data(), naive.data(), e.size() * sizeof(float)), 0) << h.name << " at " << w.uuid;
    }
  }
}

}  // namespace
}  // namespace d2k::tolerance_test
