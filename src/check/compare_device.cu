// Device comparators: a grid-stride pass accumulates ElemStats per thread (the same
// accumulate() as the host), blocks reduce in shared memory in a fixed tree order, and one
// block merges the block partials in index order, so the result is deterministic.
#include "check/compare_device.h"


#include <stdexcept>

#include "check/compare_internal.h"
#include "data/cuda_check.h"

namespace d2k {

namespace {

using check::ElemParams;
using check::ElemStats;

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

using AsyncScratch = data::StreamScratch;

__global__ void stats_kernel(ElemParams p, const void* e, const void* a, std::int64_t n, ElemStats* partials) {
  // Raw storage: a __shared__ array may not have a constructor (ElemStats has member initialisers).
  __shared__ alignas(ElemStats) unsigned char sh_raw[kThreads * sizeof(ElemStats)];
  ElemStats* sh = reinterpret_cast<ElemStats*>(sh_raw);
  ElemStats s;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    check::accumulate(s, p, e, a, i);
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) check::merge(sh[threadIdx.x], sh[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sh[0];
}

__global__ void merge_partials_kernel(const ElemStats* partials, int count, ElemStats* out) {
  ElemStats s;
  for (int b = 0; b < count; ++b) check::merge(s, partials[b]);
  *out = s;
}

/// Written check: counts elements holding the poison (one run, optionally vs expected) or
/// holding both runs' poisons; the first index by atomicMin (order-independent, exact).
struct WriteAccum {
  unsigned long long count;
  unsigned long long first;
};

__global__ void written_kernel(DType t, const void* a, std::uint64_t pa, const void* b, std::uint64_t pb, bool two,
                               const void* e, DType et, bool vs_e, std::int64_t n, WriteAccum* out) {
  unsigned long long local = 0, first = ~0ull;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    bool un;
    if (two) {
      un = check::unwritten_two_runs(t, a, pa, b, pb, i);
    } else {
      un = data::load_bits(t, a, i) == pa && !(vs_e && data::load_bits(et, e, i) == pa);
    }
    if (un) {
      ++local;
      if (static_cast<unsigned long long>(i) < first) first = static_cast<unsigned long long>(i);
    }
  }
  if (local) {
    atomicAdd(&out->count, local);
    atomicMin(&out->first, first);
  }
}

__global__ void fill_kernel(DType t, void* dst, std::uint64_t bits, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data::store_bits(t, dst, i, bits);
}

std::int64_t numel_view(const DeviceTensorView& t) { return check::numel_of(t.shape); }

ElemStats run_stats(const ElemParams& p, const void* e, const void* a, std::int64_t n, cudaStream_t stream) {
  const int blocks = blocks_for(n);
  AsyncScratch scratch((blocks + 1) * sizeof(ElemStats), stream);
  ElemStats* partials = scratch.as<ElemStats>();
  stats_kernel<<<blocks, kThreads, 0, stream>>>(p, e, a, n, partials);
  D2K_DATA_LAUNCH_CHECK();
  merge_partials_kernel<<<1, 1, 0, stream>>>(partials, blocks, partials + blocks);
  D2K_DATA_LAUNCH_CHECK();
  ElemStats s;
  D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(&s, partials + blocks, sizeof s, cudaMemcpyDeviceToHost, stream));
  D2K_DATA_CUDA_CHECK(cudaStreamSynchronize(stream));
  return s;
}

double element_at(const DeviceTensorView& t, std::int64_t i, cudaStream_t stream) {
  std::uint64_t bits = 0;
  const std::size_t es = data::elem_bytes(t.dtype);
  D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(&bits, static_cast<const std::byte*>(t.data) + i * es, es,
                                      cudaMemcpyDeviceToHost, stream));
  D2K_DATA_CUDA_CHECK(cudaStreamSynchronize(stream));
  return data::load_double(t.dtype, &bits, 0);
}

WriteCheck run_written(DType t, const void* a, std::uint64_t pa, const void* b, std::uint64_t pb, bool two,
                       const void* e, DType et, bool vs_e, std::int64_t n, cudaStream_t stream) {
  WriteCheck w;
  if (n <= 0) return w;
  AsyncScratch scratch(sizeof(WriteAccum), stream);
  WriteAccum init{0, ~0ull}, res{};
  D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(scratch.as<WriteAccum>(), &init, sizeof init, cudaMemcpyHostToDevice, stream));
  written_kernel<<<blocks_for(n), kThreads, 0, stream>>>(t, a, pa, b, pb, two, e, et, vs_e, n, scratch.as<WriteAccum>());
  D2K_DATA_LAUNCH_CHECK();
  D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(&res, scratch.as<WriteAccum>(), sizeof res, cudaMemcpyDeviceToHost, stream));
  D2K_DATA_CUDA_CHECK(cudaStreamSynchronize(stream));
  w.unwritten = static_cast<std::int64_t>(res.count);
  w.first = res.count ? static_cast<std::int64_t>(res.first) : -1;
  return w;
}

}  // namespace

