// hash_join devbench: loads the task's implementations (shared libraries with the d2k ABI),
// checks them against the generator's own ground truth and the host reference, and times them
// with cold L2. A development tool until the d2k evaluator exists; not part of the harness.
//
//   hj_devbench IMPL_DIR [--checks-only] [--filter SUBSTR] [--max-samples N] [--impls a,b,...]
//
// IMPL_DIR holds reference.so (host), naive.so, expert.so and optionally expert_*.so variants
// and library.so. Inputs are generated on the host with a fixed seed, the same distributions as
// definition.json: build keys = low + perm(i) for a pseudo-random permutation of [low, high)
// (distinct keys; dense when high - low == R), build/probe payloads uniform over int32, probe keys
// drawn from the build keys with probability match_rate (0.5) and otherwise absent keys of the
// probe domain. The generator knows every expected (build payload, probe payload) pair, so
// correctness at every size is checked against that ground truth: count exactly and the multiset
// through two independent 64-bit order-free hashes (plus a full sorted comparison on check sizes).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "d2k/solution.h"

#define CK(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess)                                                                    \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + " " + \
                               #call + ": " + cudaGetErrorString(e_));                        \
  } while (0)

namespace {

constexpr double kCopyBandwidth = 4.3e12;  // measured device-to-device copy, bytes read + written
constexpr double kMatchRate = 0.5;

// ---- RAII --------------------------------------------------------------------------------------

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    if (n) CK(cudaMalloc(&p, n));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  template <class T>
  T* as(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(p) + byte_offset);
  }
};

