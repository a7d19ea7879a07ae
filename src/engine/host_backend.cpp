#include "engine/host_backend.h"

#include <cstring>
#include <stdexcept>

#include "data/generators.h"
#include "engine/frame.h"

namespace d2k {

std::vector<HostTensor> generate_inputs_host(const WorkloadPlan& plan, std::uint64_t seed) {
  std::vector<HostTensor> ins;
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    HostTensor t(plan.inputs[i].name, plan.inputs[i].dtype, plan.inputs[i].shape);
    generate_host(gen_request(plan, i, seed), t);
    ins.push_back(std::move(t));
  }
  return ins;
}

std::vector<HostTensor> poisoned_outputs(const WorkloadPlan& plan, std::uint8_t poison_byte) {
  std::vector<HostTensor> outs;
  for (auto& o : plan.outputs) {
    HostTensor t(o.name, o.dtype, o.shape);
    std::memset(t.data(), poison_byte, t.nbytes());
    outs.push_back(std::move(t));
  }
  return outs;
}

void run_host(const LoadedImpl& impl, const WorkloadPlan& plan, const std::vector<HostTensor>& inputs,
              std::vector<HostTensor>& outputs) {
  CallFrame frame(plan, kDLCPU);
  std::uint64_t ws_bytes = 0;
  if (int32_t rc = impl.workspace_size(frame.shape_only_args(), &ws_bytes); rc != D2K_OK)
    throw std::runtime_error("d2k_workspace_size returned " + std::to_string(rc) + ": " + frame.error());
  std::vector<std::byte> ws(ws_bytes);
  for (std::size_t i = 0; i < inputs.size(); ++i) frame.set_input(i, const_cast<void*>(inputs[i].data()));
  for (std::size_t i = 0; i < outputs.size(); ++i) frame.set_output(i, outputs[i].data());
  if (int32_t rc = impl.run(frame.args(ws.data(), ws_bytes, nullptr)); rc != D2K_OK)
    throw std::runtime_error("d2k_run returned " + std::to_string(rc) + ": " + frame.error());
}

std::uint64_t checksum(const std::vector<HostTensor>& ts) {
  std::uint64_t h = 1469598103934665603ull;
  for (auto& t : ts)
    for (std::byte b : t.bytes) h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
  return h;
}

}  // namespace d2k