HostTensor download(const DeviceTensorView& t, cudaStream_t stream) {
  HostTensor h;
  h.name = t.name;
  h.dtype = t.dtype;
  h.shape = t.shape;
  h.bytes.resize(static_cast<std::size_t>(numel_view(t)) * data::elem_bytes(t.dtype));
  if (!h.bytes.empty()) {
    D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(h.bytes.data(), t.data, h.bytes.size(), cudaMemcpyDeviceToHost, stream));
    D2K_DATA_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return h;
}

CompareResult compare_device(const CompareSpec& spec, const DeviceTensorView& expected, const DeviceTensorView& actual,
                             cudaStream_t stream, const CompareOptions& opt) {
  if (spec.rule == "none" || spec.rule == "multiset" || spec.rule == "topk")
    return compare(spec, download(expected, stream), download(actual, stream), opt);
  if (!check::is_dense_rule(spec.rule))
    throw std::invalid_argument("compare_device: unknown rule '" + spec.rule + "'");
  bool ok = false;
  CompareResult shape = check::check_shapes(spec, expected.shape, actual.shape, &ok);
  if (!ok) return shape;
  const std::int64_t n = numel_view(actual);
  const ElemParams p = check::dense_params(spec, expected.dtype, actual.dtype, opt.poison_variant);
  const ElemStats s = n > 0 ? run_stats(p, expected.data, actual.data, n, stream) : ElemStats{};
  ElemStats s2;
  const bool two = spec.rule == "rel_l2" && s.unwritten == 0;
  if (two && n > 0) {
    ElemParams p2 = p;
    p2.rule = check::ElemRule::allclose;
    p2.atol = check::rel_l2_threshold(spec, s, n);
    p2.rtol = 0;
    p2.check_poison = false;
    s2 = run_stats(p2, expected.data, actual.data, n, stream);
  }
  const std::int64_t fb = two ? s2.first_bad : s.first_bad;
  const double fe = fb >= 0 ? element_at(expected, fb, stream) : NAN;
  const double fa = fb >= 0 ? element_at(actual, fb, stream) : NAN;
  return check::finalize_dense(spec, s, two ? &s2 : nullptr, n, actual.shape, fe, fa, p.poison);
}

CompareResult compare_multiset_device(const CompareSpec& spec, std::span<const DeviceTensorView> expected_cols,
                                      std::span<const DeviceTensorView> actual_cols, std::int64_t expected_count,
                                      std::int64_t actual_count, cudaStream_t stream, int poison_variant) {
  std::vector<HostTensor> e, a;
  for (const auto& c : expected_cols) e.push_back(download(c, stream));
  for (const auto& c : actual_cols) a.push_back(download(c, stream));
  std::vector<const HostTensor*> ep, ap;
  for (const auto& t : e) ep.push_back(&t);
  for (const auto& t : a) ap.push_back(&t);
  return compare_multiset(spec, ep, ap, expected_count, actual_count, poison_variant);
}

WriteCheck check_written_device(const PoisonPattern& p, const DeviceTensorView& actual, std::int64_t limit,
                                const DeviceTensorView* expected, cudaStream_t stream) {
  const std::int64_t all = numel_view(actual);
  const std::int64_t n = limit >= 0 && limit < all ? limit : all;
  const bool vs_e = expected && expected->dtype == actual.dtype && numel_view(*expected) >= n;
  return run_written(actual.dtype, actual.data, p.bits, nullptr, 0, false, vs_e ? expected->data : nullptr,
                     vs_e ? expected->dtype : actual.dtype, vs_e, n, stream);
}

WriteCheck check_written_two_runs_device(const PoisonPattern& pa, const DeviceTensorView& run_a,
                                         const PoisonPattern& pb, const DeviceTensorView& run_b, std::int64_t limit,
                                         cudaStream_t stream) {
  if (run_a.dtype != run_b.dtype || run_a.shape != run_b.shape)
    throw std::invalid_argument("check_written_two_runs_device: the two runs differ in dtype or shape");
  const std::int64_t all = numel_view(run_a);
  const std::int64_t n = limit >= 0 && limit < all ? limit : all;
  return run_written(run_a.dtype, run_a.data, pa.bits, run_b.data, pb.bits, true, nullptr, run_a.dtype, false, n, stream);
}

void fill_poison_device(const PoisonPattern& p, void* dptr, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p.dtype, dptr, p.bits, n);
  D2K_DATA_LAUNCH_CHECK();
}

}  // namespace d2k
