#include "engine/timed_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "measure/kernel_origin.h"
#include "score/performance.h"

namespace d2k {

namespace {
bool vendor_origin(const std::string& origin) { return origin == "cublas" || origin == "cudnn" || origin == "torch"; }
}  // namespace

TimedOutcome run_timer(measure::Timer& timer, DeviceCall& call, const std::vector<std::vector<void*>>& ins,
                       const std::vector<std::vector<void*>>& outs, measure::MeasureOptions mo,
                       const std::function<void(std::size_t call, std::size_t set)>& prepare, Stream& stream) {
  const std::size_t n = ins.size();
  TimedOutcome t;
  auto launch = [&](std::size_t i, cudaStream_t s) { call.launch(ins[i % n], outs[i % n], s); };
  mo.prepare = [&](std::size_t i) {
    prepare(i, i % n);
    ++t.calls;
  };
  measure::MeasureResult r = timer.measure(launch, stream.get(), mo);
  t.perf = score::performance_record(r);
  t.kernel_set_constant = r.kernel_set_constant;
  t.kernel_set_deviations = r.kernel_set_deviation_count;
  if (!r.kernel_set_deviations.empty()) {
    auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (auto& n : v) s += (s.empty() ? "" : ", ") + n.substr(0, 60);
      return "[" + s + "]";
    };
    t.kernel_set_example = fmt::format("sample {} of {} (empty samples {}): {} vs first {}", r.kernel_set_deviations[0].sample_index,
                                       r.time.n, r.empty_samples, names(r.kernel_set_deviations[0].names),
                                       names(r.kernel_names));
  }
  std::vector<double> audited, plain;
  for (const auto& s : r.samples) (s.audit ? audited : plain).push_back(s.event_s);
  auto median = [](std::vector<double>& v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  t.audited = audited.size();
  t.plain = plain.size();
  t.audited_event_median_s = median(audited);
  t.plain_event_median_s = median(plain);
  t.launch_offset_s = r.launch_offset_s;
  t.unjoined_samples = r.unjoined_samples;
  t.unjoined_detail = r.unjoined_example;
  // How late the latest end was (evidence for a reader: a few microseconds past the slack reads
  // differently from milliseconds of work left running).
  if (r.unjoined_samples > 0)
    t.unjoined_detail += fmt::format(" (latest end {:.1f} us after the join, of {} audit samples)", r.join_late_max_s * 1e6,
                                     r.audit_samples);
  for (auto& [origin, ot] : r.attribution) {
    t.total_busy_s += ot.busy_s;
    if (vendor_origin(origin)) t.vendor_busy_s += ot.busy_s;
  }
  return t;
}

CapturedBatch::~CapturedBatch() { reset(); }

void CapturedBatch::reset() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

BatchPrepared CapturedBatch::prepare(DeviceCall& call, std::vector<std::vector<void*>> ins, std::vector<std::vector<void*>> outs,
                                     cudaStream_t s) {
  reset();
  call_ = &call;
  ins_ = std::move(ins);
  outs_ = std::move(outs);
  BatchPrepared p;
  // Thread-local capture: the candidate's calls on this thread are recorded, not run. A call
  // that synchronises or allocates invalidates the capture: the batch then runs call by call.
  D2K_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  std::string launch_error;
  try {
    for (std::size_t i = 0; i < ins_.size(); ++i) call.launch(ins_[i], outs_[i], s);
  } catch (const std::exception& e) {
    launch_error = e.what();
  }
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  if (g && end == cudaSuccess && launch_error.empty() && cudaGraphInstantiate(&exec_, g, 0) == cudaSuccess) {
    graph_ = g;
    p.graph = true;
    // The graph's upload to the device happens here, not inside the first timed batch (an
    // honest worker's batch should carry no set-up on the parent's clock).
    if (cudaGraphUpload(exec_, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess) cudaGetLastError();
    return p;
  }
  if (g) cudaGraphDestroy(g);
  exec_ = nullptr;
  cudaGetLastError();  // a capture error is not sticky; clear it so the next check sees only its own
  p.unjoined = end == cudaErrorStreamCaptureUnjoined;
  p.note = !launch_error.empty() ? "a call failed under capture: " + launch_error
                                 : std::string("not capturable: ") + cudaGetErrorName(end);
  return p;
}

void CapturedBatch::launch(cudaStream_t s) {
  if (exec_) {
    D2K_CUDA_CHECK(cudaGraphLaunch(exec_, s));
    return;
  }
  for (std::size_t i = 0; i < ins_.size(); ++i) call_->launch(ins_[i], outs_[i], s);
}

void batch_pointers(const std::vector<std::vector<void*>>& in_sets, void* slab, std::size_t stride,
                    const std::vector<std::size_t>& out_offsets, std::size_t calls, std::vector<std::vector<void*>>& ins,
                    std::vector<std::vector<void*>>& outs) {
  ins.clear();
  outs.clear();
  for (std::size_t i = 0; i < calls; ++i) {
    ins.push_back(in_sets[i % in_sets.size()]);
    std::vector<void*> o;
    for (std::size_t off : out_offsets) o.push_back(static_cast<char*>(slab) + i * stride + off);
    outs.push_back(std::move(o));
  }
}

CallOutcome failed(Status s, std::string error, bool fatal, std::string rule) {
  CallOutcome o;
  o.ok = false;
  o.status = s;
  o.error = std::move(error);
  o.fatal = fatal;
  o.rule = std::move(rule);
  return o;
}

}  // namespace d2k