struct Event {
  cudaEvent_t e{};
  Event() { CK(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
};

struct Stream {
  cudaStream_t s{};
  Stream() { CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

// ---- Implementations ---------------------------------------------------------------------------

using AbiFn = uint32_t (*)();
using WsFn = int32_t (*)(const d2k_args*, uint64_t*);
using RunFn = int32_t (*)(const d2k_args*);

struct Impl {
  std::string name;
  bool host = false;
  void* handle = nullptr;
  WsFn ws = nullptr;
  RunFn run = nullptr;
};

Impl load_impl(const std::filesystem::path& p) {
  Impl im;
  im.name = p.stem().string();
  im.host = im.name == "reference";
  im.handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!im.handle) throw std::runtime_error(std::string("dlopen ") + p.string() + ": " + dlerror());
  auto abi = reinterpret_cast<AbiFn>(dlsym(im.handle, "d2k_abi_version"));
  im.ws = reinterpret_cast<WsFn>(dlsym(im.handle, "d2k_workspace_size"));
  im.run = reinterpret_cast<RunFn>(dlsym(im.handle, "d2k_run"));
  if (!abi || !im.ws || !im.run) throw std::runtime_error(p.string() + ": missing an ABI entry point");
  if (abi() != D2K_ABI_VERSION) throw std::runtime_error(p.string() + ": ABI version mismatch");
  return im;
}

// ---- Generation --------------------------------------------------------------------------------

inline uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t rnd(uint64_t seed, uint64_t stream, uint64_t i) {
  return splitmix(seed ^ (stream * 0xD1B54A32D192ED03ull) ^ splitmix(i));
}

/// Bijection of [0, n) (cycle-walking Feistel network over the next even number of bits).
struct Perm {
  uint64_t n = 1, half = 1, hm = 1, key[4]{};
  Perm(uint64_t n_, uint64_t seed) : n(n_) {
    uint64_t m = 2;
    while ((1ull << m) < n) ++m;
    if (m & 1) ++m;
    half = m / 2;
    hm = (1ull << half) - 1;
    for (int r = 0; r < 4; ++r) key[r] = splitmix(seed + 77 * r);
  }
  uint64_t round(uint64_t x) const {
    uint64_t l = x >> half, r = x & hm;
    for (int k = 0; k < 4; ++k) {
      const uint64_t nl = r;
      r = l ^ (splitmix(r ^ key[k]) & hm);
      l = nl;
    }
    return (l << half) | r;
  }
  uint64_t operator()(uint64_t i) const {
    uint64_t x = i;
    do x = round(x);
    while (x >= n);
    return x;
  }
};

inline uint64_t pair_bits(int32_t b, int32_t p) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32) | static_cast<uint32_t>(p);
}
__host__ __device__ inline uint64_t mix_a(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
__host__ __device__ inline uint64_t mix_b(uint64_t x) {
  x = (x ^ 0x5851F42D4C957F2Dull) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}

struct Workload {
  std::string name;
  bool bench;
  int64_t r, s;
  int64_t blow, bhigh;  // build key domain [blow, bhigh)
  int64_t plow, phigh;  // probe key domain [plow, phigh)
  bool special = false; // force the build tuple (key -1, payload -1)
  bool unaligned = false;  // probe columns at a 4-byte (not 16-byte) offset
};

struct HostData {
  std::vector<int32_t> bk, bp, pk, pp;
  int64_t count = 0;
  uint64_t ha = 0, hb = 0;
};

template <class F>
void parallel_for(int64_t n, F f) {
  const int nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<std::thread> th;
  for (int t = 0; t < nt; ++t)
    th.emplace_back([&, t] {
      const int64_t a = n * t / nt, b = n * (t + 1) / nt;
      f(t, a, b);
    });
  for (auto& x : th) x.join();
}

HostData generate(const Workload& w, uint64_t seed) {
  HostData d;
  d.bk.resize(w.r);
  d.bp.resize(w.r);
  d.pk.resize(w.s);
  d.pp.resize(w.s);
  const uint64_t n = static_cast<uint64_t>(w.bhigh - w.blow);
  if (n < static_cast<uint64_t>(w.r)) throw std::runtime_error(w.name + ": key domain smaller than R");
  const Perm perm(n, seed ^ 0x1234);
  parallel_for(w.r, [&](int, int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      d.bk[i] = static_cast<int32_t>(w.blow + static_cast<int64_t>(perm(i)));
      d.bp[i] = static_cast<int32_t>(static_cast<uint32_t>(rnd(seed, 1, i)));
    }
  });
  int64_t replaced_key = INT64_MIN;
  if (w.special) {
    int64_t at = -1;
    for (int64_t i = 0; i < w.r; ++i)
      if (d.bk[i] == -1) at = i;
    if (at < 0) {  // put key -1 in row 0; its old key leaves the build side
      at = 0;
      replaced_key = d.bk[0];
      d.bk[0] = -1;
    }
    d.bp[at] = -1;
  }
  const bool same_domain = (w.plow == w.blow && w.phigh == w.bhigh);
  if (same_domain && n == static_cast<uint64_t>(w.r))
    throw std::runtime_error(w.name + ": dense build domain needs a wider probe domain");
  const int nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<int64_t> cnt(nt, 0);
  std::vector<uint64_t> ha(nt, 0), hb(nt, 0);
  parallel_for(w.s, [&](int t, int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      d.pp[i] = static_cast<int32_t>(static_cast<uint32_t>(rnd(seed, 2, i)));
      const uint64_t u = rnd(seed, 3, i);
      if (static_cast<double>(u >> 11) * 0x1.0p-53 < kMatchRate) {
        const int64_t j = static_cast<int64_t>(rnd(seed, 4, i) % static_cast<uint64_t>(w.r));
        d.pk[i] = d.bk[j];
        const uint64_t x = pair_bits(d.bp[j], d.pp[i]);
        ha[t] += mix_a(x);
        hb[t] += mix_b(x);
        ++cnt[t];
      } else {
        int64_t key;
        for (uint64_t attempt = 0;; ++attempt) {
          const uint64_t v = rnd(seed, 5 + attempt, i);
          if (same_domain) {
            key = w.blow + static_cast<int64_t>(perm(static_cast<uint64_t>(w.r) + v % (n - w.r)));
          } else {
            key = w.plow + static_cast<int64_t>(v % static_cast<uint64_t>(w.phigh - w.plow));
            if (key >= w.blow && key < w.bhigh) continue;  // the build domain may hold it
          }
          if (w.special && key == -1) continue;          // -1 is a build key now
          if (key == replaced_key) break;                 // no longer a build key: still a miss
          break;
        }
        d.pk[i] = static_cast<int32_t>(key);
      }
    }
  });
  for (int t = 0; t < nt; ++t) {
    d.count += cnt[t];
    d.ha += ha[t];
    d.hb += hb[t];
  }
  return d;
}

