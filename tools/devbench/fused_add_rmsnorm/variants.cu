// Variant sweep for the fused_add_rmsnorm expert: compiles expert.cu into this binary and times
// each instantiation of rmsnorm_rows_in_registers (vectors per thread, threads per row, rows per
// CTA, compile-time vs generic row length, cache hints, persistent grid) at the bench shapes, with
// the same cold-L2 timer as the driver. Every variant's outputs are checked against the expert's
// scalar two-pass kernel (an independent code path) before it is timed. Also times two
// device-to-device copies of the same byte count as a per-shape bandwidth ceiling.
//
// Usage: far_variants [--samples N]
#include "expert.cu"

#include <sstream>

#include "bench_common.h"

using namespace devbench;

namespace {

struct Variant {
  int64_t H;  // 0: any H (generic)
  far::RowConfig cfg;
  enum Kind { kRows, kGenericDispatch, kStaged } kind = kRows;
};

std::string name_of(const far::RowConfig& c) {
  std::ostringstream s;
  s << "vpt" << c.vpt << "_tpr" << c.tpr << "_rpc" << c.rpc << (c.nvec ? "_exact" : "_generic") << "_hint" << c.hint
    << (c.persistent ? "_persistent" : "");
  return s.str();
}

// Run 1 (2026-11-29) swept vectors per thread x threads per row x rows per CTA, three cache
// hints and the persistent grid at all four shapes (docs/results/fused_add_rmsnorm-variants.md).
// Run 2 re-times the close candidates with more samples, the new generic dispatch (runtime row
// width), the staged-in-shared-memory long-row path, and two more load hints.
std::vector<Variant> variants() {
  using namespace far;
  std::vector<Variant> v;
  // H = 4096 (nvec 512): every tiling was within noise in run 1 (37.5-37.9 us).
  v.push_back({4096, row_config<1, 512, 1, 512>()});
  v.push_back({4096, row_config<4, 128, 1, 512>()});
  v.push_back({4096, row_config<4, 128, 2, 512>()});
  v.push_back({4096, row_config<4, 128, 4, 512>()});
  v.push_back({4096, row_config<16, 32, 4, 512>()});
  v.push_back({4096, row_config<4, 128, 1, 512, kHintStreamLoads>()});
  v.push_back({4096, row_config<4, 128, 1, 512, kHintL2EvictFirstLoads>()});
  // H = 8192 (nvec 1024)
  v.push_back({8192, row_config<4, 256, 1, 1024>()});
  v.push_back({8192, row_config<8, 128, 2, 1024>()});
  v.push_back({8192, row_config<4, 256, 1, 1024, kHintStreamLoads>()});
  v.push_back({8192, row_config<4, 256, 1, 1024, kHintL2EvictFirstLoads>()});
  // H = 5120 (nvec 640)
  v.push_back({5120, row_config<4, 160, 1, 640>()});
  v.push_back({5120, row_config<2, 320, 1, 640>()});
  v.push_back({5120, row_config<4, 160, 1, 640, kHintStreamLoads>()});
  v.push_back({5120, row_config<4, 160, 1, 640, kHintL2EvictFirstLoads>()});
  // H = 7168 (nvec 896)
  v.push_back({7168, row_config<1, 896, 1, 896>()});
  v.push_back({7168, row_config<2, 448, 1, 896>()});
  v.push_back({7168, row_config<4, 224, 1, 896>()});
  v.push_back({7168, row_config<7, 128, 1, 896>()});
  v.push_back({7168, row_config<4, 224, 1, 896, kHintStreaming>()});
  v.push_back({7168, row_config<4, 224, 1, 896, kHintStreamLoads>()});
  // Generic paths at every shape: the dispatch the expert uses for H outside its specialised set
  // (runtime row width), and the shared-memory-staged kernel it uses for H > 16384.
  Variant g{0, row_config<4, 0, 1, 0>(), Variant::kGenericDispatch};
  v.push_back(g);
  Variant st{0, row_config<4, 0, 1, 0>(), Variant::kStaged};
  v.push_back(st);
  return v;
}

}  // namespace

