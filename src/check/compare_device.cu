// Device comparators: a grid-stride pass accumulates ElemStats per thread (the same
// accumulate() as the host), blocks reduce in shared memory in a fixed tree order, and one
// block merges the block partials in index order, so the result is deterministic.
#include "check/compare_device.h"


#include <climits>
#include <optional>
#include <stdexcept>

#include <cub/device/device_radix_sort.cuh>

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

namespace {

/// Orderable key of row perm[r] (r without a permutation) of an integer column: its value's bits
/// with the sign bit flipped, so that unsigned order is signed order. Both sides of a comparison
/// are keyed the same way, which is all the positional comparison after the sort needs.
__global__ void column_keys_kernel(const void* col, DType t, const std::int32_t* perm, std::int64_t rows,
                                   std::uint64_t* keys) {
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    keys[r] = static_cast<std::uint64_t>(data::load_i64(t, col, perm ? perm[r] : r)) ^ (1ull << 63);
}

__global__ void iota_kernel(std::int32_t* perm, std::int64_t rows) {
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    perm[r] = static_cast<std::int32_t>(r);
}

/// Positions i where column e at row pe[i] and column a at row pa[i] differ, and the first one.
__global__ void diff_rows_kernel(const void* e, DType te, const std::int32_t* pe, const void* a, DType ta,
                                 const std::int32_t* pa, std::int64_t n, WriteAccum* out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    if (data::load_i64(te, e, pe[i]) != data::load_i64(ta, a, pa[i])) {
      atomicAdd(&out->count, 1ull);
      atomicMin(&out->first, static_cast<unsigned long long>(i));
    }
}

/// A permutation of the first `rows` rows of integer columns that sorts them lexicographically:
/// an LSD sort, one stable 64-bit key-index pass per column, the last column first. Sorting the
/// row indices (not packed rows) takes any number of columns of up to 64 bits: group-by outputs
/// (five int64 columns) as well as join outputs.
data::DeviceBuffer lexicographic_order(std::span<const DeviceTensorView> cols, std::int64_t rows, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(rows, 1));
  data::DeviceBuffer keys(n * 8), sorted_keys(n * 8), perm(n * 4), next(n * 4);
  iota_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(perm.as<std::int32_t>(), rows);
  D2K_DATA_CUDA_CHECK(cudaGetLastError());
  std::size_t temp = 0;
  const int count = static_cast<int>(rows);
  D2K_DATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, keys.as<std::uint64_t>(),
                                                      sorted_keys.as<std::uint64_t>(), perm.as<std::int32_t>(),
                                                      next.as<std::int32_t>(), count, 0, 64, stream));
  AsyncScratch scratch(temp, stream);
  for (std::size_t c = cols.size(); c-- > 0;) {
    column_keys_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(cols[c].data, cols[c].dtype, perm.as<std::int32_t>(),
                                                                  rows, keys.as<std::uint64_t>());
    D2K_DATA_CUDA_CHECK(cudaGetLastError());
    // Keys and the row each came from; a stable sort keeps the later columns' order among ties.
    D2K_DATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch.get(), temp, keys.as<std::uint64_t>(),
                                                        sorted_keys.as<std::uint64_t>(), perm.as<std::int32_t>(),
                                                        next.as<std::int32_t>(), count, 0, 64, stream));
    std::swap(perm, next);
  }
  return perm;
}

/// The device path decides exact multisets of integer columns (one cell per row and column).
bool sortable(std::span<const DeviceTensorView> cols, const CompareSpec& spec) {
  if (cols.empty() || spec.atol > 0 || spec.rtol > 0) return false;
  for (const auto& c : cols) {
    if (data::is_float_type(c.dtype) || data::elem_bytes(c.dtype) > 8) return false;
    const std::int64_t rows = c.shape.empty() ? 1 : c.shape[0];
    if (numel_view(c) != rows) return false;  // one cell per row and column
  }
  return true;
}

/// The first `rows` rows of a device tensor, on the host (rows past a row count are not compared,
/// and a group-by's outputs have capacity for N rows: 1.6 GB a column at 2e8 rows).
HostTensor download_rows(DeviceTensorView t, std::int64_t rows, cudaStream_t stream) {
  if (!t.shape.empty() && rows < t.shape[0]) t.shape[0] = rows;
  return download(t, stream);
}

}  // namespace

CompareResult compare_multiset_device(const CompareSpec& spec, std::span<const DeviceTensorView> expected_cols,
                                      std::span<const DeviceTensorView> actual_cols, std::int64_t expected_count,
                                      std::int64_t actual_count, cudaStream_t stream, int poison_variant) {
  // Integer row sets: both sides sorted on the device (a row-index sort per column), then compared
  // position by position. Only a pass is decided here; any mismatch or unusual input takes the
  // host path for the full report.
  const std::int64_t rows0 = actual_cols.empty() || actual_cols[0].shape.empty() ? 1 : actual_cols[0].shape[0];
  if (poison_variant < 0 && sortable(expected_cols, spec) && sortable(actual_cols, spec) &&
      expected_cols.size() == actual_cols.size() && expected_count >= 0 && expected_count == actual_count &&
      expected_count <= rows0 && expected_count < INT32_MAX) {
    const auto e = lexicographic_order(expected_cols, expected_count, stream);
    const auto a = lexicographic_order(actual_cols, actual_count, stream);
    data::DeviceBuffer acc(sizeof(WriteAccum));
    const WriteAccum init{0, ~0ull};
    D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(acc.get(), &init, sizeof init, cudaMemcpyHostToDevice, stream));
    for (std::size_t c = 0; c < actual_cols.size(); ++c) {
      diff_rows_kernel<<<blocks_for(expected_count), kThreads, 0, stream>>>(
          expected_cols[c].data, expected_cols[c].dtype, e.as<std::int32_t>(), actual_cols[c].data,
          actual_cols[c].dtype, a.as<std::int32_t>(), expected_count, acc.as<WriteAccum>());
      D2K_DATA_CUDA_CHECK(cudaGetLastError());
    }
    WriteAccum res{};
    D2K_DATA_CUDA_CHECK(cudaMemcpyAsync(&res, acc.get(), sizeof res, cudaMemcpyDeviceToHost, stream));
    D2K_DATA_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (res.count == 0) {
      CompareResult r;
      r.rule = "multiset";
      r.passed = true;
      r.status = CheckStatus::passed;
      r.checked = actual_count;
      r.mismatches = 0;
      r.message = "multiset: " + std::to_string(actual_count) + " rows match as a multiset (device sort)";
      return r;
    }
  }
  // The host report reads only the rows the counts name, where both are valid (a poison check
  // reads the whole capacity).
  const bool counted = poison_variant < 0 && expected_count >= 0 && actual_count >= 0 &&
                       std::max(expected_count, actual_count) <= rows0;
  const std::int64_t keep = counted ? std::max(expected_count, actual_count) : rows0;
  std::vector<HostTensor> e, a;
  for (const auto& c : expected_cols) e.push_back(download_rows(c, keep, stream));
  for (const auto& c : actual_cols) a.push_back(download_rows(c, keep, stream));
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
