#pragma once
/// Measuring the ceilings of the GPU at hand (`d2k calibrate` calls these).
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "measure/ceilings.h"

namespace d2k::measure {

/// Knobs of calibrate(); defaults are sized for an H100/H200-class device (a few seconds).
struct CalibrateOptions {
  std::size_t copy_bytes = std::size_t{4} << 30;  ///< per buffer (capped at a quarter of free memory)
  int copy_reps = 20;
  /// Sizes (MiB each way) at which the copy kernel is timed under the timer (cold L2) for the
  /// memory floor's deferred write-back; seconds of sampling each.
  std::vector<std::size_t> stream_sizes_mib = {4, 16, 64, 256, 1024};
  double stream_time_s = 0.3;
  /// Sizes (MiB) at which the read kernels are timed under the timer (cold L2): how much of the
  /// read ceiling a pure read reaches at a workload's size, where launch, ramp and drain weigh
  /// (details only; the ceilings stay the large-size rates).
  std::vector<std::size_t> read_sizes_mib = {8, 16, 32, 64, 128, 256, 1024};
  int gemm_size = 8192;           ///< m = n = k
  int gemm_algos = 8;             ///< heuristic candidates tried per type
  int gemm_reps = 10;             ///< timed products for the chosen algorithm
  std::size_t gemm_workspace = std::size_t{64} << 20;
  int fma_iters = 4096;           ///< loop trips of the FP32/INT32 FMA kernels (FP64: half)
};

/// Name, UUID, PCI bus id and driver of a CUDA device (-1: the current one).
DeviceIdentity identify_device(int device = -1);

/// What a trace records about the GPU it ran on (docs/measurement.md, "Machine to machine"): the
/// identity and the clocks at the time of the call. Times are compared only between targets
/// timed in the same run on the same GPU (same UUID).
struct GpuEnvironment {
  DeviceIdentity device;
  std::string nvml_status;       ///< "ok" or why the clocks are unknown
  unsigned sm_mhz = 0, mem_mhz = 0;          ///< current clocks when read
  unsigned max_sm_mhz = 0;                   ///< the device's maximum SM clock
};
/// The GPU's identity (name, UUID, PCI bus id, driver) and its current SM / memory clocks.
GpuEnvironment gpu_environment(int device = -1);
void to_json(nlohmann::json& j, const GpuEnvironment& g);

/// Measures copy, read and write bandwidth, the write rate inside a stream and the deferred
/// write-back per size (the memory floor, docs/measurement.md), bf16/fp16/fp8(e4m3)/tf32 dense tensor rates (cuBLASLt,
/// random matrices, best of the heuristic's candidates), and FP32/FP64/INT32 FMA rates (register
/// loops). The result has source "calibrated"; it is not stored: call store_ceilings().
/// A tensor type the device or cuBLASLt cannot run is left out of `peak`, with the reason in
/// details. Throws measure_error on CUDA errors.
Ceilings calibrate(int device = -1, const CalibrateOptions& opts = {});

/// ceilings_for(identify_device(device), file), with the L2 size and SM count of a datasheet
/// entry replaced by what the device reports.
Ceilings ceilings_for_device(int device = -1, const std::filesystem::path& file = calibration_cache_path());

}  // namespace d2k::measure
