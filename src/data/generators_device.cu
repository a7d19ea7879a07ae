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

__global__ void csr_light_weights_kernel(data::GenPlan plan, std::uint64_t* w, std::int64_t light) {
  for (std::int64_t m = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; m < light;
       m += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    w[m] = data::csr_light_weight(plan.csr, plan.key, static_cast<std::uint64_t>(m));
}

__global__ void csr_row_ptr_kernel(data::CsrPlan c, const std::uint64_t* prefix, DType dtype, void* out) {
  const std::int64_t light = c.rows - c.heavy;
  const std::uint64_t sum = light > 0 ? prefix[light - 1] : 1;
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r <= c.rows;
       r += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data::store_int(dtype, out, r, data::csr_row_ptr(c, r, prefix, sum));
}

// One thread per entry: its row by binary search over the row pointer (empty rows are skipped
// because the search finds the last row starting at or before j).
__global__ void csr_col_idx_kernel(data::GenPlan plan, const std::int64_t* rp, std::int64_t rows, DType dtype,
                                   void* out, std::int64_t nnz) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < nnz;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t lo = 0, hi = rows;  // invariant: rp[lo] <= j < rp[hi]
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (rp[mid] <= j) lo = mid;
      else hi = mid;
    }
    const std::int64_t o = rp[lo];
    data::store_int(dtype, out, j, data::csr_col(plan.csr, plan.key, lo, j - o, rp[lo + 1] - o, static_cast<std::uint64_t>(j)));
  }
}

void generate_graph_row_ptr_device(const data::GenPlan& plan, DType dtype, void* dptr, cudaStream_t stream) {
  const std::int64_t light = plan.csr.rows - plan.csr.heavy;
  std::size_t temp_bytes = 0;
  if (light > 0)
    D2K_DATA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, static_cast<std::uint64_t*>(nullptr),
                                                      static_cast<std::uint64_t*>(nullptr), light, stream));
  const std::size_t wbytes = static_cast<std::size_t>(light) * sizeof(std::uint64_t);
  const std::size_t temp_padded = (temp_bytes + 255) / 256 * 256;
  data::StreamScratch scratch(temp_padded + 2 * wbytes + 256, stream);
  auto* w = reinterpret_cast<std::uint64_t*>(static_cast<char*>(scratch.get()) + temp_padded);
  auto* prefix = w + light;
  if (light > 0) {
    csr_light_weights_kernel<<<grid_for(light), kThreads, 0, stream>>>(plan, w, light);
    D2K_DATA_LAUNCH_CHECK();
    D2K_DATA_CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch.get(), temp_bytes, w, prefix, light, stream));
  }
  csr_row_ptr_kernel<<<grid_for(plan.csr.rows + 1), kThreads, 0, stream>>>(plan.csr, prefix, dtype, dptr);
  D2K_DATA_LAUNCH_CHECK();
}

}  // namespace

void generate_device(const GenRequest& req, void* dptr, cudaStream_t stream) {
  const data::GenPlan plan = data::make_gen_plan(req);
  if (req.count == 0) return;
  if (plan.kind == data::GenKind::graph_row_ptr) return generate_graph_row_ptr_device(plan, req.dtype, dptr, stream);
  if (plan.kind == data::GenKind::graph_col_idx) {
    // The row pointer again (int64, in stream-ordered scratch), then one thread per entry.
    const GenRequest rp_req = data::graph_row_ptr_request(req);
    data::StreamScratch rp(static_cast<std::size_t>(rp_req.count) * sizeof(std::int64_t), stream);
    generate_device(rp_req, rp.get(), stream);
    csr_col_idx_kernel<<<grid_for(req.count), kThreads, 0, stream>>>(plan, static_cast<const std::int64_t*>(rp.get()),
                                                                     rp_req.count - 1, req.dtype, dptr, req.count);
    D2K_DATA_LAUNCH_CHECK();
    return;
  }
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