int main(int argc, char** argv) try {
  int samples = 50, warmup = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--samples" && i + 1 < argc) samples = std::stoi(argv[++i]);
    else throw std::runtime_error("unknown argument " + a);
  }
  cudaStream_t stream;
  DB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ColdTimer timer(stream);
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 4096}, {16384, 8192}, {128, 7168}, {32768, 5120}};
  const float eps = 1e-6f;
  std::ostringstream table;
  table << "| T x H | variant | median us | p10-p90 us | GB/s | % of SOL |\n| --- | --- | --- | --- | --- | --- |\n";
  uint64_t seed = 777;
  bool all_ok = true;
  for (auto [T, H] : shapes) {
    const size_t n = static_cast<size_t>(T * H);
    std::vector<uint16_t> hx(n), hr(n), hw(H);
    fill_normal(hx, ++seed, 0, 1);
    fill_normal(hr, ++seed, 0, 1);
    fill_uniform(hw, ++seed, 0.5, 1.5);
    DeviceBuffer x(n * 2), r(n * 2), w(H * 2), o(n * 2), ro(n * 2), eo(n * 2), ero(n * 2);
    DB_CUDA(cudaMemcpy(x.get(), hx.data(), n * 2, cudaMemcpyHostToDevice));
    DB_CUDA(cudaMemcpy(r.get(), hr.data(), n * 2, cudaMemcpyHostToDevice));
    DB_CUDA(cudaMemcpy(w.get(), hw.data(), H * 2, cudaMemcpyHostToDevice));
    using far::bf16;
    auto* xp = static_cast<const bf16*>(x.get());
    auto* rp = static_cast<const bf16*>(r.get());
    auto* wp = static_cast<const bf16*>(w.get());
    // Expected outputs from the independent scalar path.
    far::rmsnorm_row_scalar_two_pass<<<static_cast<unsigned>(T), far::kFallbackThreads, 0, stream>>>(
        xp, rp, wp, static_cast<bf16*>(eo.get()), static_cast<bf16*>(ero.get()), T, H, 1.0f / H, eps);
    DB_CUDA(cudaGetLastError());
    std::vector<uint16_t> want_o(n), want_ro(n), got_o(n), got_ro(n);
    DB_CUDA(cudaMemcpyAsync(want_o.data(), eo.get(), n * 2, cudaMemcpyDeviceToHost, stream));
    DB_CUDA(cudaMemcpyAsync(want_ro.data(), ero.get(), n * 2, cudaMemcpyDeviceToHost, stream));
    DB_CUDA(cudaStreamSynchronize(stream));
    const double bytes = compulsory_bytes(T, H);
    const double t_sol_us = bytes / kCopyBytesPerSec * 1e6;
    const std::string shape = std::to_string(T) + "x" + std::to_string(H);
    auto add_row = [&](const std::string& name, const Stats& st) {
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %s | %.2f | %.2f-%.2f | %.0f | %.1f |\n", shape.c_str(), name.c_str(),
                    st.median_us, st.p10_us, st.p90_us, bytes / (st.median_us * 1e-6) / 1e9,
                    100.0 * t_sol_us / st.median_us);
      table << line;
      std::printf("%s", line);
    };
    // Bandwidth ceiling at this shape: copy x -> out and residual -> residual_out (same bytes).
    add_row("memcpy_d2d_same_bytes", timer.time([&] {
      DB_CUDA(cudaMemcpyAsync(o.get(), x.get(), n * 2, cudaMemcpyDeviceToDevice, stream));
      DB_CUDA(cudaMemcpyAsync(ro.get(), r.get(), n * 2, cudaMemcpyDeviceToDevice, stream));
    }, warmup, samples));
    for (const Variant& v : variants()) {
      if (v.H != 0 && v.H != H) continue;
      const far::RowConfig cfg = v.kind == Variant::kGenericDispatch ? far::generic_config(H / 8) : v.cfg;
      std::string name = name_of(cfg);
      if (v.kind == Variant::kGenericDispatch) name = "generic_dispatch_" + name + "_w" + std::to_string(cfg.threads_per_row());
      if (v.kind == Variant::kStaged) name = "staged_in_smem_batch" + std::to_string(far::kStagedBatch);
      auto launch = [&] {
        if (v.kind == Variant::kStaged) {
          DB_CUDA(far::launch_staged(xp, rp, wp, static_cast<bf16*>(o.get()), static_cast<bf16*>(ro.get()), T, H, eps,
                                     stream));
        } else {
          DB_CUDA(far::launch_rows(cfg, xp, rp, wp, static_cast<bf16*>(o.get()), static_cast<bf16*>(ro.get()), T, H,
                                   eps, stream));
        }
      };
      DB_CUDA(cudaMemsetAsync(o.get(), 0xFF, n * 2, stream));
      DB_CUDA(cudaMemsetAsync(ro.get(), 0xFF, n * 2, stream));
      launch();
      DB_CUDA(cudaMemcpyAsync(got_o.data(), o.get(), n * 2, cudaMemcpyDeviceToHost, stream));
      DB_CUDA(cudaMemcpyAsync(got_ro.data(), ro.get(), n * 2, cudaMemcpyDeviceToHost, stream));
      DB_CUDA(cudaStreamSynchronize(stream));
      const CompareResult co = allclose_bf16(got_o.data(), want_o.data(), n, 0.016, 0.016);
      const CompareResult cr = allclose_bf16(got_ro.data(), want_ro.data(), n, 0.01, 0.01);
      if (!co.ok() || !cr.ok()) {
        std::printf("FAIL %s %s: out mismatches=%zu unwritten=%zu max_abs=%.3g; residual_out mismatches=%zu unwritten=%zu\n",
                    shape.c_str(), name.c_str(), co.mismatches, co.unwritten, co.max_abs, cr.mismatches, cr.unwritten);
        all_ok = false;
        continue;  // never time a variant that is wrong
      }
      add_row(name, timer.time(launch, warmup, samples));
    }
  }
  std::printf("\n%s", table.str().c_str());
  std::printf("variants: %s\n", all_ok ? "ALL PASS" : "FAILURES");
  DB_CUDA(cudaStreamDestroy(stream));
  return all_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "far_variants: %s\n", e.what());
  return 2;
}