// ---- Device-side multiset hash --------------------------------------------------------------

__global__ void multiset_hash(const int32_t* ob, const int32_t* op, int64_t n,
                              unsigned long long* out) {
  uint64_t a = 0, b = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint64_t x = (static_cast<uint64_t>(static_cast<uint32_t>(ob[i])) << 32) |
                       static_cast<uint32_t>(op[i]);
    a += mix_a(x);
    b += mix_b(x);
  }
  for (int d = 16; d > 0; d >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, d);
    b += __shfl_xor_sync(0xffffffffu, b, d);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(out, static_cast<unsigned long long>(a));
    atomicAdd(out + 1, static_cast<unsigned long long>(b));
  }
}

// ---- Calling an implementation --------------------------------------------------------------

struct Call {
  const char* in_names[4] = {"build_keys", "build_payload", "probe_keys", "probe_payload"};
  const char* out_names[3] = {"out_build_payload", "out_probe_payload", "count"};
  int64_t shape_r[1], shape_s[1], shape_1[1] = {1};
  DLTensor in[4]{}, out[3]{};
  d2k_scalar sc[3]{};
  char err[1024]{};
  d2k_args args{};

  Call(int64_t r, int64_t s, bool host, void* const ins[4], const size_t in_off[4],
       void* const outs[3], void* ws, uint64_t ws_bytes, cudaStream_t stream) {
    shape_r[0] = r;
    shape_s[0] = s;
    const DLDevice dev{host ? kDLCPU : kDLCUDA, 0};
    for (int k = 0; k < 4; ++k) {
      in[k].data = ins[k];
      in[k].device = dev;
      in[k].ndim = 1;
      in[k].dtype = DLDataType{kDLInt, 32, 1};
      in[k].shape = k < 2 ? shape_r : shape_s;
      in[k].byte_offset = in_off[k];
    }
    for (int k = 0; k < 3; ++k) {
      out[k].data = outs[k];
      out[k].device = dev;
      out[k].ndim = 1;
      out[k].dtype = DLDataType{kDLInt, static_cast<uint8_t>(k < 2 ? 32 : 64), 1};
      out[k].shape = k < 2 ? shape_s : shape_1;
    }
    sc[0] = d2k_scalar{"R", 0, 0, r, 0.0};
    sc[1] = d2k_scalar{"S", 0, 0, s, 0.0};
    sc[2] = d2k_scalar{"match_rate", 1, 0, 0, kMatchRate};
    args.abi_version = D2K_ABI_VERSION;
    args.num_inputs = 4;
    args.num_outputs = 3;
    args.num_scalars = 3;
    args.inputs = in;
    args.input_names = in_names;
    args.outputs = out;
    args.output_names = out_names;
    args.scalars = sc;
    args.workspace = ws;
    args.workspace_bytes = ws_bytes;
    args.stream = host ? nullptr : stream;
    args.error = err;
    args.error_capacity = sizeof(err);
  }
};

uint64_t workspace_of(const Impl& im, int64_t r, int64_t s) {
  void* none[4] = {nullptr, nullptr, nullptr, nullptr};
  const size_t off[4] = {0, 0, 0, 0};
  void* nout[3] = {nullptr, nullptr, nullptr};
  Call c(r, s, im.host, none, off, nout, nullptr, 0, nullptr);
  uint64_t b = 0;
  const int32_t rc = im.ws(&c.args, &b);
  if (rc != D2K_OK) throw std::runtime_error(im.name + ": d2k_workspace_size failed: " + c.err);
  return b;
}

struct Stats {
  double median = 0, min = 0, p10 = 0, p90 = 0, rsd = 0;
  int n = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  std::sort(v.begin(), v.end());
  s.n = static_cast<int>(v.size());
  auto q = [&](double f) { return v[static_cast<size_t>(std::lround(f * (v.size() - 1)))]; };
  s.median = q(0.5);
  s.min = v.front();
  s.p10 = q(0.1);
  s.p90 = q(0.9);
  double m = 0, m2 = 0;
  for (double x : v) m += x;
  m /= v.size();
  for (double x : v) m2 += (x - m) * (x - m);
  s.rsd = std::sqrt(m2 / v.size()) / m;
  return s;
}



