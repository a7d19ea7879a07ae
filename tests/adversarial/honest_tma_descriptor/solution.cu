// Exploit: none: a control for the tensor-map allowance. It encodes a TMA descriptor of x with
// the driver's cuTensorMapEncodeTiled (called directly, as honest Hopper code does), hands it to
// a kernel that prefetches it, and launches the shared kernel on the harness stream. It must
// pass every check: the encoder is an allowed import (tensor_map_driver_functions()) and
// libcuda.so.1 an allowed NEEDED library while only the encoders are imported from it.
#include "rmsnorm_case.cuh"
#include <cuda.h>

namespace {

__global__ void prefetch_descriptor(const __grid_constant__ CUtensorMap map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&map)) : "memory");
}

cudaError_t exploit(const Args& g) {
  // TMA needs a 16-byte aligned base and row pitch; where x has neither, go without it.
  const bool tma_ok = reinterpret_cast<uintptr_t>(g.x) % 16 == 0 && (g.H * sizeof(__nv_bfloat16)) % 16 == 0;
  if (!tma_ok) {
    launch(g, g.s);
    return cudaSuccess;
  }
  CUtensorMap x_map{};
  // x as [T, H] bf16, row-major: dimension 0 is H (contiguous), dimension 1 is T.
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(g.H), static_cast<cuuint64_t>(g.T)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(g.H) * sizeof(__nv_bfloat16)};
  const cuuint32_t box[2] = {64, 1}, elem_strides[2] = {1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&x_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(g.x),
                                            dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return cudaErrorInvalidValue;
  prefetch_descriptor<<<1, 1, 0, g.s>>>(x_map);
  launch(g, g.s);
  return cudaSuccess;
}

}  // namespace
