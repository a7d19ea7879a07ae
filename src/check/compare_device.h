#pragma once
/// Comparators over device buffers: allclose, rel_l2 and exact run on the GPU with fp64
/// accumulation and return the same CompareResult fields as the host comparators for the same
/// data (the rel_l2 sums may differ in the last bits: a different summation order). multiset and
/// topk copy to the host and reuse the host comparator. All calls synchronise `stream`.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "check/compare.h"

namespace d2k {

/// A dense row-major tensor in device memory (not owned).
struct DeviceTensorView {
  const void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::string name;
};

/// compare() on device buffers. CompareOptions' host tensors (topk scores/values) stay on the host.
CompareResult compare_device(const CompareSpec& spec, const DeviceTensorView& expected, const DeviceTensorView& actual,
                             cudaStream_t stream, const CompareOptions& opt = {});

/// compare_multiset() on device columns. Exact integer row sets with equal, valid counts are
/// sorted on the device (a row-index sort, one pass per column) and compared position by position;
/// a pass is decided there. Otherwise, and for any mismatch, the rows the counts name (the whole
/// capacity for a poison check or an invalid count) are copied to the host for the full report.
CompareResult compare_multiset_device(const CompareSpec& spec, std::span<const DeviceTensorView> expected_cols,
                                      std::span<const DeviceTensorView> actual_cols, std::int64_t expected_count,
                                      std::int64_t actual_count, cudaStream_t stream, int poison_variant = -1);

/// check_written() on device buffers.
WriteCheck check_written_device(const PoisonPattern& p, const DeviceTensorView& actual, std::int64_t limit,
                                const DeviceTensorView* expected, cudaStream_t stream);
/// check_written_two_runs() on device buffers.
WriteCheck check_written_two_runs_device(const PoisonPattern& pa, const DeviceTensorView& run_a,
                                         const PoisonPattern& pb, const DeviceTensorView& run_b, std::int64_t limit,
                                         cudaStream_t stream);
/// Writes the pattern into n elements at device pointer `dptr` (asynchronous).
void fill_poison_device(const PoisonPattern& p, void* dptr, std::int64_t n, cudaStream_t stream);

/// Copies a device tensor into a host tensor (synchronises `stream`).
HostTensor download(const DeviceTensorView& t, cudaStream_t stream);

}  // namespace d2k