double cost_bytes(int64_t r, int64_t s) {
  return 4.0 * (2.0 * r + 2.0 * s) + 8.0 * kMatchRate * s + 8.0;
}



/// One result row as the per-implementation child process sends it to the parent.
struct Result {
  char workload[96];
  char impl[64];
  char status[640];
  Stats st;
  double bytes;
};

template <size_t N>
void copy_str(char (&dst)[N], const std::string& src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

/// Runs one GPU implementation over every workload (in a child process, so that a kernel fault
/// of one implementation cannot take the others' results with it).
void run_gpu_impl(const Impl& im, const std::vector<Workload>& all, const std::vector<HostData>& data,
                  const std::vector<std::vector<uint64_t>>& ref_sorted, int max_samples, int fd) {
  Stream stream;
  DeviceBuffer flush(256ull << 20);
  DeviceBuffer hashbuf(2 * sizeof(unsigned long long));
  Event ev0, ev1;
  // A "_dbg" variant runs part of the work on purpose (phase timing): time it, do not check it.
  const bool dbg = im.name.find("_dbg") != std::string::npos;
  for (size_t wi = 0; wi < all.size(); ++wi) {
    const Workload& w = all[wi];
    const HostData& hd = data[wi];
    Result res{};
    copy_str(res.workload, w.name);
    copy_str(res.impl, im.name);
    res.bytes = cost_bytes(w.r, w.s);
    std::string status = dbg ? "TIMED-ONLY (debug variant, output not checked)" : "PASSED";
    if (dbg && !w.bench) {
      copy_str(res.status, "SKIPPED (debug variant)");
      if (write(fd, &res, sizeof(res)) != static_cast<ssize_t>(sizeof(res))) std::_Exit(3);
      continue;
    }
    try {
      const size_t off = w.unaligned ? 4 : 0;
      DeviceBuffer dbk(w.r * 4 + 16), dbp(w.r * 4 + 16), dpk(w.s * 4 + 16), dpp(w.s * 4 + 16);
      CK(cudaMemcpy(dbk.p, hd.bk.data(), w.r * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dbp.p, hd.bp.data(), w.r * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dpk.as<char>(off), hd.pk.data(), w.s * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dpp.as<char>(off), hd.pp.data(), w.s * 4, cudaMemcpyHostToDevice));
      DeviceBuffer dob(w.s * 4 + 4), dop(w.s * 4 + 4), dcnt(8);
      void* dins[4] = {dbk.p, dbp.p, dpk.p, dpp.p};
      const size_t offs[4] = {0, 0, off, off};
      void* douts[3] = {dob.p, dop.p, dcnt.p};
      const uint64_t wsb = workspace_of(im, w.r, w.s);
      DeviceBuffer ws(wsb);
      Call c(w.r, w.s, false, dins, offs, douts, ws.p, wsb, stream.s);
      auto run_once = [&] {
        const int32_t rc = im.run(&c.args);
        if (rc != D2K_OK) throw std::runtime_error("d2k_run returned " + std::to_string(rc) + ": " + c.err);
      };
      auto verify = [&] {
        CK(cudaStreamSynchronize(stream.s));
        CK(cudaGetLastError());
        if (dbg) return;
        int64_t cnt = -1;
        CK(cudaMemcpy(&cnt, dcnt.p, 8, cudaMemcpyDeviceToHost));
        if (cnt != hd.count)
          throw std::runtime_error("count " + std::to_string(cnt) + " != expected " + std::to_string(hd.count));
        CK(cudaMemsetAsync(hashbuf.p, 0, 16, stream.s));
        multiset_hash<<<264, 256, 0, stream.s>>>(dob.as<int32_t>(), dop.as<int32_t>(), cnt,
                                                 hashbuf.as<unsigned long long>());
        CK(cudaGetLastError());
        unsigned long long h[2];
        CK(cudaMemcpyAsync(h, hashbuf.p, 16, cudaMemcpyDeviceToHost, stream.s));
        CK(cudaStreamSynchronize(stream.s));
        if (h[0] != hd.ha || h[1] != hd.hb)
          throw std::runtime_error("multiset of pairs differs from the expected one (hash)");
        if (!w.bench && !ref_sorted[wi].empty()) {
          std::vector<int32_t> ob(cnt), op(cnt);
          CK(cudaMemcpy(ob.data(), dob.p, cnt * 4, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(op.data(), dop.p, cnt * 4, cudaMemcpyDeviceToHost));
          std::vector<uint64_t> got(cnt);
          for (int64_t i = 0; i < cnt; ++i) got[i] = pair_bits(ob[i], op[i]);
          std::sort(got.begin(), got.end());
          if (got != ref_sorted[wi]) throw std::runtime_error("sorted pairs differ from reference.so");
        }
      };
      auto poison = [&] {
        CK(cudaMemsetAsync(dob.p, 0xFF, dob.bytes, stream.s));
        CK(cudaMemsetAsync(dop.p, 0xFF, dop.bytes, stream.s));
        CK(cudaMemsetAsync(dcnt.p, 0xFF, 8, stream.s));
      };
      // Correctness twice: the multiset must be the same on a re-run.
      for (int rep = 0; rep < 2; ++rep) {
        poison();
        run_once();
        verify();
      }
      if (w.bench) {
        std::vector<double> t;
        double total = 0;
        for (int i = 0; i < 2; ++i) {
          CK(cudaMemsetAsync(flush.p, i, flush.bytes, stream.s));
          run_once();
        }
        CK(cudaStreamSynchronize(stream.s));
        while (static_cast<int>(t.size()) < max_samples && (t.size() < 5 || total < 2.0)) {
          CK(cudaMemsetAsync(flush.p, static_cast<int>(t.size()) & 0xff, flush.bytes, stream.s));
          CK(cudaEventRecord(ev0.e, stream.s));
          run_once();
          CK(cudaEventRecord(ev1.e, stream.s));
          CK(cudaEventSynchronize(ev1.e));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, ev0.e, ev1.e));
          t.push_back(ms * 1e3);
          total += ms * 1e-3;
        }
        poison();
        run_once();
        verify();  // once more after the timed calls
        res.st = stats_of(t);
      }
    } catch (const std::exception& e) {
      status = std::string("FAILED: ") + e.what();
    }
    copy_str(res.status, status);
    std::printf("   %-16s %-40s %s", im.name.c_str(), w.name.c_str(), status.c_str());
    if (res.st.n)
      std::printf("  median %.1f us (p10 %.1f, p90 %.1f, n=%d)", res.st.median, res.st.p10, res.st.p90, res.st.n);
    std::printf("\n");
    std::fflush(stdout);
    if (write(fd, &res, sizeof(res)) != static_cast<ssize_t>(sizeof(res))) std::_Exit(3);
    if (status.rfind("FAILED", 0) == 0 && cudaGetLastError() != cudaSuccess) {
      // A sticky error (kernel fault) leaves the context unusable: report the rest as skipped.
      for (size_t k = wi + 1; k < all.size(); ++k) {
        Result skip{};
        copy_str(skip.workload, all[k].name);
        copy_str(skip.impl, im.name);
        copy_str(skip.status, "SKIPPED: the context broke on an earlier workload");
        skip.bytes = cost_bytes(all[k].r, all[k].s);
        if (write(fd, &skip, sizeof(skip)) != static_cast<ssize_t>(sizeof(skip))) std::_Exit(3);
      }
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s IMPL_DIR [--checks-only] [--filter S] [--max-samples N] [--impls a,b]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  bool checks_only = false;
  std::string filter;
  int max_samples = 30;
  std::string only_impls;  // ",a,b," when --impls restricts the implementations
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--checks-only") checks_only = true;
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--max-samples" && i + 1 < argc) max_samples = std::atoi(argv[++i]);
    else if (a == "--impls" && i + 1 < argc) only_impls = std::string(",") + argv[++i] + ",";
    else {
      std::fprintf(stderr, "unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    std::vector<Impl> impls;
    for (const char* n : {"reference", "naive", "expert", "library"}) {
      const auto p = dir / (std::string(n) + ".so");
      if (std::filesystem::exists(p)) impls.push_back(load_impl(p));
    }
    std::vector<std::filesystem::path> variants;
    for (auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("expert_", 0) == 0 && e.path().extension() == ".so") variants.push_back(e.path());
    }
    std::sort(variants.begin(), variants.end());
    for (auto& v : variants) impls.push_back(load_impl(v));
    if (!only_impls.empty())
      impls.erase(std::remove_if(impls.begin(), impls.end(),
                                 [&](const Impl& im) { return only_impls.find("," + im.name + ",") == std::string::npos; }),
                  impls.end());

    const int64_t M = 1 << 20;
    const int64_t I31 = int64_t{1} << 31, I30 = int64_t{1} << 30;
    // The check and bench workloads of dataset/hash_join/workloads.jsonl, then driver-only edge
    // cases (x-*): the (-1,-1) build tuple on each path, unaligned probe columns, the shared-memory
    // threshold, the full int32 key range, R = 1. Rows whose probe domain is wider than the build
    // domain (dense build keys, misses outside it) go beyond what the harness's join_probe_keys
    // generator makes (its misses lie inside the build domain); they exercise the exact-dense path,
    // and the last bench row times it.
    const std::vector<Workload> catalogue = {
        {"check-r1000-s4097-wide", false, 1000, 4097, -I30, I30, -I30, I30},
        {"check-r65537-s200003-range2x", false, 65537, 200003, -30000, 100000, -30000, 100000},
        {"check-r5000-s12345-range4x", false, 5000, 12345, -3000, 17000, -3000, 17000},
        {"check-r100003-s300007-wide", false, 100003, 300007, -I30, I30, -I30, I30},
        {"x-r1-s7", false, 1, 7, -I30, I30, -I30, I30},
        {"x-r3000-s50001-dense-special", false, 3000, 50001, -1500, 1500, -I31, I31 - 1, true},
        {"x-r200000-s99999-wide-special-unaligned", false, 200000, 99999, -I30, I30, -I30, I30, true, true},
        {"x-r8193-s77777-fullrange", false, 8193, 77777, -I31, I31 - 1, -I31, I31 - 1},
        {"x-r4096-s1000-dense-special", false, 4096, 1000, -2000, 2096, -I31, I31 - 1, true},
        {"x-r70000-s123457-dense-special", false, 70000, 123457, -35000, 35000, -I31, I31 - 1, true},
        {"x-r20000-s54321-range2x-special", false, 20000, 54321, -20000, 20000, -20000, 20000, true},
        {"x-r4097-s100000-dense", false, 4097, 100000, 0, 4097, 0, I31 - 1},
        {"x-r2000-s30001-wide-special", false, 2000, 30001, -I30, I30, -I30, I30, true},
        {"x-r300000-s1000003-range2x-unaligned", false, 300000, 1000003, 5, 600005, 5, 600005, false, true},
        {"bench-r1m-s100m-range2x", true, M, 100000000, 0, 2 * M, 0, 2 * M},
        {"bench-r1m-s100m-wide", true, M, 100000000, -I30, I30, -I30, I30},
        {"bench-r64m-s256m-range4x", true, 64 * M, 256 * M, 0, 256 * M, 0, 256 * M},
        {"bench-r4096-s100m-range2x", true, 4096, 100000000, 0, 8192, 0, 8192},
        {"bench-r1m-s100m-dense-exact", true, M, 100000000, 0, M, 0, I31 - 1},
    };
    std::vector<Workload> all;
    for (const Workload& w : catalogue)
      if ((filter.empty() || w.name.find(filter) != std::string::npos) && !(checks_only && w.bench))
        all.push_back(w);

    // Host side first (no CUDA in this process): inputs, ground truth, the reference.
    std::vector<HostData> data;
    std::vector<std::vector<uint64_t>> ref_sorted(all.size());
    std::vector<Result> results;
    int failures = 0;
    for (size_t wi = 0; wi < all.size(); ++wi) {
      const Workload& w = all[wi];
      data.push_back(generate(w, 0xD2C0FFEEull ^ std::hash<std::string>{}(w.name)));
      const HostData& hd = data.back();
      std::printf("== %-40s R=%lld S=%lld expected matches %lld\n", w.name.c_str(), (long long)w.r,
                  (long long)w.s, (long long)hd.count);
      for (const Impl& im : impls) {
        if (!im.host || w.bench) continue;
        Result res{};
        copy_str(res.workload, w.name);
        copy_str(res.impl, im.name);
        std::string status = "PASSED";
        try {
          std::vector<int32_t> ob(w.s + 1, -7), op(w.s + 1, -7), pk(hd.pk), pp(hd.pp);
          std::vector<int32_t> bk(hd.bk), bp(hd.bp);
          int64_t cnt = -1;
          void* hins[4] = {bk.data(), bp.data(), pk.data(), pp.data()};
          const size_t z[4] = {0, 0, 0, 0};
          void* houts[3] = {ob.data(), op.data(), &cnt};
          Call c(w.r, w.s, true, hins, z, houts, nullptr, 0, nullptr);
          if (im.run(&c.args) != D2K_OK) throw std::runtime_error(std::string("run failed: ") + c.err);
          if (cnt != hd.count)
            throw std::runtime_error("count " + std::to_string(cnt) + " != expected " + std::to_string(hd.count));
          uint64_t a = 0, b = 0;
          for (int64_t i = 0; i < cnt; ++i) {
            const uint64_t x = pair_bits(ob[i], op[i]);
            a += mix_a(x);
            b += mix_b(x);
            ref_sorted[wi].push_back(x);
          }
          if (a != hd.ha || b != hd.hb) throw std::runtime_error("multiset hash differs from the generator's");
          std::sort(ref_sorted[wi].begin(), ref_sorted[wi].end());
        } catch (const std::exception& e) {
          status = std::string("FAILED: ") + e.what();
          ref_sorted[wi].clear();
          ++failures;
        }
        copy_str(res.status, status);
        std::printf("   %-16s %s\n", im.name.c_str(), status.c_str());
        results.push_back(res);
      }
      std::fflush(stdout);
    }

    for (const Impl& im : impls) {
      if (im.host) continue;
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        close(fds[0]);
        try {
          run_gpu_impl(im, all, data, ref_sorted, max_samples, fds[1]);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s: %s\n", im.name.c_str(), e.what());
        }
        std::fflush(stdout);
        std::_Exit(0);
      }
      close(fds[1]);
      std::vector<bool> seen(all.size(), false);
      Result r{};
      size_t got = 0;
      for (;;) {
        const ssize_t n = read(fds[0], reinterpret_cast<char*>(&r) + got, sizeof(r) - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
        if (got < sizeof(r)) continue;
        got = 0;
        for (size_t k = 0; k < all.size(); ++k)
          if (all[k].name == r.workload) seen[k] = true;
        if (std::string(r.status).rfind("FAILED", 0) == 0) ++failures;
        results.push_back(r);
      }
      close(fds[0]);
      int wstatus = 0;
      waitpid(pid, &wstatus, 0);
      for (size_t k = 0; k < all.size(); ++k)
        if (!seen[k]) {
          Result miss{};
          copy_str(miss.workload, all[k].name);
          copy_str(miss.impl, im.name);
          copy_str(miss.status, "FAILED: the process died (status " + std::to_string(wstatus) + ")");
          results.push_back(miss);
          ++failures;
        }
    }

    std::printf("\n| workload | impl | status | median us | p10 | p90 | rsd %% | n | GB/s | %% SOL | x naive |\n");
    std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    std::map<std::string, double> naive_t;
    for (auto& r : results)
      if (std::string(r.impl) == "naive" && r.st.n) naive_t[r.workload] = r.st.median;
    int passed_checks = 0;
    for (auto& r : results) {
      if (!r.st.n) {
        if (std::string(r.status) == "PASSED") ++passed_checks;
        else if (std::string(r.status).rfind("SKIPPED", 0) != 0)
          std::printf("| %s | %s | %s | | | | | | | | |\n", r.workload, r.impl, r.status);
        continue;
      }
      const double nt = naive_t.count(r.workload) ? naive_t[r.workload] : 0;
      std::printf("| %s | %s | %s | %.1f | %.1f | %.1f | %.2f | %d | %.0f | %.1f | %.2f |\n", r.workload, r.impl,
                  r.status, r.st.median, r.st.p10, r.st.p90, 100 * r.st.rsd, r.st.n, r.bytes / r.st.median * 1e-3,
                  100.0 * r.bytes / kCopyBandwidth * 1e6 / r.st.median, nt > 0 ? nt / r.st.median : 0.0);
    }
    std::printf("\ncorrectness: %d untimed rows passed, %d failures\n", passed_checks, failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
