#pragma once
/// The CUDA backend: a workload's tensors in device memory, calls through the ABI on a stream,
/// poisoning, input checksums and copies back to the host.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "core/cuda_util.h"
#include "engine/devmem.h"
#include "engine/frame.h"
#include "engine/plan.h"
#include "exec/loader.h"

namespace d2k {

/// One set of device buffers for a plan's inputs or outputs.
struct DeviceSet {
  std::vector<DevMem> bufs;
  /// One buffer per tensor; `kind` shareable when a worker process will map them.
  static DeviceSet allocate(const std::vector<TensorPlan>& ts, MemKind kind = MemKind::local);
  std::vector<void*> ptrs() const;
};

/// Draws every input of `plan` on the device from `seed`.
void generate_inputs_device(const WorkloadPlan& plan, std::uint64_t seed, DeviceSet& ins, cudaStream_t s);
/// Copies host tensors into a device set.
void upload(const std::vector<HostTensor>& host, DeviceSet& dev, cudaStream_t s);
/// Copies a device set into host tensors shaped like the plan's tensors.
std::vector<HostTensor> download(const std::vector<TensorPlan>& ts, const DeviceSet& dev, cudaStream_t s);
/// Sets every byte of every buffer to `byte`.
void poison(DeviceSet& dev, std::uint8_t byte, cudaStream_t s);
/// A 64-bit hash of the bytes of every buffer, computed on the device (input-mutation check).
std::uint64_t device_checksum(const DeviceSet& dev, cudaStream_t s);

/// The workspace `impl` asks for at `plan`'s shapes (d2k_workspace_size), nothing allocated.
/// Throws std::runtime_error with the implementation's message on a non-zero status.
std::uint64_t workspace_bytes(const LoadedImpl& impl, const WorkloadPlan& plan);

/// A loaded implementation bound to a plan: its frame and workspace.
class DeviceCall {
 public:
  DeviceCall(const LoadedImpl& impl, const WorkloadPlan& plan);
  /// Issues one call on `s` (does not synchronise). Throws std::runtime_error with the
  /// implementation's message on a non-zero status.
  void launch(const DeviceSet& ins, const DeviceSet& outs, cudaStream_t s);
  /// The same on raw pointers (one per input and output, in plan order).
  void launch(const std::vector<void*>& ins, const std::vector<void*>& outs, cudaStream_t s);
  std::uint64_t workspace_bytes() const { return ws_.size(); }

 private:
  const LoadedImpl& impl_;
  CallFrame frame_;
  DeviceBuffer ws_;
};

/// Number of CUDA devices usable here; 0 when no driver or no GPU (never throws).
int cuda_device_count();

}  // namespace d2k
