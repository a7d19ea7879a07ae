#include "engine/frame.h"

namespace d2k {

namespace {
DLTensor describe(std::vector<std::int64_t>& shape, DType t, DLDeviceType dev) {
  DLTensor d{};
  d.data = nullptr;
  d.device = DLDevice{dev, 0};
  d.ndim = static_cast<int>(shape.size());
  d.dtype = to_dlpack(t);
  d.shape = shape.data();
  d.strides = nullptr;  // compact row-major
  d.byte_offset = 0;
  return d;
}
}  // namespace

CallFrame::CallFrame(const WorkloadPlan& plan, DLDeviceType device) {
  // Shapes and names are stored first and never resized afterwards: the descriptors point into them.
  for (auto& t : plan.inputs) {
    in_shapes_.push_back(t.shape);
    in_names_.push_back(t.name);
  }
  for (auto& t : plan.outputs) {
    out_shapes_.push_back(t.shape);
    out_names_.push_back(t.name);
  }
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    inputs_.push_back(describe(in_shapes_[i], plan.inputs[i].dtype, device));
    in_name_ptrs_.push_back(in_names_[i].c_str());
  }
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    outputs_.push_back(describe(out_shapes_[i], plan.outputs[i].dtype, device));
    out_name_ptrs_.push_back(out_names_[i].c_str());
  }
  for (auto& s : plan.scalars) scalar_names_.push_back(s.name);
  for (std::size_t i = 0; i < plan.scalars.size(); ++i) {
    d2k_scalar s{};
    s.name = scalar_names_[i].c_str();
    s.is_float = plan.scalars[i].is_float ? 1 : 0;
    s.i = plan.scalars[i].i;
    s.f = plan.scalars[i].f;
    scalars_.push_back(s);
  }
}

const d2k_args* CallFrame::args(void* workspace, std::uint64_t workspace_bytes, void* stream) {
  error_.fill(0);
  args_.abi_version = D2K_ABI_VERSION;
  args_.num_inputs = static_cast<std::uint32_t>(inputs_.size());
  args_.num_outputs = static_cast<std::uint32_t>(outputs_.size());
  args_.num_scalars = static_cast<std::uint32_t>(scalars_.size());
  args_.inputs = inputs_.data();
  args_.input_names = in_name_ptrs_.data();
  args_.outputs = outputs_.data();
  args_.output_names = out_name_ptrs_.data();
  args_.scalars = scalars_.data();
  args_.workspace = workspace;
  args_.workspace_bytes = workspace_bytes;
  args_.stream = stream;
  args_.error = error_.data();
  args_.error_capacity = error_.size();
  return &args_;
}

const d2k_args* CallFrame::shape_only_args() {
  for (auto& t : inputs_) t.data = nullptr;
  for (auto& t : outputs_) t.data = nullptr;
  return args(nullptr, 0, nullptr);
}

}  // namespace d2k
