#pragma once
/// Measuring the ceilings of the GPU at hand (`d2k calibrate` calls these).
#include <cstddef>
#include <filesystem>

#include "measure/ceilings.h"

namespace d2k::measure {

/// Knobs of calibrate(); defaults are sized for an H100/H200-class device (a few seconds).
struct CalibrateOptions {
  std::size_t copy_bytes = std::size_t{4} << 30;  ///< per buffer (capped at a quarter of free memory)
  int copy_reps = 20;
  int gemm_size = 8192;           ///< m = n = k
  int gemm_algos = 8;             ///< heuristic candidates tried per type
  int gemm_reps = 10;             ///< timed products for the chosen algorithm
  std::size_t gemm_workspace = std::size_t{64} << 20;
  int fma_iters = 4096;           ///< loop trips of the FP32/INT32 FMA kernels (FP64: half)
};

/// Name, UUID, PCI bus id and driver of a CUDA device (-1: the current one).
DeviceIdentity identify_device(int device = -1);

/// Measures copy and read bandwidth, bf16/fp16/fp8(e4m3)/tf32 dense tensor rates (cuBLASLt,
/// random matrices, best of the heuristic's candidates), and FP32/FP64/INT32 FMA rates (register
/// loops). The result has source "calibrated"; it is not stored: call store_ceilings().
/// A tensor type the device or cuBLASLt cannot run is left out of `peak`, with the reason in
/// details. Throws measure_error on CUDA errors.
Ceilings calibrate(int device = -1, const CalibrateOptions& opts = {});

/// ceilings_for(identify_device(device), file), with the L2 size and SM count of a datasheet
/// entry replaced by what the device reports.
Ceilings ceilings_for_device(int device = -1, const std::filesystem::path& file = calibration_cache_path());

}  // namespace d2k::measure
