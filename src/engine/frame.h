#pragma once
/// CallFrame: the storage behind one d2k_args (tensor descriptors, names, scalars, error text).
#include <d2k/solution.h>

#include <array>
#include <string>
#include <vector>

#include "engine/plan.h"

namespace d2k {

class CallFrame {
 public:
  /// Describes the plan's tensors on `device` (kDLCPU or kDLCUDA); data pointers are set later.
  CallFrame(const WorkloadPlan& plan, DLDeviceType device);
  CallFrame(const CallFrame&) = delete;
  CallFrame& operator=(const CallFrame&) = delete;

  void set_input(std::size_t i, void* p) { inputs_[i].data = p; }
  void set_output(std::size_t i, void* p) { outputs_[i].data = p; }
  /// The argument block for a call; valid while this frame lives.
  const d2k_args* args(void* workspace, std::uint64_t workspace_bytes, void* stream);
  /// The argument block for d2k_workspace_size: shapes and scalars only, NULL data and stream.
  /// Clears the data pointers: ask for the workspace size before setting them.
  const d2k_args* shape_only_args();
  std::string error() const { return std::string(error_.data()); }

 private:
  std::vector<std::vector<std::int64_t>> in_shapes_, out_shapes_;
  std::vector<DLTensor> inputs_, outputs_;
  std::vector<std::string> in_names_, out_names_, scalar_names_;
  std::vector<const char*> in_name_ptrs_, out_name_ptrs_;
  std::vector<d2k_scalar> scalars_;
  std::array<char, 4096> error_{};
  d2k_args args_{};
};

}  // namespace d2k
