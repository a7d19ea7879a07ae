#pragma once
/// The host backend: inputs generated on the host, implementations called through the ABI on
/// host memory. Used for the fp64 golden reference everywhere and for the whole pipeline on a
/// machine without a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "tracks/target.h"
#include "exec/loader.h"
#include "engine/plan.h"

namespace d2k {

/// Inputs of `plan` drawn on the host from `seed` (bit-identical to the device generator).
std::vector<HostTensor> generate_inputs_host(const WorkloadPlan& plan, std::uint64_t seed);

/// Output tensors of `plan`, every byte set to `poison_byte`.
std::vector<HostTensor> poisoned_outputs(const WorkloadPlan& plan, std::uint8_t poison_byte);

/// Calls a host implementation; throws std::runtime_error with the implementation's message on a
/// non-zero status.
void run_host(const LoadedImpl& impl, const WorkloadPlan& plan, const std::vector<HostTensor>& inputs,
              std::vector<HostTensor>& outputs);

/// FNV-1a over the bytes of every tensor: detects an implementation that modified its inputs.
std::uint64_t checksum(const std::vector<HostTensor>& ts);

}  // namespace d2k
