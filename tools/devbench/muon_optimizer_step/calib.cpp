// Numerics calibration for muon_optimizer_step (CPU only): how far a bf16 Newton-Schulz lands
// from the fp64 golden, and how far plausible wrong implementations land. Prints rel_l2 of the
// update. Build: g++ -O2 -std=c++20 calib.cpp -o calib
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

enum class Round { none, bf16, fp16 };
static double rnd(double x, Round r) {
  if (r == Round::none) return x;
  float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  int drop = r == Round::bf16 ? 16 : 13;  // fp16 mantissa (10 bits) emulated, no range limits
  uint32_t half = (1u << (drop - 1)) - 1 + ((u >> drop) & 1);
  u = (u + half) & ~((1u << drop) - 1);
  std::memcpy(&f, &u, 4);
  return f;
}

struct Variant {
  const char* name;
  Round r;
  int iters;
  bool nesterov;
  bool scale;
};

// update for one matrix M x N
static std::vector<double> muon(const std::vector<double>& g, const std::vector<double>& m, int M,
                                int N, const Variant& v) {
  const double beta = 0.95, eps = 1e-7, a = 3.4445, b = -4.7750, c = 2.0315;
  size_t n = size_t(M) * N;
  std::vector<double> u(n);
  double ss = 0;
  for (size_t i = 0; i < n; ++i) {
    double mo = beta * m[i] + g[i];
    u[i] = v.nesterov ? g[i] + beta * mo : mo;
    ss += u[i] * u[i];
  }
  double inv = 1.0 / (std::sqrt(ss) + eps);
  bool tall = M > N;
  int s = tall ? N : M, l = tall ? M : N;
  std::vector<double> X(size_t(s) * l), A(size_t(s) * s), A2(size_t(s) * s), B(size_t(s) * s),
      Y(size_t(s) * l);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double x = rnd(u[size_t(i) * N + j] * inv, v.r);
      if (tall) X[size_t(j) * l + i] = x; else X[size_t(i) * l + j] = x;
    }
  for (int it = 0; it < v.iters; ++it) {
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < s; ++j) {
        double acc = 0;
        for (int k = 0; k < l; ++k) acc += X[size_t(i) * l + k] * X[size_t(j) * l + k];
        A[size_t(i) * s + j] = rnd(acc, v.r);
      }
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < s; ++j) {
        double acc = 0;
        for (int k = 0; k < s; ++k) acc += A[size_t(i) * s + k] * A[size_t(k) * s + j];
        B[size_t(i) * s + j] = rnd(b * A[size_t(i) * s + j] + c * acc, v.r);
      }
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < l; ++j) {
        double acc = 0;
        for (int k = 0; k < s; ++k) acc += B[size_t(i) * s + k] * X[size_t(k) * l + j];
        Y[size_t(i) * l + j] = rnd(a * X[size_t(i) * l + j] + acc, v.r);
      }
    X.swap(Y);
  }
  double sc = v.scale ? std::sqrt(std::max(1.0, double(M) / N)) : 1.0;
  std::vector<double> out(n);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      out[size_t(i) * N + j] = rnd(sc * (tall ? X[size_t(j) * l + i] : X[size_t(i) * l + j]), v.r);
  return out;
}

int main() {
  const int shapes[][2] = {{127, 300}, {192, 192}, {264, 136}, {96, 520}, {256, 256}};
  const Variant vs[] = {{"fp64 (golden)", Round::none, 5, true, true},
                        {"bf16 (correct)", Round::bf16, 5, true, true},
                        {"fp16 storage", Round::fp16, 5, true, true},
                        {"bf16 4 iters", Round::bf16, 4, true, true},
                        {"bf16 6 iters", Round::bf16, 6, true, true},
                        {"bf16 no nesterov", Round::bf16, 5, false, true},
                        {"bf16 no sqrt scale", Round::bf16, 5, true, false}};
  for (auto& sh : shapes) {
    int M = sh[0], N = sh[1];
    std::mt19937_64 rng(1234 + M * 7 + N);
    std::normal_distribution<double> nd(0, 1);
    std::vector<double> g(size_t(M) * N), m(size_t(M) * N);
    for (auto& x : g) x = rnd(nd(rng), Round::bf16);
    for (auto& x : m) x = static_cast<float>(nd(rng));
    auto gold = muon(g, m, M, N, vs[0]);
    double en = 0;
    for (double x : gold) en += x * x;
    std::printf("M=%d N=%d  rms(update)=%.4g\n", M, N, std::sqrt(en / gold.size()));
    for (size_t k = 1; k < sizeof(vs) / sizeof(vs[0]); ++k) {
      auto o = muon(g, m, M, N, vs[k]);
      double d = 0, mx = 0;
      for (size_t i = 0; i < o.size(); ++i) {
        d += (o[i] - gold[i]) * (o[i] - gold[i]);
        mx = std::max(mx, std::fabs(o[i] - gold[i]));
      }
      std::printf("  %-20s rel_l2 %.4e  max_abs %.3e\n", vs[k].name, std::sqrt(d / en), mx);
    }
  }
}
