// Device side of the input generators: the same per-element functions as the host
// (data/gen_plan.h), run by grid-stride kernels; ragged offsets add an exact integer scan.
#include <cub/device/device_scan.cuh>

#include "data/cuda_check.h"
#include "data/gen_internal.h"

namespace d2k {

namespace {

constexpr int kThreads = 256;

int grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  // Grid-stride beyond ~1M threads: enough to fill any GPU, and the grid stays within limits.
  return static_cast<int>(blocks < 4096 ? (blocks < 1 ? 1 : blocks) : 4096);
}

__global__ void gen_elements_kernel(data::GenPlan plan, DType dtype, void* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data::store_value(dtype, out, i, data::gen_value(plan, static_cast<std::uint64_t>(i)));
}

__global__ void ragged_weights_kernel(data::GenPlan plan, std::uint64_t* w, std::int64_t groups) {
  for (std::int64_t g = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; g < groups;
       g += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    w[g] = data::ragged_weight(plan, static_cast<std::uint64_t>(g));
}

__global__ void ragged_offsets_kernel(std::int64_t total, const std::uint64_t* prefix, std::int64_t groups,
                                      DType dtype, void* out) {
  const std::uint64_t sum = groups > 0 ? prefix[groups - 1] : 1;
  for (std::int64_t g = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; g <= groups;
       g += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data::store_int(dtype, out, g, g == 0 ? 0 : data::ragged_offset(total, prefix[g - 1], sum));
}

}  // namespace

void generate_device(const GenRequest& req, void* dptr, cudaStream_t stream) {
  const data::GenPlan plan = data::make_gen_plan(req);
  if (req.count == 0) return;
  if (plan.kind != data::GenKind::ragged_offsets) {
    gen_elements_kernel<<<grid_for(req.count), kThreads, 0, stream>>>(plan, req.dtype, dptr, req.count);
    D2K_DATA_LAUNCH_CHECK();
    return;
  }
  const std::int64_t groups = req.count - 1;
  if (groups == 0) {
    ragged_offsets_kernel<<<1, 1, 0, stream>>>(plan.total, nullptr, 0, req.dtype, dptr);
    D2K_DATA_LAUNCH_CHECK();
    return;
  }
  // Weights, an inclusive integer scan (exact, so its order does not matter), then offsets.
  std::size_t temp_bytes = 0;
  D2K_DATA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, static_cast<std::uint64_t*>(nullptr),
                                                    static_cast<std::uint64_t*>(nullptr), groups, stream));
  const std::size_t wbytes = static_cast<std::size_t>(groups) * sizeof(std::uint64_t);
  // CUB's temporary storage first, where the allocation's 256-byte alignment holds.
  const std::size_t temp_padded = (temp_bytes + 255) / 256 * 256;
  data::StreamScratch scratch(temp_padded + 2 * wbytes, stream);  // released in stream order
  void* temp = scratch.get();
  auto* w = reinterpret_cast<std::uint64_t*>(static_cast<char*>(scratch.get()) + temp_padded);
  auto* prefix = w + groups;
  ragged_weights_kernel<<<grid_for(groups), kThreads, 0, stream>>>(plan, w, groups);
  D2K_DATA_LAUNCH_CHECK();
  D2K_DATA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, w, prefix, groups, stream));
  ragged_offsets_kernel<<<grid_for(groups + 1), kThreads, 0, stream>>>(plan.total, prefix, groups, req.dtype, dptr);
  D2K_DATA_LAUNCH_CHECK();
}

}  // namespace d2k
