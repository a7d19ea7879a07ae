#include "engine/device_backend.h"

#include <stdexcept>

#include "data/generators.h"
#include "engine/checksum.h"

namespace d2k {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

DeviceSet DeviceSet::allocate(const std::vector<TensorPlan>& ts, MemKind kind) {
  DeviceSet d;
  // Never a zero-byte allocation: an empty tensor still gets a distinct, valid address.
  for (auto& t : ts) d.bufs.emplace_back(t.bytes ? t.bytes : 256, kind);
  // Canary bytes between each buffer's end and its mapping's end: a write past the end that the
  // guard zone does not catch shows there, and a read past an input's end sees no other data.
  for (auto& b : d.bufs) b.fill_slack(kSlackCanary, nullptr);
  if (kind == MemKind::shareable) D2K_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  return d;
}

std::vector<void*> DeviceSet::ptrs() const {
  std::vector<void*> p;
  for (auto& b : bufs) p.push_back(b.get());
  return p;
}

void generate_inputs_device(const WorkloadPlan& plan, std::uint64_t seed, DeviceSet& ins, cudaStream_t s) {
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) generate_device(gen_request(plan, i, seed), ins.bufs[i].get(), s);
}

void upload(const std::vector<HostTensor>& host, DeviceSet& dev, cudaStream_t s) {
  for (std::size_t i = 0; i < host.size(); ++i)
    D2K_CUDA_CHECK(cudaMemcpyAsync(dev.bufs[i].get(), host[i].data(), host[i].nbytes(), cudaMemcpyHostToDevice, s));
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
}

std::vector<HostTensor> download(const std::vector<TensorPlan>& ts, const DeviceSet& dev, cudaStream_t s) {
  std::vector<HostTensor> out;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    HostTensor t(ts[i].name, ts[i].dtype, ts[i].shape);
    D2K_CUDA_CHECK(cudaMemcpyAsync(t.data(), dev.bufs[i].get(), t.nbytes(), cudaMemcpyDeviceToHost, s));
    out.push_back(std::move(t));
  }
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

void poison(DeviceSet& dev, std::uint8_t byte, cudaStream_t s) {
  for (auto& b : dev.bufs) D2K_CUDA_CHECK(cudaMemsetAsync(b.get(), byte, b.size(), s));
}

std::uint64_t device_checksum(const DeviceSet& dev, cudaStream_t s) {
  DeviceBuffer acc(sizeof(unsigned long long) * dev.bufs.size());
  D2K_CUDA_CHECK(cudaMemsetAsync(acc.get(), 0, acc.size(), s));
  auto* accp = static_cast<unsigned long long*>(acc.get());
  for (std::size_t i = 0; i < dev.bufs.size(); ++i) {
    launch_checksum_bytes(dev.bufs[i].get(), dev.bufs[i].size(), accp + i, s);
    D2K_CUDA_CHECK_LAUNCH();
  }
  std::vector<unsigned long long> h(dev.bufs.size());
  D2K_CUDA_CHECK(cudaMemcpyAsync(h.data(), accp, acc.size(), cudaMemcpyDeviceToHost, s));
  D2K_CUDA_CHECK(cudaStreamSynchronize(s));
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < h.size(); ++i) x = x * 0x100000001b3ull ^ h[i];
  return x;
}

std::uint64_t workspace_bytes(const LoadedImpl& impl, const WorkloadPlan& plan) {
  CallFrame frame(plan, kDLCUDA);
  std::uint64_t bytes = 0;
  if (int32_t rc = impl.workspace_size(frame.shape_only_args(), &bytes); rc != D2K_OK)
    throw std::runtime_error("d2k_workspace_size returned " + std::to_string(rc) + ": " + frame.error());
  return bytes;
}

DeviceCall::DeviceCall(const LoadedImpl& impl, const WorkloadPlan& plan)
    : impl_(impl), frame_(plan, kDLCUDA), ws_(d2k::workspace_bytes(impl, plan)) {}

void DeviceCall::launch(const DeviceSet& ins, const DeviceSet& outs, cudaStream_t s) { launch(ins.ptrs(), outs.ptrs(), s); }

void DeviceCall::launch(const std::vector<void*>& ins, const std::vector<void*>& outs, cudaStream_t s) {
  for (std::size_t i = 0; i < ins.size(); ++i) frame_.set_input(i, ins[i]);
  for (std::size_t i = 0; i < outs.size(); ++i) frame_.set_output(i, outs[i]);
  if (int32_t rc = impl_.run(frame_.args(ws_.get(), ws_.size(), s)); rc != D2K_OK)
    throw std::runtime_error("d2k_run returned " + std::to_string(rc) + ": " + frame_.error());
}

}  // namespace d2k
